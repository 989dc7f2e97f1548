// SCATTER_ADD by sorted rows, shared part: prepended (by webgpu_indexing.c)
// to indexing_scatter_sort and indexing_scatter_sum, which add their bindings
// and entry points.
//
// The case: f32, out contiguous, and an index that is constant along every
// dim but the axis (stride 0 there): index_select's and embedding's backward,
// out[V, C] += src[N, C] at rows index[N] (V = out.shape[axis], N =
// index.shape[axis], the other dims flattened into M "columns"). Instead of
// an atomic per element (all N x M of them landing on a few rows when V is
// small), the N entries are sorted by row, stably, and every (row, column)
// is summed by one invocation in a fixed order: no float atomics, and the
// same bits run to run.
//
//   sort  (indexing_scatter_sort.wgsl): an LSD radix sort of (key, id) pairs,
//         key = the wrapped row (V for an out-of-range index: it sorts last
//         and is never summed), id = the entry's position along the axis;
//         8-bit digits, ceil(bits(V) / 8) passes (V = 65: one, V = 50257:
//         two). A pass = per-tile digit histograms (tiles of 256 entries),
//         one exclusive scan of them in (digit, tile) order, and a stable
//         scatter (an entry's rank among equal digits of its tile counted).
//   sum   (indexing_scatter_sum.wgsl): the sorted list is cut into segments
//         of SEG positions; each segment sums its runs of equal rows, adding
//         the rows that end inside it to out (sum_segments); the pieces of
//         rows that cross segment boundaries are added in order by the
//         segment where the row begins (sum_rows).
//
// pairs (one temporary of 4 N words): keys at [0, N), ids at [N, 2N) for
// the even passes' output, keys at [2N, 3N), ids at [3N, 4N) for the odd.

const SORT_THREADS: u32 = 256u;          // = entries per tile = radix (8-bit digits)
const SUM_THREADS: u32 = 64u;            // columns per sum workgroup
const SEG: u32 = 64u;                    // sorted positions per segment

struct Params {
    col_shape: array<vec4<u32>, 2>,      // index's shape with the axis dim set to 1: the columns
    src_strides: array<vec4<i32>, 2>,    // src's strides, 0 on the axis (src_stride steps it)
    out_strides: array<vec4<i32>, 2>,    // out's strides, 0 on the axis (out_stride steps it)
    ndim: u32,
    n: u32,                              // N: entries along the axis
    cols: u32,                           // M: columns (numel / N)
    axis_len: u32,                       // V = out.shape[axis]
    index_offset: i32,                   // in elements
    index_stride: i32,                   // index's stride along the axis
    src_offset: i32,
    src_stride: i32,                     // src's stride along the axis
    out_offset: i32,
    out_stride: i32,                     // out's stride along the axis
    check_id: u32,                       // reported in flag[0] for an out-of-range index
    tiles: u32,                          // ceil(N / 256)
    shift: u32,                          // sort: this pass's digit is (key >> shift) & 255
    first: u32,                          // sort: 1 in the first pass (keys come from the index)
    in_keys: u32,                        // sort: word offset in pairs of the input keys (ids N later)
    out_keys: u32,                       // sort: word offset of the output keys
    chunks: u32,                         // sum: ceil(M / SUM_THREADS)
    segs: u32,                           // sum: segments, ceil(N / SEG)
    pad: u32,
    sorted: u32,                         // sum: word offset in pairs of the sorted keys
}

@group(0) @binding(0) var<uniform> params: Params;

fn linear_group(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.x + wid.y * groups.x;
}
