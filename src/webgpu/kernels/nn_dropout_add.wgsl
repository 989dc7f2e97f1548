// DROPOUT_ADD (contract in src/core/backend.h): x + dropout(h) that also keeps
// the mask as bits, for the backward (nn_dropout_masked.wgsl) to read instead
// of drawing it again.
//   x [n], h [n] f32 -> out [n] f32 = x + where(u >= p, h * scale, 0),
//   mask u32 [W]: bit 4 j + c of word w = element 4 (w + j W) + c kept
// u is element e's uniform of the elementwise rand (elementwise_philox.wgsl:
// word e % 4 of Philox counter e / 4, top 24 bits); each product and sum is
// rounded on its own (opaque: no fma, no reassociation), so out is the
// expression kernel's, bit for bit. One invocation per mask word: its 8 quads
// lie W apart, so the 32 invocations of a warp load neighbouring quads, as
// vec4s (the host takes n % 4 == 0, offsets multiples of 4 and buffers of
// whole 16-byte words). After philox.wgsl and the philox_mul_wide file.
// Dispatch: ceil(W / 256).

struct Params {
    n: u32,
    words: u32,          // W
    quads: u32,          // ceil(n / 4)
    seed_lo: u32,
    seed_hi: u32,
    x_offset: u32,       // in vec4s
    h_offset: u32,
    out_offset: u32,
    mask_offset: u32,    // in u32
    p: f32,
    scale: f32,
    zero: u32,           // 0, which the compiler cannot see (opaque)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> h: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> mask: array<u32>;

fn opaque(v: vec4<f32>) -> vec4<f32> { return bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) | vec4<u32>(params.zero)); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (w >= params.words) {
        return;
    }
    let key = vec2<u32>(params.seed_lo, params.seed_hi);
    var bits = 0u;
    for (var j = 0u; j < 8u; j++) {
        let q = w + j * params.words;
        if (q >= params.quads) {
            break;
        }
        let r = philox4x32_10(key, vec4<u32>(q, 0u, 0u, 0u));
        let keep = vec4<f32>(r >> vec4<u32>(8u)) * 5.9604644775390625e-8 >= vec4<f32>(params.p);
        bits |= dot(select(vec4<u32>(0u), vec4<u32>(1u, 2u, 4u, 8u), keep), vec4<u32>(1u)) << (4u * j);
        let dropped = select(vec4<f32>(0.0), opaque(h[params.h_offset + q] * params.scale), keep);
        out[params.out_offset + q] = opaque(x[params.x_offset + q] + dropped);
    }
    mask[params.mask_offset + w] = bits;
}
