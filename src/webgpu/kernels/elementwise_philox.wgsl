// rand and randn from Philox-4x32-10 (philox.wgsl, put before this file: the
// WGSL twin of src/core/philox.h). rand of element i is
// word i % 4 of philox(key, (i / 4, 0, 0, 0)); randn of element i uses words
// 2 (i % 2) and 2 (i % 2) + 1 of philox(key, (i / 2, 0, 0, 0)); the key (seed
// lo, seed hi) is in params. Neighbouring elements share one call: each draw
// keeps the last call's words in private variables (an invocation's chunk
// walks consecutive elements), so four uniforms (two normals) cost one Philox
// evaluation instead of four (two). Philox is integer work that WGSL cannot do
// cheaply (no 32 x 32 -> 64 multiply), so this is what keeps dropout at the
// memory's speed rather than the integer units'.

// The last counter each draw evaluated and its words (a kernel has one key).
// 0xFFFFFFFF is no counter: i / 2 < 2^31.
var<private> ew_uniform_counter: u32 = 0xFFFFFFFFu;
var<private> ew_uniform_words: vec4<u32>;
var<private> ew_normal_counter: u32 = 0xFFFFFFFFu;
var<private> ew_normal_words: vec4<u32>;

// Uniform [0, 1): word i % 4 of counter i / 4, >> 8, times 2^-24.
fn ew_rand_uniform(key: vec2<u32>, i: u32) -> f32 {
    if (i >> 2u != ew_uniform_counter) {
        ew_uniform_counter = i >> 2u;
        ew_uniform_words = philox4x32_10(key, vec4<u32>(i >> 2u, 0u, 0u, 0u));
    }
    return f32(ew_uniform_words[i & 3u] >> 8u) * 5.9604644775390625e-8;
}

// Normal: Box-Muller on words 2 (i % 2), 2 (i % 2) + 1 of counter i / 2, u1 in (0, 1].
fn ew_rand_normal(key: vec2<u32>, i: u32) -> f32 {
    if (i >> 1u != ew_normal_counter) {
        ew_normal_counter = i >> 1u;
        ew_normal_words = philox4x32_10(key, vec4<u32>(i >> 1u, 0u, 0u, 0u));
    }
    let w = select(ew_normal_words.xy, ew_normal_words.zw, (i & 1u) != 0u);
    let u1 = f32((w.x >> 8u) + 1u) * 5.9604644775390625e-8;
    let u2 = f32(w.y >> 8u) * 5.9604644775390625e-8;
    return sqrt(-2.0 * ew_log(u1)) * ew_cos(6.28318548 * u2);
}
