// SCATTER_ADD by sorted rows: the sums (see indexing_scatter_common.wgsl,
// prepended). The pairs are sorted by key (the output row), equal keys by id
// (the entry's position along the axis), so a row's entries are one run of
// sorted positions. The sorted list is cut into segments of SEG positions.
//
//   sum_segments  one workgroup per (segment s, chunk of 64 columns) walks the
//                 segment's entries in order, summing src per run. A run that
//                 begins and ends inside the segment is a whole row: the
//                 invocation of column c adds it to out[row, c] at once. A run
//                 cut by the segment's start is stored as part[2s] (its head
//                 piece), one cut by its end (and not by its start) as
//                 part[2s + 1] (the first piece of a row that goes on).
//   sum_rows      one workgroup per (segment, chunk) again; the segment whose
//                 last run goes on into the next owns that row: it adds its
//                 piece and the head pieces of the following segments up to
//                 the row's end, in order, to out.
//
// So every output element is written by one invocation (no atomics), each
// row's sum has a fixed order (the same bits every run), and the longest
// chain of dependent work is SEG entries or run / SEG pieces: a character
// vocabulary's space (thousands of entries) costs one invocation a few dozen
// loads, not thousands. Dispatch: both ceil(N / SEG) x chunks workgroups
// (folded into (x, y)).

@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> pairs: array<u32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;  // [segs, 2, M]
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const UNROLL: u32 = 8u;                  // loads issued before their adds (latency hiding)

var<workgroup> seg_keys: array<u32, 64>;
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

struct Segment {
    first: u32,                          // its first sorted position
    count: u32,                          // SEG, or fewer in the last segment
    open_start: bool,                    // its first run began in the previous segment
    open_end: bool,                      // its last run goes on into the next segment
}

fn segment(s: u32) -> Segment {
    let first = s * SEG;
    let count = min(SEG, params.n - first);
    let last = first + count - 1u;
    let open_start = s > 0u && key_at(first - 1u) == key_at(first);
    let open_end = last + 1u < params.n && key_at(last + 1u) == key_at(last);
    return Segment(first, count, open_start, open_end);
}

// The start of every sum: -0 + x is x for every x, -0 included (a sum of
// -0 terms into a -0 out stays -0, as the CPU's serial adds give).
fn neg_zero() -> f32 {
    return bitcast<f32>(0x80000000u);
}

fn out_add(row: u32, out_at: i32, value: f32) {
    let o = out_at + i32(row) * params.out_stride;
    out[o] = out[o] + value;
}

// What the segment's entry p closes (seg_keys loaded).
const RUN_GOES_ON: u32 = 0u;             // the next entry has the same row
const RUN_DROPPED: u32 = 1u;             // row >= V: the out-of-range entries
const RUN_HEAD: u32 = 2u;                // a run begun in the previous segment: part[2s]
const RUN_TAIL: u32 = 3u;                // a run going on into the next segment: part[2s + 1]
const RUN_WHOLE: u32 = 4u;               // a whole row: added to out here

fn run_end(g: Segment, p: u32) -> u32 {
    let row = seg_keys[p];
    if (p + 1u < g.count && seg_keys[p + 1u] == row) {
        return RUN_GOES_ON;
    }
    if (row >= params.axis_len) {
        return RUN_DROPPED;
    }
    if (g.open_start && row == seg_keys[0]) {
        return RUN_HEAD;
    }
    if (p + 1u == g.count && g.open_end) {
        return RUN_TAIL;
    }
    return RUN_WHOLE;
}

@compute @workgroup_size(64)
fn sum_segments(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let w = linear_group(wid, groups);
    let s = w / params.chunks;
    if (s >= params.segs) {
        return;
    }
    let g = segment(s);
    if (lid < g.count) {
        seg_keys[lid] = key_at(g.first + lid);
        seg_ids[lid] = id_at(g.first + lid);
    }
    workgroupBarrier();
    let c = (w % params.chunks) * SUM_THREADS + lid;
    if (c >= params.cols) {
        return;
    }
    let at = column(c);
    var acc = neg_zero();
    for (var b = 0u; b < g.count; b += UNROLL) {
        // UNROLL src values, and the out values of the whole rows ending among
        // them (each row ends once: no other read or write of those elements),
        // loaded before any is used, so their latencies overlap
        var v: array<f32, UNROLL>;
        var old: array<f32, UNROLL>;
        for (var k = 0u; k < UNROLL; k++) {
            v[k] = 0.0;                  // (set on every path: naga does not re-zero v per iteration)
            old[k] = 0.0;
            let p = b + k;
            if (p < g.count) {
                v[k] = src[at.x + i32(seg_ids[p]) * params.src_stride];
                if (run_end(g, p) == RUN_WHOLE) {
                    old[k] = out[at.y + i32(seg_keys[p]) * params.out_stride];
                }
            }
        }
        for (var k = 0u; k < UNROLL; k++) {
            let p = b + k;
            if (p >= g.count) {
                break;
            }
            acc += v[k];
            let end = run_end(g, p);
            if (end == RUN_GOES_ON) {
                continue;
            }
            if (end == RUN_HEAD) {
                part[(2u * s) * params.cols + c] = acc;
            } else if (end == RUN_TAIL) {
                part[(2u * s + 1u) * params.cols + c] = acc;
            } else if (end == RUN_WHOLE) {
                out[at.y + i32(seg_keys[p]) * params.out_stride] = old[k] + acc;
            }
            acc = neg_zero();
        }
    }
}

var<workgroup> end_found: atomic<u32>;

@compute @workgroup_size(64)
fn sum_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let w = linear_group(wid, groups);
    let s = w / params.chunks;
    if (s >= params.segs) {
        return;
    }
    let g = segment(s);
    let last = g.first + g.count - 1u;
    let row = key_at(last);
    // owner: the last run goes on, and began in this segment
    if (!g.open_end || row >= params.axis_len || (g.open_start && key_at(g.first) == row)) {
        return;
    }
    // The segment where the row ends: the first one after s whose last entry
    // is another row's or is followed by one. Invocation i tests segment
    // s + 1 + i, so rows of up to 64 segments take one round of loads; a
    // longer one falls back to a binary search over the keys.
    if (lid == 0u) {
        atomicStore(&end_found, 0xffffffffu);
    }
    workgroupBarrier();
    let t = s + 1u + lid;
    if (t < params.segs) {
        let t_last = min((t + 1u) * SEG, params.n) - 1u;
        if (key_at(t_last) != row || t_last + 1u == params.n || key_at(t_last + 1u) != row) {
            atomicMin(&end_found, t);
        }
    }
    workgroupBarrier();
    var end_seg = atomicLoad(&end_found);
    if (end_seg == 0xffffffffu) {
        end_seg = (lower_bound(row + 1u, last + 1u, params.n) - 1u) / SEG;
    }
    let c = (w % params.chunks) * SUM_THREADS + lid;
    if (c >= params.cols) {
        return;
    }
    // its first piece, then the head pieces of the segments up to end_seg, in order
    var acc = part[(2u * s + 1u) * params.cols + c];
    var u = s + 1u;
    for (; u + 4u <= end_seg + 1u; u += 4u) {
        let a0 = part[(2u * u) * params.cols + c];
        let a1 = part[(2u * u + 2u) * params.cols + c];
        let a2 = part[(2u * u + 4u) * params.cols + c];
        let a3 = part[(2u * u + 6u) * params.cols + c];
        acc += a0;
        acc += a1;
        acc += a2;
        acc += a3;
    }
    for (; u <= end_seg; u++) {
        acc += part[(2u * u) * params.cols + c];
    }
    out_add(row, column(c).y, acc);
}
