"""Open fields.xmf with VTK's XDMF reader (the reader ParaView uses) and check it against
fields.h5 read with h5py. Usage: read_xdmf.py OUTPUT_DIR. Exits non-zero on any mismatch."""
import sys

import h5py
import numpy as np
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOXdmf2 import vtkXdmfReader

out = sys.argv[1]
reader = vtkXdmfReader()
reader.SetFileName(f"{out}/fields.xmf")
reader.Update()
grid = reader.GetOutputDataObject(0)
if grid.IsA("vtkMultiBlockDataSet"):
    grid = grid.GetBlock(0)
assert grid.IsA("vtkRectilinearGrid"), grid.GetClassName()

with h5py.File(f"{out}/fields.h5", "r") as h5:
    nz, ny, nx = h5["density"].shape
    assert tuple(grid.GetDimensions()) == (nx + 1, ny + 1, nz + 1), grid.GetDimensions()
    for axis, arr in (("x", grid.GetXCoordinates()), ("y", grid.GetYCoordinates()), ("z", grid.GetZCoordinates())):
        np.testing.assert_array_equal(vtk_to_numpy(arr), h5[f"{axis}_faces"][:])
    cd = grid.GetCellData()
    for name in ("density", "temperature", "pressure"):
        a = cd.GetArray(name)
        assert a is not None and a.GetNumberOfComponents() == 1, name
        np.testing.assert_array_equal(vtk_to_numpy(a), h5[name][:].reshape(-1))
    for name in ("velocity", "heat_flux"):
        a = cd.GetArray(name)
        assert a is not None and a.GetNumberOfComponents() == 3, name
        np.testing.assert_array_equal(vtk_to_numpy(a), h5[name][:].reshape(-1, 3))
    assert cd.GetVectors() is not None, "no array flagged as vectors"
    stress = h5["stress"][:].reshape(-1, 6)
    for c, comp in enumerate(("xx", "yy", "zz", "xy", "xz", "yz")):
        a = cd.GetArray(f"stress_{comp}")
        assert a is not None, comp
        np.testing.assert_array_equal(vtk_to_numpy(a), stress[:, c])
    # Attributes the output format promises.
    for key in ("kn", "delta", "prandtl", "omega", "iterations", "final_residual", "config"):
        assert key in h5.attrs, key
print(f"ok: {nx}x{ny}x{nz} cells, {cd.GetNumberOfArrays()} cell arrays")
