// GATHER of whole rows (index_select / embedding along dim 0 of a table whose
// rows are contiguous): x [V, C] (row stride x_row), index i32 [n] (stride
// index_stride; the GATHER call's index is broadcast along C) -> out [n, C]
// contiguous: out[r, :] = x[index[r], :]. One invocation copies one vec4:
// C % 4 == 0 and every offset and the row stride are multiples of 4 (the host
// checks), so the rows move as 16-byte loads and stores instead of the generic
// kernel's per-element coordinate arithmetic. Index values in [-V, 0) wrap
// once; values outside [-V, V) give zeros and are reported as by
// indexing_gather.wgsl (flag[0] lowered to check_id, the value in flag[1]).
// Dispatch: ceil(n C / 4 / 256) workgroups, folded into (x, y) by webgpu_grid.

struct Params {
    quads: u32,          // n C / 4
    row_quads: u32,      // C / 4
    x_offset: u32,       // in vec4s
    x_row: u32,          // x's row stride, in vec4s
    out_offset: u32,     // in vec4s
    index_offset: i32,   // in i32
    index_stride: i32,
    rows: i32,           // V
    check_id: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = (wid.x + wid.y * groups.x) * 256u + lid;
    if (q >= params.quads) {
        return;
    }
    let r = q / params.row_quads;
    let c = q - r * params.row_quads;
    let raw = index[params.index_offset + i32(r) * params.index_stride];
    let i = select(raw, raw + params.rows, raw < 0);
    var v = vec4<u32>();
    if (i < 0 || i >= params.rows) {
        atomicMin(&flag[0], params.check_id);
        atomicStore(&flag[1], bitcast<u32>(raw));
    } else {
        v = x[params.x_offset + u32(i) * params.x_row + c];
    }
    out[params.out_offset + q] = v;
}
