// TOPK, first pass (after indexing_topk_common): x [rows.., N] (f32, f16,
// i32 or u8; any strides) -> sorted (key, id) pairs.
//
// sort_rows   P <= BLOCK: a workgroup sorts BLOCK / P whole rows side by
//             side and writes the first k ids of each to out = the indices
//             output, i32 [rows.., k] (any strides). Done in one dispatch.
//             Dispatch: ceil(rows / (BLOCK / P)) workgroups (webgpu_grid).
// sort_blocks P > BLOCK: a workgroup sorts one BLOCK of a row, in rank order
//             for even blocks and reverse order for odd ones (the first stages
//             of a bitonic sort of the whole row), into out = pairs
//             [rows, P] as (key, id) words, for x's rows first_row + r;
//             indexing_topk_merge finishes.
//             Dispatch: rows * P / BLOCK workgroups (webgpu_grid).

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// The ordering key of x's element at buffer index e (see common part).
fn load_key(e: u32) -> u32 {
    var key: u32;
    switch params.dtype {
        case 0u: {                       // f32: NaN on top, -0 = +0, then sign-magnitude to unsigned
            var b = x[e];
            if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u) {
                key = 0xffffffffu;
            } else {
                if (b == 0x80000000u) {
                    b = 0u;
                }
                key = select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
            }
        }
        case 1u: {                       // f16, from its 16 bits: no float conversion at all
            var h = (x[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
            if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0u) {
                key = 0xffffffffu;
            } else {
                if (h == 0x8000u) {
                    h = 0u;
                }
                key = select(h | 0x8000u, ~h & 0xffffu, (h & 0x8000u) != 0u);
            }
        }
        case 2u: {                       // i32: flip the sign bit
            key = x[e] ^ 0x80000000u;
        }
        default: {                       // u8
            key = (x[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
        }
    }
    return select(~key, key, params.largest != 0u);
}

fn group_id(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.x + wid.y * groups.x;
}

@compute @workgroup_size(256)
fn sort_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) tid: u32) {
    let group = group_id(wid, groups);
    if (group >= params.groups) {
        return;
    }
    let p = params.padded;
    let rows_here = BLOCK / p;
    let group_row = group * rows_here;
    let count = min(rows_here, params.rows - group_row) * p;
    for (var s = tid; s < count; s += THREADS) {
        let row = group_row + s / p;
        let q = s & (p - 1u);
        if (q < params.n) {
            let at = row_offset(row, params.x_strides, params.x_offset) + i32(q) * params.x_stride;
            keys[s] = load_key(u32(at));
            ids[s] = q;
        } else {
            keys[s] = 0u;
            ids[s] = PAD_ID;
        }
    }
    workgroupBarrier();
    for (var stage = 2u; stage <= p; stage <<= 1u) {
        for (var dist = stage >> 1u; dist > 0u; dist >>= 1u) {
            bitonic_step(tid, stage, dist, count, 0u, p - 1u);
        }
    }
    for (var s = tid; s < count; s += THREADS) {
        let q = s & (p - 1u);
        if (q < params.k) {
            let row = group_row + s / p;
            let at = row_offset(row, params.out_strides, params.out_offset) + i32(q) * params.out_stride;
            out[at] = ids[s];
        }
    }
}

@compute @workgroup_size(256)
fn sort_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) tid: u32) {
    let group = group_id(wid, groups);
    if (group >= params.groups) {
        return;
    }
    let row = group / params.blocks_per_row;
    let base = (group % params.blocks_per_row) * BLOCK;   // position of slot 0 in the row
    let x_row = row_offset(params.first_row + row, params.x_strides, params.x_offset);
    for (var s = tid; s < BLOCK; s += THREADS) {
        let q = base + s;
        if (q < params.n) {
            keys[s] = load_key(u32(x_row + i32(q) * params.x_stride));
            ids[s] = q;
        } else {
            keys[s] = 0u;
            ids[s] = PAD_ID;
        }
    }
    workgroupBarrier();
    for (var stage = 2u; stage <= BLOCK; stage <<= 1u) {
        for (var dist = stage >> 1u; dist > 0u; dist >>= 1u) {
            bitonic_step(tid, stage, dist, BLOCK, base, BLOCK - 1u);
        }
    }
    let first = (row * params.padded + base) * 2u;
    for (var s = tid; s < BLOCK; s += THREADS) {
        out[first + 2u * s] = keys[s];
        out[first + 2u * s + 1u] = ids[s];
    }
}
