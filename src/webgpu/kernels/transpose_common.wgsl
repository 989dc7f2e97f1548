// transpose_common: what transpose_tiled.wgsl and transpose_tiled_vec4.wgsl
// share (webgpu_transpose.c puts it after the prelude, before either): the
// parameters and where a workgroup's TILE x TILE tile lies.
//
//   out [batch.., R, .., C] contiguous  <-  x with stride 1 along R and
//   in_col_stride along C (batch dims: any strides)

struct Params {
    rows: u32,             // R
    cols: u32,             // C
    in_col_stride: u32,    // x's stride along C (two's complement if negative)
    out_row_stride: u32,   // out's stride along R
    in_offset: u32,
    out_offset: u32,
    tiles_c: u32,          // ceil(C / TILE)
    tiles_r: u32,          // ceil(R / TILE)
    n_tiles: u32,          // tiles_c * tiles_r * batch: workgroups with work
    n_batch: u32,          // batch dims in use (<= 6)
    pad0: u32,
    pad1: u32,
    batch: array<vec4<u32>, 6>, // (size, x stride, out stride, 0), innermost first
}

@group(0) @binding(0) var<uniform> params: Params;

// A workgroup's tile: its batch's first elements in x and out, its first row
// and column; live is false for the workgroups past n_tiles (the 2-D grid's
// rounding), which return before any barrier (the whole workgroup alike).
struct TileOrigin {
    in_base: u32,
    out_base: u32,
    r0: u32,
    c0: u32,
    live: bool,
}

// The linear tile id (the host folds more than 65535 workgroups into 2-D),
// unravelled into tile column, tile row and batch coordinates.
fn tile_origin(wid: vec3<u32>, nwg: vec3<u32>) -> TileOrigin {
    var t: TileOrigin;
    var id = wid.x + wid.y * nwg.x;
    t.live = id < params.n_tiles;
    if (!t.live) {
        return t;
    }
    let tc = id % params.tiles_c;
    id /= params.tiles_c;
    let tr = id % params.tiles_r;
    var b = id / params.tiles_r;
    t.in_base = params.in_offset;
    t.out_base = params.out_offset;
    for (var d = 0u; d < params.n_batch; d++) {
        let dim = params.batch[d];
        let i = b % dim.x;
        b /= dim.x;
        t.in_base += i * dim.y;
        t.out_base += i * dim.z;
    }
    t.r0 = tr * TILE;
    t.c0 = tc * TILE;
    return t;
}
