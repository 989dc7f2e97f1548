// POOL_BACKWARD, max without dilation (WGT_POOL_TILES, the default): dy and
// argmax [N, C, OH, OW] -> dx [N, C, H, W], one invocation per tile of TR x TC
// (2 x 4) input elements of a plane, gathering from the windows that contain
// any of them, written as two vec4 stores (W and dx's offset are multiples of
// 4: webgpu_conv_pool.c checks). (x_offset is dy's offset, y_offset dx's;
// params.total counts tiles.) After conv_pool_common.wgsl.
//
// Why: conv_pool_backward.wgsl spends an invocation, its index divisions and
// the window-range divisions on each input element; ResNet-18's 3x3 stride-2
// max pool backward (51M elements) took 0.53 ms on an H100, about five times
// its memory traffic, bound on integer arithmetic. Here those divisions are
// shared by 8 elements, and each window's argmax and dy are loaded once for
// the tile (6 windows for the 3x3 stride-2 tile instead of 4 x 2.25).
//
// The windows visited are the union of the tile's ranges (rows i_lo..i_hi
// from the first and last row, columns likewise), in the per-element path's
// order (i, then j, descending). A window that does not contain an element
// cannot hold that element's index as its argmax (the argmax lies inside its
// window), so comparing the argmax with each element's index picks exactly
// the windows the per-element path adds, in the same order; the others add
// +0.0, which leaves a sum that started at +0.0 unchanged: the same bits.

@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> arg: array<i32>;
@group(0) @binding(3) var<storage, read_write> dx: array<vec4<f32>>;

const TR = 2u;
const TC = 4u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let tile = element_index(wid, nwg, lid);
    if (tile >= params.total) { return; }
    let tiles_w = (params.w + TC - 1u) / TC;
    let tiles_h = (params.h + TR - 1u) / TR;
    let q = tile % tiles_w;
    let r = (tile / tiles_w) % tiles_h;
    let p = tile / (tiles_w * tiles_h);
    let ih0 = r * TR;
    let iw0 = q * TC;
    let rows = min(TR, params.h - ih0);
    let cols = TC;
    var acc0 = vec4<f32>(0.0);   // row ih0, columns iw0 .. iw0 + 3
    var acc1 = vec4<f32>(0.0);   // row ih0 + 1
    if (params.oh > 0u && params.ow > 0u) {
        // window i covers rows i sh - pad .. i sh - pad + kh - 1
        let th0 = ih0 + params.pad_h;
        let th1 = ih0 + rows - 1u + params.pad_h;
        let tw0 = iw0 + params.pad_w;
        let tw1 = iw0 + cols - 1u + params.pad_w;
        let i_hi = min(th1 / params.stride_h, params.oh - 1u);
        let j_hi = min(tw1 / params.stride_w, params.ow - 1u);
        let i_lo = select(0u, (th0 + 1u - params.kh + params.stride_h - 1u) / params.stride_h, th0 + 1u >= params.kh);
        let j_lo = select(0u, (tw0 + 1u - params.kw + params.stride_w - 1u) / params.stride_w, tw0 + 1u >= params.kw);
        let out_base = params.arg_offset + p * params.oh * params.ow;
        let dy_base = params.x_offset + p * params.oh * params.ow;
        let here = i32(ih0 * params.w + iw0);
        let below = here + i32(params.w);
        let lanes = vec4<i32>(0, 1, 2, 3);
        for (var i = i_hi + 1u; i > i_lo; i--) {
            let row = (i - 1u) * params.ow;
            for (var j = j_hi + 1u; j > j_lo; j--) {
                let o = row + j - 1u;
                let a = vec4<i32>(arg[out_base + o]);
                let g = vec4<f32>(dy[dy_base + o]);
                acc0 += select(vec4<f32>(0.0), g, a == vec4<i32>(here) + lanes);
                acc1 += select(vec4<f32>(0.0), g, a == vec4<i32>(below) + lanes);
            }
        }
    }
    let base = (params.y_offset + p * params.h * params.w + ih0 * params.w + iw0) / 4u;
    dx[base] = acc0;
    if (rows > 1u) { dx[base + params.w / 4u] = acc1; }
}
