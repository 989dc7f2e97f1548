// attention_load_f32: element i of the f32 bindings q, k, v (QKV_WORD f32)
// for the attention kernels (webgpu_attention.c appends this file or
// attention_load_f16.wgsl; the backward kernels that stage K and V through
// attention_kv_quads.wgsl take this one).

fn ld_q(i: u32) -> f32 { return q[i]; }
fn ld_k(i: u32) -> f32 { return k[i]; }
fn ld_v(i: u32) -> f32 { return v[i]; }
