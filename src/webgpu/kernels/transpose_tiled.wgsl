// Tiled transpose-copy of 4-byte elements (f32, i32), moved as u32 bits so
// every value, NaN payloads included, arrives unchanged:
//
//   out [batch.., R, .., C] contiguous  <-  x with stride 1 along R and
//   in_col_stride along C (batch dims: any strides)
//
// One workgroup per TILE x TILE tile of (R, C) of one batch coordinate. Read
// phase: the 32 lanes of a row of the workgroup walk R (stride 1 in x), so each
// wave reads 128 contiguous bytes; the tile goes to workgroup memory as
// tile[c][r]. Write phase: the lanes walk C (stride 1 in out) reading
// tile[c][r] down a column. The pitch TILE + 1 puts the 32 lanes' column reads
// in 32 different banks. Edge tiles (R or C not multiples of TILE) skip the
// positions outside the tensor; every index that is used stays in range, so
// the host compiles this without implementation bounds checks.
//
// Prelude (host): const TILE: u32 (32 or 64), const WG_Y: u32 (rows of the
// 32 x WG_Y workgroup; TILE % WG_Y == 0).
// Bindings: 0 params (uniform), 1 src: array<u32>, 2 dst: array<u32>.

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const LANES = 32u;
const SPAN = TILE / LANES;   // positions each lane covers along the walked dim
const PITCH = TILE + 1u;

var<workgroup> tile: array<u32, TILE * PITCH>;

@compute @workgroup_size(32, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = tile_origin(wid, nwg);
    if (!t.live) {
        return;
    }

    // Read: lanes along R, where x is contiguous.
    for (var cl = lid.y; cl < TILE; cl += WG_Y) {
        let c = t.c0 + cl;
        if (c < params.cols) {
            let col = t.in_base + c * params.in_col_stride;
            for (var s = 0u; s < SPAN; s++) {
                let rl = lid.x + s * LANES;
                let r = t.r0 + rl;
                if (r < params.rows) {
                    tile[cl * PITCH + rl] = src[col + r];
                }
            }
        }
    }
    workgroupBarrier();

    // Write: lanes along C, where out is contiguous.
    for (var rl = lid.y; rl < TILE; rl += WG_Y) {
        let r = t.r0 + rl;
        if (r < params.rows) {
            let row = t.out_base + r * params.out_row_stride;
            for (var s = 0u; s < SPAN; s++) {
                let cl = lid.x + s * LANES;
                let c = t.c0 + cl;
                if (c < params.cols) {
                    dst[row + c] = tile[cl * PITCH + rl];
                }
            }
        }
    }
}
