// attention_kv_quads: a quad of key j's k and v rows for the kernels that
// stage K and V tiles from bindings named k and v (attention_forward,
// _flash, _tiled, _quad, attention_backward_q, _q_tiled, _kv_tiled; put after
// the kernel's file by webgpu_attention.c, want bit 5, with the loaders
// ld_k and ld_v of attention_load_f32.wgsl or, forward kernels with f16
// inputs, attention_load_f16.wgsl).

struct KvQuads { k: vec4<f32>, v: vec4<f32> }

// Columns d0 .. d0 + 3 of key j's k and v rows (kv head g of batch b), zeros
// past Tk and D: the strides are any, so four loads each.
fn kv_quads(b: u32, g: u32, j: u32, d0: u32) -> KvQuads {
    var r = KvQuads(vec4<f32>(), vec4<f32>());
    if (j < params.Tk) {
        for (var c = 0u; c < 4u; c++) {
            if (d0 + c < params.D) {
                r.k[c] = ld_k(elem(params.offsets[0].y, params.k_st, b, g, j, d0 + c));
                r.v[c] = ld_v(elem(params.offsets[0].z, params.v_st, b, g, j, d0 + c));
            }
        }
    }
    return r;
}
