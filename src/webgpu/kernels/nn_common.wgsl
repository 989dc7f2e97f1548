// Shared by the nn_* kernels (WGT_KERNEL_NN, contracts in src/core/backend.h): the
// parameter block, the folded workgroup id and workgroup sums.
//
// Every view is a contiguous run of f32 (f16 data is converted to f32
// temporaries by the host); offsets are in elements of the binding's type
// (V = vec4<f32> when the host chose vec4 access, W = 4; else V = f32, W = 1).
//
// Prelude from the host (webgpu_nn.c): WG (threads per workgroup), W, alias V,
// CACHE (V slots a thread keeps in registers) and CACHED (the row fits in
// WG * CACHE slots; else it is read from memory again), hsum(V) -> f32,
// splat(f32) -> V, rounded(V) -> V (v itself, which the compiler cannot see:
// a value rounded to f32 before it is added, not contracted into an fma).

struct Params {
    rows: u32,          // R
    d: u32,             // D (or C), in f32 elements
    x_offset: u32,      // x / logits, in V
    y_offset: u32,      // y / dx / dlogits / dw partials, in V
    w_offset: u32,      // weight, in V
    b_offset: u32,      // bias, in V; db partials (NORM_PARAM_GRADS), in V
    stats_offset: u32,  // stats [R, 2], in f32
    dy_offset: u32,     // dy, in V
    t_offset: u32,      // targets, in i32
    t_stride: u32,      // targets' stride between rows
    g_offset: u32,      // g (cross-entropy backward), in f32; loss (forward)
    g_stride: u32,      // g's stride between rows (0: one scale); lse (forward) offset
    flags: u32,         // bit 0 has weight, bit 1 has bias, bit 2 rms, bit 3 accumulate
    eps: f32,
    chunk_rows: u32,    // NORM_PARAM_GRADS
    n_groups: u32,      // workgroups doing work (the folded grid may overshoot)
    ignore_index: i32,
    ignore_valid: u32,  // 0: ignore_index is outside i32, so no target equals it
    lse_offset: u32,    // cross-entropy: lse, in f32
    nan_bits: u32,      // 0x7fc00000: a NaN made at run time
    pw_offset: u32,     // dw partials (NORM_BACKWARD with partials), in V
    pb_offset: u32,     // db partials, in V
    zero: u32,          // 0: rounded(v) (the host's helpers) ORs it into v's bits
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

const HAS_WEIGHT = 1u;
const HAS_BIAS = 2u;
const RMS = 4u;
const ACCUMULATE = 8u;   // NORM_BACKWARD: dx += the gradient (dx holds one on entry)

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

var<workgroup> partial: array<vec2<f32>, WG>;

// Workgroup sum of two values at once; every thread gets the result. Called by
// every thread of the workgroup (uniform control flow).
fn workgroup_sum2(v: vec2<f32>, t: u32) -> vec2<f32> {
    partial[t] = v;
    workgroupBarrier();
    for (var step = WG / 2u; step > 0u; step >>= 1u) {
        if (t < step) {
            partial[t] = partial[t] + partial[t + step];
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}
