// Elementwise transcendentals in f32, accurate to a few ulp (the built-ins may
// be far worse: WGSL allows exp/log errors that grow with the argument and
// sin/cos absolute errors of 2^-11). Measured against double precision on
// sampled f32 inputs: exp 1, log 1, log1p 2.5, tanh 2.5, erf 1.3, pow 2 ulp;
// sin/cos 2.6 ulp or 1.2e-7 absolute for every finite x.
// ew_opaque() (see elementwise_common.wgsl) pins every intermediate whose
// rounding the formula relies on: some compilers (Mesa's NIR) reassociate
// inexact float math, e.g. (1 + x) - 1 -> x, which would undo log1p's
// correction, the Cody-Waite reductions and pow's error-free transformations.

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> ew_bits_7f800000: u32 = 0x7f800000u;
var<private> ew_bits_7fc00000: u32 = 0x7fc00000u;

const EW_LN2_HI: f32 = 0.693115234375;          // 0x3f317000: n * EW_LN2_HI is exact
const EW_LN2_LO: f32 = 3.19461833e-05;          // 0x3805fdf4
const EW_LOG2E: f32 = 1.44269502;               // 0x3fb8aa3b
fn ew_inf() -> f32 { return bitcast<f32>(ew_bits_7f800000); }

fn ew_pow2(n: i32) -> f32 { return bitcast<f32>(u32(n + 127) << 23u); }

// e^(x + c) for a small correction c (c = 0 for plain exp).
fn ew_exp_ext(x: f32, c: f32) -> f32 {
    if (ew_isnan(x)) { return x; }
    let xc = min(max(x, -104.0), 89.0);
    let n = round(xc * EW_LOG2E);
    var r = ew_opaque(xc - n * EW_LN2_HI);
    r = ew_opaque(r - n * EW_LN2_LO);
    r = r + c;
    var p = 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = 1.0 + (r + r * r * p);
    let ni = i32(n);
    let n1 = ni >> 1u; // two factors keep 2^n in range for n in [-150, 128]
    return p * ew_pow2(n1) * ew_pow2(ni - n1);
}
fn ew_exp(x: f32) -> f32 { return ew_exp_ext(x, 0.0); }

// e^x - 1, accurate near 0 (used by tanh for |x| <= 20).
fn ew_expm1(x: f32) -> f32 {
    if (ew_isnan(x)) { return x; }
    let xc = min(max(x, -104.0), 89.0);
    let n = round(xc * EW_LOG2E);
    var r = ew_opaque(xc - n * EW_LN2_HI);
    r = ew_opaque(r - n * EW_LN2_LO);
    var p = 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    let q = r + r * r * p;
    let ni = i32(n);
    if (ni == 0) { return q; }
    let n1 = ni >> 1u;
    let s = ew_pow2(n1) * ew_pow2(ni - n1);
    return q * s + (s - 1.0);
}

// x = 2^e * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)); x finite, > 0.
struct EwLogParts { e: f32, f: f32 }
fn ew_log_parts(x: f32) -> EwLogParts {
    var b = bitcast<u32>(x);
    var e = 0;
    if (b < 0x00800000u) { b = bitcast<u32>(x * 8388608.0); e = -23; }
    e = e + i32(b >> 23u) - 127;
    var mb = (b & 0x7fffffu) | 0x3f800000u;
    if (mb > 0x3fb504f3u) { mb = mb - 0x00800000u; e = e + 1; }
    return EwLogParts(f32(e), bitcast<f32>(mb) - 1.0);
}

// 2/3 z + 2/5 z^2 + ... : log(1 + f) = 2 atanh(s) = 2s + s * ew_log_series(s^2).
fn ew_log_series(z: f32) -> f32 {
    return z * (2.0 / 3.0 + z * (2.0 / 5.0 + z * (2.0 / 7.0 + z * (2.0 / 9.0 + z * (2.0 / 11.0)))));
}

fn ew_log(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if (ew_isnan(x)) { return x; }
    if ((b & 0x7fffffffu) == 0u) { return -ew_inf(); }
    if ((b >> 31u) == 1u) { return bitcast<f32>(ew_bits_7fc00000); }
    if (b == 0x7f800000u) { return x; }
    let lp = ew_log_parts(x);
    let f = lp.f;
    let s = f / (2.0 + f);
    let r = ew_log_series(s * s);
    return lp.e * EW_LN2_HI + (f - (s * (f - r) - lp.e * EW_LN2_LO));
}

// log(1 + x) = log(u) * x / (u - 1) with u = 1 + x rounded.
fn ew_log1p(x: f32) -> f32 {
    if (bitcast<u32>(x) == 0x7f800000u) { return x; }
    let u = ew_opaque(1.0 + x);
    if (u == 1.0) { return x; }
    return ew_log(u) * (x / (u - 1.0));
}

fn ew_tanh(x: f32) -> f32 {
    if (ew_isnan(x)) { return x; }
    let a = abs(x);
    let sign = bitcast<u32>(x) & 0x80000000u;
    if (a >= 10.0) { return bitcast<f32>(sign | 0x3f800000u); }
    if (a < 0.000244140625) { return x; }
    let e = ew_expm1(2.0 * a);
    return bitcast<f32>(sign | bitcast<u32>(e / (e + 2.0)));
}

fn ew_sin_poly(r: f32) -> f32 {
    let z = r * r;
    var p = 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    return r + r * z * p;
}
fn ew_cos_poly(r: f32) -> f32 {
    let z = r * r;
    var p = -1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    return 1.0 - 0.5 * z + z * z * p;
}
// (high, low) words of a * b (WGSL has no 32x32 -> 64 multiply).
fn ew_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return vec2<u32>(ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), a * b);
}

// The first 320 bits of 2/pi, for exact reduction of large arguments.
var<private> ew_two_over_pi: array<u32, 10> = array<u32, 10>(
    0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u,
    0x3C439041u, 0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u);

// Bits [pos + 31, pos] of the 192-bit number w (least significant word first).
fn ew_bits32(w: ptr<function, array<u32, 6>>, pos: u32) -> u32 {
    let k = pos >> 5u;
    let s = pos & 31u;
    let lo = (*w)[k] >> s;
    if (s == 0u) { return lo; }
    return lo | ((*w)[k + 1u] << (32u - s));
}

// sin (offset 0) or cos (offset 1) for finite |x| >= 256 (Payne-Hanek):
// |x| = m 2^e with m a 24-bit integer; m times the 128 bits of 2/pi that
// matter (earlier bits only add multiples of 4 quadrants) is exact, and gives
// the quadrant and 64 bits of the fraction.
fn ew_sincos_large(x: f32, offset: u32) -> f32 {
    let b = bitcast<u32>(x) & 0x7fffffffu;
    let e = i32(b >> 23u) - 150;
    let m = (b & 0x7fffffu) | 0x800000u;
    let j0 = select(0, (e - 2) / 32, e >= 2);
    let p = u32(32 * (j0 + 4) - e); // fraction bits of the product
    let p0 = ew_mul_wide(m, ew_two_over_pi[j0]);
    let p1 = ew_mul_wide(m, ew_two_over_pi[j0 + 1]);
    let p2 = ew_mul_wide(m, ew_two_over_pi[j0 + 2]);
    let p3 = ew_mul_wide(m, ew_two_over_pi[j0 + 3]);
    var w: array<u32, 6>;
    w[0] = p3.y;
    let s1 = p3.x + p2.y;
    let c1 = select(0u, 1u, s1 < p3.x);
    w[1] = s1;
    let t2 = p2.x + p1.y;
    let s2 = t2 + c1;
    let c2 = select(0u, 1u, t2 < p2.x) + select(0u, 1u, s2 < t2);
    w[2] = s2;
    let t3 = p1.x + p0.y;
    let s3 = t3 + c2;
    let c3 = select(0u, 1u, t3 < p1.x) + select(0u, 1u, s3 < t3);
    w[3] = s3;
    w[4] = p0.x + c3;
    w[5] = 0u;
    var q = ew_bits32(&w, p) & 3u;
    var f1 = ew_bits32(&w, p - 32u);
    var f2 = ew_bits32(&w, p - 64u);
    var sign = 1.0;
    if ((f1 >> 31u) == 1u) { // fraction >= 1/2: the next quadrant, minus the rest
        q = q + 1u;
        f2 = ~f2 + 1u;
        f1 = ~f1 + select(0u, 1u, f2 == 0u);
        sign = -1.0;
    }
    let f = f32(f1) * 2.3283064365386963e-10 + f32(f2) * 5.421010862427522e-20;
    let r = sign * f * 1.57079637;
    q = q + offset;
    var v = select(ew_sin_poly(r), ew_cos_poly(r), (q & 1u) == 1u);
    v = select(v, -v, (q & 2u) == 2u);
    return select(v, -v, offset == 0u && (bitcast<u32>(x) >> 31u) == 1u);
}

// sin (quadrant offset 0) or cos (offset 1): below 256, x reduced by multiples
// of pi/2 given in three parts, the first two short enough that k * part is
// exact (Cody-Waite); above, exactly (Payne-Hanek).
fn ew_sincos(x: f32, offset: u32) -> f32 {
    // FLT_MAX exactly: Tint rejects the decimal 3.4028235e38 (above FLT_MAX before rounding)
    if (!(abs(x) <= 0x1.fffffep+127f)) { return bitcast<f32>(ew_bits_7fc00000); }
    if (abs(x) < 0.000244140625) { return select(x, 1.0, offset == 1u); }
    if (abs(x) >= 256.0) { return ew_sincos_large(x, offset); }
    let k = round(x * 0.636619747);
    var r = ew_opaque(x - k * 1.5703125);
    r = ew_opaque(r - k * 4.83751297e-04);
    r = r - k * 7.54979013e-08;
    let q = bitcast<u32>(i32(k)) + offset;
    let v = select(ew_sin_poly(r), ew_cos_poly(r), (q & 1u) == 1u);
    return select(v, -v, (q & 2u) == 2u);
}
fn ew_sin(x: f32) -> f32 { return ew_sincos(x, 0u); }
fn ew_cos(x: f32) -> f32 { return ew_sincos(x, 1u); }

// erf: x + x P(x^2) below 0.875, 1 - exp(-Q(|x|)) below 4, else +-1. Minimax
// coefficients from ARM optimized-routines erff (MIT), max error ~1.3 ulp.
fn ew_erf(x: f32) -> f32 {
    if (ew_isnan(x)) { return x; }
    let a = abs(x);
    if (a < 0.875) {
        let x2 = x * x;
        var r = -0x1.3a1a82p-11;
        r = r * x2 + 0x1.473f48p-08;
        r = r * x2 - 0x1.b68bd2p-06;
        r = r * x2 + 0x1.ce1a46p-04;
        r = r * x2 - 0x1.8126e0p-02;
        r = r * x2 + 0x1.06eba6p-03;
        return x + x * r;
    }
    let sign = bitcast<u32>(x) & 0x80000000u;
    if (a >= 4.0) { return bitcast<f32>(sign | 0x3f800000u); }
    var r = 0x1.222900p-16 * a - 0x1.91d2ccp-12;
    let u = 0x1.fd1336p-9 * a - 0x1.8d6300p-6;
    r = r * (a * a) + u;
    r = r * a + 0x1.b55cb0p-4;
    r = r * a + 0x1.450aa0p-1;
    r = r * a + 0x1.079d0cp-3;
    r = r * a + a;
    return bitcast<f32>(sign | bitcast<u32>(1.0 - ew_exp(-r)));
}

fn ew_sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + ew_exp(ew_neg(x))); }
fn ew_silu(x: f32) -> f32 { return x * (1.0 / (1.0 + ew_exp(ew_neg(x)))); }
fn ew_softplus(x: f32) -> f32 { return ew_log1p(ew_exp(ew_neg(ew_abs(x)))) + select(0.0, x, x > 0.0); }
fn ew_gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + ew_erf(x * 0.707106769)); }
fn ew_gelu_tanh(x: f32) -> f32 { return 0.5 * x * (1.0 + ew_tanh(0.797884583 * (x + 0.0447149985 * x * x * x))); }

// The exact error a * b - p of the rounded product p (Dekker; the split keeps
// the top 12 significand bits by masking, so no product is ever rounded).
fn ew_hi12(a: f32) -> f32 { return bitcast<f32>(bitcast<u32>(a) & 0xfffff000u); }
fn ew_prod_err(a: f32, b: f32, p: f32) -> f32 {
    let ah = ew_hi12(a);
    let al = ew_opaque(a - ah);
    let bh = ew_hi12(b);
    let bl = ew_opaque(b - bh);
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// pow with C99 special cases; |x|^y = exp(y log|x|) with log|x| carried as
// hi + lo (double-f32) so large y * log|x| keeps its accuracy (max 2 ulp).
fn ew_pow(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) { return 1.0; }
    if (ew_isnan(x) || ew_isnan(y)) { return x + y; }
    let ax = abs(x);
    let ay = abs(y);
    let xneg = (bitcast<u32>(x) >> 31u) == 1u;
    let yint = floor(y) == y;
    let yodd = yint && ay < 16777216.0 && (i32(y) & 1) == 1;
    let sgn = select(1.0, -1.0, xneg && yodd);
    if (ay == ew_inf()) {
        if (ax == 1.0) { return 1.0; }
        return select(0.0, ew_inf(), (ax < 1.0) == (y < 0.0));
    }
    if (ax == 0.0) { return sgn * select(0.0, ew_inf(), y < 0.0); }
    if (ax == ew_inf()) { return sgn * select(ew_inf(), 0.0, y < 0.0); }
    if (xneg && !yint) { return bitcast<f32>(ew_bits_7fc00000); }
    if (y == 1.0) { return x; }
    if (y == 2.0) { return x * x; }
    let lp = ew_log_parts(ax);
    let f = lp.f;
    let d = ew_opaque(2.0 + f);
    let dlo = f - (d - 2.0);
    let s = f / d;
    let sd = ew_opaque(s * d);
    let slo = (((f - sd) - ew_prod_err(s, d, sd)) - s * dlo) / d;
    let rp = ew_log_series(s * s);
    let ehi = lp.e * EW_LN2_HI;
    let t = 2.0 * s;
    var hi = ew_opaque(ehi + t);
    var lo = ((ehi - hi) + t) + (2.0 * slo + s * rp + lp.e * EW_LN2_LO);
    let h2 = ew_opaque(hi + lo);
    lo = lo - (h2 - hi);
    hi = h2;
    let p = ew_opaque(y * hi);
    if (!(abs(p) < 105.0)) { return sgn * ew_exp(p); }
    let c = ew_prod_err(y, hi, p) + y * lo;
    return sgn * ew_exp_ext(p, c);
}
