/*
 * Private to the WebGPU backend: the tiled transpose path of ELEMENTWISE.
 *
 * A plain copy whose output is contiguous but whose input is contiguous along
 * some other output dim (wgt_copy / wgt_contiguous of a transposed or permuted
 * view) reads its input with a large stride in the generic elementwise kernel.
 * webgpu_elementwise_run hands such calls here first; the kernel
 * (kernels/transpose_tiled.wgsl) stages tiles in workgroup memory so that both
 * the reads and the writes are coalesced.
 */
#ifndef WGT_WEBGPU_TRANSPOSE_H
#define WGT_WEBGPU_TRANSPOSE_H

#include <stdint.h>

#include "webgpu/webgpu_internal.h"

/* True when call is a same-dtype 4-byte copy (expression = INPUT 0 alone) into
 * a contiguous output whose innermost dim has input stride != 1 while another
 * output dim has input stride 1, both at least half a tile long, with
 * well-formed views in distinct storages. Must not fail or record errors. */
bool webgpu_transpose_applies(webgpu_backend *wg, const wgt_kernel_call *call);

/* Records the tiled transpose of a call for which webgpu_transpose_applies is true. */
wgt_status webgpu_transpose_run(webgpu_backend *wg, const wgt_kernel_call *call);

/* Tiled transposes recorded by this process (all contexts): tests check that
 * the path is taken. */
uint64_t webgpu_transpose_count(void);
/* Of those, the ones that took the 16-byte kernel (transpose_tiled_vec4.wgsl). */
uint64_t webgpu_transpose_vec4_count(void);

#endif /* WGT_WEBGPU_TRANSPOSE_H */
