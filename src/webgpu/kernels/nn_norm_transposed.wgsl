// NORM with nn.transposed: layer or rms norm that also writes y transposed,
// 32 rows a workgroup.
//   x [R, D], weight [D]?, bias [D]? -> y [R, D], yt [D, R] (yt[c][r] = y[r][c],
//   the same f32 values), stats [R, 2] = (mean, rstd)
// Why: a GEMM that reads its a operand along k (y @ W^T with a wide W) runs
// faster on a copy of a with the rows' dim contiguous (webgpu_matmul.c,
// transpose_pays). Writing that layout here costs one more write of y; the
// copy cost a read and a write and a dispatch of its own.
//
// V = vec4<f32> only (D % 4 == 0, every offset a multiple of 4; the host
// checks). Invocation lid owns row r = lid / LANES of the workgroup's ROWS and
// keeps the row's slots s, s + LANES, .. (s = lid % LANES, CACHE of them) in
// registers: x is read once, y and yt written once. A warp covers 4 rows x 8
// neighbouring vec4s (four 128-byte runs: coalesced). The statistics are sums
// of the LANES invocations' partials in a fixed order (two passes over the
// registers, as nn_norm.wgsl: var = sum (x - mean)^2 / D, not E[x^2] - mean^2).
// yt goes through a [32 columns][ROWS + 1] workgroup tile, one register slot
// (32 columns of every row) at a time: a warp then writes 32 neighbouring rows
// of one column (128 bytes). The tile's stores are free of bank conflicts:
// word (4 s + k) (ROWS + 1) + r lies in bank (4 s + k + r) % 32.
// Prelude (webgpu_nn.c): WG = 256, CACHE = ceil(D / 4 / LANES) <= 16, V = vec4.

@group(0) @binding(1) var<storage, read> x: array<V>;
@group(0) @binding(2) var<storage, read> weight: array<V>;
@group(0) @binding(3) var<storage, read> bias: array<V>;
@group(0) @binding(4) var<storage, read_write> y: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> yt: array<f32>;   // from params.pw_offset, in f32

const LANES = 8u;                  // invocations a row
const ROWS = WG / LANES;           // rows a workgroup (32)
const TS = ROWS + 1u;              // padded column stride of the tile

var<workgroup> lane_sums: array<f32, WG>;
var<workgroup> tile: array<f32, 4u * LANES * TS>;   // [column of the slot group][row]

// The sum of v over the LANES invocations of this one's row, added in lane order.
fn row_sum(v: f32, lid: u32) -> f32 {
    lane_sums[lid] = v;
    workgroupBarrier();
    let first = (lid / LANES) * LANES;
    var total = 0.0;
    for (var j = 0u; j < LANES; j++) {
        total += lane_sums[first + j];
    }
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let group = group_index(wid, nwg);
    if (group >= params.n_groups) {
        return; // the whole workgroup leaves: barriers below stay uniform
    }
    let r = lid / LANES;
    let s = lid % LANES;
    let row0 = group * ROWS;
    let row = row0 + r;
    let live = row < params.rows;
    let n = params.d / 4u;
    let xb = params.x_offset + row * n;
    let yb = params.y_offset + row * n;
    let inv_d = 1.0 / f32(params.d);

    var c: array<V, CACHE>;
    var sum = 0.0;
    for (var i = 0u; i < CACHE; i++) {
        let slot = s + i * LANES;
        c[i] = V(0.0);
        if (live && slot < n) {
            c[i] = x[xb + slot];
        }
        sum += hsum(c[i]);
    }
    var mean = 0.0;
    if ((params.flags & RMS) == 0u) {
        mean = row_sum(sum, lid) * inv_d;
    }
    let m = V(mean);
    var q = 0.0;
    for (var i = 0u; i < CACHE; i++) {
        let d = c[i] - m;
        q += select(0.0, hsum(d * d), s + i * LANES < n);
    }
    let rstd = inverseSqrt(row_sum(q, lid) * inv_d + params.eps);
    let has_w = (params.flags & HAS_WEIGHT) != 0u;
    let has_b = (params.flags & HAS_BIAS) != 0u;
    for (var i = 0u; i < CACHE; i++) {
        let slot = s + i * LANES;
        if (slot < n) {
            var o = (c[i] - m) * V(rstd);
            if (has_w) {
                o = o * weight[params.w_offset + slot];
            }
            if (has_b) {
                o = o + bias[params.b_offset + slot];
            }
            c[i] = o;
            if (live) {
                y[yb + slot] = o;
            }
        }
    }
    if (live && s == 0u) {
        stats[params.stats_offset + 2u * row] = mean;
        stats[params.stats_offset + 2u * row + 1u] = rstd;
    }

    // yt: slot group i holds columns 32 i .. 32 i + 31 of the 32 rows
    let rr = lid % 32u;          // the row a writer takes
    let grow = row0 + rr;
    for (var i = 0u; i < CACHE; i++) {
        let v = c[i];
        tile[(4u * s) * TS + r] = v.x;
        tile[(4u * s + 1u) * TS + r] = v.y;
        tile[(4u * s + 2u) * TS + r] = v.z;
        tile[(4u * s + 3u) * TS + r] = v.w;
        workgroupBarrier();
        for (var k = 0u; k < 4u * LANES * ROWS / WG; k++) {
            let cc = lid / 32u + k * (WG / 32u);
            let col = 32u * i + cc;
            if (col < params.d && grow < params.rows) {
                yt[params.pw_offset + col * params.rows + grow] = tile[cc * TS + rr];
            }
        }
        workgroupBarrier();
    }
}
