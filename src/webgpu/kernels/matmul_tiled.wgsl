// matmul_tiled: register-blocked GEMM, one workgroup per BM x BN tile of out.
//   a: [B.., M, K], b: [B.., K, N] (any strides) -> out: [B.., M, N] contiguous
//
// Prelude constants (webgpu_matmul.c):
//   BM, BN, BK   block tile; TM, TN outputs per invocation (multiples of 4)
//   CHECK        some tile reaches past M, N or K: loads and stores are bounds-checked
//   A_QUAD_K     a's quads (4 elements fetched together) run along k, else along m
//   A_VEC        a quad is one aligned vec4 load (its elements are contiguous)
//   B_QUAD_K     likewise for b: along k, else along n
//   B_VEC
//   A_BLOCK      a is fetched in 4x4 blocks (A_QUAD_K and A_VEC only): 4 vec4s along k
//                from 4 neighbouring rows, transposed in registers and stored as 4
//                whole vec4s of the natural layout (no permutation, no component stores)
//   B_BLOCK      likewise for b (B_QUAD_K and B_VEC)
//   A_REGS       vec4 registers that hold one fetched a slice per invocation
//   B_REGS
//   HALF_MATH    f16 operands (either or both) multiplied in f16: the shared tiles and
//                the fetch registers hold vec4<f16> (W = f16, else W = T), each slice's BK
//                products are summed into f16 partials (packed f16 FMAs: twice the
//                multiply rate of f32 and half the shared-memory bytes), and the partials
//                are added into the f32 accumulators after every slice (a run of BK
//                products; every config has BK <= 16). An f32 operand
//                is rounded to f16 as it is fetched. Only on request (the call's
//                f16_reduced; see wgtensor.h's wgt_set_matmul_precision).
//   mad4w        mad4 on vec4<W> (fma on f16 when HALF_MATH)
//   WARP_TX      0: invocation lid is tile column lid % (BN / TN), row lid / (BN / TN);
//                else each warp of 32 covers WARP_TX columns x 32 / WARP_TX rows, so
//                a shared-tile load touches fewer distinct vec4s (8 + 4 instead of 16 + 2)
//
// Invocation (tx, ty) owns TM/4 groups of 4 rows, 4*BM/TM rows apart, and TN/4
// groups of 4 columns, 4*BN/TN columns apart: neighbouring invocations read
// neighbouring vec4s of the shared tiles, so the reads are free of bank
// conflicts. Shared tiles are k-major vec4 arrays ([BK][BM / 4] and
// [BK][BN / 4], rows padded by one vec4) and double buffered: the next K slice
// is fetched into registers while the current one is multiplied, with one
// barrier per slice.
//
// Fetching: each invocation fetches quads of 4 elements. Quads along m (n) are
// stored as they come, one vec4 each (shared row slot s holds rows 4s..4s+3).
// Quads along k must be spread over 4 k rows. A store into a vec4 at a run-time
// component index ran ~30% slower on NVIDIA/Vulkan (and scalar shared arrays
// lose the 128-bit shared loads), so for those tiles the rows are permuted:
// the quads of 32 neighbouring invocations (one NVIDIA warp) cover RG rows, and
// the rows of the i-th such group all sit in component i % 4 of their slots.
// The component is then uniform across a warp and a switch picks a store with
// a constant component. Readers do not care which rows a slot holds; the
// epilogue maps (slot, component) back to rows with a_row_of / b_col_of.
// (A warp of another width only makes the switch diverge; results are the same.)
//
// Block fetching (A_BLOCK, B_BLOCK) replaces the component stores of quads
// along k: the first (a) or last (b) BM * BK / 16 invocations each fetch one
// 4x4 block and store it with 4 conflict-free vec4 stores.
//
// Workgroups are numbered linearly (x + y * num_workgroups.x, folded by the
// host) and walk the tiles in groups of group_m tile rows for L2 reuse.
//
// Split-K (webgpu_matmul.c, run_split_k): when a product has few tiles and a
// long K, part p of the K range [p * split_k, min(K, (p + 1) * split_k)) is
// computed by its own workgroups, which store their partial sums at
// out + p * split_stride (an f32 / i32 temporary [parts, B.., M, N], BIAS off);
// matmul_splitk_reduce adds the parts. The part is the slowest-varying index
// of the workgroup id, so workgroups in flight together read the same k rows
// of a and b (L2 reuse). split_k is a multiple of BK, so only the last part can
// end inside a K slice, and CHECK already covers that (K % BK != 0). Without
// split-K, split_k = K (at least 1) and there is one part.

const WG: u32 = (BM / TM) * (BN / TN);
const A_QUADS: u32 = BM * BK / 4u;              // quads in one a slice
const B_QUADS: u32 = BN * BK / 4u;
const A_LOADS: u32 = (A_QUADS + WG - 1u) / WG;  // quads per invocation
const B_LOADS: u32 = (B_QUADS + WG - 1u) / WG;
const A_ROW: u32 = BM / 4u + 1u;                // vec4s per k row of the shared tile
const B_ROW: u32 = BN / 4u + 1u;
const LANES: u32 = 32u;                         // invocations that run in lockstep (NVIDIA warp)
const A_RG: u32 = min(LANES / (BK / 4u), BM / 4u);   // rows of one permuted group
const B_RG: u32 = min(LANES / (BK / 4u), BN / 4u);
const A_BLOCKS: u32 = BM * BK / 16u;            // 4x4 blocks in one a slice (A_BLOCK)
const B_BLOCKS: u32 = BN * BK / 16u;
const A_BLOCK_LOADS: u32 = (A_BLOCKS + WG - 1u) / WG;
const B_BLOCK_LOADS: u32 = (B_BLOCKS + WG - 1u) / WG;

var<workgroup> a_tile: array<vec4<W>, 2u * BK * A_ROW>;   // [buffer][k][row slot]
var<workgroup> b_tile: array<vec4<W>, 2u * BK * B_ROW>;   // [buffer][k][column slot]

// Tile row (column) held by component c of slot s.
fn a_row_of(s: u32, c: u32) -> u32 {
    if (A_QUAD_K && !A_BLOCK) { return (s / A_RG) * 4u * A_RG + c * A_RG + s % A_RG; }
    return 4u * s + c;
}
fn b_col_of(s: u32, c: u32) -> u32 {
    if (B_QUAD_K && !B_BLOCK) { return (s / B_RG) * 4u * B_RG + c * B_RG + s % B_RG; }
    return 4u * s + c;
}

// Quad q of the a slice at rows row0.., k0..: 4 elements along k (row q / (BK / 4),
// k quad q % (BK / 4)) or along m (k row q / (BM / 4), rows 4 * (q % (BM / 4))..);
// zeros past the edges.
fn load_a(base: u32, row0: u32, k0: u32, q: u32) -> vec4<W> {
    var v = vec4<W>();
    if (A_QUADS % WG != 0u && q >= A_QUADS) { return v; }
    var r: u32;
    var k: u32;
    if (A_QUAD_K) {
        r = q / (BK / 4u);
        k = (q % (BK / 4u)) * 4u;
    } else {
        k = q / (BM / 4u);
        r = (q % (BM / 4u)) * 4u;
    }
    let m = row0 + r;
    let kk = k0 + k;
    let i = base + m * params.a_row + kk * params.a_col;
    if (A_VEC) {
        if (!CHECK || (m < params.M && kk < params.K)) { v = vec4<W>(a[i >> 2u]); }
    } else {
        let step = select(params.a_row, params.a_col, A_QUAD_K);
        for (var j = 0u; j < 4u; j++) {
            let mj = select(m + j, m, A_QUAD_K);
            let kj = select(kk, kk + j, A_QUAD_K);
            if (!CHECK || (mj < params.M && kj < params.K)) { v[j] = W(a_elem(i + j * step)); }
        }
    }
    return v;
}

fn store_a(buffer: u32, q: u32, v: vec4<W>) {
    if (A_QUADS % WG != 0u && q >= A_QUADS) { return; }
    let start = buffer * BK * A_ROW;
    if (!A_QUAD_K) {
        a_tile[start + (q / (BM / 4u)) * A_ROW + q % (BM / 4u)] = v;
        return;
    }
    let r = q / (BK / 4u);
    let group = r / A_RG;
    let at = start + (q % (BK / 4u)) * 4u * A_ROW + (group / 4u) * A_RG + r % A_RG;
    switch (group % 4u) {
        case 0u: { a_tile[at].x = v.x; a_tile[at + A_ROW].x = v.y; a_tile[at + 2u * A_ROW].x = v.z; a_tile[at + 3u * A_ROW].x = v.w; }
        case 1u: { a_tile[at].y = v.x; a_tile[at + A_ROW].y = v.y; a_tile[at + 2u * A_ROW].y = v.z; a_tile[at + 3u * A_ROW].y = v.w; }
        case 2u: { a_tile[at].z = v.x; a_tile[at + A_ROW].z = v.y; a_tile[at + 2u * A_ROW].z = v.z; a_tile[at + 3u * A_ROW].z = v.w; }
        default: { a_tile[at].w = v.x; a_tile[at + A_ROW].w = v.y; a_tile[at + 2u * A_ROW].w = v.z; a_tile[at + 3u * A_ROW].w = v.w; }
    }
}

// Quad q of the b slice at rows k0.., columns col0..: along k or along n.
fn load_b(base: u32, col0: u32, k0: u32, q: u32) -> vec4<W> {
    var v = vec4<W>();
    if (B_QUADS % WG != 0u && q >= B_QUADS) { return v; }
    var c: u32;
    var k: u32;
    if (B_QUAD_K) {
        c = q / (BK / 4u);
        k = (q % (BK / 4u)) * 4u;
    } else {
        k = q / (BN / 4u);
        c = (q % (BN / 4u)) * 4u;
    }
    let n = col0 + c;
    let kk = k0 + k;
    let i = base + kk * params.b_row + n * params.b_col;
    if (B_VEC) {
        if (!CHECK || (n < params.N && kk < params.K)) { v = vec4<W>(b[i >> 2u]); }
    } else {
        let step = select(params.b_col, params.b_row, B_QUAD_K);
        for (var j = 0u; j < 4u; j++) {
            let nj = select(n + j, n, B_QUAD_K);
            let kj = select(kk, kk + j, B_QUAD_K);
            if (!CHECK || (nj < params.N && kj < params.K)) { v[j] = W(b_elem(i + j * step)); }
        }
    }
    return v;
}

fn store_b(buffer: u32, q: u32, v: vec4<W>) {
    if (B_QUADS % WG != 0u && q >= B_QUADS) { return; }
    let start = buffer * BK * B_ROW;
    if (!B_QUAD_K) {
        b_tile[start + (q / (BN / 4u)) * B_ROW + q % (BN / 4u)] = v;
        return;
    }
    let c = q / (BK / 4u);
    let group = c / B_RG;
    let at = start + (q % (BK / 4u)) * 4u * B_ROW + (group / 4u) * B_RG + c % B_RG;
    switch (group % 4u) {
        case 0u: { b_tile[at].x = v.x; b_tile[at + B_ROW].x = v.y; b_tile[at + 2u * B_ROW].x = v.z; b_tile[at + 3u * B_ROW].x = v.w; }
        case 1u: { b_tile[at].y = v.x; b_tile[at + B_ROW].y = v.y; b_tile[at + 2u * B_ROW].y = v.z; b_tile[at + 3u * B_ROW].y = v.w; }
        case 2u: { b_tile[at].z = v.x; b_tile[at + B_ROW].z = v.y; b_tile[at + 2u * B_ROW].z = v.z; b_tile[at + 3u * B_ROW].z = v.w; }
        default: { b_tile[at].w = v.x; b_tile[at + B_ROW].w = v.y; b_tile[at + 2u * B_ROW].w = v.z; b_tile[at + 3u * B_ROW].w = v.w; }
    }
}

// Row i of 4x4 block p of the a slice at rows row0.., k0.. (A_BLOCK): 4 elements
// along k of tile row 4 * (p / (BK / 4)) + i, from k 4 * (p % (BK / 4)).
fn load_a_block_row(base: u32, row0: u32, k0: u32, p: u32, i: u32) -> vec4<W> {
    let m = row0 + 4u * (p / (BK / 4u)) + i;
    let kk = k0 + 4u * (p % (BK / 4u));
    if (CHECK && (m >= params.M || kk >= params.K)) { return vec4<W>(); }
    return vec4<W>(a[(base + m * params.a_row + kk) >> 2u]);
}

// Column i of 4x4 block p of the b slice at rows k0.., columns col0.. (B_BLOCK).
fn load_b_block_row(base: u32, col0: u32, k0: u32, p: u32, i: u32) -> vec4<W> {
    let n = col0 + 4u * (p / (BK / 4u)) + i;
    let kk = k0 + 4u * (p % (BK / 4u));
    if (CHECK && (n >= params.N || kk >= params.K)) { return vec4<W>(); }
    return vec4<W>(b[(base + n * params.b_col + kk) >> 2u]);
}

// The a slice at k0 into this invocation's registers r.
fn fetch_a(base: u32, row0: u32, k0: u32, lid: u32, r: ptr<function, array<vec4<W>, A_REGS>>) {
    if (A_BLOCK) {
        for (var j = 0u; j < A_BLOCK_LOADS; j++) {
            let p = lid + j * WG;
            if (p >= A_BLOCKS) { break; }
            for (var i = 0u; i < 4u; i++) { (*r)[4u * j + i] = load_a_block_row(base, row0, k0, p, i); }
        }
        return;
    }
    for (var j = 0u; j < A_LOADS; j++) { (*r)[j] = load_a(base, row0, k0, lid + j * WG); }
}

fn fetch_b(base: u32, col0: u32, k0: u32, lid: u32, r: ptr<function, array<vec4<W>, B_REGS>>) {
    if (B_BLOCK) {
        for (var j = 0u; j < B_BLOCK_LOADS; j++) {
            let p = (WG - 1u - lid) + j * WG;   // the last invocations: a's blocks take the first
            if (p >= B_BLOCKS) { break; }
            for (var i = 0u; i < 4u; i++) { (*r)[4u * j + i] = load_b_block_row(base, col0, k0, p, i); }
        }
        return;
    }
    for (var j = 0u; j < B_LOADS; j++) { (*r)[j] = load_b(base, col0, k0, lid + j * WG); }
}

// Registers r (fetch_a) into shared buffer `buffer`; a block is transposed so
// that each k row gets one vec4 of 4 tile rows.
fn put_a(buffer: u32, lid: u32, r: ptr<function, array<vec4<W>, A_REGS>>) {
    if (A_BLOCK) {
        for (var j = 0u; j < A_BLOCK_LOADS; j++) {
            let p = lid + j * WG;
            if (p >= A_BLOCKS) { break; }
            let at = buffer * BK * A_ROW + 4u * (p % (BK / 4u)) * A_ROW + p / (BK / 4u);
            for (var c = 0u; c < 4u; c++) {
                a_tile[at + c * A_ROW] = vec4<W>((*r)[4u * j][c], (*r)[4u * j + 1u][c], (*r)[4u * j + 2u][c], (*r)[4u * j + 3u][c]);
            }
        }
        return;
    }
    for (var j = 0u; j < A_LOADS; j++) { store_a(buffer, lid + j * WG, (*r)[j]); }
}

fn put_b(buffer: u32, lid: u32, r: ptr<function, array<vec4<W>, B_REGS>>) {
    if (B_BLOCK) {
        for (var j = 0u; j < B_BLOCK_LOADS; j++) {
            let p = (WG - 1u - lid) + j * WG;
            if (p >= B_BLOCKS) { break; }
            let at = buffer * BK * B_ROW + 4u * (p % (BK / 4u)) * B_ROW + p / (BK / 4u);
            for (var c = 0u; c < 4u; c++) {
                b_tile[at + c * B_ROW] = vec4<W>((*r)[4u * j][c], (*r)[4u * j + 1u][c], (*r)[4u * j + 2u][c], (*r)[4u * j + 3u][c]);
            }
        }
        return;
    }
    for (var j = 0u; j < B_LOADS; j++) { store_b(buffer, lid + j * WG, (*r)[j]); }
}

// (tile_m, tile_n) of tile t of a batch: group_m tile rows at a time, column by column.
fn tile_coords(t: u32) -> vec2<u32> {
    let per_group = params.group_m * params.tiles_n;
    let group = t / per_group;
    let first = group * params.group_m;
    let size = min(params.tiles_m - first, params.group_m);
    let r = t - group * per_group;
    return vec2<u32>(first + r % size, r / size);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let wg_id = wid.x + wid.y * nwg.x;
    let tiles = params.tiles_m * params.tiles_n;
    let per_part = tiles * params.batches;
    let parts = max((params.K + params.split_k - 1u) / params.split_k, 1u);
    if (wg_id >= per_part * parts) { return; }
    let part = wg_id / per_part;
    let id = wg_id - part * per_part;
    let batch = id / tiles;
    let tile = tile_coords(id - batch * tiles);
    var base = batch_offsets(batch);
    base.z += part * params.split_stride;
    let k_first = part * params.split_k;                       // this part's k range
    let k_count = min(params.K - min(k_first, params.K), params.split_k);
    let row0 = tile.x * BM;
    let col0 = tile.y * BN;
    var tx = lid % (BN / TN);
    var ty = lid / (BN / TN);
    if (WARP_TX > 0u) {
        let warp = lid / 32u;
        let lane = lid % 32u;
        let wx = max(WARP_TX, 1u);   // WGSL folds the constant branch's divisions too
        let warps_x = (BN / TN) / wx;
        tx = (warp % warps_x) * wx + lane % wx;
        ty = (warp / warps_x) * (32u / wx) + lane / wx;
    }

    var acc: array<vec4<T>, TM * TN / 4u>;   // [row TM][column group TN / 4]
    var sums_h: array<vec4<W>, TM * TN / 4u>;  // HALF_MATH: one slice's f16 sums
    var ra: array<vec4<W>, A_REGS>;
    var rb: array<vec4<W>, B_REGS>;
    fetch_a(base.x, row0, k_first, lid, &ra);
    fetch_b(base.y, col0, k_first, lid, &rb);
    put_a(0u, lid, &ra);
    put_b(0u, lid, &rb);
    workgroupBarrier();

    let slices = (k_count + BK - 1u) / BK;
    for (var s = 0u; s < slices; s++) {
        let cur = s & 1u;
        let more = s + 1u < slices;
        if (more) {
            let k0 = k_first + (s + 1u) * BK;
            fetch_a(base.x, row0, k0, lid, &ra);
            fetch_b(base.y, col0, k0, lid, &rb);
        }
        let a_start = cur * BK * A_ROW + ty;
        let b_start = cur * BK * B_ROW + tx;
        for (var kk = 0u; kk < BK; kk++) {
            var af: array<vec4<W>, TM / 4u>;
            var bf: array<vec4<W>, TN / 4u>;
            for (var g = 0u; g < TM / 4u; g++) { af[g] = a_tile[a_start + kk * A_ROW + g * (BM / TM)]; }
            for (var h = 0u; h < TN / 4u; h++) { bf[h] = b_tile[b_start + kk * B_ROW + h * (BN / TN)]; }
            for (var g = 0u; g < TM / 4u; g++) {
                for (var i = 0u; i < 4u; i++) {
                    let av = vec4<W>(af[g][i]);
                    for (var h = 0u; h < TN / 4u; h++) {
                        let o = (g * 4u + i) * (TN / 4u) + h;
                        if (HALF_MATH) { sums_h[o] = mad4w(av, bf[h], sums_h[o]); } else { acc[o] = mad4(vec4<T>(av), vec4<T>(bf[h]), acc[o]); }
                    }
                }
            }
        }
        if (HALF_MATH) {
            for (var o = 0u; o < TM * TN / 4u; o++) {
                acc[o] += vec4<T>(sums_h[o]);
                sums_h[o] = vec4<W>();
            }
        }
        if (more) {
            put_a(cur ^ 1u, lid, &ra);
            put_b(cur ^ 1u, lid, &rb);
        }
        workgroupBarrier();
    }

    for (var g = 0u; g < TM / 4u; g++) {
        for (var i = 0u; i < 4u; i++) {
            let m = row0 + a_row_of(g * (BM / TM) + ty, i);
            if (CHECK && m >= params.M) { continue; }
            for (var h = 0u; h < TN / 4u; h++) {
                let v = acc[(g * 4u + i) * (TN / 4u) + h];
                let slot = h * (BN / TN) + tx;
                if (!B_QUAD_K || B_BLOCK) {
                    let n = col0 + 4u * slot;
                    let o = base.z + m * params.N + n;
                    if (!CHECK || n + 3u < params.N) {
                        out[o] = finish(v.x, m, n);
                        out[o + 1u] = finish(v.y, m, n + 1u);
                        out[o + 2u] = finish(v.z, m, n + 2u);
                        out[o + 3u] = finish(v.w, m, n + 3u);
                        continue;
                    }
                }
                for (var j = 0u; j < 4u; j++) {
                    let n = col0 + b_col_of(slot, j);
                    if (!CHECK || n < params.N) { out[base.z + m * params.N + n] = finish(v[j], m, n); }
                }
            }
        }
    }
    // GELU_GRAD: each invocation turns the sums it just stored into the sums
    // times GELU's slope at h (m, n) (h [M, N] contiguous from bias_offset, row
    // stride bias_row; one batch). A second pass over out rather than in the
    // loop above: with the slope's exp and division inlined per accumulator the
    // compilers stopped unrolling that loop, indexed acc dynamically and kept it
    // in memory (the H200's [16384, 384] x [384, 1536] ran 8.3 ms, not 0.4);
    // here acc is dead. The pass reads back what was stored (on the H200 as
    // many bytes as the elementwise kernel it replaces: 493.6 us a call against
    // 408.3 + 85.3); what it saves is that kernel's dispatch and the temporary.
    // (Through workgroup memory instead, 16 KiB chunks of the tile, it took
    // 755.5 us: the added workgroup memory halved the GEMM's occupancy.)
    if (GELU_GRAD) {
        for (var g = 0u; g < TM / 4u; g++) {
            for (var i = 0u; i < 4u; i++) {
                let m = row0 + a_row_of(g * (BM / TM) + ty, i);
                if (CHECK && m >= params.M) { continue; }
                for (var h = 0u; h < TN / 4u; h++) {
                    let slot = h * (BN / TN) + tx;
                    for (var j = 0u; j < 4u; j++) {
                        let n = col0 + b_col_of(slot, j);
                        if (!CHECK || n < params.N) {
                            let o = base.z + m * params.N + n;
                            out[o] = O(gelu_grad(T(out[o]), params.bias_offset + m * params.bias_row + n));
                        }
                    }
                }
            }
        }
    }
}
