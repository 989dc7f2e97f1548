/* What ddp_mpi.c (buckets, hooks, MPI all-reduce), ddp_shm.c (the exchange
 * through shared memory of ranks on one machine) and ddp_common.c (their
 * helpers) share. Private to src/distributed. */
#ifndef WGT_DDP_INTERNAL_H
#define WGT_DDP_INTERNAL_H

#include <mpi.h>

#include "ddp.h"

typedef struct ddp_shm ddp_shm;

typedef struct bucket {
    float *host;          /* its floats: this rank's part of the shared window (ddp_shm.c), else malloc'd once */
    size_t first;         /* its first float in the window */
    size_t count;         /* floats */
    int members, ready;   /* parameters in the bucket, gradients taken (read started) so far this step */
    int lo, hi;           /* its parameters: lo..hi */
    bool done, written;   /* started: b < ddp.next_start */
    MPI_Request request;
} bucket;

struct ddp {
    ddp_options opt;
    int rank, size, local_rank;
    MPI_Comm local_comm;  /* the ranks of this machine (MPI_COMM_TYPE_SHARED); MPI_COMM_NULL if the split failed */
    int local_size;
    wgt_context *ctx;
    int n_params;
    wgt_tensor **params;
    int *bucket_of;       /* parameter -> bucket */
    size_t *offset_of;    /* parameter -> first float in its bucket */
    int64_t *numel;
    bool *ready;          /* parameter -> gradient taken this step (read started, or slot zeroed) */
    wgt_read **reads;     /* parameter -> its read in flight, NULL once in its slot */
    int next_start;       /* the next bucket to start (buckets start in order on every rank) */
    int n_buckets;
    bucket *buckets;
    MPI_Comm skew_comm;   /* measure_skew's barrier: its own communicator, since a rank may start it before or
                           * after a bucket's all-reduce (when its copies land), and collectives of one
                           * communicator must start in the same order on every rank */
    ddp_shm *shm;         /* ranks of one machine: the exchange through shared memory (ddp_shm.c); NULL: MPI */
    float *staging;       /* ddp_broadcast: the largest tensor */
    size_t staging_count;
    ddp_stats stats;
    char hook_error[512]; /* the first failure inside the hook, reported by ddp_finish_step */
};

double ddp_now_s(void);
/* false for MPI_SUCCESS; else msg names the rank and what failed, true. */
bool ddp_mpi_failed(int rc, const char *what, char *msg, size_t msg_size, const ddp *d);
/* Waits for n requests, testing (a blocking MPI_Wait has no deadline). */
bool ddp_wait_all(ddp *d, MPI_Request *requests, int n, const char *what, char *msg, size_t msg_size);

/* ddp_shm.c. ddp_shm_attach: when every rank is on this machine (and
 * WGT_DDP_ALLREDUCE is not "mpi"), a shared window holding every rank's
 * buckets; sets d->shm and points the buckets' host at this rank's part.
 * false only on a failure (msg says it); not using the window is not one. */
bool ddp_shm_attach(ddp *d, size_t total_floats, char *msg, size_t msg_size);
/* Bucket b's floats are in this rank's part: signal it (a barrier of the
 * window's ranks, in bucket order, its request in the bucket). */
bool ddp_shm_start_bucket(ddp *d, int b);
/* Bucket b's barrier has completed: every rank's part is there. Each
 * parameter's .grad becomes the ranks' sum in rank order (peers' parts
 * uploaded, summed on the device), times 1 / N. */
bool ddp_shm_reduce_bucket(ddp *d, int b, char *msg, size_t msg_size);
/* After the step's last bucket: waits until every rank has uploaded what it
 * reads of the others' parts, so the next step may overwrite them. */
bool ddp_shm_end_step(ddp *d, char *msg, size_t msg_size);
void ddp_shm_free(ddp *d);

#endif
