// conv_direct_dx: CONV_BACKWARD_INPUT for few input channels per group (CG <=
// 4: the stem, C = 3; depthwise, 1), where the implicit GEMM's rows are the
// channels and even its smallest tile would compute mostly padding. One
// invocation per input pixel (n, group, ih, iw) gathers all CG channels:
//
//   dx[n, g cg + ci, ih, iw] = sum over co < kg and the taps (a, b) whose
//       window lands on (ih, iw), i = (ih + pad_top - a dil_h) / stride_h exact
//       (likewise j), of w[g kg + co, ci, a, b] dy[n, g kg + co, i, j]
//
// Only landing taps are visited (the stride test is per tap, outside the
// channel loop), so a stride-2 gradient does no product with a structural
// zero. Neighbouring invocations are neighbouring iw: their dy loads are
// neighbouring (or equal) j, their weight loads one of a few addresses (by
// the phase of iw), served by the cache. Prelude: const CG: u32.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    k: u32, oh: u32, ow: u32, kh: u32,
    kw: u32, stride_h: u32, stride_w: u32, pad_top: u32,
    pad_left: u32, dil_h: u32, dil_w: u32, cg: u32,
    kg: u32, groups: u32, total: u32, w_offset: u32,
    dy_offset: u32, dx_offset: u32, pad0: u32, pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> wt: array<f32>;         // [K, C/g, KH, KW]
@group(0) @binding(2) var<storage, read> dy: array<f32>;         // [N, K, OH, OW]
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;   // [N, C, H, W]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (e >= params.total) { return; }
    let iw = e % params.w;
    let ih = (e / params.w) % params.h;
    let ng = e / (params.w * params.h);            // n groups + g
    let g = ng % params.groups;
    let n = ng / params.groups;
    let taps = params.kh * params.kw;
    let plane = params.oh * params.ow;
    var acc: array<f32, CG>;
    for (var ci = 0u; ci < CG; ci++) { acc[ci] = 0.0; }
    let dy_base = params.dy_offset + (n * params.k + g * params.kg) * plane;
    let w_base = params.w_offset + g * params.kg * params.cg * taps;
    for (var a = 0u; a < params.kh; a++) {
        let th = i32(ih + params.pad_top) - i32(a * params.dil_h);
        if (th < 0 || u32(th) % params.stride_h != 0u) { continue; }
        let i = u32(th) / params.stride_h;
        if (i >= params.oh) { continue; }
        for (var b = 0u; b < params.kw; b++) {
            let tw = i32(iw + params.pad_left) - i32(b * params.dil_w);
            if (tw < 0 || u32(tw) % params.stride_w != 0u) { continue; }
            let j = u32(tw) / params.stride_w;
            if (j >= params.ow) { continue; }
            var d = dy_base + i * params.ow + j;
            var wi = w_base + a * params.kw + b;
            for (var co = 0u; co < params.kg; co++) {
                let v = dy[d];
                for (var ci = 0u; ci < CG; ci++) { acc[ci] = fma(wt[wi + ci * taps], v, acc[ci]); }
                d += plane;
                wi += params.cg * taps;
            }
        }
    }
    let out = params.dx_offset + ((n * params.c + g * params.cg) * params.h + ih) * params.w + iw;
    for (var ci = 0u; ci < CG; ci++) { dx[out + ci * params.h * params.w] = acc[ci]; }
}
