// TOPK, shared part: prepended (by webgpu_indexing.c) to indexing_topk_sort
// and indexing_topk_merge, which add their bindings and entry points.
//
// Each element of a row becomes a (key, id) pair: key is a u32 that orders
// like the value (larger key = ranks first; for smallest-first the key is
// inverted), id is the element's position along the last axis. Pairs rank by
// key, larger first, then by id, lower first: a total order, so the bitonic
// network gives exactly the CPU's answer (NaN above everything, ties to the
// lower index). Rows are padded to a power of two with (0, 0xffffffff), which
// ranks after every real element.
//
// A workgroup sorts BLOCK = 2048 pairs in workgroup memory (16 KiB, the
// WebGPU minimum) with 256 invocations.

const BLOCK: u32 = 2048u;
const THREADS: u32 = 256u;
const PAD_ID: u32 = 0xffffffffu;

struct Params {
    lead_shape: array<vec4<u32>, 2>,     // x's dims before the last one; dims >= lead_ndim are 1
    x_strides: array<vec4<i32>, 2>,      // x's strides over those dims (elements)
    out_strides: array<vec4<i32>, 2>,    // the indices output's strides over those dims
    lead_ndim: u32,
    n: u32,                              // row length N
    k: u32,                              // pairs kept per row
    rows: u32,                           // rows of this pass
    x_offset: i32,
    x_stride: i32,                       // x's last-axis stride
    out_offset: i32,                     // indices output offset and last-axis stride
    out_stride: i32,
    padded: u32,                         // P: N rounded up to a power of two
    blocks_per_row: u32,                 // max(P / BLOCK, 1)
    groups: u32,                         // workgroups of real work (the grid may overshoot)
    dtype: u32,                          // 0 f32, 1 f16, 2 i32, 3 u8
    largest: u32,
    stage: u32,                          // merge kernels: bitonic stage size and distance
    dist: u32,
    first_row: u32,                      // long rows: rows [first_row, first_row + rows) this pass
}

@group(0) @binding(0) var<uniform> params: Params;

var<workgroup> keys: array<u32, 2048>;
var<workgroup> ids: array<u32, 2048>;

fn ranks_before(key_a: u32, id_a: u32, key_b: u32, id_b: u32) -> bool {
    return key_a > key_b || (key_a == key_b && id_a < id_b);
}

// Offset (elements) of row r's first element, through strides.
fn row_offset(r: u32, strides: array<vec4<i32>, 2>, base: i32) -> i32 {
    var rest = r;
    var at = base;
    for (var d = i32(params.lead_ndim) - 1; d >= 0; d--) {
        let n = params.lead_shape[d >> 2u][d & 3];
        at += i32(rest % n) * strides[d >> 2u][d & 3];
        rest = rest / n;
    }
    return at;
}

// One compare-exchange step of a bitonic network over slots [0, count) of
// keys/ids (count a multiple of 2 * dist). Slot s sits at sequence position
// base + (s & mask); a pair goes in rank order when its position's `stage` bit
// is 0, in reverse rank order otherwise. Ends with a barrier.
fn bitonic_step(tid: u32, stage: u32, dist: u32, count: u32, base: u32, mask: u32) {
    for (var p = tid; p < count / 2u; p += THREADS) {
        let lo = ((p & ~(dist - 1u)) << 1u) | (p & (dist - 1u));
        let hi = lo | dist;
        let forward = ((base + (lo & mask)) & stage) == 0u;
        let key_lo = keys[lo];
        let id_lo = ids[lo];
        let key_hi = keys[hi];
        let id_hi = ids[hi];
        if (ranks_before(key_hi, id_hi, key_lo, id_lo) == forward) {
            keys[lo] = key_hi;
            ids[lo] = id_hi;
            keys[hi] = key_lo;
            ids[hi] = id_lo;
        }
    }
    workgroupBarrier();
}
