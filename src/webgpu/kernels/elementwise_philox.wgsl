// Philox-4x32-10, the WGSL twin of src/core/philox.h (WGSL has no 32x32->64
// multiply: ew_mul_wide in elementwise_math.wgsl builds it from 16-bit halves). rand/randn of element i
// use key (seed lo, seed hi) and counter (i, 0, 0, 0); the seed is in params.

fn ew_philox(key: vec2<u32>, counter: vec4<u32>) -> vec4<u32> {
    var k = key;
    var c = counter;
    for (var round = 0; round < 10; round = round + 1) {
        let p0 = ew_mul_wide(0xD2511F53u, c.x);
        let p1 = ew_mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

// Uniform [0, 1): the first word >> 8, times 2^-24.
fn ew_rand_uniform(key: vec2<u32>, i: u32) -> f32 {
    let w = ew_philox(key, vec4<u32>(i, 0u, 0u, 0u));
    return f32(w.x >> 8u) * 5.9604644775390625e-8;
}

// Normal: Box-Muller on the first two words, u1 in (0, 1].
fn ew_rand_normal(key: vec2<u32>, i: u32) -> f32 {
    let w = ew_philox(key, vec4<u32>(i, 0u, 0u, 0u));
    let u1 = f32((w.x >> 8u) + 1u) * 5.9604644775390625e-8;
    let u2 = f32(w.y >> 8u) * 5.9604644775390625e-8;
    return sqrt(-2.0 * ew_log(u1)) * ew_cos(6.28318548 * u2);
}
