// REDUCE: the per-kind state, how elements fold into it, how two states merge
// (in any order: the result does not depend on the tree shape), and the final
// value. Needs from the prelude: alias A (accumulator: f32 or i32), OP (the
// wgt_reduce_kind), IS_FLOAT (A is f32), WX, WY (workgroup shape).
//
// Semantics (those of the CPU oracle, src/cpu/cpu_reduce.c):
//   sum / mean / prod: plain; i32 arithmetic wraps. Empty: sum 0, prod 1, mean NaN.
//     A float product is kept as a fraction in [0.5, 1) and a binary exponent
//     (State.idx, as i32), so partial products neither overflow nor underflow
//     before the end (as the CPU's double would not): a row whose first half
//     overflows f32 and second half brings it back gives the right value.
//   max / min: NaN propagates; the empty state is the identity (params.identity).
//   argmax / argmin: NaN counts as the extreme, the first NaN (lowest
//     position) wins; among equal values the lowest position wins.
//   var / std: Welford per thread, Chan's formula to merge; divided by
//     max(n - correction, 0) (0/0 = NaN, x/0 = inf).

const OP_SUM = 0u;
const OP_MEAN = 1u;
const OP_MAX = 2u;
const OP_MIN = 3u;
const OP_PROD = 4u;
const OP_VAR = 5u;
const OP_STD = 6u;
const OP_ARGMAX = 7u;
const OP_ARGMIN = 8u;

const EXTREMUM = OP == OP_MAX || OP == OP_MIN;
const PICKS = OP == OP_ARGMAX || OP == OP_ARGMIN;
const WANTS_MAX = OP == OP_MAX || OP == OP_ARGMAX;
const MOMENTS = OP == OP_VAR || OP == OP_STD;
const SCALED_PROD = OP == OP_PROD && IS_FLOAT;

struct State {
    v: A,       // sum / product (float: its fraction) / max / min / best value
    idx: u32,   // arg*: position of the best value; float prod: exponent (i32 bits)
    n: f32,     // elements folded (arg*: 0 = empty; var: count)
    mean: f32,  // var
    m2: f32,    // var: sum of squared deviations from mean
}

fn state_empty() -> State {
    var s: State;
    s.v = A(0);
    if (OP == OP_PROD) {
        s.v = A(1);
    }
    if (EXTREMUM) {
        s.v = bitcast<A>(params.identity);
    }
    s.idx = 0u;
    s.n = 0.0;
    s.mean = 0.0;
    s.m2 = 0.0;
    return s;
}

fn value_is_nan(v: A) -> bool {
    return IS_FLOAT && (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn f32_is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// Float prod: s.v * m (m = fraction or element) with the exponent moved to idx.
fn scaled_multiply(s: State, m: A, exponent: i32) -> State {
    var r = s;
    let p = f32(s.v * m);
    var e = bitcast<i32>(s.idx) + exponent;
    if (p != 0.0 && f32_is_finite(p)) {
        let f = frexp(p);
        r.v = A(f.fract);
        e += f.exp;
    } else {
        r.v = A(p);
    }
    r.idx = bitcast<u32>(e);
    return r;
}

// Float prod: fraction * 2^exponent, rounded once into f32's range.
fn scaled_value(s: State) -> f32 {
    let v = f32(s.v);
    let e = bitcast<i32>(s.idx);
    if (v == 0.0 || !f32_is_finite(v)) {
        return v;
    }
    let sign = bitcast<u32>(v) & 0x80000000u;
    if (e > 128) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    if (e < -160) {
        return bitcast<f32>(sign);
    }
    let half = e / 2; // two steps keep each ldexp's exponent in range
    return ldexp(ldexp(v, half), e - half);
}

// max / min of two values, NaN-propagating.
fn extremum(a: A, b: A) -> A {
    if (value_is_nan(a)) {
        return a;
    }
    if (value_is_nan(b)) {
        return b;
    }
    if (WANTS_MAX) {
        return max(a, b);
    }
    return min(a, b);
}

// Whether b replaces a as the best (arg*).
fn replaces(a: State, b: State) -> bool {
    if (b.n == 0.0) {
        return false;
    }
    if (a.n == 0.0) {
        return true;
    }
    let an = value_is_nan(a.v);
    let bn = value_is_nan(b.v);
    if (an || bn) {
        if (an && bn) {
            return b.idx < a.idx;
        }
        return bn;
    }
    if (b.v == a.v) {
        return b.idx < a.idx;
    }
    if (WANTS_MAX) {
        return b.v > a.v;
    }
    return b.v < a.v;
}

fn merge(a: State, b: State) -> State {
    var r = a;
    if (EXTREMUM) {
        r.v = extremum(a.v, b.v);
    } else if (PICKS) {
        if (replaces(a, b)) {
            r = b;
        }
    } else if (MOMENTS) {
        if (a.n == 0.0) {
            r = b;
        } else if (b.n != 0.0) {
            let n = a.n + b.n;
            let d = b.mean - a.mean;
            r.n = n;
            r.mean = a.mean + d * (b.n / n);
            r.m2 = a.m2 + b.m2 + d * d * (a.n * (b.n / n));
        }
    } else if (SCALED_PROD) {
        r = scaled_multiply(a, b.v, bitcast<i32>(b.idx));
    } else if (OP == OP_PROD) {
        r.v = a.v * b.v;
    } else {
        r.v = a.v + b.v;
    }
    return r;
}

// Folds element v at reduced position pos.
fn fold(s: State, v: A, pos: u32) -> State {
    var r = s;
    if (EXTREMUM) {
        r.v = extremum(s.v, v);
    } else if (PICKS) {
        var e: State;
        e.v = v;
        e.idx = pos;
        e.n = 1.0;
        e.mean = 0.0;
        e.m2 = 0.0;
        if (replaces(s, e)) {
            r = e;
        }
    } else if (MOMENTS) {
        let f = f32(v);
        r.n = s.n + 1.0;
        let d = f - s.mean;
        r.mean = s.mean + d / r.n;
        r.m2 = s.m2 + d * (f - r.mean);
    } else if (SCALED_PROD) {
        r = scaled_multiply(s, v, 0);
    } else if (OP == OP_PROD) {
        r.v = s.v * v;
    } else {
        r.v = s.v + v;
    }
    return r;
}

// The output value's bits (f32 or i32) for a row of row_len elements.
fn finish(s: State) -> u32 {
    let n = params.row_len;
    if (OP == OP_ARGMAX || OP == OP_ARGMIN) {
        return s.idx;
    }
    if (OP == OP_MEAN) {
        if (n == 0u) {
            return params.nan_bits;
        }
        return bitcast<u32>(f32(s.v) / f32(n));
    }
    if (MOMENTS) {
        let denominator = max(f32(n) - f32(params.correction), 0.0);
        if (denominator == 0.0) {
            if (s.m2 > 0.0) {
                return 0x7f800000u;
            }
            return params.nan_bits;
        }
        var variance = s.m2 / denominator;
        if (OP == OP_STD) {
            variance = sqrt(variance);
        }
        return bitcast<u32>(variance);
    }
    if (SCALED_PROD) {
        return bitcast<u32>(scaled_value(s));
    }
    return bitcast<u32>(s.v);
}

// Partial states travel through a u32 buffer, STATE_WORDS words each.
const STATE_WORDS = 5u;

fn state_to_words(s: State) -> array<u32, 5> {
    return array<u32, 5>(bitcast<u32>(s.v), s.idx, bitcast<u32>(s.n), bitcast<u32>(s.mean), bitcast<u32>(s.m2));
}

// ---------------------------------------------------------------- workgroup tree
// Thread (tx, ty) of a WX x WY workgroup; the WY threads of column tx merge.

var<workgroup> shared_v: array<A, WX * WY>;
var<workgroup> shared_idx: array<u32, WX * WY>;
var<workgroup> shared_n: array<f32, WX * WY>;
var<workgroup> shared_mean: array<f32, WX * WY>;
var<workgroup> shared_m2: array<f32, WX * WY>;

fn shared_put(i: u32, s: State) {
    shared_v[i] = s.v;
    if (PICKS || MOMENTS) {
        shared_n[i] = s.n;
    }
    if (PICKS || SCALED_PROD) {
        shared_idx[i] = s.idx;
    }
    if (MOMENTS) {
        shared_mean[i] = s.mean;
        shared_m2[i] = s.m2;
    }
}

fn shared_get(i: u32) -> State {
    var s = state_empty();
    s.v = shared_v[i];
    if (PICKS || MOMENTS) {
        s.n = shared_n[i];
    }
    if (PICKS || SCALED_PROD) {
        s.idx = shared_idx[i];
    }
    if (MOMENTS) {
        s.mean = shared_mean[i];
        s.m2 = shared_m2[i];
    }
    return s;
}

// Merges the states of column tx; every thread gets the column's total.
// Call from uniform control flow.
fn merge_column(s: State, tx: u32, ty: u32) -> State {
    let slot = ty * WX + tx;
    shared_put(slot, s);
    workgroupBarrier();
    for (var step = WY / 2u; step > 0u; step >>= 1u) {
        if (ty < step) {
            shared_put(slot, merge(shared_get(slot), shared_get(slot + step * WX)));
        }
        workgroupBarrier();
    }
    let total = shared_get(tx);
    workgroupBarrier();
    return total;
}
