// CUMSUM along an axis: x [rows, D] (any strides; params.red_x[0].x is x's
// stride along the axis) -> out [rows, D], out[r, d] = x[r, 0] + ... + x[r, d].
// i32 sums wrap; f32 sums accumulate in f32.
//
// scan_rows: one workgroup of 256 threads per row. The row goes in chunks of
//   256 * ITEMS positions: each thread scans ITEMS consecutive positions, the
//   thread totals are scanned in shared memory, and a carry runs across chunks.
// scan_serial: one thread per row walking the axis (short rows, or rows whose
//   neighbours are neighbours in memory, so a warp reads contiguous memory).
//
// Prelude: alias A (f32 or i32), binding 1 x and load(i) -> A.
// Bindings: 2 out: array<A>.

@group(0) @binding(2) var<storage, read_write> out: array<A>;

const SCAN_THREADS = 256u;
const ITEMS = 4u;

var<workgroup> totals: array<A, SCAN_THREADS>;

@compute @workgroup_size(SCAN_THREADS)
fn scan_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg);
    if (row >= params.n_rows) {
        return;
    }
    let base = row_offsets(row);
    let n = params.row_len;
    let x_stride = params.red_x[0].x;
    let out_stride = params.out_axis_stride;
    let t = lid.x;
    var carry = A(0);
    for (var chunk = 0u; chunk < n; chunk += SCAN_THREADS * ITEMS) {
        let first = chunk + t * ITEMS;
        var items: array<A, ITEMS>;
        var running = A(0);
        for (var k = 0u; k < ITEMS; k++) {
            let p = first + k;
            if (p < n) {
                running += load(base.x + p * x_stride);
            }
            items[k] = running;
        }
        // Inclusive scan of the thread totals (Hillis-Steele).
        totals[t] = running;
        workgroupBarrier();
        for (var offset = 1u; offset < SCAN_THREADS; offset <<= 1u) {
            var add = A(0);
            if (t >= offset) {
                add = totals[t - offset];
            }
            workgroupBarrier();
            totals[t] += add;
            workgroupBarrier();
        }
        var prefix = carry;
        if (t > 0u) {
            prefix += totals[t - 1u];
        }
        for (var k = 0u; k < ITEMS; k++) {
            let p = first + k;
            if (p < n) {
                out[base.y + p * out_stride] = prefix + items[k];
            }
        }
        carry += totals[SCAN_THREADS - 1u];
        workgroupBarrier();
    }
}

@compute @workgroup_size(SCAN_THREADS)
fn scan_serial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = group_index(wid, nwg) * SCAN_THREADS + lid.x;
    if (row >= params.n_rows) {
        return;
    }
    let base = row_offsets(row);
    let x_stride = params.red_x[0].x;
    let out_stride = params.out_axis_stride;
    var sum = A(0);
    for (var p = 0u; p < params.row_len; p++) {
        sum += load(base.x + p * x_stride);
        out[base.y + p * out_stride] = sum;
    }
}
