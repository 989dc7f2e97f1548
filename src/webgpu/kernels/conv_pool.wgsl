// POOL_FORWARD: x [N, C, H, W] -> y [N, C, OH, OW] (+ argmax i32, MAX), one
// invocation per output element. Max: NaN wins (tested on the bits: the
// shader compiler may assume v != v is false), ties keep the first element in
// row-major window order, as PyTorch. After conv_pool_common.wgsl.

// Browsers' WGSL compiler (Tint) rejects a constant expression whose value is
// inf or NaN, so these bit patterns are private variables, bitcast at run time.
var<private> pool_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> arg: array<i32>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let o = element_index(wid, nwg, lid);
    if (o >= params.total) { return; }
    let j = o % params.ow;
    let i = (o / params.ow) % params.oh;
    let p = o / (params.ow * params.oh);
    let win = window_of(i, j);
    let base = params.x_offset + p * params.h * params.w;
    if (params.mode == MODE_MAX) {
        var best = bitcast<f32>(pool_bits_ff800000);
        var where_ = win.h0 * i32(params.w) + win.w0;
        for (var ih = win.h0; ih < win.h1; ih += i32(params.dil_h)) {
            for (var iw = win.w0; iw < win.w1; iw += i32(params.dil_w)) {
                let v = x[base + u32(ih) * params.w + u32(iw)];
                if (v > best || is_nan(v)) {
                    best = v;
                    where_ = ih * i32(params.w) + iw;
                }
            }
        }
        y[params.y_offset + o] = best;
        arg[params.arg_offset + o] = where_;
        return;
    }
    var sum = 0.0;
    for (var ih = win.h0; ih < win.h1; ih++) {
        for (var iw = win.w0; iw < win.w1; iw++) {
            sum += x[base + u32(ih) * params.w + u32(iw)];
        }
    }
    var v = 0.0;
    if (win.h0 < win.h1 && win.w0 < win.w1) { v = sum / win.divisor; }
    y[params.y_offset + o] = v;
}
