// conv_winograd: the transforms of a 3x3, stride 1, undilated, ungrouped
// convolution computed as Winograd F(4x4, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015; interpolation points
// 0, 1, -1, 2, -2 and infinity). Each 4 x 4 output tile is
//     Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// for its 6 x 6 input patch d and each 3 x 3 filter g, so the 36 element-wise
// products of all channels and tiles are 36 independent GEMMs (run by the
// tiled matmul between these kernels, webgpu_conv_winograd.c): 4 times
// fewer multiply-adds than the direct convolution, for ~29 MB of transformed
// data per layer of ResNet's 128-channel stage written and read once.
//
// The same matrices give the two gradients (webgpu_conv_winograd.c):
//   input gradient: the forward kernels on dy with the flipped, transposed
//     filters and padding 2 - pad (MODE 0, 1 with FLIP, 2);
//   weight gradient: the adjoint of the forward in g,
//     dW = G^T [ sum over tiles (A dy A^T) (.) (B^T x B) ] G
//     (MODE 0 on x, MODE 3 on the 4 x 4 dy tiles, a GEMM whose depth is the
//     tiles, MODE 4).
//
// Layouts (T tiles: t = (n, ti, tj) over a th x tw grid of 4 x 4 tiles; xi =
// 6 i + j, the 36 transform positions):
//   MODE 0 DATA          src [N, C, H, W] -> dst [36][C][T]: B^T d B of the 6 x 6
//                        patch at (4 ti - pad_top, 4 tj - pad_left), zeros outside
//   MODE 1 FILTER        src [K, C, 3, 3] -> dst [36][K][C]: G g G^T;
//                        FLIP: dst [36][C][K] of the filter turned by 180 degrees
//   MODE 2 OUTPUT        src [36][C][T] (C: the output's channels) -> dst [N, C, H, W]
//                        (H, W: the output size): A^T m A, + bias[c] when has_bias
//   MODE 3 GRAD_DATA     src [N, C, H, W] (dy) -> dst [36][C][T]: A d A^T of the
//                        4 x 4 tile at (4 ti, 4 tj), zeros outside
//   MODE 4 GRAD_FILTER   src [36][parts][K][C] -> dst [K, C, 3, 3]: G^T m G of the
//                        parts' sum (the GEMM over the tiles split into parts,
//                        added here in order)
// In MODE 0 and 3 the layout may hold more tiles than there are (T padded to
// whole parts of the weight gradient's GEMM): those are zeros.
// One invocation per (channel, tile) or (filter row, filter column), the
// fastest index last in the order above, so neighbouring invocations write
// neighbouring elements of each of the 36 planes.
//
// Prelude (webgpu_conv_winograd.c): const MODE: u32; const FLIP: bool.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    th: u32, tw: u32, tiles: u32, count: u32,   // count: invocations (MODE 1, 4: K C; else C T)
    pad_top: i32, pad_left: i32, src_offset: u32, dst_offset: u32,
    k: u32, has_bias: u32, bias_offset: u32, real_tiles: u32,  // tiles: the layout's (MODE 0, 3: may be padded)
    parts: u32, pad0: u32, pad1: u32, pad2: u32,                // parts: MODE 4's partial sums
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

// B^T v (6 -> 6)
fn bt6(v: array<f32, 6>) -> array<f32, 6> {
    return array<f32, 6>(4.0 * v[0] - 5.0 * v[2] + v[4],
                         -4.0 * (v[1] + v[2]) + v[3] + v[4],
                         4.0 * (v[1] - v[2]) - v[3] + v[4],
                         2.0 * (v[3] - v[1]) - v[2] + v[4],
                         2.0 * (v[1] - v[3]) - v[2] + v[4],
                         4.0 * v[1] - 5.0 * v[3] + v[5]);
}

// G v (3 -> 6)
fn g6(v: array<f32, 3>) -> array<f32, 6> {
    let even = v[0] + v[2];
    return array<f32, 6>(0.25 * v[0],
                         -(even + v[1]) / 6.0,
                         -(even - v[1]) / 6.0,
                         v[0] / 24.0 + v[1] / 12.0 + v[2] / 6.0,
                         v[0] / 24.0 - v[1] / 12.0 + v[2] / 6.0,
                         v[2]);
}

// A^T v (6 -> 4)
fn at4(v: array<f32, 6>) -> array<f32, 4> {
    let p1 = v[1] + v[2];
    let m1 = v[1] - v[2];
    let p2 = v[3] + v[4];
    let m2 = v[3] - v[4];
    return array<f32, 4>(v[0] + p1 + p2, m1 + 2.0 * m2, p1 + 4.0 * p2, m1 + 8.0 * m2 + v[5]);
}

// A v (4 -> 6), the adjoint of at4
fn a6(v: array<f32, 4>) -> array<f32, 6> {
    let e = v[0] + v[2];
    let o = v[1] + v[3];
    let e4 = v[0] + 4.0 * v[2];
    let o8 = 2.0 * v[1] + 8.0 * v[3];
    return array<f32, 6>(v[0], e + o, e - o, e4 + o8, e4 - o8, v[3]);
}

// G^T v (6 -> 3), the adjoint of g6
fn gt3(v: array<f32, 6>) -> array<f32, 3> {
    let s12 = v[1] + v[2];
    let d12 = v[2] - v[1];
    let s34 = v[3] + v[4];
    let d34 = v[3] - v[4];
    return array<f32, 3>(0.25 * v[0] - s12 / 6.0 + s34 / 24.0,
                         d12 / 6.0 + d34 / 12.0,
                         -s12 / 6.0 + s34 / 6.0 + v[5]);
}

// Tile t as (n, top row, left column) of its 4 x 4 block.
fn tile_origin(t: u32) -> vec3<u32> {
    let per_image = params.th * params.tw;
    let r = t % per_image;
    return vec3<u32>(t / per_image, 4u * (r / params.tw), 4u * (r % params.tw));
}

fn src_at(plane: u32, row: i32, col: i32) -> f32 {
    if (row < 0 || col < 0 || row >= i32(params.h) || col >= i32(params.w)) { return 0.0; }
    return src[plane + u32(row) * params.w + u32(col)];
}

// MODE 0: channel c, tile t.
// Row i of a transformed tile into the 36 planes of dst (stride apart) from
// element `at`; zeros for a padding tile (t >= real_tiles).
fn store_row(at: u32, stride: u32, i: u32, r: array<f32, 6>) {
    for (var j = 0u; j < 6u; j++) { dst[at + (6u * i + j) * stride] = r[j]; }
}

// The transform of one column (row) of a patch: B^T v (MODE 0), or A v of
// its first 4 entries (MODE 3).
fn patch_transform(v: array<f32, 6>) -> array<f32, 6> {
    if (MODE == 3u) { return a6(array<f32, 4>(v[0], v[1], v[2], v[3])); }
    return bt6(v);
}

// MODE 0 (6 x 6 patches from (4 ti - pad_top, 4 tj - pad_left)) and MODE 3
// (4 x 4 tiles of dy, pads 0): channel c, tile t.
fn data_transform(c: u32, t: u32) {
    let stride = params.c * params.tiles;
    let at = params.dst_offset + c * params.tiles + t;
    if (t >= params.real_tiles) {
        for (var i = 0u; i < 6u; i++) { store_row(at, stride, i, array<f32, 6>()); }
        return;
    }
    let size = select(6u, 4u, MODE == 3u);
    let o = tile_origin(t);
    let plane = params.src_offset + (o.x * params.c + c) * params.h * params.w;
    let row0 = i32(o.y) - params.pad_top;
    let col0 = i32(o.z) - params.pad_left;
    var cols: array<array<f32, 6>, 6>;   // [j] = the transform of column j
    for (var j = 0u; j < size; j++) {
        var v: array<f32, 6>;
        for (var i = 0u; i < size; i++) { v[i] = src_at(plane, row0 + i32(i), col0 + i32(j)); }
        cols[j] = patch_transform(v);
    }
    for (var i = 0u; i < 6u; i++) {
        var v: array<f32, 6>;
        for (var j = 0u; j < size; j++) { v[j] = cols[j][i]; }
        store_row(at, stride, i, patch_transform(v));
    }
}

// MODE 1: filter (k, c) of src [K, C, 3, 3].
fn filter_transform(k: u32, c: u32) {
    let base = params.src_offset + (k * params.c + c) * 9u;
    var cols: array<array<f32, 6>, 3>;   // [b] = G g[:, b]
    for (var b = 0u; b < 3u; b++) {
        var v: array<f32, 3>;
        for (var a = 0u; a < 3u; a++) {
            v[a] = select(src[base + 3u * a + b], src[base + 3u * (2u - a) + 2u - b], FLIP);
        }
        cols[b] = g6(v);
    }
    let stride = params.k * params.c;
    let at = params.dst_offset + select(k * params.c + c, c * params.k + k, FLIP);
    for (var i = 0u; i < 6u; i++) {
        store_row(at, stride, i, g6(array<f32, 3>(cols[0][i], cols[1][i], cols[2][i])));
    }
}

// Row i of the 36 planes of src [36][parts][...] at element `at` of each
// (stride apart), the parts added in order (MODE 2 has one part).
fn load_row(at: u32, stride: u32, i: u32) -> array<f32, 6> {
    var v: array<f32, 6>;
    for (var j = 0u; j < 6u; j++) {
        let first = at + (6u * i + j) * params.parts * stride;
        for (var s = 0u; s < params.parts; s++) { v[j] += src[first + s * stride]; }
    }
    return v;
}

// MODE 2: output channel c, tile t.
fn output_transform(c: u32, t: u32) {
    let at = params.src_offset + c * params.tiles + t;
    var rows: array<array<f32, 4>, 6>;   // [i] = m[i, :] A
    for (var i = 0u; i < 6u; i++) { rows[i] = at4(load_row(at, params.c * params.tiles, i)); }
    let o = tile_origin(t);
    let plane = params.dst_offset + (o.x * params.c + c) * params.h * params.w;
    let b = select(0.0, bias[params.bias_offset + c], params.has_bias != 0u);
    for (var j = 0u; j < 4u; j++) {
        let col = o.z + j;
        if (col >= params.w) { break; }
        let r = at4(array<f32, 6>(rows[0][j], rows[1][j], rows[2][j], rows[3][j], rows[4][j], rows[5][j]));
        for (var i = 0u; i < 4u; i++) {
            let row = o.y + i;
            if (row < params.h) { dst[plane + row * params.w + col] = r[i] + b; }
        }
    }
}

// MODE 4: filter gradient (k, c) from src [36][parts][K][C].
fn grad_filter_transform(k: u32, c: u32) {
    let at = params.src_offset + k * params.c + c;
    var rows: array<array<f32, 3>, 6>;   // [i] = m[i, :] G
    for (var i = 0u; i < 6u; i++) { rows[i] = gt3(load_row(at, params.k * params.c, i)); }
    let base = params.dst_offset + (k * params.c + c) * 9u;
    for (var b = 0u; b < 3u; b++) {
        let r = gt3(array<f32, 6>(rows[0][b], rows[1][b], rows[2][b], rows[3][b], rows[4][b], rows[5][b]));
        for (var a = 0u; a < 3u; a++) { dst[base + 3u * a + b] = r[a]; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (e >= params.count) { return; }
    if (MODE == 1u) {
        if (FLIP) { filter_transform(e % params.k, e / params.k); } else { filter_transform(e / params.c, e % params.c); }
    } else if (MODE == 4u) {
        grad_filter_transform(e / params.c, e % params.c);
    } else if (MODE == 0u || MODE == 3u) {
        data_transform(e / params.tiles, e % params.tiles);
    } else {
        output_transform(e / params.tiles, e % params.tiles);
    }
}
