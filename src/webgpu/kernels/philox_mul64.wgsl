// philox_mul_wide for philox.wgsl where the device has 64-bit integers
// (wgpu-native's ShaderInt64): one 64-bit product of the zero-extended words,
// which a GPU does in one or two instructions (NVIDIA: a wide multiply-add)
// against ~12 for the 16-bit halves of philox_mul16.wgsl. Philox bounds the
// dropout kernels' time (integer throughput), so this is most of their cost.
fn philox_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let p = u64(a) * u64(b);
    return vec2<u32>(u32(p >> 32u), u32(p));
}
