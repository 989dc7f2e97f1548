// Shared by the reduce_*, cumsum_* and softmax_* kernels: the parameter block
// and the row / reduced-position addressing.
//
// A kernel call is seen as rows: x [d0..dn) splits into kept dims (one row per
// kept coordinate, row-major) and reduced dims (the row's elements). REDUCE:
// kept = dims not reduced, reduced = the reduce set. CUMSUM / SOFTMAX: kept =
// every dim but the axis, reduced = the axis (n_red = 1). Shapes and strides
// are in elements, outermost dim first, at most 8 of each; index k of an array
// of 8 lives at [k >> 2][k & 3] (uniform arrays need 16-byte elements).
//
// The prelude prepended by the host defines the element types and constants
// (alias A, WX, WY, ...), the input bindings and load(i) -> A.

struct Params {
    kept_shape: array<vec4<u32>, 2>,  // row dims
    kept_x: array<vec4<u32>, 2>,      // x strides of the row dims
    kept_out: array<vec4<u32>, 2>,    // out strides of the row dims
    red_shape: array<vec4<u32>, 2>,   // reduced dims (the axis for cumsum/softmax)
    red_x: array<vec4<u32>, 2>,       // x strides of the reduced dims
    n_kept: u32,
    n_red: u32,
    n_rows: u32,                      // product of kept_shape
    row_len: u32,                     // product of red_shape
    x_offset: u32,                    // element offset of x in its buffer
    out_offset: u32,                  // element offset of out in its buffer
    out_axis_stride: u32,             // cumsum/softmax: out stride along the axis
    splits: u32,                      // reduce: workgroups per row tile (partials when > 1)
    chunk: u32,                       // reduce: reduced positions per split
    n_groups: u32,                    // workgroups doing work (the grid may overshoot)
    correction: u32,                  // var/std
    nan_bits: u32,                    // 0x7fc00000: a run-time NaN (constant NaN is an error)
    identity: u32,                    // reduce max/min: bits of the identity (-inf, +inf, INT_MIN, INT_MAX)
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

// Linear workgroup id of a grid folded into (x, y).
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

fn f32_is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// (x element offset, out element offset) of the first element of row `row`.
fn row_offsets(row: u32) -> vec2<u32> {
    var r = row;
    var xo = params.x_offset;
    var oo = params.out_offset;
    for (var d = params.n_kept; d > 0u; d--) {
        let k = d - 1u;
        let n = params.kept_shape[k >> 2u][k & 3u];
        let i = r % n;
        r = r / n;
        xo += i * params.kept_x[k >> 2u][k & 3u];
        oo += i * params.kept_out[k >> 2u][k & 3u];
    }
    return vec2<u32>(xo, oo);
}

// x element offset, relative to the row, of reduced position pos (row-major
// over the reduced dims).
fn reduced_offset(pos: u32) -> u32 {
    if (params.n_red == 1u) {
        return pos * params.red_x[0].x;
    }
    var r = pos;
    var o = 0u;
    for (var d = params.n_red; d > 0u; d--) {
        let k = d - 1u;
        let n = params.red_shape[k >> 2u][k & 3u];
        o += (r % n) * params.red_x[k >> 2u][k & 3u];
        r = r / n;
    }
    return o;
}
