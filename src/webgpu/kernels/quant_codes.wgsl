// quant_codes: unpacking the group-wise codes of the quantized matmul kernels
// (quant_matmul, quant_gemv, quant_matmul_tiled), prepended to each of them by
// webgpu_quant.c. Weight (n, k) = code * scale: 8 bits: byte k % 4 of word
// k / 4 as int8; 4 bits: nibble k % 8 (low first) of word k / 8, minus 8.

fn bytes4(w: u32) -> vec4<f32> {       // four int8 codes, byte 0 first
    let v = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w));
    return vec4<f32>(v >> vec4<u32>(24u));            // arithmetic shifts sign-extend each byte
}

fn nibbles_lo(w: u32) -> vec4<f32> {   // codes 0..3 of a word of eight 4-bit codes, minus 8
    return vec4<f32>(vec4<u32>(w, w >> 4u, w >> 8u, w >> 12u) & vec4<u32>(15u)) - vec4<f32>(8.0);
}

fn nibbles_hi(w: u32) -> vec4<f32> {   // codes 4..7
    return vec4<f32>(vec4<u32>(w >> 16u, w >> 20u, w >> 24u, w >> 28u) & vec4<u32>(15u)) - vec4<f32>(8.0);
}
