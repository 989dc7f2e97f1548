// TOPK, merge passes for rows longer than BLOCK (after indexing_topk_common):
// pairs [rows, P] of (key, id) for x's rows first_row + r, each BLOCK already
// sorted by sort_blocks, are finished into a bitonic sort of each whole row.
// For each stage (BLOCK*2 .. P): merge_global for every distance >= BLOCK,
// then merge_local for distances BLOCK/2 .. 1. In the last stage (stage = P)
// merge_local writes the first k ids of each row to the indices output, i32
// [rows.., k] (any strides), instead of writing pairs back.
//
// merge_global  one invocation per compare-exchange: rows * P / 2
//               (ceil(/256) workgroups, webgpu_grid).
// merge_local   one workgroup per BLOCK: rows * P / BLOCK (webgpu_grid).

@group(0) @binding(1) var<storage, read_write> pairs: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> indices: array<i32>;

@compute @workgroup_size(256)
fn merge_global(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) tid: u32) {
    let t = (wid.x + wid.y * groups.x) * THREADS + tid;
    let half_row = params.padded >> 1u;
    if (t >= params.rows * half_row) {
        return;
    }
    let row = t / half_row;
    let p = t % half_row;
    let dist = params.dist;
    let lo = ((p & ~(dist - 1u)) << 1u) | (p & (dist - 1u));
    let hi = lo | dist;
    let forward = (lo & params.stage) == 0u;
    let a = pairs[row * params.padded + lo];
    let b = pairs[row * params.padded + hi];
    if (ranks_before(b.x, b.y, a.x, a.y) == forward) {
        pairs[row * params.padded + lo] = b;
        pairs[row * params.padded + hi] = a;
    }
}

@compute @workgroup_size(256)
fn merge_local(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) tid: u32) {
    let group = wid.x + wid.y * groups.x;
    if (group >= params.groups) {
        return;
    }
    let row = group / params.blocks_per_row;
    let base = (group % params.blocks_per_row) * BLOCK;
    let last_stage = params.stage == params.padded;
    if (last_stage && base >= params.k) {
        return;                          // nothing of this block is kept
    }
    let first = row * params.padded + base;
    for (var s = tid; s < BLOCK; s += THREADS) {
        let pair = pairs[first + s];
        keys[s] = pair.x;
        ids[s] = pair.y;
    }
    workgroupBarrier();
    for (var dist = BLOCK >> 1u; dist > 0u; dist >>= 1u) {
        bitonic_step(tid, params.stage, dist, BLOCK, base, BLOCK - 1u);
    }
    if (last_stage) {
        let out_row = row_offset(params.first_row + row, params.out_strides, params.out_offset);
        for (var s = tid; s < BLOCK && base + s < params.k; s += THREADS) {
            indices[out_row + i32(base + s) * params.out_stride] = i32(ids[s]);
        }
    } else {
        for (var s = tid; s < BLOCK; s += THREADS) {
            pairs[first + s] = vec2<u32>(keys[s], ids[s]);
        }
    }
}
