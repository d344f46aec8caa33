// reduce_all with subgroups: subgroupAdd within each subgroup, then invocation 0 adds the
// subgroup sums in subgroup order. Leaves the workgroup sum of acc[m] in red[m * MWG].
// Subgroups of a 1D workgroup hold consecutive invocation indices, so the lowest index in a
// subgroup divided by the subgroup size numbers it; sizes are powers of two <= MWG.
fn reduce_all(acc: ptr<function, array<real, 19>>, lid: u32) {
    let size = subgroupAdd(1u);
    let leader = subgroupBroadcastFirst(lid);
    let sg = leader / size;
    for (var m = 0u; m < NACC; m++) {
        let t = subgroupAdd((*acc)[m]);
        if lid == leader {
            red[m * MWG + sg] = t;
        }
    }
    workgroupBarrier();
    if lid == 0u {
        let nsg = MWG / size;
        for (var m = 0u; m < NACC; m++) {
            var total = red[m * MWG];
            for (var g = 1u; g < nsg; g++) {
                total += red[m * MWG + g];
            }
            red[m * MWG] = total;
        }
    }
    workgroupBarrier();
}
