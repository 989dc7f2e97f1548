// DROPOUT_MASKED (contract in src/core/backend.h): the gradient through the
// mask DROPOUT_ADD kept (nn_dropout_add.wgsl): no Philox to draw again.
//   g [n] f32, mask u32 [W] -> dh [n] f32 = where(kept, g * scale, 0)
// Element 4 q + c's bit is bit 4 (q / W) + c of word q % W. One invocation a
// quad, as vec4s (n % 4 == 0, as for DROPOUT_ADD). Dispatch: ceil(n / 4 / 256).

struct Params {
    n: u32,
    words: u32,
    quads: u32,
    seed_lo: u32,        // unused here (one parameter block for both kernels)
    seed_hi: u32,
    x_offset: u32,       // g, in vec4s
    h_offset: u32,       // unused
    out_offset: u32,     // dh, in vec4s
    mask_offset: u32,    // in u32
    p: f32,
    scale: f32,
    zero: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> g: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read_write> dh: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (q >= params.quads) {
        return;
    }
    let nibble = mask[params.mask_offset + q % params.words] >> (4u * (q / params.words));
    let keep = (vec4<u32>(nibble) & vec4<u32>(1u, 2u, 4u, 8u)) != vec4<u32>(0u);
    dh[params.out_offset + q] = select(vec4<f32>(0.0), g[params.x_offset + q] * params.scale, keep);
}
