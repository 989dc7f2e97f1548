/* Data-parallel training over MPI (see ddp.h, docs/distributed.md).
 *
 * Gradients travel through host memory: WebGPU has no path between two
 * devices and NCCL cannot read WebGPU buffers. Each parameter has a fixed
 * slot in a host bucket; buckets are laid out in reverse parameter order,
 * the order backward finishes them (the last layers first), so the first
 * bucket fills while most of backward is still ahead. When the autograd
 * engine reports a parameter's gradient final (wgt_backward_set_grad_hook),
 * its copy to the host is queued behind the work recorded so far
 * (wgt_tensor_read_start) and nothing waits: the host goes on recording
 * backward while the device runs it. A bucket whose copies have all landed
 * (wgt_read_ready) starts its MPI_Iallreduce, in bucket order on every rank;
 * a bucket whose all-reduce has finished is written back to the .grads while
 * later ones are still in flight. Open MPI has no progress thread by default,
 * so the hook and ddp_finish_step's loop test the requests in flight.
 *
 * Every wait has a deadline (a rank that stops answering ends the job with a
 * message naming this rank and what it waited for), MPI errors return codes
 * (MPI_ERRORS_RETURN) turned into messages, and ddp_abort ends all ranks. */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "ddp_internal.h"

#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ddp_compiled(void) { return true; }

bool ddp_launched_by_mpi(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) return true;
    }
    return false;
}

ddp *ddp_init(const ddp_options *opt, char *msg, size_t msg_size)
{
    ddp *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(msg, msg_size, "out of host memory");
        return NULL;
    }
    d->opt = *opt;
    /* 8 MB, not PyTorch's 25: a host all-reduce of 25-43 MB ran at 1.0-2.9 GB/s on
     * the lent 4-GPU machine against ~3 for 16 MB, and smaller buckets start
     * earlier in backward (shakespeare on 2 GPUs: 77.6 -> 51.8 ms a step) */
    if (d->opt.bucket_bytes == 0) d->opt.bucket_bytes = (size_t)8 << 20;
    if (!(d->opt.timeout_s > 0)) d->opt.timeout_s = 120;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        snprintf(msg, msg_size, "MPI_Init failed");
        free(d);
        return NULL;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    d->skew_comm = MPI_COMM_NULL;
    if (d->opt.measure_skew && MPI_Comm_dup(MPI_COMM_WORLD, &d->skew_comm) != MPI_SUCCESS) {
        snprintf(msg, msg_size, "MPI_Comm_dup failed");
        free(d);
        return NULL;
    }
    d->local_comm = MPI_COMM_NULL;
    d->local_size = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &d->local_comm) == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(d->local_comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(d->local_comm, &d->local_rank);
        MPI_Comm_size(d->local_comm, &d->local_size);
    } else {
        d->local_comm = MPI_COMM_NULL;
    }
    return d;
}

int ddp_rank(const ddp *d) { return d->rank; }
int ddp_size(const ddp *d) { return d->size; }
int ddp_local_rank(const ddp *d) { return d->local_rank; }
const char *ddp_exchange_name(const ddp *d) { return d->shm ? "shared memory" : "MPI all-reduce"; }

bool ddp_agree(ddp *d, const uint64_t *fingerprint, int n, const char *const *names, char *msg, size_t msg_size)
{
    uint64_t *all = malloc((size_t)d->size * (size_t)n * sizeof(uint64_t));
    if (!all) {
        snprintf(msg, msg_size, "rank %d: out of host memory", d->rank);
        return false;
    }
    MPI_Request request;
    int rc = MPI_Iallgather(fingerprint, n, MPI_UINT64_T, all, n, MPI_UINT64_T, MPI_COMM_WORLD, &request);
    bool ok = !ddp_mpi_failed(rc, "the start-up check", msg, msg_size, d) &&
              ddp_wait_all(d, &request, 1, "the start-up check", msg, msg_size);
    for (int r = 1; ok && r < d->size; r++)
        for (int i = 0; ok && i < n; i++)
            if (all[(size_t)r * (size_t)n + (size_t)i] != all[i]) {
                snprintf(msg, msg_size, "rank %d's %s (%llu) differs from rank 0's (%llu): every rank must run the same "
                                        "config, data and checkpoint",
                         r, names ? names[i] : "fingerprint", (unsigned long long)all[(size_t)r * (size_t)n + (size_t)i],
                         (unsigned long long)all[i]);
                ok = false;
            }
    free(all);
    return ok;
}

static bool grow_staging(ddp *d, size_t count)
{
    if (count <= d->staging_count) return true;
    float *grown = realloc(d->staging, count * sizeof(float));
    if (!grown) return false;
    d->staging = grown;
    d->staging_count = count;
    return true;
}

bool ddp_broadcast(ddp *d, wgt_tensor *const *tensors, int n, char *msg, size_t msg_size)
{
    size_t largest = 0;
    for (int i = 0; i < n; i++) {
        size_t c = (size_t)wgt_tensor_numel(tensors[i]);
        if (c > largest) largest = c;
        if (wgt_tensor_dtype(tensors[i]) != WGT_F32) {
            snprintf(msg, msg_size, "rank %d: parameter %d is not f32", d->rank, i);
            return false;
        }
    }
    if (!grow_staging(d, largest)) {
        snprintf(msg, msg_size, "rank %d: out of host memory for a %zu-float staging buffer", d->rank, largest);
        return false;
    }
    for (int i = 0; i < n; i++) {
        size_t count = (size_t)wgt_tensor_numel(tensors[i]), bytes = count * sizeof(float);
        if (d->rank == 0 && wgt_tensor_read(tensors[i], d->staging, bytes) != WGT_OK) {
            snprintf(msg, msg_size, "rank 0: reading parameter %d: %s", i,
                     wgt_context_error_message(wgt_tensor_context(tensors[i])));
            return false;
        }
        MPI_Request request;
        int rc = MPI_Ibcast(d->staging, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD, &request);
        if (ddp_mpi_failed(rc, "the broadcast of the initial parameters", msg, msg_size, d) ||
            !ddp_wait_all(d, &request, 1, "the broadcast of the initial parameters", msg, msg_size))
            return false;
        wgt_context *ctx = wgt_tensor_context(tensors[i]);
        wgt_no_grad_push(ctx); /* a parameter requires grad: writing it is not an op to differentiate */
        wgt_status s = d->rank != 0 ? wgt_tensor_write(tensors[i], d->staging, bytes) : WGT_OK;
        wgt_no_grad_pop(ctx);
        if (s != WGT_OK) {
            snprintf(msg, msg_size, "rank %d: writing parameter %d: %s", d->rank, i, wgt_context_error_message(ctx));
            return false;
        }
    }
    return true;
}

static int param_index(const ddp *d, const wgt_tensor *leaf)
{
    for (int i = 0; i < d->n_params; i++)
        if (d->params[i] == leaf) return i;
    return -1;
}

static bool start_bucket(ddp *d, int b)
{
    bucket *k = &d->buckets[b];
    if (d->shm) {
        if (!ddp_shm_start_bucket(d, b)) return false;
        d->stats.bytes += (int64_t)(k->count * sizeof(float));
        return true;
    }
    int rc = MPI_Iallreduce(MPI_IN_PLACE, k->host, (int)k->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &k->request);
    if (rc != MPI_SUCCESS) {
        if (!d->hook_error[0]) ddp_mpi_failed(rc, "MPI_Iallreduce", d->hook_error, sizeof(d->hook_error), d);
        return false;
    }
    d->stats.bytes += (int64_t)(k->count * sizeof(float));
    return true;
}

static void hook_failed(ddp *d, int i, const char *what)
{
    if (!d->hook_error[0])
        snprintf(d->hook_error, sizeof(d->hook_error), "rank %d: %s the gradient of parameter %d: %s", d->rank, what, i,
                 wgt_context_error_message(d->ctx));
}

static float *slot_of(const ddp *d, int i) { return d->buckets[d->bucket_of[i]].host + d->offset_of[i]; }

/* Takes parameter i's gradient: queues its copy to the host without waiting
 * (zeros when it has none: the sum over ranks then counts it as 0). */
static void take_gradient(ddp *d, int i, wgt_tensor *grad)
{
    if (d->ready[i]) return;
    d->ready[i] = true;
    size_t bytes = (size_t)d->numel[i] * sizeof(float);
    double t0 = ddp_now_s();
    if (grad && (wgt_tensor_numel(grad) != d->numel[i] || wgt_tensor_dtype(grad) != WGT_F32)) {
        hook_failed(d, i, "the shape or dtype of");
        grad = NULL;
    }
    if (grad && !(d->reads[i] = wgt_tensor_read_start(grad))) hook_failed(d, i, "starting the read of");
    if (!d->reads[i]) memset(slot_of(d, i), 0, bytes);
    d->stats.copy_s += ddp_now_s() - t0;
    d->buckets[d->bucket_of[i]].ready++;
}

/* Parameter i's read, landed (or waited for), into its slot. */
static void finish_read(ddp *d, int i)
{
    double t0 = ddp_now_s();
    if (wgt_read_finish(d->reads[i], slot_of(d, i), (size_t)d->numel[i] * sizeof(float)) != WGT_OK) {
        hook_failed(d, i, "reading");
        memset(slot_of(d, i), 0, (size_t)d->numel[i] * sizeof(float));
    }
    d->reads[i] = NULL;
    d->stats.copy_s += ddp_now_s() - t0;
}

/* Moves the step on without waiting for the device: the next buckets whose
 * gradients have all landed start their all-reduce (in bucket order, so every
 * rank starts the same collectives in the same order), and the all-reduces in
 * flight are tested (which is what moves them on). Returns whether anything
 * changed. */
static bool advance(ddp *d)
{
    bool moved = false;
    while (d->next_start < d->n_buckets) {
        bucket *k = &d->buckets[d->next_start];
        if (k->ready < k->members) break;
        bool landed = true;
        for (int i = k->lo; i <= k->hi; i++) {
            if (!d->reads[i]) continue;
            if (!wgt_read_ready(d->reads[i])) {
                landed = false;
                break;
            }
            finish_read(d, i);
            moved = true;
        }
        if (!landed || !start_bucket(d, d->next_start)) break;
        d->next_start++;
        moved = true;
    }
    for (int b = 0; b < d->next_start; b++) {
        bucket *k = &d->buckets[b];
        if (k->done) continue;
        int flag = 0;
        if (MPI_Test(&k->request, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) k->done = moved = true;
    }
    return moved;
}

static void on_grad_ready(wgt_tensor *leaf, wgt_tensor *grad, void *user)
{
    ddp *d = user;
    double t0 = ddp_now_s();
    int i = param_index(d, leaf);
    double copy0 = d->stats.copy_s;
    if (i >= 0) take_gradient(d, i, grad);
    advance(d);
    double spent = ddp_now_s() - t0;
    d->stats.hook_s += spent;
    d->stats.hook_mpi_s += spent - (d->stats.copy_s - copy0); /* less the gradient reads */
}

bool ddp_attach(ddp *d, wgt_context *ctx, wgt_tensor *const *params, int n, char *msg, size_t msg_size)
{
    d->ctx = ctx;
    d->n_params = n;
    d->params = calloc((size_t)n, sizeof(*d->params));
    d->bucket_of = calloc((size_t)n, sizeof(int));
    d->offset_of = calloc((size_t)n, sizeof(size_t));
    d->numel = calloc((size_t)n, sizeof(int64_t));
    d->ready = calloc((size_t)n, sizeof(bool));
    d->reads = calloc((size_t)n, sizeof(wgt_read *));
    d->buckets = calloc((size_t)n, sizeof(bucket)); /* at most one per parameter */
    if (!d->params || !d->bucket_of || !d->offset_of || !d->numel || !d->ready || !d->reads || !d->buckets) {
        snprintf(msg, msg_size, "rank %d: out of host memory", d->rank);
        return false;
    }
    const size_t cap = d->opt.bucket_bytes / sizeof(float) ? d->opt.bucket_bytes / sizeof(float) : 1;
    for (int j = n - 1; j >= 0; j--) { /* reverse: the order backward finishes them */
        d->params[j] = params[j];
        d->numel[j] = wgt_tensor_numel(params[j]);
        if (wgt_tensor_dtype(params[j]) != WGT_F32) {
            snprintf(msg, msg_size, "rank %d: parameter %d is not f32 (gradients are all-reduced as f32)", d->rank, j);
            return false;
        }
        bucket *k = d->n_buckets ? &d->buckets[d->n_buckets - 1] : NULL;
        if (!k || (k->count > 0 && k->count + (size_t)d->numel[j] > cap)) {
            k = &d->buckets[d->n_buckets++];
            k->hi = j;
        }
        k->lo = j;
        d->bucket_of[j] = (int)(k - d->buckets);
        d->offset_of[j] = k->count;
        k->count += (size_t)d->numel[j];
        k->members++;
    }
    size_t total = 0;
    for (int b = 0; b < d->n_buckets; b++) {
        d->buckets[b].first = total;
        total += d->buckets[b].count;
    }
    if (!ddp_shm_attach(d, total, msg, msg_size)) return false;
    for (int b = 0; b < d->n_buckets && !d->shm; b++) {
        d->buckets[b].host = malloc(d->buckets[b].count * sizeof(float));
        if (!d->buckets[b].host) {
            snprintf(msg, msg_size, "rank %d: out of host memory for gradient bucket %d (%zu floats)", d->rank, b,
                     d->buckets[b].count);
            return false;
        }
    }
    d->stats.buckets = d->n_buckets;
    if (!d->opt.no_overlap) wgt_backward_set_grad_hook(ctx, on_grad_ready, d);
    return true;
}

void ddp_begin_step(ddp *d)
{
    memset(d->ready, 0, (size_t)d->n_params * sizeof(bool));
    for (int b = 0; b < d->n_buckets; b++) {
        d->buckets[b].ready = 0;
        d->buckets[b].done = d->buckets[b].written = false;
    }
    d->next_start = 0;
}

/* Bucket b's sum, divided by the ranks, into its parameters' .grads (queued
 * writes: the device takes them before the optimizer step). */
static bool write_back(ddp *d, int b, char *msg, size_t msg_size)
{
    double t0 = ddp_now_s();
    bucket *k = &d->buckets[b];
    if (d->shm) {
        bool ok = ddp_shm_reduce_bucket(d, b, msg, msg_size);
        k->written = ok;
        d->stats.copy_s += ddp_now_s() - t0;
        return ok;
    }
    const float scale = 1.0f / (float)d->size;
    for (size_t e = 0; e < k->count; e++) k->host[e] *= scale;
    for (int i = k->lo; i <= k->hi; i++) {
        float *slot = slot_of(d, i);
        wgt_tensor *grad = wgt_tensor_grad(d->params[i]);
        wgt_status s;
        if (grad) {
            s = wgt_tensor_write(grad, slot, (size_t)d->numel[i] * sizeof(float));
        } else { /* this rank's backward did not reach it; a peer's did */
            const wgt_tensor *p = d->params[i];
            wgt_tensor *g = wgt_tensor_from_host(d->ctx, WGT_F32, wgt_tensor_ndim(p), wgt_tensor_shape(p), slot);
            s = g ? wgt_tensor_set_grad(d->params[i], g) : wgt_context_status(d->ctx);
            wgt_tensor_release(g);
        }
        if (s != WGT_OK) {
            snprintf(msg, msg_size, "rank %d: writing the averaged gradient of parameter %d: %s", d->rank, i,
                     wgt_context_error_message(d->ctx));
            return false;
        }
    }
    k->written = true;
    d->stats.copy_s += ddp_now_s() - t0;
    return true;
}

bool ddp_finish_step(ddp *d, char *msg, size_t msg_size)
{
    for (int i = 0; i < d->n_params; i++) /* no hook (--ddp-no-overlap), or a parameter backward did not reach */
        if (!d->ready[i]) take_gradient(d, i, wgt_tensor_grad(d->params[i]));
    if (d->opt.measure_skew) { /* before the remaining starts: what is in flight may progress meanwhile */
        double t0 = ddp_now_s();
        MPI_Request barrier;
        int rc = MPI_Ibarrier(d->skew_comm, &barrier);
        if (ddp_mpi_failed(rc, "the barrier after backward", msg, msg_size, d) ||
            !ddp_wait_all(d, &barrier, 1, "the barrier after backward", msg, msg_size))
            return false;
        d->stats.skew_s += ddp_now_s() - t0;
    }
    /* Until every bucket is back in its .grads: start what has landed, test
     * what is in flight, write back what has finished. The deadline restarts
     * whenever something moves. */
    double t0 = ddp_now_s(), deadline = t0 + d->opt.timeout_s;
    int written = 0;
    while (written < d->n_buckets && !d->hook_error[0]) {
        bool moved = advance(d);
        for (int b = 0; b < d->next_start; b++)
            if (d->buckets[b].done && !d->buckets[b].written) {
                if (!write_back(d, b, msg, msg_size)) return false;
                written++;
                moved = true;
            }
        if (moved) {
            deadline = ddp_now_s() + d->opt.timeout_s;
        } else if (ddp_now_s() > deadline) {
            snprintf(msg, msg_size, "rank %d of %d: the gradient all-reduce has waited %.0f s for the other ranks "
                                    "(bucket %d of %d started): one of them, or this rank's device, has stopped or "
                                    "hangs (--ddp-timeout sets the limit)",
                     d->rank, d->size, d->opt.timeout_s, d->next_start, d->n_buckets);
            return false;
        } else {
            sched_yield(); /* the peer may share this core */
        }
    }
    if (d->hook_error[0]) {
        snprintf(msg, msg_size, "%s", d->hook_error);
        return false;
    }
    if (d->shm && !ddp_shm_end_step(d, msg, msg_size)) return false;
    d->stats.wait_s += ddp_now_s() - t0;
    d->stats.steps++;
    return true;
}

bool ddp_allreduce_sum(ddp *d, double *values, int n, char *msg, size_t msg_size)
{
    MPI_Request request;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
    return !ddp_mpi_failed(rc, "the all-reduce of losses", msg, msg_size, d) &&
           ddp_wait_all(d, &request, 1, "the all-reduce of losses", msg, msg_size);
}

bool ddp_any(ddp *d, bool flag)
{
    int value = flag ? 1 : 0;
    char msg[600];
    MPI_Request request;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
    if (ddp_mpi_failed(rc, "the stop check", msg, sizeof(msg), d) || !ddp_wait_all(d, &request, 1, "the stop check", msg, sizeof(msg)))
        ddp_abort(d, msg, 1);
    return value != 0;
}

void ddp_stats_get(const ddp *d, ddp_stats *stats) { *stats = d->stats; }

void ddp_stats_reset(ddp *d)
{
    int buckets = d->stats.buckets;
    memset(&d->stats, 0, sizeof(d->stats));
    d->stats.buckets = buckets;
}

void ddp_abort(ddp *d, const char *why, int code)
{
    fprintf(stderr, "wgt train: rank %d of %d failed: %s; stopping all ranks\n", d->rank, d->size, why);
    fflush(stderr);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
}

void ddp_finalize(ddp *d)
{
    if (!d) return;
    if (d->ctx) wgt_backward_set_grad_hook(d->ctx, NULL, NULL);
    for (int b = 0; b < d->n_buckets && !d->shm; b++) free(d->buckets[b].host);
    ddp_shm_free(d);
    free(d->buckets);
    free(d->params);
    free(d->bucket_of);
    free(d->offset_of);
    free(d->numel);
    free(d->ready);
    for (int i = 0; d->reads && i < d->n_params; i++) /* a step that failed midway */
        if (d->reads[i]) wgt_read_finish(d->reads[i], NULL, 0);
    free(d->reads);
    free(d->staging);
    if (d->skew_comm != MPI_COMM_NULL) MPI_Comm_free(&d->skew_comm);
    if (d->local_comm != MPI_COMM_NULL) MPI_Comm_free(&d->local_comm);
    free(d);
    MPI_Finalize();
}
