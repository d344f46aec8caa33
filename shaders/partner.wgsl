// Partner data of specular and periodic faces (src/boundary.rs): storage [face cell][slot],
// where a slot numbers the velocities crossing a face in one direction. Keep in sync with
// src/boundary.rs::slot and slots_per_cell. Appended by the host to sweep_slice and
// moment_slice, which declare M.

const NONE: u32 = 0xffffffffu;

// Slots per face cell: half the velocity grid along the face's axis.
fn slots() -> u32 {
    return M * M * (M / 2u);
}

// Slot of global velocity g among those whose component along `axis` is positive (or
// negative); NONE for the others (odd M: the zero node crosses no face).
fn slot(g: u32, axis: u32, positive: bool) -> u32 {
    let half = M / 2u;
    var idx = vec3<u32>(g % M, (g / M) % M, g / (M * M));
    let i = idx[axis];
    if positive {
        if i < M - half {
            return NONE;
        }
        idx[axis] = i - (M - half);
    } else if i >= half {
        return NONE;
    }
    var dims = vec3<u32>(M, M, M);
    dims[axis] = half;
    return (idx.z * dims.y + idx.y) * dims.x + idx.x;
}
