// Shared by conv_pool.wgsl and conv_pool_backward.wgsl (WGT_KERNEL_CONV
// POOL_FORWARD / POOL_BACKWARD, contracts in src/core/backend.h): the parameter
// block and PyTorch's window arithmetic. One invocation per output element
// (forward) or per input element (backward, which gathers: no atomics).
// Every view is a contiguous run of f32 (f16 goes through f32 temporaries).

struct Params {
    planes: u32,        // N * C
    h: u32, w: u32, oh: u32,
    ow: u32, kh: u32, kw: u32, stride_h: u32,
    stride_w: u32, pad_h: u32, pad_w: u32, dil_h: u32,
    dil_w: u32, mode: u32,           // 0 max, 1 avg, 2 adaptive avg
    count_include_pad: u32, total: u32,  // elements this dispatch covers
    x_offset: u32, y_offset: u32, arg_offset: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

const MODE_MAX = 0u;
const MODE_AVG = 1u;
const MODE_ADAPTIVE = 2u;

fn element_index(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
    return (wid.x + wid.y * nwg.x) * 256u + lid.x;
}

// Window of output (i, j): rows [h0, h1), columns [w0, w1) (max: stepping by
// the dilation from h0, w0), and avg's divisor.
struct Window {
    h0: i32, h1: i32, w0: i32, w1: i32,
    divisor: f32,
}

fn window_of(i: u32, j: u32) -> Window {
    var win: Window;
    let H = i32(params.h);
    let W = i32(params.w);
    if (params.mode == MODE_ADAPTIVE) {
        win.h0 = i32((i * params.h) / params.oh);
        win.h1 = i32(((i + 1u) * params.h + params.oh - 1u) / params.oh);
        win.w0 = i32((j * params.w) / params.ow);
        win.w1 = i32(((j + 1u) * params.w + params.ow - 1u) / params.ow);
        win.divisor = f32((win.h1 - win.h0) * (win.w1 - win.w0));
        return win;
    }
    var h0 = i32(i * params.stride_h) - i32(params.pad_h);
    var w0 = i32(j * params.stride_w) - i32(params.pad_w);
    if (params.mode == MODE_MAX) {
        win.h1 = min(h0 + i32((params.kh - 1u) * params.dil_h) + 1, H);
        win.w1 = min(w0 + i32((params.kw - 1u) * params.dil_w) + 1, W);
        while (h0 < 0) { h0 += i32(params.dil_h); }
        while (w0 < 0) { w0 += i32(params.dil_w); }
        win.h0 = h0;
        win.w0 = w0;
        win.divisor = 1.0;
        return win;
    }
    let h1 = min(h0 + i32(params.kh), H + i32(params.pad_h));
    let w1 = min(w0 + i32(params.kw), W + i32(params.pad_w));
    let size = (h1 - h0) * (w1 - w0);
    win.h0 = max(h0, 0);
    win.w0 = max(w0, 0);
    win.h1 = min(h1, H);
    win.w1 = min(w1, W);
    if (params.count_include_pad != 0u) {
        win.divisor = f32(size);
    } else {
        win.divisor = f32((win.h1 - win.h0) * (win.w1 - win.w0));
    }
    return win;
}
