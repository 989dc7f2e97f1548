// attention_decode_combine_common: what the decode attention's two combine
// kernels share (attention_decode_combine.wgsl, one invocation per column
// pair; attention_decode_combine_split.wgsl, a workgroup a row), prepended to
// either: the parameters (attention_decode.wgsl's Params), the bindings, and
// the stores of a row's output pair and its log-sum-exp.
//   part_o f32 [B, H, Tq, chunks, D] (read as vec2s), part_ml vec2<f32> [B, H, Tq, chunks]
//   -> out [B, H, Tq, D] contiguous (f32, or f16 packed two per word: OUT_F16, prelude),
//      lse f32 [B, H, Tq] (natural log; -inf for a row that sees no key)

struct Params {
    B: u32, H: u32, Hkv: u32, group: u32,
    Tq: u32, Tk: u32, D: u32, causal: u32,
    q_st: vec4<u32>, k_st: vec4<u32>, v_st: vec4<u32>,
    q_off: u32, k_off: u32, v_off: u32, out_off: u32,    // out_off: elements (even for f16)
    o_off: u32, ml_off: u32, lse_off: u32, chunks: u32,
    scale_log2: f32, hb: u32, hblocks: u32, rows: u32,
}

// Browsers' WGSL compiler rejects a constant expression whose value is -inf,
// so the bit pattern is a private variable, bitcast at run time.
var<private> decode_bits_ff800000: u32 = 0xff800000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part_o: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> part_ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;

const LN2: f32 = 0.6931471805599453;

// columns 2 pr, 2 pr + 1 of query row `row`: o, already divided by the row's sum
fn store_pair(row: u32, pr: u32, o: vec2<f32>) {
    let e = params.out_off + row * params.D + 2u * pr;
    if (OUT_F16) {
        out[e >> 1u] = pack2x16float(o);
    } else {
        out[e] = bitcast<u32>(o.x);
        out[e + 1u] = bitcast<u32>(o.y);
    }
}

// the row's log-sum-exp from its max m (log2 units) and sum l
fn store_lse(row: u32, m: f32, l: f32) {
    lse[params.lse_off + row] = select(bitcast<f32>(decode_bits_ff800000), (m + log2(l)) * LN2, l > 0.0);
}
