/* Probe (sixth session): the f16 decode matvec's lanes a row (WGT_MATMUL_CONFIG=gemv_rowsN) and rows an
 * invocation (WGT_GEMV_RPT), derived from gemv_sweep.c: in ONE process,
 * each config its own context (knobs are read at creation), after a warm-up of a second or more, configs
 * alternated over rounds: median ms of 100 reps per (config, shape). Random codes and scales (the timing
 * does not depend on the values). Usage: gemv_sweep [rounds] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wgtensor.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
typedef struct { int64_t N, K; int bits; } shape;
static const shape shapes[] = {{128256, 2048, 16}, {16384, 2048, 16}, {3072, 2048, 16}, {2048, 8192, 16}, {2048, 2048, 16}};
#define NS (int)(sizeof(shapes) / sizeof(shapes[0]))
/* WGT_MATMUL_CONFIG (lanes a row) and WGT_GEMV_RPT (rows an invocation) */
static const char *configs[] = {NULL, "gemv_rows32:1", "gemv_rows32:2", "gemv_rows32:4", "gemv_rows64:1", "gemv_rows64:2",
                                "gemv_rows64:4", "gemv_rows128:2", "gemv_rows256:2"};
#define NC (int)(sizeof(configs) / sizeof(configs[0]))
typedef struct { wgt_context *ctx; wgt_tensor *x[NS], *q[NS], *s[NS]; } cfg_state;

static unsigned rng = 1;
static unsigned nxt(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

static double run(cfg_state *c, int i, int reps)
{
    wgt_synchronize(c->ctx);
    double t0 = now();
    for (int r = 0; r < reps; r++) {
        wgt_tensor *wt = wgt_transpose(c->q[i], 0, 1);
        wgt_tensor *y = wgt_matmul_ex(c->x[i], wt, WGT_F32);
        wgt_tensor_release(wt);
        if (!y) { wgt_context_clear_error(c->ctx); return -1.0; }
        wgt_tensor_release(y);
    }
    wgt_synchronize(c->ctx);
    return (now() - t0) * 1e3 / reps;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    cfg_state st[NC];
    for (int c = 0; c < NC; c++) {
        if (configs[c]) {
            char name[32];
            snprintf(name, sizeof(name), "%s", configs[c]);
            char *colon = strchr(name, ':');
            *colon = 0;
            setenv("WGT_MATMUL_CONFIG", name, 1);
            setenv("WGT_GEMV_RPT", colon + 1, 1);
        } else {
            unsetenv("WGT_MATMUL_CONFIG");
            unsetenv("WGT_GEMV_RPT");
        }
        wgt_context_options o;
        wgt_context_options_init(&o);
        o.backend = WGT_BACKEND_WEBGPU;
        st[c].ctx = wgt_context_create(&o);
        if (wgt_context_status(st[c].ctx) != WGT_OK) { fprintf(stderr, "ctx: %s\n", wgt_context_error_message(st[c].ctx)); return 1; }
        for (int i = 0; i < NS; i++) {
            const int64_t N = shapes[i].N, K = shapes[i].K;
            float *x = malloc(K * 4);
            unsigned short *w = malloc(N * K * 2);
            for (int64_t j = 0; j < K; j++) x[j] = (nxt() % 1000) / 1000.0f - 0.5f;
            for (int64_t j = 0; j < N * K; j++) w[j] = (unsigned short)(0x2c00 | (nxt() & 0x83ff)); /* small halves */
            st[c].x[i] = wgt_tensor_from_host(st[c].ctx, WGT_F32, 2, (int64_t[]){1, K}, x);
            st[c].q[i] = wgt_tensor_from_host(st[c].ctx, WGT_F16, 2, (int64_t[]){N, K}, w);
            st[c].s[i] = NULL;
            free(x), free(w);
        }
    }
    /* warm-up: every config and shape, for at least 1.5 s */
    double w0 = now();
    while (now() - w0 < 1.5)
        for (int c = 0; c < NC; c++) for (int i = 0; i < NS; i++) run(&st[c], i, 5);
    double best[NC][NS];
    for (int c = 0; c < NC; c++) for (int i = 0; i < NS; i++) best[c][i] = 1e9;
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < NC; c++)
            for (int i = 0; i < NS; i++) {
                double ms = run(&st[c], i, 100);
                if (ms < 0) best[c][i] = -1;
                else if (best[c][i] >= 0 && ms < best[c][i]) best[c][i] = ms;
            }
    printf("%-10s", "config");
    for (int i = 0; i < NS; i++) printf(" f16_%lldx%lld", (long long)shapes[i].N, (long long)shapes[i].K);
    printf("\n");
    for (int c = 0; c < NC; c++) {
        printf("%-10s", configs[c] ? configs[c] : "default");
        for (int i = 0; i < NS; i++) printf(" %14.4f", best[c][i]);
        printf("\n");
    }
    printf("(best of %d rounds of 100 reps, ms per product, configs alternated in one process)\n", rounds);
    return 0;
}
