// Offset of each face's cells in the face arrays: faces x_min, x_max, y_min, y_max, z_min,
// z_max, each numbered as in src/boundary.rs. Appended by the host to the kernels that use it.
fn face_offset(face: u32) -> u32 {
    let nyz = NY * NZ;
    let nxz = NX * NZ;
    switch face {
        case 0u: { return 0u; }
        case 1u: { return nyz; }
        case 2u: { return 2u * nyz; }
        case 3u: { return 2u * nyz + nxz; }
        case 4u: { return 2u * nyz + 2u * nxz; }
        default: { return 2u * nyz + 2u * nxz + NX * NY; }
    }
}
