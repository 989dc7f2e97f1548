// REDUCE, pass 1: x [rows, reduced] (any strides) -> out [rows] or, with
// params.splits > 1, partial states [rows, splits] (STATE_WORDS u32 each).
//
// Workgroup WX x WY: WX rows (a tile), WY threads per row. Workgroup g handles
// tile g / splits and reduced positions [split * chunk, +chunk) of each of its
// rows, split = g % splits. Thread (tx, ty) folds positions ty, ty + WY, ...;
// the column's WY states then merge in a tree.
// VEC4 (WX = 1, reduced positions contiguous, every row start and chunk a
// multiple of 4 elements): the row is read as vec4 (x4 aliases x).
//
// Bindings: 1 x, 2 x4 (prelude), 3 out: array<u32> (f32/i32 bits or states).

@group(0) @binding(3) var<storage, read_write> out: array<u32>;

// Folds the 4 elements of v, at positions pos..pos+3.
fn fold4(s: State, v: vec4<A>, pos: u32) -> State {
    var r = fold(s, v.x, pos);
    r = fold(r, v.y, pos + 1u);
    r = fold(r, v.z, pos + 2u);
    return fold(r, v.w, pos + 3u);
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let g = group_index(wid, nwg);
    if (g >= params.n_groups) {
        return;
    }
    let tile = g / params.splits;
    let split = g % params.splits;
    let row = tile * WX + lid.x;
    let start = split * params.chunk;
    let end = min(start + params.chunk, params.row_len);
    var s = state_empty();
    if (row < params.n_rows && start < end) {
        let base = row_offsets(row).x;
        if (VEC4) {
            let n4 = (end - start) / 4u;
            let first4 = (base + start) / 4u;
            var k = lid.y;
            // two loads in flight per thread
            for (; k < n4 && n4 - k > WY; k += 2u * WY) {
                let v = load4(first4 + k);
                let w = load4(first4 + k + WY);
                s = fold4(s, v, start + 4u * k);
                s = fold4(s, w, start + 4u * (k + WY));
            }
            if (k < n4) {
                s = fold4(s, load4(first4 + k), start + 4u * k);
            }
            let tail = start + 4u * n4 + lid.y;
            if (tail < end) {
                s = fold(s, load(base + tail), tail);
            }
        } else {
            var pos = start + lid.y;
            // four loads in flight per thread
            for (; pos < end && end - pos > 3u * WY; pos += 4u * WY) {
                let a = load(base + reduced_offset(pos));
                let b = load(base + reduced_offset(pos + WY));
                let c = load(base + reduced_offset(pos + 2u * WY));
                let d = load(base + reduced_offset(pos + 3u * WY));
                s = fold(s, a, pos);
                s = fold(s, b, pos + WY);
                s = fold(s, c, pos + 2u * WY);
                s = fold(s, d, pos + 3u * WY);
            }
            for (; pos < end; pos += WY) {
                s = fold(s, load(base + reduced_offset(pos)), pos);
            }
        }
    }
    let total = merge_column(s, lid.x, lid.y);
    if (lid.y != 0u || row >= params.n_rows) {
        return;
    }
    if (params.splits == 1u) {
        out[row_offsets(row).y] = finish(total);
    } else {
        let words = state_to_words(total);
        let at = (row * params.splits + split) * STATE_WORDS;
        for (var i = 0u; i < STATE_WORDS; i++) {
            out[at + i] = words[i];
        }
    }
}
