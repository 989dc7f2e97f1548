// attention_load_f16: element i of f16 q, k, v read in place (the forward
// kernels with QKV_WORD u32: two f16 a word, element i in half i & 1 of word
// i >> 1), where f16 inputs went through f32 copies (three dispatches) before.
// unpack2x16float needs no shader-f16 feature; the value is the f16's exactly.

fn ld_q(i: u32) -> f32 { return unpack2x16float(q[i >> 1u])[i & 1u]; }
fn ld_k(i: u32) -> f32 { return unpack2x16float(k[i >> 1u])[i & 1u]; }
fn ld_v(i: u32) -> f32 { return unpack2x16float(v[i >> 1u])[i & 1u]; }
