/*
 * The kernel-choice knobs (knobs.h), read from the environment once, when the
 * backend is created: a kernel call reads webgpu_backend.knobs instead of
 * walking the environment (a convolution read about ten variables per call),
 * and a setenv on another thread cannot race with a running op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/knobs.h"
#include "webgpu/webgpu_internal.h"

/* The variable's text, NULL when unset. */
static const char *env(const char *name) { return getenv(name); }

/* Unset, "" or anything but "0" keeps the path on; "0" turns it off. */
static bool on_unless_zero(const char *name)
{
    const char *v = env(name);
    return !(v && strcmp(v, "0") == 0);
}

/* The text into a fixed buffer ("" when unset). Names longer than the buffer
 * are cut; every name the kernels compare with is shorter, so a cut name
 * matches none of them, as the whole one did not. */
static void copy_text(char *dst, size_t size, const char *name)
{
    const char *v = env(name);
    snprintf(dst, size, "%s", v ? v : "");
}

/* A non-negative count: -1 when unset or empty, -2 when malformed (not a
 * number in [0, 1000000]). */
static int64_t count(const char *name)
{
    const char *v = env(name);
    if (!v || !*v) return -1;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    return (*end || n < 0 || n > 1000000) ? -2 : (int64_t)n;
}

/* atoi's value when > 0, else 0 (the convolution's counts). */
static uint64_t positive(const char *name)
{
    const char *v = env(name);
    int n = v ? atoi(v) : 0;
    return n > 0 ? (uint64_t)n : 0;
}

static void read_general(webgpu_knobs *k)
{
    const char *f16 = env("WGT_WEBGPU_DISABLE_F16");
    k->disable_f16 = f16 && f16[0] && strcmp(f16, "0") != 0;
    const char *int64 = env("WGT_PHILOX_INT64");
    k->philox_mul16 = int64 && strcmp(int64, "0") == 0;
    const char *fold = env("WGT_WEBGPU_GRID_LIMIT");
    k->grid_limit = fold ? strtoull(fold, NULL, 10) : 0;
    const char *batch = env("WGT_BATCH_DISPATCHES");
    long n = batch ? strtol(batch, NULL, 10) : 0;
    k->batch_dispatches = n >= 1 && n <= WEBGPU_BATCH_DISPATCHES_MAX ? (uint32_t)n : WEBGPU_BATCH_DISPATCHES;
    const char *slots = env("WGT_BIND_GROUP_CACHE");
    long m = slots ? strtol(slots, NULL, 10) : 0;
    k->bind_group_slots = m >= 16 && m <= WEBGPU_BIND_GROUP_CACHE ? (uint32_t)m : WEBGPU_BIND_GROUP_SLOTS;
    const char *tr = env("WGT_WEBGPU_TRANSPOSE");
    int t = 0, y = 0;
    if (tr && sscanf(tr, "%dx%d", &t, &y) == 2) k->transpose_tile = t, k->transpose_rows = y;
    const char *norm = env("WGT_WEBGPU_NORM_THREADS");
    if (norm && *norm) {
        long v = strtol(norm, NULL, 10);
        if (v == 64 || v == 128 || v == 256) k->norm_threads = (uint32_t)v;
    }
    const char *cache = env("WGT_WEBGPU_SOFTMAX_CACHE");
    k->softmax_cache = -1;
    if (cache && *cache) {
        long v = strtol(cache, NULL, 10);
        k->softmax_cache = v <= 0 ? 0 : v >= 1024 ? 1024 : (int)v; /* the kernel caps it further */
    }
}

static void read_matmul(webgpu_knobs *k)
{
    copy_text(k->matmul_config, sizeof(k->matmul_config), "WGT_MATMUL_CONFIG");
    int64_t parts = count("WGT_SPLITK"), target = count("WGT_SPLITK_TARGET");
    k->splitk_malformed = parts == -2 || target == -2;
    k->splitk = parts >= 0 ? parts : -1;
    k->splitk_target = target > 0 ? target : -1;
    copy_text(k->splitk_text, sizeof(k->splitk_text), "WGT_SPLITK");
    copy_text(k->splitk_target_text, sizeof(k->splitk_target_text), "WGT_SPLITK_TARGET");
    k->gemv_half = on_unless_zero("WGT_GEMV_HALF");
    const char *half = env("WGT_MATMUL_HALF");
    k->matmul_half = half && strcmp(half, "0") == 0 ? 0 : half && strcmp(half, "1") == 0 ? 1 : -1;
    k->gemv_no_prefetch = !on_unless_zero("WGT_GEMV_PREFETCH");
    const char *rpt = env("WGT_GEMV_RPT");
    k->gemv_rpt = rpt && (strcmp(rpt, "1") == 0 || strcmp(rpt, "2") == 0 || strcmp(rpt, "4") == 0) ? (unsigned)atoi(rpt) : 0;
    const char *emulate = env("WGT_MATMUL_F16_EMULATE");
    k->matmul_f16_emulate = emulate && strcmp(emulate, "1") == 0;
    const char *rules = env("WGT_MATMUL_SHAPE_RULES");
    bool all = !rules || strcmp(rules, "1") == 0 || strcmp(rules, "all") == 0;
    k->matmul_k_layout = all || (rules && strstr(rules, "layout"));
    k->matmul_split_waves = all || (rules && strstr(rules, "waves"));
    k->matmul_pad_ladder = all || (rules && strstr(rules, "pad"));
    k->matmul_narrow_tiles = all || (rules && strstr(rules, "narrow"));
}

static void read_conv(webgpu_knobs *k)
{
    copy_text(k->conv_tile, sizeof(k->conv_tile), "WGT_CONV_TILE");
    const char *bk = env("WGT_CONV_BK");
    k->conv_bk = bk && strcmp(bk, "16") == 0 ? 16u : 8u;
    k->conv_splits = positive("WGT_CONV_SPLITK");
    k->conv_own_splitk = on_unless_zero("WGT_CONV_SPLITK");
    k->conv_split_target = positive("WGT_CONV_SPLIT_TARGET");
    k->conv_loads = on_unless_zero("WGT_CONV_LOADS");
    k->conv_stem = on_unless_zero("WGT_CONV_STEM");
    k->conv_rtab = on_unless_zero("WGT_CONV_RTAB");
    k->conv_dbuf = on_unless_zero("WGT_CONV_DBUF");
    k->conv_phases = on_unless_zero("WGT_CONV_PHASES");
    k->conv_debug = env("WGT_CONV_DEBUG") != NULL;
    const char *v2 = env("WGT_CONV_V2");
    /* unset: every part but "tiles" (faster than the first path on every ResNet layer of an H100); "0": none */
    bool all = !v2 || strcmp(v2, "1") == 0 || strcmp(v2, "all") == 0;
    k->conv_v2_reduce = all || (v2 && strstr(v2, "reduce"));
    k->conv_v2_tiles = v2 && strstr(v2, "tiles"); /* not in "all": slower on the 64-channel layers */
    k->conv_v2_waves = all || (v2 && strstr(v2, "waves"));
    k->conv_v2_stem = all || (v2 && strstr(v2, "stem"));
    k->conv_v2_ctab = all || (v2 && strstr(v2, "ctab"));
    k->conv_v2_pool = all || (v2 && strstr(v2, "pool"));
    k->conv_slots = positive("WGT_CONV_SLOTS");
    const char *wino = env("WGT_CONV_WINOGRAD");
    k->conv_winograd = !wino ? 1 : strcmp(wino, "0") == 0 ? 0 : strcmp(wino, "all") == 0 ? 2 : 1;
    k->pool_tiles = on_unless_zero("WGT_POOL_TILES");
    k->bn_stream = on_unless_zero("WGT_BN_STREAM");
    k->bn_welford = on_unless_zero("WGT_BN_WELFORD");
}

static void read_attention(webgpu_knobs *k)
{
    const char *tiles = env("WGT_ATTENTION_TILES");
    unsigned *v = k->attention_tiles;
    k->attention_tiles_set = tiles && sscanf(tiles, "%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5;
    const char *copies = env("WGT_ATTENTION_F16_COPIES");
    k->attention_f16_copies = copies && strcmp(copies, "1") == 0;
    const char *fwd = env("WGT_ATTENTION_FORWARD");
    k->attention_forward = !fwd                       ? WEBGPU_ATTN_FORWARD_DEFAULT
                           : strcmp(fwd, "rows") == 0  ? WEBGPU_ATTN_FORWARD_ROWS
                           : strcmp(fwd, "flash") == 0 ? WEBGPU_ATTN_FORWARD_FLASH
                           : strcmp(fwd, "tiled") == 0 ? WEBGPU_ATTN_FORWARD_TILED
                           : strcmp(fwd, "quad") == 0  ? WEBGPU_ATTN_FORWARD_QUAD
                                                       : WEBGPU_ATTN_FORWARD_DEFAULT;
    const char *bwd = env("WGT_ATTENTION_BACKWARD");
    k->attention_backward = !bwd                          ? WEBGPU_ATTN_BACKWARD_DEFAULT
                            : strcmp(bwd, "dkdv") == 0     ? WEBGPU_ATTN_BACKWARD_DKDV
                            : strcmp(bwd, "tiled") == 0    ? WEBGPU_ATTN_BACKWARD_TILED
                            : strcmp(bwd, "kv_tiled") == 0 ? WEBGPU_ATTN_BACKWARD_KV_TILED
                            : strcmp(bwd, "q_tiled") == 0  ? WEBGPU_ATTN_BACKWARD_Q_TILED
                            : strcmp(bwd, "fused") == 0    ? WEBGPU_ATTN_BACKWARD_FUSED
                                                           : WEBGPU_ATTN_BACKWARD_ROWS;
    const char *dkdv = env("WGT_ATTENTION_DKDV_TILES");
    unsigned *d = k->attention_dkdv_tiles;
    k->attention_dkdv_tiles_set = dkdv && sscanf(dkdv, "%u,%u", &d[0], &d[1]) == 2;
    k->attention_dropout_mask = on_unless_zero("WGT_ATTENTION_DROPOUT_MASK");
    const char *fused = env("WGT_ATTENTION_FUSED_TILE");
    k->attention_fused_tile = fused && strcmp(fused, "16") == 0 ? 16u : 32u;
    const char *quad_rows = env("WGT_ATTENTION_QUAD_ROWS");
    k->attention_quad_rows = quad_rows && strcmp(quad_rows, "4") == 0 ? 4u : 2u;
    const char *order = env("WGT_ATTENTION_ORDER");
    k->attention_order[0] = 65536u;
    k->attention_order[1] = 64u;
    long f, b;
    int got = order ? sscanf(order, "%ld,%ld", &f, &b) : 0;
    if (got == 1) b = f;
    if (got >= 1 && f >= 0 && f <= 65536 && b >= 0 && b <= 65536) {
        k->attention_order[0] = (unsigned)f;
        k->attention_order[1] = (unsigned)b;
    }
    const char *decode = env("WGT_DECODE_ATTN");
    k->decode_attn = decode && strcmp(decode, "0") == 0   ? WEBGPU_DECODE_ATTN_OFF
                     : decode && strcmp(decode, "1") == 0 ? WEBGPU_DECODE_ATTN_FORCED
                                                          : WEBGPU_DECODE_ATTN_AUTO;
    k->decode_combine_split = on_unless_zero("WGT_DECODE_COMBINE_SPLIT");
    const int64_t fold = count("WGT_ATTENTION_FOLD_KEYS");
    k->attention_fold_keys = fold >= 0 ? fold : -1;
}

void webgpu_knobs_read(webgpu_knobs *k)
{
    memset(k, 0, sizeof(*k));
    read_general(k);
    read_matmul(k);
    read_conv(k);
    read_attention(k);
    copy_text(k->quant_tile, sizeof(k->quant_tile), "WGT_QUANT_TILE");
    copy_text(k->quant_dp4a_tile, sizeof(k->quant_dp4a_tile), "WGT_QUANT_DP4A_TILE");
    const char *gps = env("WGT_QUANT_DP4A_GPS");
    k->quant_dp4a_gps = gps ? (unsigned)atoi(gps) : 0;
    const char *qg = env("WGT_QUANT_GEMV");
    k->quant_gemv = qg && (qg[0] == '0' || qg[0] == '1') && !qg[1] ? qg[0] - '0' : 2;
    k->quant_gemv_shared = on_unless_zero("WGT_QUANT_GEMV_SHARED");
    k->quant_gemv_pre = on_unless_zero("WGT_QUANT_GEMV_PRE");
    const char *qr = env("WGT_QUANT_GEMV_ROWS");
    unsigned *r = k->quant_gemv_rows;
    if (!qr || sscanf(qr, "%u,%u", &r[0], &r[1]) != 2 || r[0] < 1 || r[0] > 256 || (r[0] & (r[0] - 1)) ||
        r[1] < 1 || r[1] > 8)
        r[0] = r[1] = 0;
    k->quant_gemv_by_words = qr && strcmp(qr, "words") == 0;
    k->quant_tiled = on_unless_zero("WGT_QUANT_TILED");
    const char *sorted = env("WGT_SCATTER_SORTED");
    k->scatter_sorted = !(sorted && sorted[0] == '0');
    k->gather_rows = on_unless_zero("WGT_GATHER_ROWS");
    k->norm_subgroup = on_unless_zero("WGT_NORM_SUBGROUP");
    k->transpose_vec4 = on_unless_zero("WGT_TRANSPOSE_VEC4");
    k->gelu_epilogue = on_unless_zero("WGT_GELU_EPILOGUE");
}
