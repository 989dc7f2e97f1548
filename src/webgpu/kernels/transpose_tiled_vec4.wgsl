// Tiled transpose-copy of 4-byte elements in 16-byte loads and stores: the
// aligned case of transpose_tiled.wgsl (the same Params and tiles, from
// transpose_common.wgsl, and the same bindings), for R, C, every stride along
// them and both offsets multiples of 4 (webgpu_transpose.c checks).
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

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

const TILE = 32u;
const QUADS = TILE * TILE / 4u;   // 256 quads a tile
const PITCH = TILE + 1u;

var<workgroup> tile: array<u32, TILE * PITCH>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = tile_origin(wid, nwg);
    if (!t.live) {
        return;
    }

    // Read: a vec4 along R (x's unit stride) per quad.
    for (var q = lid; q < QUADS; q += WG) {
        let cl = q / 8u;
        let rl = 4u * (q % 8u);
        let c = t.c0 + cl;
        let r = t.r0 + rl;
        if (c < params.cols && r < params.rows) {
            let v = src[(t.in_base + c * params.in_col_stride + r) >> 2u];
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
        let r = t.r0 + rl;
        let c = t.c0 + cl;
        if (r < params.rows && c < params.cols) {
            let at = cl * PITCH + rl;
            let v = vec4<u32>(tile[at], tile[at + PITCH], tile[at + 2u * PITCH], tile[at + 3u * PITCH]);
            dst[(t.out_base + r * params.out_row_stride + c) >> 2u] = v;
        }
    }
}
