// REDUCE, pass 2 (after reduce_rows with splits > 1): partial states
// [rows, splits] -> out [rows]. One workgroup of WY threads (WX = 1) per row.
//
// Bindings: 1 partial: array<u32> (STATE_WORDS per state), 2 out: array<u32>.

@group(0) @binding(1) var<storage, read> partial: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn read_state(i: u32) -> State {
    let at = i * STATE_WORDS;
    var s: State;
    s.v = bitcast<A>(partial[at]);
    s.idx = partial[at + 1u];
    s.n = bitcast<f32>(partial[at + 2u]);
    s.mean = bitcast<f32>(partial[at + 3u]);
    s.m2 = bitcast<f32>(partial[at + 4u]);
    return s;
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.n_rows) {
        return;
    }
    var s = state_empty();
    for (var k = lid.y; k < params.splits; k += WY) {
        s = merge(s, read_state(row * params.splits + k));
    }
    let total = merge_column(s, 0u, lid.y);
    if (lid.y == 0u) {
        out[row_offsets(row).y] = finish(total);
    }
}
