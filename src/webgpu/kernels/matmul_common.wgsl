// matmul_common: parameters, bindings and helpers shared by the matmul kernels
// (matmul_tiled, matmul_gemv_rows, matmul_gemv_cols). webgpu_matmul.c puts a
// prelude in front of this file that defines:
//   S        storage element type of a and b (f32, f16 or i32; f16 when they mix)
//   SA, SB   a's and b's own element types: S, or f32 and f16 mixed (wgt_matmul_ex
//            of f32 activations and f16 weights); loads convert to T either way
//   T        compute / accumulator type (f32 for f32 and f16, i32 for i32)
//   O        element type of out (S, or f32 for f16 operands: wgt_matmul_ex)
//   BIAS     whether a bias [N] (linear's) is added in the epilogue; when true
//            the prelude binds it (binding 4) and bias_load(i) reads element i
//   GELU_GRAD  (matmul_tiled, and the split-K reduction, which ignores it;
//            webgpu_matmul_plan.c's epilogue_prelude) whether out =
//            gelu_grad(sum, i): the sum times GELU's slope at element i of h
//            (binding 4, no bias; backend.h's MATMUL gelu_grad); never split
//   mad(x, y, z) = x * y + z on T, mad4 on vec4<T> (fma for floats; wrapping for i32)
//   the kernel's tile constants (see each kernel's header)
//
// Products: out[b, m, n] = sum_k a[b, m, k] * b[b, k, n]
//   a: [B.., M, K], element (m, k) of batch b at a_offset + a_batch(b) + m * a_row + k * a_col
//   b: [B.., K, N], element (k, n)            at b_offset + b_batch(b) + k * b_row + n * b_col
//   out: [B.., M, N] contiguous from out_offset
// All offsets and strides are in elements. Strides are u32 and may be the two's
// complement of a negative value: u32 arithmetic wraps, and the final index is
// always in range. The GEMV kernels bind the matrix as `a` and the vector as `b`
// (see webgpu_matmul.c).
//
// Inputs are declared as arrays of vec4<S> (buffers are whole multiples of 16
// bytes): aligned paths load one vec4, others pick one element with [i >> 2][i & 3].

struct Params {
    M: u32, N: u32, K: u32, batches: u32,
    a_offset: u32, a_row: u32, a_col: u32, tiles_m: u32,   // tiles_m: workgroups along m per batch
    b_offset: u32, b_row: u32, b_col: u32, tiles_n: u32,   // tiles_n: workgroups along n per batch
    out_offset: u32, batch_ndim: u32, group_m: u32,
    split_k: u32,                    // matmul_tiled: k elements per split-K part (K when not split)
    batch_shape: array<vec4<u32>, 2>,   // up to 8 (collapsed) batch dims, outermost first
    a_batch: array<vec4<u32>, 2>,       // a's stride per batch dim (0 where broadcast)
    b_batch: array<vec4<u32>, 2>,
    bias_offset: u32, bias_row: u32, bias_col: u32,   // bias of output (m, n):
                                     // element bias_offset + m * bias_row + n * bias_col
    split_stride: u32,               // matmul_tiled: out elements between split-K parts' partial sums
    norm_eps: f32, norm_offset: u32, // matmul_gemv_half's RMSNorm prologue: eps, the weight's offset
    rope_offset: u32, rope_row: u32, // its rope epilogue: the table's offset and row stride (elements)
    rope_pass_begin: u32, rope_pass_end: u32, // heads stored unrotated
    rope_pad0: u32, rope_pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<SA>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<SB>>;
@group(0) @binding(3) var<storage, read_write> out: array<O>;

fn a_elem(i: u32) -> T { return T(a[i >> 2u][i & 3u]); }
fn b_elem(i: u32) -> T { return T(b[i >> 2u][i & 3u]); }

// Output (m, n) as stored: the sum x plus the bias when there is one.
fn finish(x: T, m: u32, n: u32) -> O {
    if (BIAS) { return O(x + bias_load(params.bias_offset + m * params.bias_row + n * params.bias_col)); }
    return O(x);
}

// Element offsets of batch `batch` in a (x), b (y) and out (z).
fn batch_offsets(batch: u32) -> vec3<u32> {
    var oa = params.a_offset;
    var ob = params.b_offset;
    var rem = batch;
    for (var d = params.batch_ndim; d > 0u; d--) {
        let i = d - 1u;
        let size = params.batch_shape[i / 4u][i % 4u];
        let c = rem % size;
        rem = rem / size;
        oa += c * params.a_batch[i / 4u][i % 4u];
        ob += c * params.b_batch[i / 4u][i % 4u];
    }
    return vec3<u32>(oa, ob, params.out_offset + batch * params.M * params.N);
}
