// conv_stem_dx: CONV_BACKWARD_INPUT for few input channels per group (CG <=
// 4: the 7x7 stride-2 stem of 3 channels, depthwise), WGT_CONV_V2 "stem"; the
// former path is conv_direct_dx.wgsl.
//
//   dx[n, g cg + ci, ih, iw] = sum over co < kg and the taps (a, b) that land
//       on (ih, iw) of w[g kg + co, ci, a, b] dy[n, g kg + co, i, j]
//
// Why: conv_direct_dx loads CG weights and one dy value per CG products (3
// loads per 3 FMAs at the stem) and ran at 2 TFLOP/s on an H100 (1.8 ms of
// the stem's 2.9 ms forward + backward). Here the weights come from workgroup
// memory as one vec4 per (co, tap) (its CG channels in components 0..CG-1),
// so a tap costs one broadcast shared load, and one dy load per pixel feeds
// CG products.
//
// Grid: z = stride phase (ih % sh, iw % sw), y = n groups + g, x = blocks of
// PX * 256 pixels of the phase's plane (u, v) (ih = ph + sh u, iw = pw + sw v).
// Only the taps that land on the phase enter (a0 + step_h ta, b0 + step_w tb:
// conv_gemm.wgsl's PHASED), so no product with a structural zero is formed.
// Invocation t owns the PX pixels t, t + 256, ... of its block: neighbouring
// invocations on neighbouring v, so each dy load of a warp is a contiguous
// run. Per pixel the dy offset of tap (0, 0) and its row / column are kept in
// registers; a tap adds a uniform offset and two unsigned bounds tests.
// Weights: the workgroup loads CO_CHUNK output channels x the phase's taps
// (<= TAPS) into wsh at a time (two barriers per chunk).
// Prelude: const CG, PX, TAPS (the largest phase's na nb), CO_CHUNK: u32.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    k: u32, oh: u32, ow: u32, kh: u32,
    kw: u32, stride_h: u32, stride_w: u32, pad_top: u32,
    pad_left: u32, dil_h: u32, dil_w: u32, cg: u32,
    kg: u32, groups: u32, step_h: u32, step_w: u32,
    w_offset: u32, dy_offset: u32, dx_offset: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> wt: array<f32>;         // [K, C/g, KH, KW]
@group(0) @binding(2) var<storage, read> dy: array<f32>;         // [N, K, OH, OW]
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;   // [N, C, H, W]

const WG = 256u;

var<workgroup> wsh: array<vec4<f32>, CO_CHUNK * TAPS>;   // [co within the chunk][phase tap]

// The first tap a < min(k, s) with a dil = p + pad (mod s), or k if none
// (as conv_gemm.wgsl's first_tap): the taps landing on phase p are a0, a0 +
// step, ...
fn first_tap(p: u32, pad: u32, dil: u32, s: u32, k: u32) -> u32 {
    let want = (p + pad % s) % s;
    for (var a = 0u; a < min(k, s); a++) {
        if (((a % s) * (dil % s)) % s == want) { return a; }
    }
    return k;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let sh = params.stride_h;
    let sw = params.stride_w;
    let ph = wid.z / sw;
    let pw = wid.z % sw;
    let g = wid.y % params.groups;
    let n = wid.y / params.groups;
    // the phase's taps and plane (see conv_gemm.wgsl phase_of)
    let a0 = first_tap(ph, params.pad_top, params.dil_h, sh, params.kh);
    let b0 = first_tap(pw, params.pad_left, params.dil_w, sw, params.kw);
    let na = select(0u, (params.kh - a0 + params.step_h - 1u) / params.step_h, a0 < params.kh);
    let nb = select(0u, (params.kw - b0 + params.step_w - 1u) / params.step_w, b0 < params.kw);
    let hu = select(0u, (params.h - ph + sh - 1u) / sh, ph < params.h);
    let wv = select(0u, (params.w - pw + sw - 1u) / sw, pw < params.w);
    // exact divisions: a0 dil = ph + pad (mod sh), and step dil is a multiple of sh
    let off_h = (i32(ph + params.pad_top) - i32(a0 * params.dil_h)) / i32(sh);
    let off_w = (i32(pw + params.pad_left) - i32(b0 * params.dil_w)) / i32(sw);
    let dh = i32(params.step_h * params.dil_h / sh);
    let dw = i32(params.step_w * params.dil_w / sw);
    let taps = na * nb;
    let plane = params.oh * params.ow;

    // this invocation's pixels: dy row / column of tap (0, 0) (negative or
    // past the edge is fine: each tap tests its own), -1 rows for none
    var q: array<i32, PX>;
    var s: array<i32, PX>;
    for (var k = 0u; k < PX; k++) {
        let p = wid.x * (PX * WG) + k * WG + t;
        q[k] = -0x40000000;
        s[k] = 0;
        if (p < hu * wv) {
            q[k] = i32(p / wv) + off_h;
            s[k] = i32(p % wv) + off_w;
        }
    }
    var acc: array<f32, PX * CG>;   // [pixel][channel]: CG products per dy load, none wasted on a 4th lane
    for (var k = 0u; k < PX * CG; k++) { acc[k] = 0.0; }

    let dy_base = params.dy_offset + (n * params.k + g * params.kg) * plane;
    let w_taps = params.kh * params.kw;
    for (var c0 = 0u; c0 < params.kg; c0 += CO_CHUNK) {
        let chunk = min(CO_CHUNK, params.kg - c0);
        workgroupBarrier();   // every invocation is done with the previous chunk
        for (var e = t; e < chunk * taps; e += WG) {
            let co = e / taps;
            let tap = e % taps;
            let a = a0 + (tap / nb) * params.step_h;
            let b = b0 + (tap % nb) * params.step_w;
            let at = params.w_offset + ((g * params.kg + c0 + co) * params.cg) * w_taps + a * params.kw + b;
            var v = vec4<f32>(0.0);
            for (var ci = 0u; ci < CG; ci++) { v[ci] = wt[at + ci * w_taps]; }
            wsh[co * TAPS + tap] = v;
        }
        workgroupBarrier();
        for (var co = 0u; co < chunk; co++) {
            let d0 = dy_base + (c0 + co) * plane;
            for (var ta = 0u; ta < na; ta++) {
                // each pixel's dy row for this tap row: tested and addressed once for the nb taps
                var row_ok: array<bool, PX>;
                var row_at: array<u32, PX>;
                for (var k = 0u; k < PX; k++) {
                    let i = q[k] - i32(ta) * dh;
                    // negative coordinates wrap to large u32: one comparison per bound
                    row_ok[k] = u32(i) < params.oh;
                    row_at[k] = d0 + u32(i) * params.ow;
                }
                for (var tb = 0u; tb < nb; tb++) {
                    let wv4 = wsh[co * TAPS + ta * nb + tb];
                    let dj = i32(tb) * dw;
                    for (var k = 0u; k < PX; k++) {
                        let j = s[k] - dj;
                        if (row_ok[k] && u32(j) < params.ow) {
                            let v = dy[row_at[k] + u32(j)];
                            for (var ci = 0u; ci < CG; ci++) { acc[k * CG + ci] = fma(wv4[ci], v, acc[k * CG + ci]); }
                        }
                    }
                }
            }
        }
    }
    let hw = params.h * params.w;
    for (var k = 0u; k < PX; k++) {
        let p = wid.x * (PX * WG) + k * WG + t;
        if (p >= hu * wv) { continue; }
        let ih = ph + sh * (p / wv);
        let iw = pw + sw * (p % wv);
        let out = params.dx_offset + (n * params.c + g * params.cg) * hw + ih * params.w + iw;
        for (var ci = 0u; ci < CG; ci++) { dx[out + ci * hw] = acc[k * CG + ci]; }
    }
}
