// attention_dropout_bits: the keep bits of an attention forward with dropout
// (backend.h, attention.mask_words), for the forward kernels that do not store
// them as they go (all but attention_forward_quad).
//   -> words u32 [B H Tq, W] after lse's rows in its buffer (params.mask: the
//   first word's u32 offset, W words a row): bit b of word (row, w) set when
//   weight (row, key 32 w + b) is kept (Philox, attention_common.wgsl) and
//   the row sees the key (causal: key <= i + Tk - Tq; keys < Tk), else clear.
// One invocation per word: up to 8 Philox calls (4 keys each).

@group(0) @binding(1) var<storage, read_write> lse: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    let W = params.mask.y;
    if (t >= params.B * params.H * params.Tq * W) { return; }
    let row = t / W;
    let w = t % W;
    let last = last_key(row % params.Tq);   // keys past Tk - 1 never pass it
    var word = 0u;
    for (var q4 = 0u; q4 < 8u; q4++) {
        let j4 = 32u * w + 4u * q4;
        if (i32(j4) > last) { break; }
        let z = dropout_factors4(row, j4);
        for (var c = 0u; c < 4u; c++) {
            if (i32(j4 + c) <= last && z[c] != 0.0) { word |= 1u << (4u * q4 + c); }
        }
    }
    lse[params.mask.x + t] = word;
}
