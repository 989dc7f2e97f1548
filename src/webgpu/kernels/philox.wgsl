// Philox-4x32-10, the WGSL twin of src/core/philox.h: the words of
// philox4x32_10(key, counter) equal wgt_philox4x32_10's. Shared by the
// elementwise kernels' rand/randn (elementwise_philox.wgsl) and the attention
// kernels' dropout (attention_common.wgsl), which put this file before theirs.

// 32 x 32 -> 64-bit product as (hi, lo), from 16-bit halves (WGSL has no
// high multiply). Philox is most of the cost of dropout, so this is the short
// form: a b = p11 2^32 + (p01 + p10) 2^16 + p00; t = p01 + (p00 >> 16) and
// u = p10 + (t & 0xFFFF) cannot overflow (each < 2^32 - 2^16), and
// hi = p11 + (t >> 16) + (u >> 16); two of the products fold into
// multiply-adds, and the low word is the wrapping product itself.
fn philox_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xFFFFu; let a1 = a >> 16u;
    let b0 = b & 0xFFFFu; let b1 = b >> 16u;
    let t = a0 * b1 + ((a0 * b0) >> 16u);
    let u = a1 * b0 + (t & 0xFFFFu);
    return vec2<u32>(a1 * b1 + (t >> 16u) + (u >> 16u), a * b);
}

fn philox4x32_10(key: vec2<u32>, counter: vec4<u32>) -> vec4<u32> {
    var k = key;
    var c = counter;
    for (var round = 0; round < 10; round++) {
        let p0 = philox_mul_wide(0xD2511F53u, c.x);
        let p1 = philox_mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}
