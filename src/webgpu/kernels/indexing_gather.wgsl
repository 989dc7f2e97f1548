// GATHER: x [.., D, ..] (any dtype, any strides), index i32 [out's shape]
// (any strides) -> out [index's shape], contiguous from element out_offset:
//   out[c] = x[c with c[axis] = index[c]]; index values in [-D, 0) wrap once,
//   values outside [-D, D) give 0 and are reported: the invocation lowers
//   flag[0] to params.check_id (the dispatch's id, 0xffffffff = no report) and
//   stores the value in flag[1]; the host turns that into an error at the next
//   read-back or synchronize (webgpu_indexing_check).
//
// Every buffer is bound as 32-bit words. Elements are 4, 2 or 1 bytes
// (f32/i32, f16, u8/bool); packed dtypes are never widened: each invocation
// owns one 32-bit word of out and fills the 1, 2 or 4 elements inside it, so
// no two invocations write the same word. Bytes of a boundary word that lie
// outside out keep their old value.
//
// Dispatch: ceil(words / 256) workgroups, folded into (x, y) by webgpu_grid.

struct Params {
    shape: array<vec4<u32>, 2>,          // out (= index) shape; dims >= ndim are 1
    x_strides: array<vec4<i32>, 2>,      // in elements; the axis entry steps the gathered coordinate
    index_strides: array<vec4<i32>, 2>,
    ndim: u32,
    axis: u32,
    numel: u32,                          // elements of out
    elem_bytes: u32,                     // 4, 2 or 1
    x_offset: i32,                       // in elements
    index_offset: i32,
    out_offset: u32,                     // first element of out in its buffer
    first_word: u32,                     // out_offset * elem_bytes / 4
    words: u32,                          // 32-bit words that hold out
    axis_len: i32,                       // D = x.shape[axis]
    check_id: u32,                       // reported in flag[0] for an out-of-range index
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>, 4>;

// Bits of x's element e (element index into the buffer) in the low bits.
fn load_x(e: u32) -> u32 {
    switch params.elem_bytes {
        case 4u: { return x[e]; }
        case 2u: { return (x[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu; }
        default: { return (x[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu; }
    }
}

// Bits of out element e (row-major position in out's shape).
fn gather_element(e: u32) -> u32 {
    var rest = e;
    var x_at = params.x_offset;
    var index_at = params.index_offset;
    for (var d = i32(params.ndim) - 1; d >= 0; d--) {
        let n = params.shape[d >> 2u][d & 3];
        let c = i32(rest % n);
        rest = rest / n;
        index_at += c * params.index_strides[d >> 2u][d & 3];
        if (u32(d) != params.axis) {
            x_at += c * params.x_strides[d >> 2u][d & 3];
        }
    }
    let raw = index[index_at];
    let i = select(raw, raw + params.axis_len, raw < 0);
    if (i < 0 || i >= params.axis_len) {
        atomicMin(&flag[0], params.check_id);
        atomicStore(&flag[1], bitcast<u32>(raw));
        return 0u;
    }
    x_at += i * params.x_strides[params.axis >> 2u][params.axis & 3u];
    return load_x(u32(x_at));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * 256u + lid;
    if (w >= params.words) {
        return;
    }
    let word = params.first_word + w;
    let per_word = 4u / params.elem_bytes;
    let bits = params.elem_bytes * 8u;
    let lane_mask = select((1u << bits) - 1u, 0xffffffffu, bits == 32u);
    var value = 0u;
    var keep = 0u;                       // bits of the old word to keep
    for (var lane = 0u; lane < per_word; lane++) {
        let slot = word * per_word + lane;   // element index into out's buffer
        let shift = lane * bits;
        if (slot < params.out_offset || slot - params.out_offset >= params.numel) {
            keep |= lane_mask << shift;
        } else {
            value |= gather_element(slot - params.out_offset) << shift;
        }
    }
    if (keep != 0u) {
        value |= out[word] & keep;
    }
    out[word] = value;
}
