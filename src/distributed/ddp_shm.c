/* The gradient exchange of ranks on one machine through shared memory (see
 * ddp_internal.h; docs/distributed.md, "Ranks on one machine").
 *
 * Why not MPI_Iallreduce there: Open MPI's shared-memory all-reduce moved
 * 1.0-2.9 GB/s on the lent 4-GPU machine, one host thread doing every copy
 * and every sum, while the GPUs sit idle after backward. Here each rank's
 * gradient copies land in its part of one MPI-3 shared window
 * (MPI_Win_allocate_shared), a barrier per bucket says every rank's part is
 * there, and each rank uploads its peers' parts and sums them on its own
 * device. The host does one copy out and, per peer, one copy in; the sums
 * cost the GPU microseconds.
 *
 * Every rank sums the same terms in the same order (rank 0's, rank 1's, ...
 * its own gradient standing at its own place), so the replicas stay bitwise
 * identical; with 2 ranks, (a + b) / 2 is what the MPI path computes too.
 *
 * Synchronisation: MPI_Win_lock_all for the window's life, MPI_Win_sync
 * around each barrier (the unified memory model's rule for load/store
 * access), and a barrier at the end of a step so no rank overwrites its part
 * while a peer may still be uploading it. Barriers start in bucket order on
 * the machine's communicator (d->local_comm), which carries nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_internal.h"

/* The terms of the device-side sum: a, b, c, ... in wgt_fused (at most 8
 * inputs, one the scale's tensor-free parameter p0). */
#define SHM_MAX_RANKS 8

struct ddp_shm {
    MPI_Win win;
    float *base[SHM_MAX_RANKS]; /* each rank's part of the window, as this process maps it */
    char sum_expression[96];    /* "((a + b) + c) * p0" for this many ranks */
};

bool ddp_shm_attach(ddp *d, size_t total_floats, char *msg, size_t msg_size)
{
    const char *want = getenv("WGT_DDP_ALLREDUCE");
    if ((want && strcmp(want, "mpi") == 0) || d->size < 2 || d->size > SHM_MAX_RANKS || total_floats == 0) return true;
    /* every rank decides alike: the machine's ranks are all the ranks, or not */
    if (d->local_comm == MPI_COMM_NULL || d->local_size != d->size) return true;
    ddp_shm *shm = calloc(1, sizeof(*shm));
    if (!shm) {
        snprintf(msg, msg_size, "rank %d: out of host memory", d->rank);
        return false;
    }
    float *mine = NULL;
    int rc = MPI_Win_allocate_shared((MPI_Aint)(total_floats * sizeof(float)), (int)sizeof(float), MPI_INFO_NULL,
                                     d->local_comm, &mine, &shm->win);
    if (ddp_mpi_failed(rc, "allocating the shared gradient window (MPI_Win_allocate_shared)", msg, msg_size, d)) {
        free(shm);
        return false;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, shm->win);
    /* with every rank on this machine, the split kept the world's order: rank r's part is r's */
    for (int r = 0; r < d->size; r++) {
        MPI_Aint bytes = 0;
        int unit = 0;
        MPI_Win_shared_query(shm->win, r, &bytes, &unit, &shm->base[r]);
    }
    /* the sum of the terms in rank order, then the scale */
    size_t at = 0;
    for (int r = 1; r < d->size; r++) shm->sum_expression[at++] = '(';
    shm->sum_expression[at++] = 'a';
    for (int r = 1; r < d->size; r++)
        at += (size_t)snprintf(shm->sum_expression + at, sizeof(shm->sum_expression) - at, " + %c)", 'a' + r);
    snprintf(shm->sum_expression + at, sizeof(shm->sum_expression) - at, " * p0");
    d->shm = shm;
    for (int b = 0; b < d->n_buckets; b++) d->buckets[b].host = mine + d->buckets[b].first;
    return true;
}

bool ddp_shm_start_bucket(ddp *d, int b)
{
    bucket *k = &d->buckets[b];
    MPI_Win_sync(d->shm->win); /* this rank's stores into its part, visible before the barrier says so */
    int rc = MPI_Ibarrier(d->local_comm, &k->request);
    if (rc != MPI_SUCCESS) {
        if (!d->hook_error[0]) ddp_mpi_failed(rc, "the bucket barrier", d->hook_error, sizeof(d->hook_error), d);
        return false;
    }
    return true;
}

bool ddp_shm_reduce_bucket(ddp *d, int b, char *msg, size_t msg_size)
{
    ddp_shm *shm = d->shm;
    bucket *k = &d->buckets[b];
    MPI_Win_sync(shm->win); /* the peers' stores, visible to this rank's loads */
    wgt_context *ctx = d->ctx;
    wgt_scope_push(ctx);
    wgt_tensor *part[SHM_MAX_RANKS] = {NULL};
    const int64_t count = (int64_t)k->count;
    for (int r = 0; r < d->size; r++) /* one upload per peer and bucket */
        if (r != d->rank) part[r] = wgt_tensor_from_host(ctx, WGT_F32, 1, &count, shm->base[r] + k->first);
    const double scale = 1.0 / (double)d->size; /* as f32: 1.0f / N, what the MPI path multiplies by */
    for (int i = k->lo; i <= k->hi && wgt_context_status(ctx) == WGT_OK; i++) {
        wgt_tensor *p = d->params[i], *grad = wgt_tensor_grad(p);
        const int ndim = wgt_tensor_ndim(p);
        const int64_t *shape = wgt_tensor_shape(p), at = (int64_t)d->offset_of[i];
        if (!grad) { /* this rank's backward did not reach it: its term is zero */
            wgt_tensor *zeros = wgt_zeros(ctx, WGT_F32, ndim, shape);
            if (zeros) wgt_tensor_set_grad(p, zeros);
            grad = wgt_tensor_grad(p);
            if (!grad) break;
        }
        wgt_tensor *terms[SHM_MAX_RANKS];
        for (int r = 0; r < d->size; r++)
            terms[r] = r == d->rank ? grad : wgt_reshape(wgt_slice(part[r], 0, at, at + d->numel[i], 1), ndim, shape);
        wgt_tensor *mean = wgt_fused_params(ctx, shm->sum_expression, terms, d->size, &scale, 1);
        if (mean) wgt_assign(grad, mean);
    }
    wgt_scope_pop(ctx);
    if (wgt_context_status(ctx) != WGT_OK) {
        snprintf(msg, msg_size, "rank %d: summing gradient bucket %d on the device: %s", d->rank, b,
                 wgt_context_error_message(ctx));
        return false;
    }
    return true;
}

bool ddp_shm_end_step(ddp *d, char *msg, size_t msg_size)
{
    MPI_Request request;
    int rc = MPI_Ibarrier(d->local_comm, &request);
    return !ddp_mpi_failed(rc, "the end-of-step barrier", msg, msg_size, d) &&
           ddp_wait_all(d, &request, 1, "the end-of-step barrier", msg, msg_size);
}

void ddp_shm_free(ddp *d)
{
    if (!d->shm) return;
    MPI_Win_unlock_all(d->shm->win);
    MPI_Win_free(&d->shm->win);
    free(d->shm);
    d->shm = NULL;
}
