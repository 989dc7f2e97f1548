// quant_q8_group: one group of 32 values into 8-bit codes, the rule of
// QMATMUL's int8_x and QROWS (backend.h): s = max|x| * (1/127), code =
// round-to-even(x / s) clamped to [-127, 127], four codes a word (byte 0 =
// the lowest index); a group of zeros gets s = 0 and codes 0, one holding a
// NaN or an infinity s = NaN and codes 0. Prepended to quant_rows_int8.wgsl
// and quant_rows.wgsl (the CPU references: cpu_quant.c's quantize_group,
// cpu_quant_rows.c). s is a product with 1/127 rounded to f32 (WGSL's
// division is accurate to 2.5 ulp, and on an H200 amax / 127.0 missed the
// CPU's quotient in a few groups of a hundred; a product is correctly
// rounded everywhere), so every backend stores the same scales. x / s may
// still round differently from the CPU's by an ulp, so a value within an ulp
// of a tie may get the other code.

// The group's scale, NaN when a value is not finite (by the exponent bits: a
// compiler may assume floats are finite).
fn q8_group_scale(v: array<vec4<f32>, 8>) -> f32 {
    var amax = 0.0;
    var finite = true;
    for (var i = 0u; i < 8u; i++) {
        finite = finite && q8_finite(v[i]);
        let a = abs(v[i]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    return q8_scale_of(amax, finite);
}

// Whether four values are finite, by their exponent bits.
fn q8_finite(v: vec4<f32>) -> bool {
    return !any((bitcast<vec4<u32>>(v) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
}

// The scale of a group of max |x| amax: amax * (1/127 rounded to f32), NaN
// when a value is not finite (quant_gemv_rows' INT8_X finds amax over four
// invocations and calls this too).
fn q8_scale_of(amax: f32, finite: bool) -> f32 {
    return select(bitcast<f32>(0x7fc00000u), amax * bitcast<f32>(0x3c010204u), finite);
}

// The word of codes of four values of a group of scale s (x / s per element,
// as the reference divides, not x * (1 / s)); 0 when s is 0 or NaN.
fn q8_group_word(v: vec4<f32>, s: f32) -> u32 {
    // s's exponent bits, not a comparison, tell NaN (a compiler may assume floats are not NaN)
    let ok = (bitcast<u32>(s) & 0x7f800000u) != 0x7f800000u && s > 0.0;
    let q = select(vec4<f32>(0.0), v / vec4<f32>(s), ok);
    let c = vec4<i32>(clamp(round(q), vec4<f32>(-127.0), vec4<f32>(127.0)));
    let b = vec4<u32>(bitcast<vec4<u32>>(c) & vec4<u32>(0xffu));
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}
