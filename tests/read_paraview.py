"""Open fields.xmf with ParaView's own readers (run by pvpython) and check every field
against fields.h5: present, with the right number of components, and equal. Both the
"XDMF Reader" (Xdmf2) and the "Xdmf3 Reader" ParaView offers for .xmf files are checked.
Usage: pvpython read_paraview.py OUTPUT_DIR. Exits non-zero on any mismatch."""
import sys

import h5py
import numpy as np
import paraview.simple as ps
from vtkmodules.util.numpy_support import vtk_to_numpy

out = sys.argv[1]
h5 = h5py.File(f"{out}/fields.h5", "r")
expected = {"density": 1, "temperature": 1, "pressure": 1, "velocity": 3, "heat_flux": 3}
stress = h5["stress"][:].reshape(-1, 6)
for c, comp in enumerate(("xx", "yy", "zz", "xy", "xz", "yz")):
    expected[f"stress_{comp}"] = 1

readers = {
    "XDMF Reader": lambda f: ps.XDMFReader(FileNames=[f]),
    "Xdmf3 Reader": lambda f: ps.Xdmf3ReaderS(FileName=[f]),
}
for label, make in readers.items():
    reader = make(f"{out}/fields.xmf")
    reader.UpdatePipeline()
    # The reader's own output (pvpython runs client and server in one process).
    data = reader.GetClientSideObject().GetOutputDataObject(0)
    grid = data.GetBlock(0) if data.IsA("vtkMultiBlockDataSet") else data
    cells = grid.GetNumberOfCells()
    assert cells == h5["density"].size, (label, cells)
    cd = grid.GetCellData()
    for name, comps in expected.items():
        a = cd.GetArray(name)
        assert a is not None, f"{label}: no {name}"
        assert a.GetNumberOfComponents() == comps, (label, name, a.GetNumberOfComponents())
        got = vtk_to_numpy(a)
        want = stress[:, ("xx", "yy", "zz", "xy", "xz", "yz").index(name[7:])] if name.startswith("stress_") else h5[name][:]
        want = want.reshape(got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{label}: {name}")
        lo, hi = a.GetRange(-1 if comps > 1 else 0)
        print(f"{label}: {name} ({comps}) range {lo:.6g} .. {hi:.6g}")
    print(f"{label}: ok, {cells} cells, {len(expected)} fields")
