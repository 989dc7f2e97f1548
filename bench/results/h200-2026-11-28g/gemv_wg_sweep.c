/* Probe (seventh session; the sixth's p7/gemv_sweep.c with other knobs): the quantized decode matvec's
 * invocations a workgroup (WGT_QUANT_GEMV_WG) and lanes/unroll (WGT_QUANT_GEMV_ROWS) in ONE process,
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
static const shape shapes[] = {{128256, 2048, 4}, {16384, 2048, 4}, {3072, 2048, 4}, {2048, 8192, 4}, {2048, 2048, 4},
                               {16384, 2048, 8}, {3072, 2048, 8}, {2048, 8192, 8}, {128256, 2048, 8}};
#define NS (int)(sizeof(shapes) / sizeof(shapes[0]))
/* "WG" or "WG/threads,unroll"; NULL: the defaults */
static const char *configs[] = {NULL, "256", "512", "1024", "512/32,4", "512/16,4", "1024/32,2"};
#define NC (int)(sizeof(configs) / sizeof(configs[0]))
typedef struct { wgt_context *ctx; wgt_tensor *x[NS], *q[NS], *s[NS]; } cfg_state;

static unsigned rng = 1;
static unsigned nxt(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

static double run(cfg_state *c, int i, int reps)
{
    wgt_synchronize(c->ctx);
    double t0 = now();
    for (int r = 0; r < reps; r++) {
        wgt_tensor *y = wgt_qlinear(c->x[i], c->q[i], c->s[i], shapes[i].bits);
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
        unsetenv("WGT_QUANT_GEMV_WG");
        unsetenv("WGT_QUANT_GEMV_ROWS");
        if (configs[c]) {
            char wgs[16];
            snprintf(wgs, sizeof(wgs), "%.*s", (int)strcspn(configs[c], "/"), configs[c]);
            setenv("WGT_QUANT_GEMV_WG", wgs, 1);
            if (strchr(configs[c], '/')) setenv("WGT_QUANT_GEMV_ROWS", strchr(configs[c], '/') + 1, 1);
        }
        wgt_context_options o;
        wgt_context_options_init(&o);
        o.backend = WGT_BACKEND_WEBGPU;
        st[c].ctx = wgt_context_create(&o);
        if (wgt_context_status(st[c].ctx) != WGT_OK) { fprintf(stderr, "ctx: %s\n", wgt_context_error_message(st[c].ctx)); return 1; }
        for (int i = 0; i < NS; i++) {
            const int64_t N = shapes[i].N, K = shapes[i].K, words = K * shapes[i].bits / 32;
            float *x = malloc(K * 4), *sc = malloc(N * (K / 32) * 4);
            unsigned *q = malloc(N * words * 4);
            for (int64_t j = 0; j < K; j++) x[j] = (nxt() % 1000) / 1000.0f - 0.5f;
            for (int64_t j = 0; j < N * words; j++) q[j] = nxt();
            for (int64_t j = 0; j < N * (K / 32); j++) sc[j] = 0.001f * (1 + nxt() % 7);
            st[c].x[i] = wgt_tensor_from_host(st[c].ctx, WGT_F32, 2, (int64_t[]){1, K}, x);
            st[c].q[i] = wgt_tensor_from_host(st[c].ctx, WGT_I32, 2, (int64_t[]){N, words}, q);
            st[c].s[i] = wgt_tensor_from_host(st[c].ctx, WGT_F32, 2, (int64_t[]){N, K / 32}, sc);
            free(x), free(sc), free(q);
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
    for (int i = 0; i < NS; i++) printf(" q%d_%lldx%lld", shapes[i].bits, (long long)shapes[i].N, (long long)shapes[i].K);
    printf("\n");
    for (int c = 0; c < NC; c++) {
        printf("%-10s", configs[c] ? configs[c] : "default");
        for (int i = 0; i < NS; i++) printf(" %14.4f", best[c][i]);
        printf("\n");
    }
    printf("(best of %d rounds of 100 reps, ms per product, configs alternated in one process)\n", rounds);
    return 0;
}
