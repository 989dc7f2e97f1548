/* Data-parallel training over MPI (docs/distributed.md): one process per
 * device, parameters broadcast from rank 0, gradients averaged with
 * non-blocking all-reduces of host buckets that start from the autograd
 * engine's gradient-ready hook, so communication overlaps the rest of
 * backward (as PyTorch DDP does).
 *
 * This is the one place MPI appears: libwgtensor stays free of it. Built from
 * ddp_mpi.c when CMake finds MPI, else from ddp_none.c, whose ddp_init fails
 * with a message that says how to get MPI. Uses only the public API
 * (wgtensor.h), so it sits above src/nn with the tools. */
#ifndef WGT_DDP_H
#define WGT_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wgtensor.h"

typedef struct ddp ddp;

typedef struct ddp_options {
    size_t bucket_bytes;  /* gradient bytes per all-reduce; 0: 8 MiB (ddp_mpi.c says why) */
    double timeout_s;     /* longest wait on a peer before the job is stopped; 0: 120 s */
    bool no_overlap;      /* all-reduce only after backward (to measure what overlap hides) */
    bool measure_skew;    /* a barrier after backward, so wait_s excludes waiting for a slower rank */
} ddp_options;

/* Time and traffic since the last ddp_stats_reset (this rank). */
typedef struct ddp_stats {
    int64_t steps;
    int64_t bytes;        /* gradient bytes summed across ranks (MPI all-reduce: each rank sends and receives
                           * about 2x this; shared memory: each rank reads its peers' copies) */
    int buckets;          /* per step */
    double copy_s;        /* device -> host reads of gradients and host -> device writes back */
    double hook_s;        /* inside the gradient-ready hook (reads, starting all-reduces) */
    double hook_mpi_s;    /* of hook_s, inside MPI (starting and testing all-reduces): without a progress
                           * thread the start of a shared-memory all-reduce does much of its copying */
    double skew_s;        /* measure_skew: in the barrier after backward (waiting for the slowest rank) */
    double wait_s;        /* in ddp_finish_step starting the remaining exchanges and waiting for all */
} ddp_stats;

/* true when this binary was built with MPI. */
bool ddp_compiled(void);
/* true when the environment says this process was started by mpirun/srun
 * with more than one rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE). */
bool ddp_launched_by_mpi(void);

/* MPI_Init and the rank layout; NULL with the reason in msg (no MPI in this
 * build: how to get it). */
ddp *ddp_init(const ddp_options *opt, char *msg, size_t msg_size);
int ddp_rank(const ddp *d);
int ddp_size(const ddp *d);
int ddp_local_rank(const ddp *d); /* rank among the processes of this machine */
/* How gradients are summed, once attached: "shared memory" (every rank on this
 * machine: each device sums its peers' buckets, ddp_shm.c) or "MPI all-reduce"
 * (ranks on several machines, or WGT_DDP_ALLREDUCE=mpi). */
const char *ddp_exchange_name(const ddp *d);

/* Every rank passes the same-length fingerprint (config hash, parameter
 * count, ...): false on all ranks when any differs, msg naming the first
 * rank that differs from rank 0 and the field index. */
bool ddp_agree(ddp *d, const uint64_t *fingerprint, int n, const char *const *names, char *msg, size_t msg_size);

/* Rank 0's values of the n tensors (f32) written into every rank's. */
bool ddp_broadcast(ddp *d, wgt_tensor *const *tensors, int n, char *msg, size_t msg_size);

/* Lays out the gradient buckets of params (f32) and installs the grad hook on
 * ctx. Host buffers are allocated here, once. */
bool ddp_attach(ddp *d, wgt_context *ctx, wgt_tensor *const *params, int n, char *msg, size_t msg_size);
/* Before backward: clears the buckets' ready marks. */
void ddp_begin_step(ddp *d);
/* After backward: starts what the hook has not, waits for every all-reduce
 * (with the timeout), writes the average back into each .grad. */
bool ddp_finish_step(ddp *d, char *msg, size_t msg_size);

/* In-place sum over ranks of n doubles (evaluation losses, log values). */
bool ddp_allreduce_sum(ddp *d, double *values, int n, char *msg, size_t msg_size);
/* true on every rank when flag is true on any (Ctrl-C seen by one rank). */
bool ddp_any(ddp *d, bool flag);

void ddp_stats_get(const ddp *d, ddp_stats *stats);
void ddp_stats_reset(ddp *d);

/* Prints "wgt train: rank R of N failed: why; stopping all ranks" and ends
 * the whole job (MPI_Abort): a failing rank must not leave the others waiting. */
void ddp_abort(ddp *d, const char *why, int code);
/* Removes the hook, frees the buckets, MPI_Finalize. */
void ddp_finalize(ddp *d);

#endif
