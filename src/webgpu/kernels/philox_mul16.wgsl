// philox_mul_wide for philox.wgsl where shaders have no 64-bit integers
// (browsers, adapters without them): the product from 16-bit halves.
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
