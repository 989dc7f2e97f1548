// POOL_FORWARD, max without dilation (WGT_POOL_TILES, the default): x [N, C,
// H, W] -> y, argmax [N, C, OH, OW], one invocation per 4 neighbouring outputs
// of a row (OW and the outputs' offsets multiples of 4: webgpu_conv_pool.c
// checks), stored as vec4s. After conv_pool_common.wgsl; the prelude gives
// the window as constants: KH, KW, SH, SW, and PW = (TC - 1) SW + KW, the
// patch's columns (the pipeline is cached per window).
//
// Why: conv_pool.wgsl loops over a window whose size it learns at run time,
// one load at a time, each waited for before the compare; ResNet-18's 3x3
// stride-2 max pool (12.8M outputs) took 0.176 ms on an H100, well short of
// its memory traffic. Here the KH x ((4 - 1) SW + KW) input patch of the 4
// outputs is loaded first (27 independent loads for 3x3 stride 2, not 36
// dependent ones), then each output scans its taps in conv_pool.wgsl's order
// (row-major, taps outside the input skipped, the first maximum kept, NaN
// wins): the same values and argmaxes.

var<private> pool_bits_ff800000: u32 = 0xff800000u;   // -inf (see conv_pool.wgsl)

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> arg: array<vec4<i32>>;

const TC = 4u;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let tile = element_index(wid, nwg, lid);
    if (tile >= params.total) { return; }   // total counts tiles
    let tiles_w = params.ow / TC;
    let q = tile % tiles_w;
    let i = (tile / tiles_w) % params.oh;
    let p = tile / (tiles_w * params.oh);
    let H = i32(params.h);
    let W = i32(params.w);
    let h0 = i32(i * SH) - i32(params.pad_h);
    let w0 = i32(q * TC * SW) - i32(params.pad_w);
    let base = params.x_offset + p * params.h * params.w;
    var vals: array<array<f32, PW>, KH>;
    for (var a = 0u; a < KH; a++) {
        let ih = h0 + i32(a);
        for (var b = 0u; b < PW; b++) {
            let iw = w0 + i32(b);
            let inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            vals[a][b] = x[select(base, base + u32(ih * W + iw), inside)];
        }
    }
    var best4: vec4<f32>;
    var where4: vec4<i32>;
    for (var c = 0u; c < TC; c++) {
        let wc = w0 + i32(c * SW);
        var best = bitcast<f32>(pool_bits_ff800000);
        var where_ = max(h0, 0) * W + max(wc, 0);
        for (var a = 0u; a < KH; a++) {
            let ih = h0 + i32(a);
            for (var b = 0u; b < KW; b++) {
                let iw = wc + i32(b);
                let v = vals[a][c * SW + b];
                if (ih >= 0 && ih < H && iw >= 0 && iw < W && (v > best || is_nan(v))) {
                    best = v;
                    where_ = ih * W + iw;
                }
            }
        }
        best4[c] = best;
        where4[c] = where_;
    }
    let o = (params.y_offset + tile * TC) / 4u;
    y[o] = best4;
    arg[(params.arg_offset + tile * TC) / 4u] = where4;
}
