// SCATTER_ADD: index i32 [.., n, ..] and src [index's shape] (any strides),
// out [.., D, ..] (any strides, already holds a copy of dst):
//   out[c with c[axis] = index[c]] += src[c]; index values in [-D, 0) wrap
//   once, values outside [-D, D) are skipped and reported through flag (see
//   indexing_gather.wgsl).
//
// One invocation per element of index. Colliding adds are atomic: i32 with
// atomicAdd (wrapping, as the CPU), f32 with a compare-exchange loop on the
// word's bits (portable: needs no float-atomic feature). The f32 summation
// order is whatever order the atomics land in, so it differs from the CPU's
// serial order by rounding.
//
// Entry points: scatter_add_i32, scatter_add_f32.
// Dispatch: ceil(numel / 256) workgroups, folded into (x, y) by webgpu_grid.

struct Params {
    shape: array<vec4<u32>, 2>,          // index (= src) shape; dims >= ndim are 1
    index_strides: array<vec4<i32>, 2>,  // in elements
    src_strides: array<vec4<i32>, 2>,
    out_strides: array<vec4<i32>, 2>,    // the axis entry steps the scattered coordinate
    ndim: u32,
    axis: u32,
    numel: u32,                          // elements of index
    axis_len: i32,                       // D = out.shape[axis]
    index_offset: i32,                   // in elements
    src_offset: i32,
    out_offset: i32,
    check_id: u32,                       // reported in flag[0] for an out-of-range index
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>, 4>;  // as in indexing_gather.wgsl

struct Target {
    out_at: i32,                         // -1: skipped
    src_at: i32,
}

fn locate(e: u32) -> Target {
    var rest = e;
    var index_at = params.index_offset;
    var src_at = params.src_offset;
    var out_at = params.out_offset;
    for (var d = i32(params.ndim) - 1; d >= 0; d--) {
        let n = params.shape[d >> 2u][d & 3];
        let c = i32(rest % n);
        rest = rest / n;
        index_at += c * params.index_strides[d >> 2u][d & 3];
        src_at += c * params.src_strides[d >> 2u][d & 3];
        if (u32(d) != params.axis) {
            out_at += c * params.out_strides[d >> 2u][d & 3];
        }
    }
    let raw = index[index_at];
    let i = select(raw, raw + params.axis_len, raw < 0);
    if (i < 0 || i >= params.axis_len) {
        atomicMin(&flag[0], params.check_id);
        atomicStore(&flag[1], bitcast<u32>(raw));
        return Target(-1, src_at);
    }
    return Target(out_at + i * params.out_strides[params.axis >> 2u][params.axis & 3u], src_at);
}

fn element_id(wid: vec3<u32>, groups: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * groups.x) * 256u + lid;
}

@compute @workgroup_size(256)
fn scatter_add_i32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let e = element_id(wid, groups, lid);
    if (e >= params.numel) {
        return;
    }
    let t = locate(e);
    if (t.out_at < 0) {
        return;
    }
    atomicAdd(&out[t.out_at], src[t.src_at]);   // two's complement: the same bits as an i32 add
}

@compute @workgroup_size(256)
fn scatter_add_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let e = element_id(wid, groups, lid);
    if (e >= params.numel) {
        return;
    }
    let t = locate(e);
    if (t.out_at < 0) {
        return;
    }
    let add = bitcast<f32>(src[t.src_at]);
    var old = atomicLoad(&out[t.out_at]);
    loop {
        let swapped = atomicCompareExchangeWeak(&out[t.out_at], old, bitcast<u32>(bitcast<f32>(old) + add));
        if (swapped.exchanged) {
            break;
        }
        old = swapped.old_value;
    }
}
