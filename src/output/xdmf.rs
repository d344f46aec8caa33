//! `fields.xmf`: an XDMF 2 sidecar describing `fields.h5` as a 3DRectMesh with VXVYVZ
//! geometry (the face coordinates). Vectors are declared as vectors; each stress component
//! is its own scalar attribute over its own dataset (`stress_xx`, ...): XDMF's Tensor6
//! ordering differs from ours, and ParaView's Xdmf3 readers skip HyperSlab attributes.

use crate::grid::Grid;
use std::fmt::Write;

/// The stress components in the order of `Macro::p` and of the `stress` dataset.
pub const STRESS_COMPONENTS: [&str; 6] = ["xx", "yy", "zz", "xy", "xz", "yz"];

/// `surface_faces`: the number of body wall faces (0: no surface grid). With bodies the
/// domain holds a second grid, `surface`, of quadrilaterals with cell data.
pub fn fields_xdmf(h5_name: &str, g: &Grid, solid: bool, surface_faces: usize) -> String {
    let [nx, ny, nz] = g.dims();
    let item = |dims: &str, path: &str| {
        format!(
            r#"<DataItem Dimensions="{dims}" NumberType="Float" Precision="8" Format="HDF">{h5_name}:/{path}</DataItem>"#
        )
    };
    let cells = format!("{nz} {ny} {nx}");
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"2.0\">\n <Domain>\n");
    s.push_str("  <Grid Name=\"fields\" GridType=\"Uniform\">\n");
    let _ = writeln!(s, "   <Topology TopologyType=\"3DRectMesh\" Dimensions=\"{} {} {}\"/>", nz + 1, ny + 1, nx + 1);
    s.push_str("   <Geometry GeometryType=\"VXVYVZ\">\n");
    for (n, name) in [(nx, "x_faces"), (ny, "y_faces"), (nz, "z_faces")] {
        let _ = writeln!(s, "    {}", item(&(n + 1).to_string(), name));
    }
    s.push_str("   </Geometry>\n");
    let mut scalars = vec!["density", "temperature", "pressure"];
    if solid {
        scalars.push("solid");
    }
    for name in scalars {
        let _ = writeln!(
            s,
            "   <Attribute Name=\"{name}\" AttributeType=\"Scalar\" Center=\"Cell\">\n    {}\n   </Attribute>",
            item(&cells, name)
        );
    }
    for name in ["velocity", "heat_flux"] {
        let _ = writeln!(
            s,
            "   <Attribute Name=\"{name}\" AttributeType=\"Vector\" Center=\"Cell\">\n    {}\n   </Attribute>",
            item(&format!("{cells} 3"), name)
        );
    }
    for comp in STRESS_COMPONENTS {
        let name = format!("stress_{comp}");
        let _ = writeln!(
            s,
            "   <Attribute Name=\"{name}\" AttributeType=\"Scalar\" Center=\"Cell\">\n    {}\n   </Attribute>",
            item(&cells, &name)
        );
    }
    s.push_str("  </Grid>\n");
    if surface_faces > 0 {
        let n = surface_faces;
        s.push_str("  <Grid Name=\"surface\" GridType=\"Uniform\">\n");
        let _ = writeln!(
            s,
            "   <Topology TopologyType=\"Quadrilateral\" NumberOfElements=\"{n}\">\n    <DataItem Dimensions=\"{n} 4\" NumberType=\"UInt\" Precision=\"8\" Format=\"HDF\">{h5_name}:/surface/connectivity</DataItem>\n   </Topology>"
        );
        let _ = writeln!(
            s,
            "   <Geometry GeometryType=\"XYZ\">\n    {}\n   </Geometry>",
            item(&format!("{} 3", 4 * n), "surface/points")
        );
        for name in ["pressure", "heat_flux", "mass_flux", "area", "body"] {
            let _ = writeln!(
                s,
                "   <Attribute Name=\"{name}\" AttributeType=\"Scalar\" Center=\"Cell\">\n    {}\n   </Attribute>",
                item(&n.to_string(), &format!("surface/{name}"))
            );
        }
        for name in ["shear", "normal"] {
            let _ = writeln!(
                s,
                "   <Attribute Name=\"{name}\" AttributeType=\"Vector\" Center=\"Cell\">\n    {}\n   </Attribute>",
                item(&format!("{n} 3"), &format!("surface/{name}"))
            );
        }
        s.push_str("  </Grid>\n");
    }
    s.push_str(" </Domain>\n</Xdmf>\n");
    s
}
