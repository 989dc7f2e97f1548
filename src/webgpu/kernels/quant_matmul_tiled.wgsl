// quant_matmul_tiled: the prefill form (M > a few rows) of QMATMUL, a tiled
// GEMM that dequantizes the weights into workgroup memory.
//   x [M, K] f32, qweight [N, K * BITS / 32] u32 words, scales [N, K / 32] f32
//   -> out [M, N] f32; same layout and Params as quant_matmul.wgsl.
// Why: quant_matmul gives each output column (and block of 4 rows) its own
// workgroup, which re-reads x for every column and the weights for every 4
// rows: at 512 prompt tokens prefill ran ~30x slower than the f16 GEMM.
// Here a workgroup owns a BM x BN tile of out (prelude: BM, BN, TM, TN, BITS;
// webgpu_quant.c) and walks K one quantization group (BK = 32) at a time:
// the x slice [BM, 32] and the weight slice [BN, 32] go to workgroup memory,
// the weights already dequantized (code * the group's one scale per row), so
// the inner loop is the f32 tiled GEMM's register-blocked outer product
// (kernels/matmul_tiled.wgsl): each invocation owns TM x TN outputs, f32 sums.
// Both shared tiles are row-major with vec4s along k, the layout x and the
// codes come in (no transposing stores); rows are padded by one vec4 so that
// the 8 invocations of a 128-bit access phase hit distinct banks. The next
// slice is fetched into registers while the current one is multiplied.
// Invocation (tx, ty): tile rows ty + i BM / TM (i < TM), columns
// tx + j BN / TN (j < TN): neighbouring invocations read neighbouring padded
// rows and store neighbouring columns. Workgroup id = tile_m + tile_n
// tiles_m: the tiles_m workgroups in flight together share one weight tile,
// which DRAM then delivers once. M, N need no multiple of the tile: rows and
// columns past the edge are zeros in the shared tiles and are not stored.
// Weight (n, k) = code * scale: 8 bits: byte k % 4 of word k / 4 as int8;
// 4 bits: nibble k % 8 (low first) of word k / 8, minus 8.

struct Params {
    M: u32, N: u32, K: u32, bits: u32,
    x_offset: u32, q_offset: u32, s_offset: u32, out_offset: u32,   // x, q in vec4 units; s, out in elements
    tiles_m: u32, tiles_n: u32, _p1: u32, _p2: u32,               // ceil(M / BM), ceil(N / BN)
}

const BK: u32 = 32u;                          // k per slice: one group, one scale per weight row
const WG: u32 = (BM / TM) * (BN / TN);
const ROW: u32 = BK / 4u + 1u;                // vec4s per shared row (padded)
const X_QUADS: u32 = BM * BK / 4u;            // vec4<f32> of x per slice
const X_LOADS: u32 = (X_QUADS + WG - 1u) / WG;
const QPR: u32 = BITS / 4u;                   // vec4<u32> of codes per weight row and group (8 bits: 2, 4 bits: 1)
const W_QUADS: u32 = BN * QPR;
const W_LOADS: u32 = (W_QUADS + WG - 1u) / WG;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> q: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> xs: array<vec4<f32>, BM * ROW>;   // [row][k / 4]
var<workgroup> ws: array<vec4<f32>, BN * ROW>;   // [column][k / 4], dequantized

// One slice's loads, held in registers until the shared tiles are free.
struct Slice {
    x: array<vec4<f32>, X_LOADS>,
    w: array<vec4<u32>, W_LOADS>,
    s: array<f32, W_LOADS>,
}

// Group g of rows row0.. of x and of weight rows col0..; zeros past M and N.
fn fetch(row0: u32, col0: u32, g: u32, lid: u32) -> Slice {
    var r: Slice;
    let K4 = params.K / 4u;
    for (var j = 0u; j < X_LOADS; j++) {
        let i = lid + j * WG;
        let m = row0 + i / (BK / 4u);
        r.x[j] = vec4<f32>();
        if ((X_QUADS % WG == 0u || i < X_QUADS) && m < params.M) {
            r.x[j] = x[params.x_offset + m * K4 + g * (BK / 4u) + i % (BK / 4u)];
        }
    }
    let G = params.K / 32u;
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        let n = col0 + i / QPR;
        r.w[j] = vec4<u32>();
        r.s[j] = 0.0;
        if ((W_QUADS % WG == 0u || i < W_QUADS) && n < params.N) {
            r.w[j] = q[params.q_offset + n * (G * QPR) + g * QPR + i % QPR];
            r.s[j] = scales[params.s_offset + n * G + g];
        }
    }
    return r;
}

// A fetched slice into the shared tiles, the weights dequantized on the way.
fn put(r: Slice, lid: u32) {
    for (var j = 0u; j < X_LOADS; j++) {
        let i = lid + j * WG;
        if (X_QUADS % WG == 0u || i < X_QUADS) { xs[(i / (BK / 4u)) * ROW + i % (BK / 4u)] = r.x[j]; }
    }
    for (var j = 0u; j < W_LOADS; j++) {
        let i = lid + j * WG;
        if (W_QUADS % WG != 0u && i >= W_QUADS) { continue; }
        let at = (i / QPR) * ROW + (i % QPR) * 4u;   // 8 bits: a quad is 16 codes, 4 vec4s
        let w = r.w[j];
        let s = r.s[j];
        if (BITS == 8u) {
            ws[at] = bytes4(w.x) * s;
            ws[at + 1u] = bytes4(w.y) * s;
            ws[at + 2u] = bytes4(w.z) * s;
            ws[at + 3u] = bytes4(w.w) * s;
        } else {                                      // 4 bits: 32 codes, the whole row slice
            ws[at] = nibbles_lo(w.x) * s;
            ws[at + 1u] = nibbles_hi(w.x) * s;
            ws[at + 2u] = nibbles_lo(w.y) * s;
            ws[at + 3u] = nibbles_hi(w.y) * s;
            ws[at + 4u] = nibbles_lo(w.z) * s;
            ws[at + 5u] = nibbles_hi(w.z) * s;
            ws[at + 6u] = nibbles_lo(w.w) * s;
            ws[at + 7u] = nibbles_hi(w.w) * s;
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= params.tiles_m * params.tiles_n) { return; }   // uniform per workgroup
    let row0 = (id % params.tiles_m) * BM;
    let col0 = (id / params.tiles_m) * BN;
    let tx = lid % (BN / TN);
    let ty = lid / (BN / TN);
    let G = params.K / 32u;

    var acc: array<vec4<f32>, TM * TN / 4u>;   // [row i][column group h]: columns 4h..4h+3 of the invocation's
    var r = fetch(row0, col0, 0u, lid);
    put(r, lid);
    workgroupBarrier();
    for (var g = 0u; g < G; g++) {
        let more = g + 1u < G;
        if (more) { r = fetch(row0, col0, g + 1u, lid); }
        for (var k4 = 0u; k4 < BK / 4u; k4++) {
            var bv: array<vec4<f32>, TN>;       // 4 k values of each of the invocation's columns
            for (var j = 0u; j < TN; j++) { bv[j] = ws[(tx + j * (BN / TN)) * ROW + k4]; }
            for (var i = 0u; i < TM; i++) {
                let av = xs[(ty + i * (BM / TM)) * ROW + k4];
                for (var c = 0u; c < 4u; c++) {
                    let a = vec4<f32>(av[c]);
                    for (var h = 0u; h < TN / 4u; h++) {
                        let b = vec4<f32>(bv[4u * h][c], bv[4u * h + 1u][c], bv[4u * h + 2u][c], bv[4u * h + 3u][c]);
                        acc[i * (TN / 4u) + h] = fma(a, b, acc[i * (TN / 4u) + h]);
                    }
                }
            }
        }
        workgroupBarrier();   // every invocation is done reading slice g
        if (more) {
            put(r, lid);
            workgroupBarrier();
        }
    }

    for (var i = 0u; i < TM; i++) {
        let m = row0 + ty + i * (BM / TM);
        if (m >= params.M) { continue; }
        for (var h = 0u; h < TN / 4u; h++) {
            let v = acc[i * (TN / 4u) + h];
            for (var e = 0u; e < 4u; e++) {
                let n = col0 + tx + (4u * h + e) * (BN / TN);
                if (n < params.N) { out[params.out_offset + m * params.N + n] = v[e]; }
            }
        }
    }
}
