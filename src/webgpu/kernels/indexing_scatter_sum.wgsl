// SCATTER_ADD by sorted rows: the sums (see indexing_scatter_common.wgsl,
// prepended). The pairs are sorted by key (the output row), equal keys by id
// (the entry's position along the axis); a row's entries are one run of
// sorted positions [start, end).
//
//   sum_segments  one workgroup per (segment of SEG sorted positions, chunk
//                 of 64 columns): if the segment is full and lies inside one
//                 row, seg[s * M + c] = the sum of its entries' src values in
//                 sorted order. Other segments write nothing (never read).
//   sum_rows      one workgroup per (unit, chunk of 64 columns); a unit is an
//                 output row (by_rows = 1, used when V <= N) or a sorted
//                 position that starts a run (by_rows = 0, when N < V, so the
//                 dispatch never grows with the vocabulary). The invocation
//                 of column c adds, in this order: its row's entries up to
//                 the first segment boundary, the seg sums of the whole
//                 segments inside the row, the entries after the last
//                 boundary; then out[row, c] += that. One invocation owns
//                 each output element: no atomics, and a fixed order.
//
// A long run (a character vocabulary: thousands of entries per row) thus
// costs one invocation at most 2 SEG + run / SEG loads, while the bulk of
// the reading is spread over N / SEG x M invocations by sum_segments.
// Dispatch: segs x chunks and units x chunks workgroups (folded into (x, y)).

@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> pairs: array<u32>;
@group(0) @binding(3) var<storage, read_write> seg: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> seg_ids: array<u32, 64>;

fn key_at(p: u32) -> u32 {
    return pairs[params.sorted + p];
}

fn id_at(p: u32) -> u32 {
    return pairs[params.sorted + params.n + p];
}

// First sorted position in [lo, hi) whose key is >= x (hi if none).
fn lower_bound(x: u32, lo_in: u32, hi_in: u32) -> u32 {
    var lo = lo_in;
    var hi = hi_in;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (key_at(mid) < x) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Column c's element offsets in src (x) and out (y), without the axis term.
fn column(c: u32) -> vec2<i32> {
    var rest = c;
    var at = vec2<i32>(params.src_offset, params.out_offset);
    for (var d = i32(params.ndim) - 1; d >= 0; d--) {
        let size = params.col_shape[d >> 2u][d & 3];
        let k = i32(rest % size);
        rest = rest / size;
        at += k * vec2<i32>(params.src_strides[d >> 2u][d & 3], params.out_strides[d >> 2u][d & 3]);
    }
    return at;
}

// src summed over the entries at sorted positions [a, b), in order.
fn sum_direct(a: u32, b: u32, src_at: i32) -> f32 {
    var acc = 0.0;
    for (var p = a; p < b; p++) {
        acc += src[src_at + i32(id_at(p)) * params.src_stride];
    }
    return acc;
}

@compute @workgroup_size(64)
fn sum_segments(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let w = linear_group(wid, groups);
    let s = w / params.chunks;
    if (s >= params.segs) {
        return;
    }
    let first = s * SEG;
    let key = key_at(first);
    if (key != key_at(first + SEG - 1u) || key >= params.axis_len) {
        return;                          // spans rows (or is the out-of-range tail): not used
    }
    seg_ids[lid] = id_at(first + lid);   // the segment's ids, loaded once for the 64 columns
    workgroupBarrier();
    let c = (w % params.chunks) * SUM_THREADS + lid;
    if (c >= params.cols) {
        return;
    }
    let src_at = column(c).x;
    var acc = 0.0;
    for (var k = 0u; k < SEG; k++) {
        acc += src[src_at + i32(seg_ids[k]) * params.src_stride];
    }
    seg[s * params.cols + c] = acc;
}

@compute @workgroup_size(64)
fn sum_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let w = linear_group(wid, groups);
    let u = w / params.chunks;
    var row: u32;
    var start: u32;
    var end: u32;
    if (params.by_rows != 0u) {
        if (u >= params.axis_len) {
            return;
        }
        row = u;
        start = lower_bound(row, 0u, params.n);
        end = lower_bound(row + 1u, start, params.n);
    } else {
        if (u >= params.n) {
            return;
        }
        row = key_at(u);
        if (row >= params.axis_len || (u > 0u && key_at(u - 1u) == row)) {
            return;                      // out of range, or not the first entry of its row
        }
        start = u;
        end = lower_bound(row + 1u, u, params.n);
    }
    let c = (w % params.chunks) * SUM_THREADS + lid;
    if (start == end || c >= params.cols) {
        return;
    }
    let at = column(c);
    let s0 = start / SEG;
    let s1 = (end - 1u) / SEG;
    var acc: f32;
    if (s0 == s1) {
        acc = sum_direct(start, end, at.x);
    } else {
        acc = sum_direct(start, (s0 + 1u) * SEG, at.x);
        for (var s = s0 + 1u; s < s1; s++) {
            acc += seg[s * params.cols + c];
        }
        acc += sum_direct(s1 * SEG, end, at.x);
    }
    let o = at.y + i32(row) * params.out_stride;
    out[o] = out[o] + acc;
}
