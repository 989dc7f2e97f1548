// Philox-4x32-10, the WGSL twin of src/core/philox.h: the words of
// philox4x32_10(key, counter) equal wgt_philox4x32_10's. Shared by the
// elementwise kernels' rand/randn (elementwise_philox.wgsl) and the attention
// kernels' dropout (attention_common.wgsl), which put this file before theirs,
// together with the file that defines philox_mul_wide(a, b) -> (hi, lo), the
// 32 x 32 -> 64-bit product (webgpu_philox_mul_file): philox_mul64.wgsl where
// the device has 64-bit integers, else philox_mul16.wgsl.

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
