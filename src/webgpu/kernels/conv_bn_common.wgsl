// Shared by conv_bn_partials.wgsl and conv_bn_apply.wgsl: batch norm
// (WGT_KERNEL_CONV BATCH_NORM_FORWARD / _BACKWARD, contracts in src/core/backend.h)
// over the [N, C, L] view, element e in [0, N L) of channel c at
// (e / L) C L + c L + e % L.
//
// Each channel is split into `splits` chunks of `chunk` elements, one
// workgroup of 256 per (channel, chunk), so a large GPU is filled even with
// few channels (one workgroup per channel left most SMs idle at 64 channels).
// Two dispatches per direction, no atomics:
//   partials  forward (training): per chunk its mean and the sum of squared
//             deviations from it (no cancellation: one Welford pass, WELFORD
//             in conv_bn_partials.wgsl, or two passes over the chunk);
//             backward: per chunk sum(dy) and sum(dy xhat)
//   apply     combines the channel's chunk partials (Chan's parallel variance
//             formula forward, plain sums backward: every workgroup of the
//             channel does the same few operations), then writes y (or dx)
//             for its chunk; chunk 0 also writes mean / var (forward training)
//             or dweight / dbias (backward)
// Prelude (webgpu_conv.c): const BACKWARD: bool; const STREAM: bool
// (WGT_BN_STREAM, the default): an invocation walks its elements of the chunk
// (e, e + 256, ...) with a running position (e / L, e % L) instead of a
// division and a remainder per element, and issues 4 loads before it uses
// them (one load in flight per invocation left the kernels at 2.2-2.6 TB/s on
// an H100). The values are combined in the same order as without: the same
// bits.

struct Params {
    n: u32, c: u32, l: u32, flags: u32,   // 1 training, 2 has weight, 4 has bias
    eps: f32, x_offset: u32, w_offset: u32, b_offset: u32,
    mean_offset: u32, var_offset: u32, y_offset: u32, grads_offset: u32,
    splits: u32, chunk: u32, n_groups: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

const TRAINING = 1u;
const HAS_WEIGHT = 2u;
const HAS_BIAS = 4u;

var<workgroup> partial: array<vec2<f32>, 256>;

// Workgroup sum; every invocation gets it. Uniform control flow only.
fn workgroup_sum2(v: vec2<f32>, t: u32) -> vec2<f32> {
    partial[t] = v;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step >>= 1u) {
        if (t < step) { partial[t] = partial[t] + partial[t + step]; }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}

// Index of channel element e of channel c.
fn element(c: u32, e: u32) -> u32 {
    return (e / params.l) * params.c * params.l + c * params.l + e % params.l;
}

// [begin, end) of chunk s.
fn chunk_range(s: u32) -> vec2<u32> {
    let total = params.n * params.l;
    let begin = min(s * params.chunk, total);
    return vec2<u32>(begin, min(begin + params.chunk, total));
}

// Element e of a channel as (e / L, e % L): STREAM's running position.
struct Cursor { q: u32, r: u32, }

fn cursor_at(e: u32) -> Cursor { return Cursor(e / params.l, e % params.l); }

fn cursor_index(c: u32, k: Cursor) -> u32 { return k.q * params.c * params.l + c * params.l + k.r; }

// The position 256 elements on (one step of an invocation's walk).
fn cursor_next(k: Cursor) -> Cursor {
    var q = k.q;
    var r = k.r + 256u;
    if (r >= params.l) {
        if (params.l >= 256u) {
            r -= params.l;
            q += 1u;
        } else {
            q += r / params.l;
            r = r % params.l;
        }
    }
    return Cursor(q, r);
}

// The indices of the next 4 steps of the walk; *k moves past them.
fn cursor_next4(k: ptr<function, Cursor>, c: u32) -> vec4<u32> {
    let k0 = *k;
    let k1 = cursor_next(k0);
    let k2 = cursor_next(k1);
    let k3 = cursor_next(k2);
    *k = cursor_next(k3);
    return vec4<u32>(cursor_index(c, k0), cursor_index(c, k1), cursor_index(c, k2), cursor_index(c, k3));
}
