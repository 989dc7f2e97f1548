// POOL_BACKWARD: dy [N, C, OH, OW] (+ argmax i32, MAX) -> dx [N, C, H, W], one
// invocation per input element, gathering from the windows that contain it:
// for tap a of the kernel, the window i with i stride - pad + a dil = ih (if
// any); adaptive windows are found by range. After conv_pool_common.wgsl.
// (x_offset is dy's offset, y_offset dx's.)
// Prelude: const RANGES: bool (WGT_CONV_V2 "pool"): without dilation, the
// windows containing (ih, iw) are a range of rows i_lo..i_hi and columns
// j_lo..j_hi found with four divisions, instead of two divisions and a
// remainder test per tap (ResNet's 3x3 stride-2 max pool backward took 0.57
// ms for 51M elements on an H100, integer-division bound). Visited in the
// per-tap loop's order (i and j descending), so the sums are the same.

@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> arg: array<i32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let e = element_index(wid, nwg, lid);
    if (e >= params.total) { return; }
    let iw = e % params.w;
    let ih = (e / params.w) % params.h;
    let p = e / (params.w * params.h);
    let out_base = p * params.oh * params.ow;
    var acc = 0.0;
    if (params.mode == MODE_ADAPTIVE) {
        let i_end = min(((ih + 1u) * params.oh + params.h - 1u) / params.h, params.oh);
        let j_end = min(((iw + 1u) * params.ow + params.w - 1u) / params.w, params.ow);
        for (var i = (ih * params.oh) / params.h; i < i_end; i++) {
            for (var j = (iw * params.ow) / params.w; j < j_end; j++) {
                let win = window_of(i, j);
                if (i32(ih) >= win.h0 && i32(ih) < win.h1 && i32(iw) >= win.w0 && i32(iw) < win.w1) {
                    acc += dy[params.x_offset + out_base + i * params.ow + j] / win.divisor;
                }
            }
        }
        dx[params.y_offset + e] = acc;
        return;
    }
    let here = i32(ih * params.w + iw);
    if (RANGES && params.dil_h == 1u && params.dil_w == 1u) {
        if (params.oh > 0u && params.ow > 0u) {
            // window i covers rows i sh - pad .. i sh - pad + kh - 1
            let th = ih + params.pad_h;
            let tw = iw + params.pad_w;
            let i_hi = min(th / params.stride_h, params.oh - 1u);
            let j_hi = min(tw / params.stride_w, params.ow - 1u);
            let i_lo = select(0u, (th + 1u - params.kh + params.stride_h - 1u) / params.stride_h, th + 1u >= params.kh);
            let j_lo = select(0u, (tw + 1u - params.kw + params.stride_w - 1u) / params.stride_w, tw + 1u >= params.kw);
            for (var i = i_hi + 1u; i > i_lo; i--) {
                for (var j = j_hi + 1u; j > j_lo; j--) {
                    let o = out_base + (i - 1u) * params.ow + j - 1u;
                    if (params.mode == MODE_MAX) {
                        if (arg[params.arg_offset + o] == here) { acc += dy[params.x_offset + o]; }
                    } else {
                        acc += dy[params.x_offset + o] / window_of(i - 1u, j - 1u).divisor;
                    }
                }
            }
        }
        dx[params.y_offset + e] = acc;
        return;
    }
    for (var a = 0u; a < params.kh; a++) {
        let th = i32(ih + params.pad_h) - i32(a * params.dil_h);
        if (th < 0 || u32(th) % params.stride_h != 0u) { continue; }
        let i = u32(th) / params.stride_h;
        if (i >= params.oh) { continue; }
        for (var b = 0u; b < params.kw; b++) {
            let tw = i32(iw + params.pad_w) - i32(b * params.dil_w);
            if (tw < 0 || u32(tw) % params.stride_w != 0u) { continue; }
            let j = u32(tw) / params.stride_w;
            if (j >= params.ow) { continue; }
            let o = out_base + i * params.ow + j;
            if (params.mode == MODE_MAX) {
                if (arg[params.arg_offset + o] == here) { acc += dy[params.x_offset + o]; }
            } else {
                let win = window_of(i, j);
                acc += dy[params.x_offset + o] / win.divisor;
            }
        }
    }
    dx[params.y_offset + e] = acc;
}
