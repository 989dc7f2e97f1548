/* The parts of `wgt train` that exist only in data-parallel runs
 * (docs/distributed.md): choosing each rank's adapter and checking at start
 * that every rank runs the same config, data and checkpoint. The MPI work
 * itself is in src/distributed (ddp.h). */
#ifndef WGT_TRAIN_DISTRIBUTED_H
#define WGT_TRAIN_DISTRIBUTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddp.h"
#include "train_checkpoint.h"
#include "train_config.h"

/* The adapter of this local rank: item local_rank of a comma list
 * ("0,0" puts two ranks on adapter 0), the flag itself when it names one
 * adapter, else the local rank's index; NULL for the CPU backend. false with
 * msg when the list is too short. buf holds the result. */
bool train_ddp_adapter(const char *flag, const char *backend, int local_rank, char *buf, size_t buf_size,
                       const char **adapter, char *msg, size_t msg_size);

/* Every rank must agree on the model and optimizer config, the global batch,
 * the step and generator state it starts from, the text and the parameter
 * count; msg names the first rank and field that differ. */
bool train_ddp_check(ddp *d, const train_config *cfg, const train_state *state, int n_params, int64_t n_weights,
                     char *msg, size_t msg_size);

#endif
