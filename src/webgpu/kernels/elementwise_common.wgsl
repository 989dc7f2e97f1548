// Elementwise helpers: the value conversions and comparisons of src/core/expr.h,
// written with integer operations wherever the result must match the CPU bit
// for bit (WGSL leaves f16 rounding, i32 -> f32 rounding, NaN handling and
// denormal flushing of hardware ops to the implementation).
//
// Prepended to every generated elementwise kernel (webgpu_elementwise_codegen.c),
// which also defines ew_opaque(x): x itself, hidden from the optimizer (its
// bits are ORed with a uniform zero), so that every float node result keeps
// its own rounding as on the CPU: a product is never fused into a following
// add, and (a + b) - a is never simplified to b.

fn ew_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

// Truth value: nonzero, NaN included; -0 is false.
fn ew_truth(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }

// IEEE half bits (low 16) -> f32, exact (subnormals, inf, NaN payload kept).
// Kernels use ew_f16_to_f32, which is this or unpack2x16float where a one-time
// device check found the hardware identical (webgpu_elementwise.c).
fn ew_f16_to_f32_exact(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
    if (e == 0u) { return bitcast<f32>(sign | bitcast<u32>(f32(m) * 5.9604644775390625e-8)); }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// f32 -> IEEE half bits, round to nearest even; overflow -> inf; NaN -> 0x7e00
// with the sign kept (the CPU's cpu_f32_to_f16). Kernels use ew_f32_to_f16:
// this, or pack2x16float where the device check found it identical.
fn ew_f32_to_f16_exact(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let sign = (x >> 16u) & 0x8000u;
    let a = x & 0x7fffffffu;
    if (a >= 0x47800000u) { return sign | select(0x7c00u, 0x7e00u, a > 0x7f800000u); }
    if (a >= 0x38800000u) {
        let r = a + 0xc8000fffu + ((a >> 13u) & 1u); // rebias, round half to even
        return sign | (r >> 13u);
    }
    let e = a >> 23u;
    if (e < 102u) { return sign; }
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e; // 14..24
    var q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q = q + 1u; }
    return sign | q;
}

// CAST I32 -> F32, round to nearest even.
fn ew_i2f(v: i32) -> f32 {
    let neg = v < 0;
    let u = select(bitcast<u32>(v), 0u - bitcast<u32>(v), neg);
    if (u <= 0x1000000u) { return f32(v); }
    let shift = 8u - countLeadingZeros(u);
    var q = u >> shift;
    let rem = u & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q = q + 1u; }
    let mag = f32(q) * bitcast<f32>((127u + shift) << 23u);
    return select(mag, -mag, neg);
}

// CAST F32 -> I32: toward zero, saturating, NaN -> 0.
fn ew_f2i(x: f32) -> i32 {
    if (ew_isnan(x)) { return 0; }
    if (x >= 2147483648.0) { return 2147483647; }
    if (x <= -2147483648.0) { return bitcast<i32>(0x80000000u); }
    return i32(x);
}

// Comparisons on an order-preserving integer image of the bits: exact whatever
// the hardware does with NaN and denormals; +0 == -0.
fn ew_order(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) == 0u) { return 0x80000000u; }
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}
fn ew_eq(a: f32, b: f32) -> bool { return !ew_isnan(a) && !ew_isnan(b) && ew_order(a) == ew_order(b); }
fn ew_lt(a: f32, b: f32) -> bool { return !ew_isnan(a) && !ew_isnan(b) && ew_order(a) < ew_order(b); }
fn ew_le(a: f32, b: f32) -> bool { return !ew_isnan(a) && !ew_isnan(b) && ew_order(a) <= ew_order(b); }

// MAX/MIN: a > b ? a : b, then NaN in b, then NaN in a wins (the CPU's order).
fn ew_max(a: f32, b: f32) -> f32 {
    var m = select(b, a, ew_lt(b, a));
    if (ew_isnan(b)) { m = b; }
    if (ew_isnan(a)) { m = a; }
    return m;
}
fn ew_min(a: f32, b: f32) -> f32 {
    var m = select(b, a, ew_lt(a, b));
    if (ew_isnan(b)) { m = b; }
    if (ew_isnan(a)) { m = a; }
    return m;
}

fn ew_neg(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ 0x80000000u); }
fn ew_abs(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu); }
fn ew_sign(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if (ew_isnan(x)) { return x; }
    if ((b & 0x7fffffffu) == 0u) { return 0.0; }
    return select(1.0, -1.0, (b >> 31u) == 1u);
}
fn ew_relu(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if (ew_isnan(x) || ((b >> 31u) == 0u && b != 0u)) { return x; }
    return 0.0;
}
// floor/ceil/round keep the sign of x (floor(-0.5) = -1, ceil(-0.5) = -0).
fn ew_floor(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(floor(x)) | (bitcast<u32>(x) & 0x80000000u)); }
fn ew_ceil(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(ceil(x)) | (bitcast<u32>(x) & 0x80000000u)); }
fn ew_round(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(round(x)) | (bitcast<u32>(x) & 0x80000000u)); }

fn ew_ineg(a: i32) -> i32 { return bitcast<i32>(0u - bitcast<u32>(a)); }
fn ew_iabs(a: i32) -> i32 { return select(a, ew_ineg(a), a < 0); }
fn ew_isign(a: i32) -> i32 { return select(0, 1, a > 0) - select(0, 1, a < 0); }
fn ew_b2i(b: bool) -> i32 { return select(0, 1, b); }
