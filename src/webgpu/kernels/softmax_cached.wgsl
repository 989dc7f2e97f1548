// SOFTMAX / LOG_SOFTMAX of contiguous rows held in registers: x [rows, D] ->
// out [rows, D], rows contiguous in x and out, D and every row start a
// multiple of 4, D <= 4 * WY * CACHE, CACHE <= 8. One workgroup of WY threads
// per row; thread t keeps row vec4s t, t + WY, ..., t + (CACHE - 1) WY in
// registers (c0..c7, written out so that no array can go to local memory), so
// the row is read once and written once:
//   max (NaN-propagating) -> workgroup max M -> e = exp(x - M), thread sums ->
//   workgroup sum S -> out = e / S (log_softmax: (x - M) - log S).
// IEEE arithmetic gives the CPU oracle's special values: a NaN makes M NaN; a
// +inf makes M inf and exp(inf - inf) = NaN poisons S; a row of -inf has
// x - M = NaN. Slots past the row hold -inf: exp(-inf - M) = 0.
//
// Prelude: WY, CACHE, LOG; bindings 1 x, 2 x4 with load4(i) -> vec4<f32>;
// binding 3 out: array<vec4<f32>> with store4(i, vec4<f32>).

var<workgroup> partial: array<f32, WY>;

fn nan_max(a: f32, b: f32) -> f32 {
    if (f32_is_nan(a)) {
        return a;
    }
    if (f32_is_nan(b)) {
        return b;
    }
    return max(a, b);
}

// Workgroup max (NaN-propagating) or sum of v; every thread gets the result.
fn workgroup_reduce(v: f32, t: u32, is_max: bool) -> f32 {
    partial[t] = v;
    workgroupBarrier();
    for (var step = WY / 2u; step > 0u; step >>= 1u) {
        if (t < step) {
            if (is_max) {
                partial[t] = nan_max(partial[t], partial[t + step]);
            } else {
                partial[t] = partial[t] + partial[t + step];
            }
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}

// Row vec4 k, or fill past the row's end. The load itself is unconditional
// (clamped into the row) so that a thread's loads are all in flight at once.
fn slot_load(first4: u32, k: u32, n4: u32, fill: vec4<f32>) -> vec4<f32> {
    let v = load4(first4 + min(k, n4 - 1u));
    return select(fill, v, k < n4);
}

fn slot_max(c: vec4<f32>) -> f32 {
    return max(max(c.x, c.y), max(c.z, c.w));
}

fn slot_has_nan(c: vec4<f32>) -> bool {
    return any((bitcast<vec4<u32>>(c) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u));
}

fn slot_sum(c: vec4<f32>) -> f32 {
    return (c.x + c.y) + (c.z + c.w);
}

fn slot_store(out4: u32, k: u32, n4: u32, v: vec4<f32>) {
    if (k < n4) {
        store4(out4 + k, v);
    }
}

@compute @workgroup_size(WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.n_rows) {
        return;
    }
    let t = lid.x;
    let base = row_offsets(row);
    let first4 = base.x / 4u;
    let out4 = base.y / 4u;
    let n4 = params.row_len / 4u;
    // -inf, made at run time (a constant infinity is a WGSL error)
    let fill = vec4<f32>(-bitcast<f32>(params.nan_bits & 0x7f800000u));

    var c0 = fill;
    var c1 = fill;
    var c2 = fill;
    var c3 = fill;
    var c4 = fill;
    var c5 = fill;
    var c6 = fill;
    var c7 = fill;
    // loads first, all in flight
    { c0 = slot_load(first4, t + 0u * WY, n4, fill); }
    if (CACHE > 1u) { c1 = slot_load(first4, t + 1u * WY, n4, fill); }
    if (CACHE > 2u) { c2 = slot_load(first4, t + 2u * WY, n4, fill); }
    if (CACHE > 3u) { c3 = slot_load(first4, t + 3u * WY, n4, fill); }
    if (CACHE > 4u) { c4 = slot_load(first4, t + 4u * WY, n4, fill); }
    if (CACHE > 5u) { c5 = slot_load(first4, t + 5u * WY, n4, fill); }
    if (CACHE > 6u) { c6 = slot_load(first4, t + 6u * WY, n4, fill); }
    if (CACHE > 7u) { c7 = slot_load(first4, t + 7u * WY, n4, fill); }
    var m = slot_max(c0);
    var nan = slot_has_nan(c0);
    if (CACHE > 1u) { m = max(m, slot_max(c1)); nan = nan || slot_has_nan(c1); }
    if (CACHE > 2u) { m = max(m, slot_max(c2)); nan = nan || slot_has_nan(c2); }
    if (CACHE > 3u) { m = max(m, slot_max(c3)); nan = nan || slot_has_nan(c3); }
    if (CACHE > 4u) { m = max(m, slot_max(c4)); nan = nan || slot_has_nan(c4); }
    if (CACHE > 5u) { m = max(m, slot_max(c5)); nan = nan || slot_has_nan(c5); }
    if (CACHE > 6u) { m = max(m, slot_max(c6)); nan = nan || slot_has_nan(c6); }
    if (CACHE > 7u) { m = max(m, slot_max(c7)); nan = nan || slot_has_nan(c7); }
    if (nan) {
        m = bitcast<f32>(params.nan_bits);
    }
    let row_max = workgroup_reduce(m, t, true);
    let m4 = vec4<f32>(row_max);
    var s = 0.0;
    { let e = exp(c0 - m4); s += slot_sum(e); if (!LOG) { c0 = e; } }
    if (CACHE > 1u) { let e = exp(c1 - m4); s += slot_sum(e); if (!LOG) { c1 = e; } }
    if (CACHE > 2u) { let e = exp(c2 - m4); s += slot_sum(e); if (!LOG) { c2 = e; } }
    if (CACHE > 3u) { let e = exp(c3 - m4); s += slot_sum(e); if (!LOG) { c3 = e; } }
    if (CACHE > 4u) { let e = exp(c4 - m4); s += slot_sum(e); if (!LOG) { c4 = e; } }
    if (CACHE > 5u) { let e = exp(c5 - m4); s += slot_sum(e); if (!LOG) { c5 = e; } }
    if (CACHE > 6u) { let e = exp(c6 - m4); s += slot_sum(e); if (!LOG) { c6 = e; } }
    if (CACHE > 7u) { let e = exp(c7 - m4); s += slot_sum(e); if (!LOG) { c7 = e; } }
    let row_sum = workgroup_reduce(s, t, false);
    if (LOG) {
        let log_sum = vec4<f32>(log(row_sum));
        { slot_store(out4, t + 0u * WY, n4, (c0 - m4) - log_sum); }
        if (CACHE > 1u) { slot_store(out4, t + 1u * WY, n4, (c1 - m4) - log_sum); }
        if (CACHE > 2u) { slot_store(out4, t + 2u * WY, n4, (c2 - m4) - log_sum); }
        if (CACHE > 3u) { slot_store(out4, t + 3u * WY, n4, (c3 - m4) - log_sum); }
        if (CACHE > 4u) { slot_store(out4, t + 4u * WY, n4, (c4 - m4) - log_sum); }
        if (CACHE > 5u) { slot_store(out4, t + 5u * WY, n4, (c5 - m4) - log_sum); }
        if (CACHE > 6u) { slot_store(out4, t + 6u * WY, n4, (c6 - m4) - log_sum); }
        if (CACHE > 7u) { slot_store(out4, t + 7u * WY, n4, (c7 - m4) - log_sum); }
    } else {
        let scale = vec4<f32>(1.0 / row_sum);
        { slot_store(out4, t + 0u * WY, n4, c0 * scale); }
        if (CACHE > 1u) { slot_store(out4, t + 1u * WY, n4, c1 * scale); }
        if (CACHE > 2u) { slot_store(out4, t + 2u * WY, n4, c2 * scale); }
        if (CACHE > 3u) { slot_store(out4, t + 3u * WY, n4, c3 * scale); }
        if (CACHE > 4u) { slot_store(out4, t + 4u * WY, n4, c4 * scale); }
        if (CACHE > 5u) { slot_store(out4, t + 5u * WY, n4, c5 * scale); }
        if (CACHE > 6u) { slot_store(out4, t + 6u * WY, n4, c6 * scale); }
        if (CACHE > 7u) { slot_store(out4, t + 7u * WY, n4, c7 * scale); }
    }
}
