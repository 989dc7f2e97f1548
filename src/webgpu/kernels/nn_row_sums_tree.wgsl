// Workgroup sums of one row's two partials without subgroups: workgroup_sum2's
// tree (nn_common.wgsl). The twin of nn_row_sums_subgroup.wgsl, with the same
// functions, for devices without subgroups (webgpu_nn.c appends one of them).

fn row_sums_begin(t: u32) -> bool {
    return false;
}

fn row_sums(v: vec2<f32>, t: u32, by_subgroups: bool) -> vec2<f32> {
    return workgroup_sum2(v, t);
}
