// SCATTER_ADD by sorted rows: one pass of the stable radix sort of (key, id)
// pairs (see indexing_scatter_common.wgsl, prepended). A pass is three
// dispatches:
//
//   sort_histogram  one workgroup per tile of 256 entries: the tile's count of
//                   each digit, written to hist[tile * 256 + digit] (every
//                   slot written: no clearing needed). The first pass also
//                   reports an out-of-range index through flag.
//   sort_scan       one workgroup: hist becomes its exclusive prefix sum in
//                   (digit, tile) order, i.e. where each tile's run of each
//                   digit starts in the output.
//   sort_scatter    one workgroup per tile: an entry goes to its run's start
//                   plus the number of entries of its tile before it with the
//                   same digit, so equal digits keep their order (stable) and
//                   the result is the same every run.
//
// The counts use atomics, but only u32 adds, whose result does not depend on
// their order. Dispatch: histogram and scatter ceil(N / 256) workgroups
// (folded into (x, y) by webgpu_grid), scan 1.

@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(3) var<storage, read_write> hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>, 4>;  // as in indexing_gather.wgsl

var<workgroup> counts: array<atomic<u32>, 256>;
var<workgroup> digits: array<u32, 256>;
var<workgroup> partial: array<u32, 256>;

// The raw index value of entry e (e < N).
fn raw_index(e: u32) -> i32 {
    return index[params.index_offset + i32(e) * params.index_stride];
}

// The output row of a raw index value, or V when it is out of range.
fn row_of(raw: i32) -> u32 {
    let v = i32(params.axis_len);
    let i = select(raw, raw + v, raw < 0);
    return select(params.axis_len, u32(i), i >= 0 && i < v);
}

// This pass's key of entry e (e < N).
fn entry_key(e: u32) -> u32 {
    if (params.first != 0u) {
        return row_of(raw_index(e));
    }
    return pairs[params.in_keys + e];
}

@compute @workgroup_size(256)
fn sort_histogram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let tile = linear_group(wid, groups);
    if (tile >= params.tiles) {
        return;
    }
    atomicStore(&counts[lid], 0u);
    workgroupBarrier();
    let e = tile * SORT_THREADS + lid;
    if (e < params.n) {
        var key: u32;
        if (params.first != 0u) {
            let raw = raw_index(e);
            key = row_of(raw);
            if (key == params.axis_len) {
                atomicMin(&flag[0], params.check_id);
                atomicStore(&flag[1], bitcast<u32>(raw));
            }
        } else {
            key = pairs[params.in_keys + e];
        }
        atomicAdd(&counts[(key >> params.shift) & 255u], 1u);
    }
    workgroupBarrier();
    hist[tile * SORT_THREADS + lid] = atomicLoad(&counts[lid]);
}

// hist has tiles * 256 words, tile-major: invocation t owns digit t, whose
// tiles words are hist[j * 256 + t] (j = 0 .. tiles - 1), so the 256
// invocations read and write neighbouring words (one load a warp touches 128
// bytes). It sums its digit's counts, the 256 sums are scanned in workgroup
// memory, and the counts are rewritten as exclusive prefix sums from the
// digit's start. (Digit-major, each invocation walked its own run of tiles
// words: 32 words 256 bytes apart a load, 39 us for N = 16384 on an H200, the
// slowest of the GPT embedding backward's five dispatches.) The loads are
// issued LOADS at a time before their adds: one invocation walks tiles words
// (64 for N = 16384), so its loads must overlap.
const LOADS: u32 = 32u;

@compute @workgroup_size(256)
fn sort_scan(@builtin(local_invocation_index) lid: u32) {
    let per = params.tiles;
    var sum = 0u;
    for (var b = 0u; b < per; b += LOADS) {
        var v: array<u32, LOADS>;
        for (var k = 0u; k < LOADS; k++) {
            // set on every path: naga declares v once per function, not zeroed per iteration
            v[k] = select(0u, hist[min(b + k, per - 1u) * SORT_THREADS + lid], b + k < per);
        }
        for (var k = 0u; k < LOADS; k++) {
            sum += v[k];
        }
    }
    partial[lid] = sum;
    workgroupBarrier();
    for (var d = 1u; d < SORT_THREADS; d <<= 1u) {   // inclusive scan (Hillis-Steele)
        var v = partial[lid];
        if (lid >= d) {
            v += partial[lid - d];
        }
        workgroupBarrier();
        partial[lid] = v;
        workgroupBarrier();
    }
    var at = partial[lid] - sum;
    for (var b = 0u; b < per; b += LOADS) {
        var v: array<u32, LOADS>;
        for (var k = 0u; k < LOADS; k++) {
            // set on every path: naga declares v once per function, not zeroed per iteration
            v[k] = select(0u, hist[min(b + k, per - 1u) * SORT_THREADS + lid], b + k < per);
        }
        for (var k = 0u; k < LOADS && b + k < per; k++) {
            hist[(b + k) * SORT_THREADS + lid] = at;
            at += v[k];
        }
    }
}

// An entry's rank among the tile's entries with its digit that come before
// it: the counts of its digit in the earlier groups of 32 entries (group_counts,
// counted with atomics: a count does not depend on their order) plus the
// equal digits before it in its own group (at most 31 compares, not 255).
const GROUP: u32 = 32u;
var<workgroup> group_counts: array<atomic<u32>, 2048>;   // [256 / GROUP groups][256 digits]

@compute @workgroup_size(256)
fn sort_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let tile = linear_group(wid, groups);
    if (tile >= params.tiles) {
        return;
    }
    for (var k = lid; k < 2048u; k += SORT_THREADS) {
        atomicStore(&group_counts[k], 0u);
    }
    let e = tile * SORT_THREADS + lid;
    var key = 0u;
    var digit = 256u;                    // past the tile's end: equal to no digit
    if (e < params.n) {
        key = entry_key(e);
        digit = (key >> params.shift) & 255u;
    }
    digits[lid] = digit;
    let group = lid / GROUP;
    workgroupBarrier();
    if (e < params.n) {
        atomicAdd(&group_counts[group * 256u + digit], 1u);
    }
    workgroupBarrier();
    if (e >= params.n) {
        return;
    }
    var rank = 0u;
    for (var g = 0u; g < group; g++) {
        rank += atomicLoad(&group_counts[g * 256u + digit]);
    }
    for (var k = group * GROUP; k < lid; k++) {
        rank += select(0u, 1u, digits[k] == digit);
    }
    let at = hist[tile * SORT_THREADS + digit] + rank;
    var id = e;
    if (params.first == 0u) {
        id = pairs[params.in_keys + params.n + e];
    }
    pairs[params.out_keys + at] = key;
    pairs[params.out_keys + params.n + at] = id;
}
