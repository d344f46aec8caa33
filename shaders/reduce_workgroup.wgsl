// reduce_all for adapters without subgroups: a shared-memory tree over the workgroup.
// Leaves the workgroup sum of acc[m] in red[m * MWG].
fn reduce_all(acc: ptr<function, array<real, 19>>, lid: u32) {
    for (var m = 0u; m < NACC; m++) {
        red[m * MWG + lid] = (*acc)[m];
    }
    workgroupBarrier();
    for (var stride = MWG / 2u; stride > 0u; stride /= 2u) {
        if lid < stride {
            for (var m = 0u; m < NACC; m++) {
                red[m * MWG + lid] += red[m * MWG + lid + stride];
            }
        }
        workgroupBarrier();
    }
}
