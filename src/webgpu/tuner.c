/* GEMM autotuning: every tiled config that fits the device is timed on square
 * f32 products of a few sizes, in the three layouts of a linear layer (A B,
 * A B^T, A^T B: operands read along k, or not, take different fetch paths);
 * the fastest in total per size bucket is written to a
 * tuning cache keyed by adapter and driver, which later contexts on the same
 * adapter+driver load at creation. Without a cache the matmul heuristic
 * (webgpu_matmul.c) applies. File: WGT_TUNE_CACHE, else
 * $XDG_CACHE_HOME/wgtensor/matmul-tune.tsv, else ~/.cache/wgtensor/matmul-tune.tsv.
 * Lines: "v1 <TAB> adapter <TAB> driver <TAB> bucket <TAB> config <TAB> ms" (ms: the
 * three layouts together). */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "webgpu/webgpu_internal.h"

static int bucket_size(int bucket) { return 256 << bucket; }

bool webgpu_tune_default_path(char *buf, size_t size)
{
    const char *env = getenv("WGT_TUNE_CACHE");
    if (env && *env) return (size_t)snprintf(buf, size, "%s", env) < size;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return (size_t)snprintf(buf, size, "%s/wgtensor/matmul-tune.tsv", xdg) < size;
    const char *home = getenv("HOME");
    if (home && *home) return (size_t)snprintf(buf, size, "%s/.cache/wgtensor/matmul-tune.tsv", home) < size;
    return false;
}

/* Loads the entries for this adapter+driver; unreadable or malformed lines are skipped. */
void webgpu_tune_load(webgpu_backend *wg)
{
    char path[1024];
    if (!webgpu_tune_default_path(path, sizeof(path))) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char *fields[6];
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, "\t\n", &save); tok && n < 6; tok = strtok_r(NULL, "\t\n", &save))
            fields[n++] = tok;
        if (n < 5 || strcmp(fields[0], "v1") != 0) continue;
        if (strcmp(fields[1], wg->info.name) != 0 || strcmp(fields[2], wg->info.driver) != 0) continue;
        int bucket = atoi(fields[3]);
        if (bucket < 0 || bucket >= WEBGPU_TUNE_BUCKETS || !webgpu_matmul_config_exists(fields[4])) continue;
        snprintf(wg->matmul_tuned[bucket], sizeof(wg->matmul_tuned[bucket]), "%s", fields[4]);
    }
    fclose(f);
}

static void make_parent_dirs(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
        *p = '/';
    }
}

/* Median of 3 timed batches of reps products, in ms per product. */
static wgt_status time_config(webgpu_backend *wg, const wgt_kernel_call *call, int reps, double *ms)
{
    double batches[3];
    for (int w = 0; w < 2; w++) /* compile and warm up */
        if (webgpu_matmul_run(wg, call) != WGT_OK) return wgt_context_status(wg->base.ctx);
    wgt_status s = webgpu_finish(wg, "wgt_tune");
    for (int bi = 0; s == WGT_OK && bi < 3; bi++) {
        double t0 = webgpu_now_ms();
        for (int r = 0; s == WGT_OK && r < reps; r++) s = webgpu_matmul_run(wg, call);
        if (s == WGT_OK) s = webgpu_finish(wg, "wgt_tune");
        batches[bi] = (webgpu_now_ms() - t0) / reps;
    }
    if (s != WGT_OK) return s;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (batches[j] < batches[i]) {
                double t = batches[i];
                batches[i] = batches[j];
                batches[j] = t;
            }
    *ms = batches[1];
    return WGT_OK;
}

/* A linear layer's three products, timed one after another: the sum of their ms. */
static wgt_status time_layouts(webgpu_backend *wg, wgt_kernel_call *call, int reps, double ms[3])
{
    wgt_tensor_view a = call->inputs[0], b = call->inputs[1];
    wgt_status s = WGT_OK;
    for (int layout = 0; s == WGT_OK && layout < 3; layout++) {
        call->inputs[0] = a;
        call->inputs[1] = b;
        /* transposed views of the square operands: A B^T, then A^T B */
        wgt_tensor_view *t = layout == 1 ? &call->inputs[1] : layout == 2 ? &call->inputs[0] : NULL;
        if (t) {
            t->strides[0] = 1;
            t->strides[1] = t->shape[0];
        }
        s = time_config(wg, call, reps, &ms[layout]);
    }
    call->inputs[0] = a;
    call->inputs[1] = b;
    return s;
}

static wgt_tensor_view square_view(wgt_storage *s, int64_t n)
{
    wgt_tensor_view v;
    memset(&v, 0, sizeof(v));
    v.storage = s;
    v.dtype = WGT_F32;
    v.ndim = 2;
    v.shape[0] = v.shape[1] = n;
    v.strides[0] = n;
    v.strides[1] = 1;
    return v;
}

wgt_status webgpu_tune(wgt_backend *b, bool quick, const char *cache_path, FILE *log)
{
    webgpu_backend *wg = webgpu_of(b);
    char path[1024];
    if (cache_path) snprintf(path, sizeof(path), "%s", cache_path);
    else if (!webgpu_tune_default_path(path, sizeof(path)))
        return wgt_error(b->ctx, WGT_ERR_IO, "wgt_tune: no cache path (set WGT_TUNE_CACHE or HOME)");
    int first = quick ? 0 : 1, last = quick ? 1 : WEBGPU_TUNE_BUCKETS - 1; /* quick: 256 and 512 */
    char chosen[WEBGPU_TUNE_BUCKETS][32] = {{0}};
    double chosen_ms[WEBGPU_TUNE_BUCKETS] = {0};
    wgt_status s = WGT_OK;
    for (int bucket = first; s == WGT_OK && bucket <= last; bucket++) {
        int64_t n = quick ? 64 << bucket : bucket_size(bucket);
        size_t bytes = (size_t)(n * n) * 4;
        wgt_storage *st[3] = {wgt_storage_create(b->ctx, bytes, "wgt_tune"), wgt_storage_create(b->ctx, bytes, "wgt_tune"),
                              wgt_storage_create(b->ctx, bytes, "wgt_tune")};
        if (!st[0] || !st[1] || !st[2]) s = wgt_context_status(b->ctx);
        float *host = s == WGT_OK ? malloc(bytes) : NULL;
        if (s == WGT_OK && !host) s = wgt_error(b->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tune: out of host memory");
        for (int64_t i = 0; host && i < n * n; i++) host[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
        for (int k = 0; s == WGT_OK && k < 2; k++) s = webgpu_storage_write(b, st[k]->handle, 0, host, bytes);
        free(host);
        wgt_kernel_call call;
        memset(&call, 0, sizeof(call));
        call.kind = WGT_KERNEL_MATMUL;
        call.op_name = "wgt_tune";
        call.n_inputs = 2;
        call.n_outputs = 1;
        if (s == WGT_OK) {
            call.inputs[0] = square_view(st[0], n);
            call.inputs[1] = square_view(st[1], n);
            call.outputs[0] = square_view(st[2], n);
        }
        double flops = 2.0 * (double)n * n * n;
        int reps = quick ? 2 : flops > 1e11 ? 3 : flops > 1e10 ? 10 : 20; /* quick: tests, on slow adapters */
        /* untimed, so that the first config is not the one timed on a cold GPU */
        double warm[3];
        if (s == WGT_OK) s = time_layouts(wg, &call, reps, warm);
        for (int c = 0; s == WGT_OK; c++) {
            const char *name = webgpu_matmul_tiled_config_name(wg, c);
            if (!name) break;
            if (!*name) continue; /* does not fit this device */
            wg->matmul_force = name;
            double each[3] = {0};
            s = time_layouts(wg, &call, reps, each);
            wg->matmul_force = NULL;
            if (s != WGT_OK) break;
            double ms = each[0] + each[1] + each[2];
            if (log)
                fprintf(log, "tune %5lld^3 %-18s AB %8.4f  ABt %8.4f  AtB %8.4f ms  %8.1f GFLOP/s\n", (long long)n,
                        name, each[0], each[1], each[2], 3 * flops / ms / 1e6);
            if (!chosen[bucket][0] || ms < chosen_ms[bucket]) {
                snprintf(chosen[bucket], sizeof(chosen[bucket]), "%s", name);
                chosen_ms[bucket] = ms;
            }
        }
        for (int k = 0; k < 3; k++)
            if (st[k]) wgt_storage_release(b->ctx, st[k]);
    }
    if (s != WGT_OK) return s;

    /* Keep other adapters' lines, replace this adapter's. */
    char *kept = NULL;
    size_t kept_len = 0;
    FILE *old = fopen(path, "r");
    if (old) {
        char line[1024];
        while (fgets(line, sizeof(line), old)) {
            char copy[1024];
            snprintf(copy, sizeof(copy), "%s", line);
            char *save = NULL, *v = strtok_r(copy, "\t\n", &save), *adapter = strtok_r(NULL, "\t\n", &save),
                 *driver = strtok_r(NULL, "\t\n", &save);
            if (v && adapter && driver && !strcmp(adapter, wg->info.name) && !strcmp(driver, wg->info.driver)) continue;
            size_t len = strlen(line);
            char *grown = realloc(kept, kept_len + len + 1);
            if (!grown) break;
            kept = grown;
            memcpy(kept + kept_len, line, len + 1);
            kept_len += len;
        }
        fclose(old);
    }
    make_parent_dirs(path);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(kept);
        return wgt_error(b->ctx, WGT_ERR_IO, "wgt_tune: cannot write \"%s\"", path);
    }
    if (kept) fputs(kept, f);
    free(kept);
    for (int bucket = first; bucket <= last; bucket++) {
        /* quick runs tune small sizes but file them under their buckets only */
        fprintf(f, "v1\t%s\t%s\t%d\t%s\t%.4f\n", wg->info.name, wg->info.driver, bucket, chosen[bucket], chosen_ms[bucket]);
        snprintf(wg->matmul_tuned[bucket], sizeof(wg->matmul_tuned[bucket]), "%s", chosen[bucket]);
        if (log) fprintf(log, "bucket %d (%d^2 outputs): %s\n", bucket, bucket_size(bucket), chosen[bucket]);
    }
    if (fclose(f) != 0) return wgt_error(b->ctx, WGT_ERR_IO, "wgt_tune: writing \"%s\" failed", path);
    if (log) fprintf(log, "tuning cache: %s\n", path);
    return WGT_OK;
}
