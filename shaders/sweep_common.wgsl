// Shared by the two sweeps, sweep_slice.wgsl and sweep_fused.wgsl, and appended to each by
// the host: both declare NX, NY, NZ, SROW, PART0..5, SOLID and the bindings `cells`, `bnd`
// and `table` with the same layouts. Their CUDA forms are in shaders/cuda/sweep_slice.cu.

fn part_at(face: u32) -> u32 {
    switch face {
        case 0u: { return PART0; }
        case 1u: { return PART1; }
        case 2u: { return PART2; }
        case 3u: { return PART3; }
        case 4u: { return PART4; }
        default: { return PART5; }
    }
}

// The partner inflow of face cell `idx` at slot `sl`, from the face's data at `at` in bnd.
fn partner(at: u32, idx: u32, sl: u32) -> real {
    if sl == NONE {
        // A velocity parallel to the face: its upwind coefficient is zero.
        return 0.0;
    }
    return bnd[at + idx * slots() + sl];
}

// Start of the face densities in `bnd`.
fn dens() -> u32 {
    return NX + NY + NZ;
}

fn wall_base() -> u32 {
    return dens() + 2u * (NY * NZ + NX * NZ + NX * NY);
}

// Emission into velocity v of the wall face on side `side` of the fluid cell `cell` (word
// `word`): its wall density times its body's Maxwellian. The body is read from the solid
// neighbour's word.
fn wall_emission(word: u32, side: u32, cell: u32, v: u32) -> real {
    let mask = word & 63u;
    let w = (word >> 6u) + countOneBits(mask & ((1u << side) - 1u));
    let axis = side / 2u;
    let step = select(select(NX * NY, NX, axis == 1u), 1u, axis == 0u);
    let nb = select(cell - step, cell + step, (side & 1u) == 1u);
    let body = bits(cells[3u * nb].w) & ~SOLID;
    let row = table[v * (SROW + 1u) + 2u + body / 4u];
    return bnd[wall_base() + w] * row[body % 4u];
}
