// Workgroup sums of one row's two partials by subgroups (webgpu_nn.c appends
// this file to the nn kernels where the device has subgroups, else
// nn_row_sums_tree.wgsl). A subgroupAdd per subgroup, its lane 0 stores the
// result in the subgroup's slot of `partial` (nn_common.wgsl), one barrier,
// and every invocation adds the slots in index order: 2 barriers a row where
// workgroup_sum2's tree takes 2 + log2(WG). The slots assume subgroups made of
// consecutive invocations, aligned to their size (what NVIDIA, AMD, Intel and
// lavapipe do; WebGPU does not promise it): row_sums_begin checks that once,
// and a workgroup where it does not hold sums by the tree. Either way the
// order of the additions is fixed: the same bits every run.

var<workgroup> row_sums_ok: u32;

// Called once, in uniform control flow: whether row_sums may use subgroups.
fn row_sums_begin(t: u32) -> bool {
    if (t == 0u) {
        row_sums_ok = 1u;
    }
    workgroupBarrier();
    let lane = subgroupExclusiveAdd(1u);
    let size = subgroupAdd(1u);
    let first = subgroupBroadcastFirst(t);
    if (t != first + lane || first % size != 0u || WG % size != 0u) {
        row_sums_ok = 0u; // every writer stores the same value
    }
    return workgroupUniformLoad(&row_sums_ok) == 1u;
}

// The sum of v over the workgroup (every invocation gets it), in uniform control flow.
fn row_sums(v: vec2<f32>, t: u32, by_subgroups: bool) -> vec2<f32> {
    if (!by_subgroups) {
        return workgroup_sum2(v, t);
    }
    let s = subgroupAdd(v);
    let size = subgroupAdd(1u);
    if (subgroupExclusiveAdd(1u) == 0u) {
        partial[t / size] = s;
    }
    workgroupBarrier();
    var total = vec2<f32>(0.0);
    for (var k = 0u; k < WG / size; k++) {
        total += partial[k];
    }
    workgroupBarrier();
    return total;
}
