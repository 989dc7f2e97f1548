/* Range checks of integer ids that ops use as positions without gathering
 * with them (one_hot). */
#ifndef WGT_OPS_INDEX_CHECK_H
#define WGT_OPS_INDEX_CHECK_H

#include "ops/op_common.h"

/* ids (integer, any view) [...]: reports an id outside [0, n) as
 * WGT_ERR_INVALID_ARGUMENT naming op, without a read-back: at once on the CPU,
 * at the next read-back or synchronize on WebGPU (the GATHER kernel's
 * out-of-range report, see backend.h). A negative id is reported as id - n
 * (the GATHER kernel accepts [-n, 0) as wrapped positions). Returns the status
 * of recording the check. */
wgt_status wgt_check_ids_in_range(wgt_context *ctx, const char *op, wgt_tensor *ids, int64_t n);

#endif /* WGT_OPS_INDEX_CHECK_H */
