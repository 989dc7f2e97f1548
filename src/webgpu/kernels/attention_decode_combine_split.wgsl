// attention_decode_combine_split: the second pass of split-key decode
// attention (attention_decode.wgsl) for rows of many chunks: the merge of
// attention_decode_combine.wgsl (same inputs, outputs and Params), one
// workgroup per query row, its chunks split over the workgroup.
//   part_o f32 [B, H, Tq, chunks, D], part_ml vec2<f32> [B, H, Tq, chunks]
//   -> out [B, H, Tq, D] contiguous (f32, or f16 packed two per word),
//      lse f32 [B, H, Tq]
// Why: attention_decode_combine gives an invocation a pair of columns and
// walks every chunk in turn; at 8192 keys (128 chunks) Llama-3.2-1B's 32
// query rows were 1024 invocations, four workgroups, each invocation 128
// chunks deep: on an H200 the decode attention then cost ~24 us a layer
// more than at 512 keys for 16.8 MB of cache (bench/results/h200-2026-11-29l).
// Here invocation (group gi, pair pr) of G = 256 / (D / 2) groups takes
// chunks gi, gi + G, ..; the row max M is a workgroup max (exact in any
// order), the groups' sums are added in group order. The sums' order is not
// the one-invocation kernel's: webgpu_attention_decode.c takes this kernel
// only past DECODE_SPLIT_CHUNKS, beyond the keys the GEMV's folded combine
// (attention_combine_x.wgsl, which repeats that kernel's order) takes by default.

// Params, bindings, store_pair and store_lse: attention_decode_combine_common.wgsl.

const WG: u32 = 256u;

var<workgroup> red: array<f32, WG>;              // the row max's tree
var<workgroup> o_sum: array<vec2<f32>, WG>;      // [group][pair]
var<workgroup> l_sum: array<f32, WG>;            // [group] (pair 0's)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.B * params.H * params.Tq) { return; }   // whole workgroups
    let pairs = params.D / 2u;
    let groups = WG / pairs;          // >= 2: D <= 256
    let base = params.ml_off + row * params.chunks;
    // M: the row's max over its chunks
    var mx = -1.0e30;
    for (var c = lid; c < params.chunks; c += WG) { mx = max(mx, part_ml[base + c].x); }
    red[lid] = mx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    let m = red[0];
    // this invocation's chunks, weighted, in order
    let gi = lid / pairs;
    let pr = lid % pairs;
    var l = 0.0;
    var o = vec2<f32>();
    if (gi < groups) {
        let ob = 2u * params.o_off + row * params.chunks * pairs + pr;
        // four of its chunks' loads issued before their sums (the last ones
        // clamped into the row, their terms dropped): a quarter of the rounds
        // of memory latency of one chunk a step (16 at 8192 keys and D = 64)
        let last = params.chunks - 1u;
        for (var c = gi; c < params.chunks; c += 4u * groups) {
            var ml4: array<vec2<f32>, 4>;
            var o4: array<vec2<f32>, 4>;
            for (var j = 0u; j < 4u; j++) {
                let cj = min(c + j * groups, last);
                ml4[j] = part_ml[base + cj];
                o4[j] = part_o[ob + cj * pairs];
            }
            for (var j = 0u; j < 4u; j++) {
                if (c + j * groups < params.chunks) {
                    let w = exp2(ml4[j].x - m);
                    l += ml4[j].y * w;
                    o += o4[j] * w;
                }
            }
        }
        o_sum[lid] = o;
        if (pr == 0u) { l_sum[gi] = l; }
    }
    workgroupBarrier();
    if (lid >= pairs) { return; }
    // the groups' sums in group order, then the row's output
    var ls = 0.0;
    var os = vec2<f32>();
    for (var g = 0u; g < groups; g++) {
        ls += l_sum[g];
        os += o_sum[g * pairs + lid];
    }
    os *= select(0.0, 1.0 / ls, ls > 0.0);
    store_pair(row, lid, os);
    if (lid == 0u) { store_lse(row, m, ls); }
}
