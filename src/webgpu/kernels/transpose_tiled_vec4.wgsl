// Tiled transpose-copy of 4-byte elements in 16-byte loads and stores: the
// aligned case of transpose_tiled.wgsl (same Params, same bindings, same
// work per workgroup), for R, C, every stride along them and both offsets
// multiples of 4 (webgpu_transpose.c checks).
//
//   out [batch.., R, .., C] contiguous  <-  x with stride 1 along R and
//   in_col_stride along C (batch dims: any strides, multiples of 4)
//
// Why: with one u32 a lane, a warp moves 128 bytes per request and the
// x^T copies ahead of the GPT step's GEMMs ([16384, 384] f32) ran at ~2.2 TB/s
// of an H200's ~4; a vec4 a lane moves 512 bytes per request with the same
// number of workgroups.
//
// One workgroup of WG invocations per 32 x 32 tile. Read phase: quad q of the
// tile is column q / 8, rows 4 (q % 8) .. + 3 (one vec4 of x, contiguous along
// R), stored as 4 words of tile[c][r]. Write phase: quad q is row q / 8,
// columns 4 (q % 8) .. + 3, gathered from 4 tile rows and stored as one vec4
// of out. With the pitch 33 (= 1 mod 32 banks) both phases touch 32 distinct
// banks per word a warp stores or loads: lane l of a warp holds quad
// (l / 8, l % 8) and its bank is l / 8 + 4 (l % 8) + j.
// Rows and columns are whole quads (R, C multiples of 4), so a quad is either
// wholly inside the tensor or wholly outside; quads outside are skipped.
//
// Prelude (host): const WG: u32 (invocations: 32 x the configured workgroup rows).
// Bindings: 0 params (uniform), 1 src: array<vec4<u32>>, 2 dst: array<vec4<u32>>.

struct Params {
    rows: u32,             // R
    cols: u32,             // C
    in_col_stride: u32,    // x's stride along C (elements)
    out_row_stride: u32,   // out's stride along R (elements)
    in_offset: u32,        // elements
    out_offset: u32,
    tiles_c: u32,          // ceil(C / 32)
    tiles_r: u32,          // ceil(R / 32)
    n_tiles: u32,          // tiles_c * tiles_r * batch
    n_batch: u32,          // batch dims in use (<= 6)
    pad0: u32,
    pad1: u32,
    batch: array<vec4<u32>, 6>, // (size, x stride, out stride, 0), innermost first
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

const TILE = 32u;
const QUADS = TILE * TILE / 4u;   // 256 quads a tile
const PITCH = TILE + 1u;

var<workgroup> tile: array<u32, TILE * PITCH>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    var id = wid.x + wid.y * nwg.x;
    if (id >= params.n_tiles) {
        return;
    }
    let tc = id % params.tiles_c;
    id /= params.tiles_c;
    let tr = id % params.tiles_r;
    var b = id / params.tiles_r;
    var in_base = params.in_offset;
    var out_base = params.out_offset;
    for (var d = 0u; d < params.n_batch; d++) {
        let dim = params.batch[d];
        let i = b % dim.x;
        b /= dim.x;
        in_base += i * dim.y;
        out_base += i * dim.z;
    }
    let r0 = tr * TILE;
    let c0 = tc * TILE;

    // Read: a vec4 along R (x's unit stride) per quad.
    for (var q = lid; q < QUADS; q += WG) {
        let cl = q / 8u;
        let rl = 4u * (q % 8u);
        let c = c0 + cl;
        let r = r0 + rl;
        if (c < params.cols && r < params.rows) {
            let v = src[(in_base + c * params.in_col_stride + r) >> 2u];
            let at = cl * PITCH + rl;
            tile[at] = v.x;
            tile[at + 1u] = v.y;
            tile[at + 2u] = v.z;
            tile[at + 3u] = v.w;
        }
    }
    workgroupBarrier();

    // Write: a vec4 along C (out's unit stride) per quad.
    for (var q = lid; q < QUADS; q += WG) {
        let rl = q / 8u;
        let cl = 4u * (q % 8u);
        let r = r0 + rl;
        let c = c0 + cl;
        if (r < params.rows && c < params.cols) {
            let at = cl * PITCH + rl;
            let v = vec4<u32>(tile[at], tile[at + PITCH], tile[at + 2u * PITCH], tile[at + 3u * PITCH]);
            dst[(out_base + r * params.out_row_stride + c) >> 2u] = v;
        }
    }
}
