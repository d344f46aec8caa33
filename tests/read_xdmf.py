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
data = reader.GetOutputDataObject(0)
surface = None
if data.IsA("vtkMultiBlockDataSet"):
    grid = data.GetBlock(0)
    if data.GetNumberOfBlocks() > 1:
        surface = data.GetBlock(1)
else:
    grid = data
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
    if "surface" in h5:
        # Bodies: the surface grid of quadrilaterals with its cell data.
        s5 = h5["surface"]
        n = s5["pressure"].shape[0]
        assert surface is not None, "fields.xmf has no surface grid"
        assert surface.GetNumberOfCells() == n and surface.GetNumberOfPoints() == 4 * n
        assert all(surface.GetCellType(i) == 9 for i in range(n)), "not quadrilaterals"
        np.testing.assert_array_equal(vtk_to_numpy(surface.GetPoints().GetData()), s5["points"][:])
        sd = surface.GetCellData()
        for name in ("pressure", "heat_flux", "mass_flux", "area", "body"):
            np.testing.assert_array_equal(vtk_to_numpy(sd.GetArray(name)), s5[name][:])
        for name in ("shear", "normal"):
            np.testing.assert_array_equal(vtk_to_numpy(sd.GetArray(name)), s5[name][:])
        np.testing.assert_array_equal(vtk_to_numpy(cd.GetArray("solid")), h5["solid"][:].reshape(-1))
        print(f"surface: {n} faces")
    # Attributes the output format promises.
    for key in ("kn", "delta", "prandtl", "omega", "iterations", "final_residual", "config"):
        assert key in h5.attrs, key
print(f"ok: {nx}x{ny}x{nz} cells, {cd.GetNumberOfArrays()} cell arrays")
