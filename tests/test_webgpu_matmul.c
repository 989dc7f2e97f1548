/*
 * WebGPU MATMUL against the CPU backend (OpenBLAS), through the public API
 * wgt_matmul: odd and tile-multiple shapes, K = 1, matrix-vector, vector-matrix
 * and vector-vector products (1-D operands), broadcast batch dims, transposed
 * and sliced operands (read in place through strides), a grid of more than
 * 65535 workgroups, f32, f16 and i32, every tile config forced through
 * WGT_MATMUL_CONFIG, and split-K (automatic and forced through WGT_SPLITK,
 * with linear's bias). The WebGPU context runs with debug guards, so every result
 * is also checked for writes outside its elements.
 *
 * Tolerances, as the normalized error ||gpu - cpu|| / ||cpu||:
 *   f32  <= 5e-4 (expect ~1e-7: both sum in f32, only the order differs)
 *   f16  <= 1e-3; inputs are multiples of 1/8 in [-1, 1], so every product and
 *        partial sum is exact in f32 and both sides round the same f32 to f16:
 *        the results match exactly in practice
 *   i32  exact, including sums that wrap around 2^32
 *
 * Sizes stay small (<= ~256 per dim, K <= ~1000): CI runs this on lavapipe.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

static wgt_context *gpu, *cpu;
static wgt_context_options gpu_options; /* gpu's, for the contexts use_knobs creates */

/* The kernel-choice knobs (WGT_MATMUL_CONFIG, WGT_SPLITK, ...) are read when a
 * context is created: gpu becomes a new context created with env (name, value
 * pairs, NULL-terminated: test_context_env; NULL: none set). The environment
 * itself is left as it was. Tensors of the old gpu must be released first. */
static void use_knobs(const char *const *env)
{
    wgt_context_destroy(gpu);
    gpu = test_context_env(&gpu_options, env);
    if (!gpu) {
        fprintf(stderr, "FAIL: no WebGPU context for the next knob setting\n");
        exit(test_summary() ? test_summary() : 1);
    }
}

/* ------------------------------------------------------------------ helpers */

static uint32_t rng_state = 2463534242u;

/* Operand layouts: how the view handed to wgt_matmul is made from its storage. */
enum {
    TRANSPOSED = 1, /* stored as [.., cols, rows], then wgt_transpose(-2, -1) */
    STEP2 = 2,      /* stored with the last dim twice as long, sliced 1::2 (odd offset, stride 2) */
    OFFSET = 4,     /* stored with one more leading row, sliced 1: along dim 0 (offset != 0) */
};

/* Fills n elements: f32 uniform in [-1, 1), f16 multiples of 1/8 in [-1, 1],
 * i32 in [-50, 50] (or huge values when wrap, so that sums overflow). */
static void *random_data(wgt_dtype dtype, int64_t n, bool wrap)
{
    void *data = malloc((size_t)(n > 0 ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        switch (dtype) {
        case WGT_F32: ((float *)data)[i] = (float)(test_xorshift(&rng_state) % 2000000) / 1000000.0f - 1.0f; break;
        case WGT_F16: ((uint16_t *)data)[i] = test_f32_to_f16((float)((int)(test_xorshift(&rng_state) % 17) - 8) / 8.0f); break;
        default:
            ((int32_t *)data)[i] = wrap ? (int32_t)test_xorshift(&rng_state) : (int32_t)(test_xorshift(&rng_state) % 101) - 50;
            break;
        }
    }
    return data;
}

/* The shape an operand of logical shape `shape` is stored with under flags. */
static void stored_shape(int nd, const int64_t *shape, int flags, int64_t *stored)
{
    memcpy(stored, shape, sizeof(int64_t) * (size_t)nd);
    if ((flags & TRANSPOSED) && nd >= 2) {
        stored[nd - 2] = shape[nd - 1];
        stored[nd - 1] = shape[nd - 2];
    }
    if (flags & STEP2) stored[nd - 1] *= 2;
    if (flags & OFFSET) stored[0] += 1;
}

static int64_t stored_numel(int nd, const int64_t *shape, int flags)
{
    int64_t stored[8], n = 1;
    stored_shape(nd, shape, flags, stored);
    for (int d = 0; d < nd; d++) n *= stored[d];
    return n;
}

/* The same operand view in ctx: logical shape `shape`, layout flags, from data
 * (which holds the stored tensor's elements). */
static wgt_tensor *make_operand(wgt_context *ctx, wgt_dtype dtype, int nd, const int64_t *shape, int flags,
                                const void *data)
{
    int64_t stored[8];
    stored_shape(nd, shape, flags, stored);
    wgt_tensor *t = wgt_tensor_from_host(ctx, dtype, nd, stored, data), *v;
    if (!t) return NULL;
    if (flags & OFFSET) {
        v = wgt_slice(t, 0, 1, stored[0], 1);
        wgt_tensor_release(t);
        t = v;
    }
    if (t && (flags & STEP2)) {
        v = wgt_slice(t, nd - 1, 1, stored[nd - 1], 2);
        wgt_tensor_release(t);
        t = v;
    }
    if (t && (flags & TRANSPOSED) && nd >= 2) {
        v = wgt_transpose(t, nd - 2, nd - 1);
        wgt_tensor_release(t);
        t = v;
    }
    return t;
}

/* Compute dispatches the last GPU product of compare / compare_linear recorded
 * (a split-K product takes two: the parts, then their reduction). */
static uint64_t last_dispatches;

static uint64_t dispatches_now(void)
{
    wgt_execution_stats st;
    memset(&st, 0, sizeof(st));
    wgt_execution_stats_get(gpu, &st);
    return st.dispatches;
}

/* The normalized error of g against c (0 for an exact integer match, INFINITY
 * for a mismatch or a failure); releases neither. */
static double result_error(const char *name, wgt_dtype dtype, wgt_tensor *g, wgt_tensor *c)
{
    double err = INFINITY;
    if (!g || !c) {
        CHECK(false, "%s: product failed: gpu: %s; cpu: %s", name, wgt_context_error_message(gpu),
              wgt_context_error_message(cpu));
        wgt_context_clear_error(gpu);
        wgt_context_clear_error(cpu);
        return err;
    }
    int64_t n = wgt_tensor_numel(c);
    CHECK(wgt_tensor_numel(g) == n && wgt_tensor_ndim(g) == wgt_tensor_ndim(c), "%s: result shapes differ", name);
    size_t bytes = (size_t)(n > 0 ? n : 1) * wgt_dtype_size(dtype);
    void *hg = calloc(1, bytes), *hc = calloc(1, bytes);
    wgt_status sg = wgt_tensor_read(g, hg, bytes), sc = wgt_tensor_read(c, hc, bytes);
    CHECK(sg == WGT_OK && sc == WGT_OK, "%s: read failed: %s / %s", name, wgt_context_error_message(gpu),
          wgt_context_error_message(cpu));
    CHECK(wgt_tensor_check_guards(g) == WGT_OK, "%s: write outside the result: %s", name,
          wgt_context_error_message(gpu));
    if (dtype == WGT_I32) {
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (((int32_t *)hg)[i] != ((int32_t *)hc)[i]) bad = i;
        err = bad < 0 ? 0.0 : INFINITY;
        if (bad >= 0)
            fprintf(stderr, "%s: element %lld: gpu %d, cpu %d\n", name, (long long)bad, ((int32_t *)hg)[bad],
                    ((int32_t *)hc)[bad]);
    } else {
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = dtype == WGT_F16 ? (double)test_f16_to_f32(((uint16_t *)hg)[i]) : ((float *)hg)[i];
            double y = dtype == WGT_F16 ? (double)test_f16_to_f32(((uint16_t *)hc)[i]) : ((float *)hc)[i];
            diff += (x - y) * (x - y);
            norm += y * y;
        }
        err = norm > 0 ? sqrt(diff / norm) : sqrt(diff);
        if (err != err) err = INFINITY;
    }
    free(hg);
    free(hc);
    return err;
}

/* The product of a (shape sa, layout fa) and b on both backends; returns the
 * normalized error (result_error). */
static double compare(const char *name, wgt_dtype dtype, int nda, const int64_t *sa, int fa, int ndb,
                      const int64_t *sb, int fb, bool wrap)
{
    int64_t na = stored_numel(nda, sa, fa), nb = stored_numel(ndb, sb, fb);
    void *da = random_data(dtype, na, wrap), *db = random_data(dtype, nb, wrap);
    wgt_tensor *ga = make_operand(gpu, dtype, nda, sa, fa, da), *gb = make_operand(gpu, dtype, ndb, sb, fb, db);
    wgt_tensor *ca = make_operand(cpu, dtype, nda, sa, fa, da), *cb = make_operand(cpu, dtype, ndb, sb, fb, db);
    free(da);
    free(db);
    uint64_t before = dispatches_now();
    wgt_tensor *g = ga && gb ? wgt_matmul(ga, gb) : NULL, *c = ca && cb ? wgt_matmul(ca, cb) : NULL;
    last_dispatches = dispatches_now() - before;
    double err = result_error(name, dtype, g, c);
    wgt_tensor_release(g);
    wgt_tensor_release(c);
    wgt_tensor_release(ga);
    wgt_tensor_release(gb);
    wgt_tensor_release(ca);
    wgt_tensor_release(cb);
    return err;
}

static double tolerance(wgt_dtype dtype) { return dtype == WGT_F32 ? 5e-4 : dtype == WGT_F16 ? 1e-3 : 0.0; }

/* Checks one product, described by its 2-D or batched shapes. */
static void check_product(const char *what, wgt_dtype dtype, int nda, const int64_t *sa, int fa, int ndb,
                          const int64_t *sb, int fb)
{
    char name[200];
    snprintf(name, sizeof(name), "%s %s (a flags %d, b flags %d)", what, wgt_dtype_name(dtype), fa, fb);
    double err = compare(name, dtype, nda, sa, fa, ndb, sb, fb, false);
    CHECK(err <= tolerance(dtype), "%s: normalized error %.3g > %.3g", name, err, tolerance(dtype));
}

static void check_mnk(wgt_dtype dtype, int64_t M, int64_t N, int64_t K, int fa, int fb)
{
    int64_t sa[2] = {M, K}, sb[2] = {K, N};
    char what[80];
    snprintf(what, sizeof(what), "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
    check_product(what, dtype, 2, sa, fa, 2, sb, fb);
}

/* ------------------------------------------------------------------ cases */

static const wgt_dtype dtypes[3] = {WGT_F32, WGT_F16, WGT_I32};

static void test_shapes(void)
{
    static const int64_t mnk[][3] = {
        {1, 1, 1}, {7, 13, 5}, {65, 33, 17}, {128, 128, 128}, {129, 127, 131}, {64, 64, 1}, {33, 70, 1},
        {2, 2, 2}, {4, 8, 12}, {200, 96, 64}, {96, 200, 256}, {16, 16, 1000}, {3, 257, 9},
    };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof(mnk) / sizeof(mnk[0]); i++)
            check_mnk(dtypes[t], mnk[i][0], mnk[i][1], mnk[i][2], 0, 0);
}

static void test_layouts(void)
{
    static const int flags[] = {0, TRANSPOSED, STEP2, OFFSET, TRANSPOSED | STEP2, TRANSPOSED | OFFSET};
    static const int64_t mnk[][3] = {{65, 33, 17}, {64, 64, 64}, {128, 128, 128}, {36, 44, 52}};
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof(mnk) / sizeof(mnk[0]); s++)
            for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
                for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++) {
                    if (t > 0 && s > 1) continue; /* keep the f16 / i32 sweep short */
                    check_mnk(dtypes[t], mnk[s][0], mnk[s][1], mnk[s][2], flags[i], flags[j]);
                }
}

static void test_vectors(void)
{
    for (int t = 0; t < 3; t++) {
        wgt_dtype dt = dtypes[t];
        static const int64_t sizes[][2] = {{1, 1}, {37, 23}, {64, 128}, {300, 1000}, {257, 4}};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            int64_t R = sizes[i][0], K = sizes[i][1];
            int64_t mat[2] = {R, K}, vec[1] = {K}, mat_t[2] = {K, R};
            static const int mflags[] = {0, TRANSPOSED, STEP2, OFFSET};
            for (size_t f = 0; f < sizeof(mflags) / sizeof(mflags[0]); f++) {
                check_product("matrix-vector", dt, 2, mat, mflags[f], 1, vec, 0);
                check_product("vector-matrix", dt, 1, vec, 0, 2, mat_t, mflags[f]);
            }
            check_product("matrix-vector, strided vector", dt, 2, mat, 0, 1, vec, STEP2);
            check_product("vector-matrix, strided vector", dt, 1, vec, STEP2, 2, mat_t, 0);
            /* 2-D M == 1 and N == 1 products (not only 1-D operands) */
            int64_t row[2] = {1, K}, col[2] = {K, 1};
            check_product("[1, K] x [K, N]", dt, 2, row, 0, 2, mat_t, 0);
            check_product("[M, K] x [K, 1]", dt, 2, mat, 0, 2, col, 0);
        }
        int64_t v[1] = {777};
        check_product("vector-vector", dt, 1, v, 0, 1, v, 0);
        check_product("vector-vector strided", dt, 1, v, STEP2, 1, v, OFFSET);
        /* batched matrix-vector with broadcast */
        int64_t bm[3] = {3, 40, 64}, bv[1] = {64}, bmt[4] = {2, 1, 64, 40}, bx[3] = {3, 1, 64};
        check_product("batched matrix-vector", dt, 3, bm, 0, 1, bv, 0);
        check_product("batched vector-matrix", dt, 3, bx, 0, 4, bmt, 0);
        check_product("batched vector-matrix, transposed", dt, 3, bx, 0, 4, bmt, TRANSPOSED);
    }
}

static void test_batches(void)
{
    for (int t = 0; t < 3; t++) {
        wgt_dtype dt = dtypes[t];
        int64_t a1[4] = {3, 1, 33, 20}, b1[4] = {1, 4, 20, 17};
        check_product("[3,1,M,K] x [1,4,K,N]", dt, 4, a1, 0, 4, b1, 0);
        check_product("[3,1,M,K] x [1,4,K,N] transposed", dt, 4, a1, TRANSPOSED, 4, b1, TRANSPOSED | STEP2);
        int64_t a2[3] = {5, 64, 32}, b2[2] = {32, 48};
        check_product("[5,M,K] x [K,N]", dt, 3, a2, 0, 2, b2, 0);
        check_product("[5,M,K] x [K,N] offset", dt, 3, a2, OFFSET, 2, b2, TRANSPOSED);
        int64_t a3[2] = {16, 24}, b3[5] = {2, 1, 3, 24, 8};
        check_product("[M,K] x [2,1,3,K,N]", dt, 2, a3, 0, 5, b3, 0);
        int64_t a4[8] = {2, 1, 2, 1, 2, 2, 9, 7}, b4[8] = {1, 2, 1, 2, 2, 1, 7, 5};
        check_product("6 batch dims", dt, 8, a4, 0, 8, b4, OFFSET);
    }
}

/* i32 products whose sums wrap around 2^32 must wrap the same way. */
static void test_i32_wrap(void)
{
    static const int64_t shapes[][3] = {{65, 33, 17}, {128, 128, 128}, {1, 40, 300}, {40, 1, 300}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        int64_t sa[2] = {shapes[i][0], shapes[i][2]}, sb[2] = {shapes[i][2], shapes[i][1]};
        double err = compare("i32 wrapping", WGT_I32, 2, sa, 0, 2, sb, TRANSPOSED, true);
        CHECK(err == 0.0, "i32 wrapping %lldx%lldx%lld differs", (long long)sa[0], (long long)sb[1],
              (long long)sa[1]);
    }
}

/* 70000 batches of 2x2 products: more workgroups than one grid dimension holds. */
static void test_large_grid(void)
{
    int64_t sa[3] = {70000, 2, 3}, sb[3] = {70000, 3, 2};
    check_product("70000 batches", WGT_F32, 3, sa, 0, 3, sb, 0);
    int64_t va[2] = {70000 * 4, 8}, vb[1] = {8};
    check_product("280000-row matrix-vector", WGT_F32, 2, va, 0, 1, vb, 0);
}

/* Configs that copy operands read along k transposed first do so only when the
 * other side of the product is >= 1024: products that large, in every layout. */
static void test_transposed_copies(void)
{
    static const char *const names[] = {"tile128x128k8t"}; /* tile128x128k8w8t differs in its warp layout only */
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        use_knobs((const char *[]){"WGT_MATMUL_CONFIG", names[i], NULL});
        check_mnk(WGT_F32, 1028, 1032, 20, 0, TRANSPOSED);   /* a and b copied, partial tiles */
        check_mnk(WGT_F32, 1024, 1024, 16, 0, 0);            /* a copied */
        check_mnk(WGT_F16, 1024, 1024, 12, TRANSPOSED, TRANSPOSED); /* b copied */
        check_mnk(WGT_F32, 1024, 1026, 8, 0, 0);             /* N not a multiple of 4: a copied, b not vec4 */
        check_mnk(WGT_I32, 1024, 1024, 6, 0, TRANSPOSED);    /* K not a multiple of 4: nothing copied */
        /* a batch along which b is broadcast is folded into M (one 2-D product):
         * the copies are of the 2-D operands, b copied once */
        int64_t a1[3] = {2, 512, 12}, b1[2] = {12, 1030}, a2[3] = {2, 520, 16}, b2[2] = {16, 1028};
        check_product("folded [2,512,K] x [K,1030], a copied", WGT_F32, 3, a1, 0, 2, b1, 0);
        check_product("folded [2,520,K] x [K,1028] transposed, b copied", WGT_F32, 3, a2, OFFSET, 2, b2, TRANSPOSED);
    }
    use_knobs(NULL);
}

/* The default heuristic's "narrow" rule: dy W with M >= 1024, N < 1024, dy read
 * along k and W along n runs in 64 x 128 tiles of 128 invocations with W as it
 * is (one dispatch) once that gives 192 tiles; without the rule, where 128 x
 * 128 tiles apply, W is copied k-contiguous first (two). */
/* Dispatches gpu records for one f32 wgt_matmul of row-major [M, K] and [K, N]. */
static uint64_t product_dispatches(int64_t M, int64_t N, int64_t K)
{
    float *a = random_data(WGT_F32, M * K, false), *b = random_data(WGT_F32, K * N, false);
    wgt_tensor *ta = wgt_tensor_from_host(gpu, WGT_F32, 2, (int64_t[]){M, K}, a);
    wgt_tensor *tb = wgt_tensor_from_host(gpu, WGT_F32, 2, (int64_t[]){K, N}, b);
    wgt_execution_stats before = {0}, after = {0};
    wgt_execution_stats_get(gpu, &before);
    wgt_tensor *c = ta && tb ? wgt_matmul(ta, tb) : NULL;
    wgt_execution_stats_get(gpu, &after);
    CHECK(c != NULL, "%lldx%lldx%lld product: %s", (long long)M, (long long)N, (long long)K, wgt_context_error_message(gpu));
    wgt_tensor_release(c);
    wgt_tensor_release(ta);
    wgt_tensor_release(tb);
    free(a);
    free(b);
    return after.dispatches - before.dispatches;
}

static void test_narrow_tiles(void)
{
    use_knobs(NULL);
    check_mnk(WGT_F32, 2048, 768, 12, 0, 0);     /* 32 x 6 = 192 tiles: the narrow tiles */
    check_mnk(WGT_F32, 2112, 772, 20, 0, 0);     /* partial tiles along m and n */
    check_mnk(WGT_F32, 1024, 512, 8, 0, 0);      /* 64 tiles: the ladder's tile on W copied */
    /* 4096 x 768: 192 tiles of 128 x 128, where "layout" alone copies W first */
    uint64_t narrow = product_dispatches(4096, 768, 8);
    CHECK(narrow == 1, "dy W 4096x768x8 in one dispatch (W read as it is): %llu", (unsigned long long)narrow);
    use_knobs((const char *[]){"WGT_MATMUL_SHAPE_RULES", "layout", NULL});
    check_mnk(WGT_F32, 4096, 768, 8, 0, 0);      /* without the rule: W copied k-contiguous */
    narrow = product_dispatches(4096, 768, 8);
    CHECK(narrow == 2, "without the narrow rule dy W 4096x768x8 copies W first: %llu dispatches",
          (unsigned long long)narrow);
    use_knobs(NULL);
}

/* Every config in the table, forced, on shapes that reach edges and full tiles. */
static void test_configs(void)
{
    static const char *const tiled[] = {"tile128x128k8", "tile128x128k16", "tile128x64k8", "tile64x128k8",
                                        "tile64x64k8",   "tile64x64k16",   "tile32x32k8",
                                        /* warp layouts (WARP_TX) and 8x16 / 16x8 outputs per invocation */
                                        "tile128x128k8w8", "tile128x128k8w4", "tile128x256k8w8", "tile256x128k8w8",
                                        "tile128x64k8w8",
                                        /* 4x4 block fetches of operands read along k (A_BLOCK, B_BLOCK) */
                                        "tile128x128k8b", "tile128x128k8w8b", "tile128x128k16b", "tile128x64k8b",
                                        "tile64x64k16b",
                                        /* 8x8 outputs per invocation in 128- and 64-invocation workgroups */
                                        "tile128x64k8s", "tile64x128k8s", "tile64x64k8s"};
    /* The transposed-copy configs (tile...t) run their base config's kernel on
     * products this small: test_transposed_copies covers them. */
    for (size_t i = 0; i < sizeof(tiled) / sizeof(tiled[0]); i++) {
        use_knobs((const char *[]){"WGT_MATMUL_CONFIG", tiled[i], NULL});
        check_mnk(WGT_F32, 128, 128, 64, 0, 0);
        check_mnk(WGT_F32, 129, 127, 131, 0, 0);
        check_mnk(WGT_F32, 65, 33, 17, TRANSPOSED, TRANSPOSED);
        check_mnk(WGT_F32, 64, 128, 48, TRANSPOSED, STEP2);
        check_mnk(WGT_F16, 100, 60, 40, 0, TRANSPOSED);
        /* HALF_MATH (f16 sums of a slice): exact for these inputs (test_f16_reduced) */
        wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_MEDIUM);
        check_mnk(WGT_F16, 100, 60, 40, 0, TRANSPOSED);
        check_mnk(WGT_F16, 129, 127, 131, TRANSPOSED, 0);
        wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_HIGHEST);
        check_mnk(WGT_I32, 70, 90, 24, TRANSPOSED, 0);
        check_mnk(WGT_F32, 100, 70, 36, 0, TRANSPOSED); /* both read along k, aligned, partial tiles */
    }
    static const char *const gemv[] = {"gemv_rows32",   "gemv_rows64",    "gemv_rows128",  "gemv_rows256",
                                       "gemv_cols8x32", "gemv_cols4x64",  "gemv_cols16x16", "gemv_cols32x8",
                                       "gemv_cols8x16"};
    for (size_t i = 0; i < sizeof(gemv) / sizeof(gemv[0]); i++) {
        use_knobs((const char *[]){"WGT_MATMUL_CONFIG", gemv[i], NULL});
        int64_t mat[2] = {130, 520}, vec[1] = {520}, mat_t[2] = {520, 130}, odd[2] = {37, 61}, odd_v[1] = {61};
        check_product("matrix-vector", WGT_F32, 2, mat, 0, 1, vec, 0);
        check_product("vector-matrix", WGT_F32, 1, vec, 0, 2, mat_t, 0);
        check_product("matrix-vector odd", WGT_F32, 2, odd, 0, 1, odd_v, 0);
        check_product("matrix-vector odd transposed", WGT_I32, 2, odd, TRANSPOSED, 1, odd_v, 0);
        check_product("vector-matrix f16", WGT_F16, 1, vec, 0, 2, mat_t, 0);
    }
    use_knobs(NULL);
}

/* wgt_set_matmul_precision MEDIUM: an f16 GEMM may round an f32 operand to
 * f16 and sum a slice's products in f16 (HALF_MATH of matmul_tiled.wgsl).
 * 1. The f16 inputs of random_data (multiples of 1/8 in [-1, 1]) keep every
 *    run of up to 16 products exact in f16, so the sweep below must match the
 *    CPU as closely as without the flag.
 * 2. f32 a = 1 + 2^-12 against f16 b = 1, K = 16: rounded to f16, a is 1, so
 *    the reduced product is exactly 16 on a device with shader-f16, while the
 *    exact product (flag off, or the CPU backend, which ignores the flag) is
 *    16 + 2^-8: proof that the reduced path runs, and only when asked.
 * 3. General f32 x f16 data against a double-precision reference: within the
 *    documented error (about 16 f16 roundings a run; bound 4e-3 relative to
 *    the row's sum of |products|), and within f32 rounding with the flag off. */
/* Whether the GPU adapter reads and multiplies f16 natively (shader-f16):
 * else f16 operands go through converting temporaries (more dispatches) and
 * HALF_MATH does not apply. */
static bool gpu_reads_f16(void)
{
    wgt_adapter_info info;
    memset(&info, 0, sizeof(info));
    return wgt_context_adapter_info(gpu, &info) == WGT_OK && info.shader_f16;
}

static double max_rel_error(const float *got, const float *x, const float *w, int64_t M, int64_t N, int64_t K)
{
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                sum += (double)x[m * K + k] * (double)w[k * N + n];
                mag += fabs((double)x[m * K + k] * (double)w[k * N + n]);
            }
            double e = fabs((double)got[m * N + n] - sum) / (mag > 0 ? mag : 1);
            if (e > worst) worst = e;
        }
    return worst;
}

static void test_f16_reduced(void)
{
    CHECK(wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_MEDIUM) == WGT_MATMUL_PRECISION_HIGHEST, "HIGHEST is the default");
    CHECK(wgt_set_matmul_precision(gpu, (wgt_matmul_precision)7) == WGT_MATMUL_PRECISION_MEDIUM &&
              wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_MEDIUM) == WGT_MATMUL_PRECISION_MEDIUM,
          "the setter returns the old value and ignores an unknown one");
    static const int64_t mnk[][3] = {{65, 33, 17}, {128, 128, 128}, {129, 127, 131}, {200, 96, 64}, {16, 16, 1000}};
    for (size_t i = 0; i < sizeof(mnk) / sizeof(mnk[0]); i++) {
        check_mnk(WGT_F16, mnk[i][0], mnk[i][1], mnk[i][2], 0, 0);
        check_mnk(WGT_F16, mnk[i][0], mnk[i][1], mnk[i][2], TRANSPOSED, TRANSPOSED | OFFSET);
    }
    int64_t a1[4] = {3, 1, 33, 20}, b1[4] = {1, 4, 20, 17};
    check_product("reduced [3,1,M,K] x [1,4,K,N]", WGT_F16, 4, a1, TRANSPOSED, 4, b1, STEP2);

    bool f16 = gpu_reads_f16();
    printf("f16_reduced: shader-f16 %s (reduced sums %s)\n", f16 ? "yes" : "no", f16 ? "checked" : "not available");
    const int64_t M = 64, N = 64, K = 16;
    float *ones = malloc((size_t)(M * K) * 4), *got = malloc((size_t)(M * N) * 4);
    for (int64_t i = 0; i < M * K; i++) ones[i] = 1.0f + 1.0f / 4096.0f;
    int64_t sa[2] = {M, K}, sb[2] = {K, N};
    wgt_context *ctxs[2] = {gpu, cpu};
    for (int c = 0; c < 2; c++)
        for (int on = 0; on < 2; on++) {
            wgt_set_matmul_precision(ctxs[c], on ? WGT_MATMUL_PRECISION_MEDIUM : WGT_MATMUL_PRECISION_HIGHEST);
            wgt_tensor *a = wgt_tensor_from_host(ctxs[c], WGT_F32, 2, sa, ones), *b = wgt_ones(ctxs[c], WGT_F16, 2, sb);
            wgt_tensor *y = a && b ? wgt_matmul_ex(a, b, WGT_F32) : NULL;
            bool read = y && wgt_tensor_read(y, got, (size_t)(M * N) * 4) == WGT_OK;
            const float want = c == 0 && on && f16 ? 16.0f : 16.0f + 1.0f / 256.0f;
            int64_t bad = 0;
            for (int64_t i = 0; read && i < M * N; i++) bad += got[i] != want;
            CHECK(read && bad == 0, "%s, reduced %s: %lld of %lld sums differ from %.8g (first %.8g)",
                  c ? "cpu" : "gpu", on ? "on" : "off", (long long)bad, (long long)(M * N), want, read ? got[0] : 0.0);
            wgt_tensor_release(y), wgt_tensor_release(a), wgt_tensor_release(b);
        }
    free(ones);
    free(got);

    /* general data: x f32 [M2, K2] (values ~N(0, 1) scale), w f16 [K2, N2] */
    const int64_t M2 = 96, N2 = 80, K2 = 300;
    float *x = malloc((size_t)(M2 * K2) * 4), *w = malloc((size_t)(K2 * N2) * 4), *y2 = malloc((size_t)(M2 * N2) * 4);
    uint16_t *wh = malloc((size_t)(K2 * N2) * 2);
    for (int64_t i = 0; i < M2 * K2; i++) x[i] = (float)((double)(test_xorshift(&rng_state) % 2000001) / 1e6 - 1.0) * 3.0f;
    for (int64_t i = 0; i < K2 * N2; i++) {
        wh[i] = test_f32_to_f16((float)((double)(test_xorshift(&rng_state) % 2000001) / 1e6 - 1.0) * 0.1f);
        w[i] = test_f16_to_f32(wh[i]);
    }
    int64_t sx[2] = {M2, K2}, sw[2] = {K2, N2};
    for (int on = 0; on < 2; on++) {
        wgt_set_matmul_precision(gpu, on ? WGT_MATMUL_PRECISION_MEDIUM : WGT_MATMUL_PRECISION_HIGHEST);
        wgt_tensor *gx = wgt_tensor_from_host(gpu, WGT_F32, 2, sx, x), *gw = wgt_tensor_from_host(gpu, WGT_F16, 2, sw, wh);
        wgt_tensor *gy = gx && gw ? wgt_matmul_ex(gx, gw, WGT_F32) : NULL;
        bool read = gy && wgt_tensor_read(gy, y2, (size_t)(M2 * N2) * 4) == WGT_OK;
        double err = read ? max_rel_error(y2, x, w, M2, N2, K2) : INFINITY;
        double bound = on ? 4e-3 : 1e-5;
        CHECK(err <= bound, "f32 x f16 %lldx%lldx%lld, reduced %s: error %.3g > %.3g", (long long)M2, (long long)N2,
              (long long)K2, on ? "on" : "off", err, bound);
        if (on && f16) /* the rounding of x must show */
            CHECK(err > 1e-6, "reduced on: error %.3g: the f16 path did not run", err);
        wgt_tensor_release(gy), wgt_tensor_release(gx), wgt_tensor_release(gw);
    }
    free(x), free(w), free(y2), free(wh);
    wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_HIGHEST);
    wgt_set_matmul_precision(cpu, WGT_MATMUL_PRECISION_HIGHEST);
}

/* f16 through f32 temporaries (the path for devices without shader-f16). It
 * converts with the elementwise kernel: skipped while that family is missing. */
static void test_f16_emulated(void)
{
    int64_t n = 4;
    float ones[4] = {1, 1, 1, 1};
    wgt_tensor *t = wgt_tensor_from_host(gpu, WGT_F32, 1, &n, ones);
    wgt_tensor *h = t ? wgt_cast(t, WGT_F16) : NULL;
    bool have_cast = h != NULL;
    wgt_tensor_release(h);
    wgt_tensor_release(t);
    wgt_context_clear_error(gpu);
    if (!have_cast) {
        printf("skipped: f16 emulation (no WebGPU cast yet)\n");
        return;
    }
    use_knobs((const char *[]){"WGT_MATMUL_F16_EMULATE", "1", NULL});
    check_mnk(WGT_F16, 65, 33, 17, 0, TRANSPOSED);
    check_mnk(WGT_F16, 128, 128, 128, TRANSPOSED, 0);
    int64_t a1[4] = {3, 1, 33, 20}, b1[4] = {1, 4, 20, 17}, vec[1] = {20};
    check_product("f16 emulated broadcast", WGT_F16, 4, a1, 0, 4, b1, STEP2);
    check_product("f16 emulated matrix-vector", WGT_F16, 4, a1, OFFSET, 1, vec, 0);
    use_knobs(NULL);
}

/* ------------------------------------------------------------------ split-K */

/* wgt_linear(x [.., K] (layout fx), weight [N, K], bias [N] (layout fb)) on
 * both backends: the product with weight read transposed and the bias in the
 * epilogue (in split-K, in the reduction). Returns the normalized error. */
static double compare_linear(const char *name, wgt_dtype dtype, int ndx, const int64_t *sx, int fx, int64_t N, int fb)
{
    int64_t K = sx[ndx - 1], sw[2] = {N, K};
    int64_t nx = stored_numel(ndx, sx, fx), nb = stored_numel(1, &N, fb);
    void *dx = random_data(dtype, nx, false), *dw = random_data(dtype, N * K, false), *db = random_data(dtype, nb, false);
    wgt_tensor *gx = make_operand(gpu, dtype, ndx, sx, fx, dx), *cx = make_operand(cpu, dtype, ndx, sx, fx, dx);
    wgt_tensor *gw = make_operand(gpu, dtype, 2, sw, 0, dw), *cw = make_operand(cpu, dtype, 2, sw, 0, dw);
    wgt_tensor *gb = make_operand(gpu, dtype, 1, &N, fb, db), *cb = make_operand(cpu, dtype, 1, &N, fb, db);
    free(dx);
    free(dw);
    free(db);
    uint64_t before = dispatches_now();
    wgt_tensor *g = gx && gw && gb ? wgt_linear(gx, gw, gb) : NULL, *c = cx && cw && cb ? wgt_linear(cx, cw, cb) : NULL;
    last_dispatches = dispatches_now() - before;
    double err = result_error(name, dtype, g, c);
    wgt_tensor *all[8] = {g, c, gx, cx, gw, cw, gb, cb};
    for (int i = 0; i < 8; i++) wgt_tensor_release(all[i]);
    return err;
}

/* check_mnk that also checks the product's dispatch count: 2 when it must
 * split K, 1 when it must not (f32 / i32 only: f16 may run through converting
 * temporaries on devices without shader-f16). */
static void check_split(wgt_dtype dtype, int64_t M, int64_t N, int64_t K, int fa, int fb, bool split)
{
    check_mnk(dtype, M, N, K, fa, fb);
    if (dtype != WGT_F16)
        CHECK(last_dispatches == (split ? 2u : 1u), "%lldx%lldx%lld %s: %llu dispatches, expected %s",
              (long long)M, (long long)N, (long long)K, wgt_dtype_name(dtype), (unsigned long long)last_dispatches,
              split ? "2 (split-K)" : "1 (no split)");
}

static void check_linear(const char *what, wgt_dtype dtype, int ndx, const int64_t *sx, int fx, int64_t N, bool split)
{
    char name[160];
    snprintf(name, sizeof(name), "linear %s %s", what, wgt_dtype_name(dtype));
    /* a strided bias (offset 1, stride 2) when x is sliced too */
    double err = compare_linear(name, dtype, ndx, sx, fx, N, fx & STEP2 ? STEP2 | OFFSET : 0);
    CHECK(err <= tolerance(dtype), "%s: normalized error %.3g > %.3g", name, err, tolerance(dtype));
    if (dtype != WGT_F16)
        CHECK(last_dispatches == (split ? 2u : 1u), "%s: %llu dispatches, expected %u", name,
              (unsigned long long)last_dispatches, split ? 2u : 1u);
}

/* Split-K (webgpu_matmul.c): the automatic choice (small M x N, K >= 2048),
 * forced part counts (WGT_SPLITK) on odd sizes, every dtype, batches with
 * broadcast, operands read in place transposed (the weight gradient dy^T x),
 * linear's bias added by the reduction, determinism, and bad settings. */
static void test_split_k(void)
{
    use_knobs(NULL);
    /* automatic: a few tiles and a long K split; a short K does not */
    check_split(WGT_F32, 40, 36, 2500, 0, 0, true);
    check_split(WGT_F32, 40, 36, 1000, 0, 0, false);
    check_split(WGT_F32, 24, 20, 2600, TRANSPOSED, 0, true);  /* dW = dy^T x: a read along m */
    check_split(WGT_I32, 17, 9, 2051, TRANSPOSED, TRANSPOSED, true);
    int64_t x1[2] = {20, 2304};
    check_linear("auto [20, 2304] -> 28", WGT_F32, 2, x1, 0, 28, true);
    /* WGT_SPLITK=0 turns it off */
    use_knobs((const char *[]){"WGT_SPLITK", "0", NULL});
    check_split(WGT_F32, 40, 36, 2500, 0, 0, false);
    check_linear("off [20, 2304] -> 28", WGT_F32, 2, x1, 0, 28, false);
    /* HALF_MATH (MEDIUM, f16 operands) with K >= 8192 splits where the tiles
     * number one to two targets (the LLM prefill's down projection), f32 sums
     * (HIGHEST) do not: WGT_SPLITK_TARGET=8, 128 x 256 outputs (8 tiles of
     * 64 x 64), K = 8192. Counted where f16 is read natively (shader-f16). */
    if (gpu_reads_f16()) {
        use_knobs((const char *[]){"WGT_SPLITK_TARGET", "8", NULL});
        for (int medium = 1; medium >= 0; medium--) {
            wgt_set_matmul_precision(gpu, medium ? WGT_MATMUL_PRECISION_MEDIUM : WGT_MATMUL_PRECISION_HIGHEST);
            check_mnk(WGT_F16, 128, 256, 8192, 0, TRANSPOSED);
            CHECK(last_dispatches == (medium ? 2u : 1u), "f16 128x256x8192 %s, 8 tiles, target 8: %llu dispatches, "
                  "expected %u", medium ? "MEDIUM" : "HIGHEST", (unsigned long long)last_dispatches, medium ? 2u : 1u);
        }
        wgt_set_matmul_precision(gpu, WGT_MATMUL_PRECISION_HIGHEST);
    }

    /* forced parts on odd sizes, partial tiles, K not a multiple of BK or of the parts */
    use_knobs((const char *[]){"WGT_SPLITK", "3", NULL});
    for (int t = 0; t < 3; t++) {
        check_split(dtypes[t], 37, 29, 301, 0, 0, true);
        check_split(dtypes[t], 33, 70, 130, TRANSPOSED, TRANSPOSED, true);
        check_split(dtypes[t], 64, 64, 96, STEP2, OFFSET, true);
    }
    double werr = compare("i32 wrapping split", WGT_I32, 2, (int64_t[]){21, 300}, 0, 2, (int64_t[]){300, 19},
                          TRANSPOSED, true);
    CHECK(werr == 0.0, "i32 wrapping sums differ under split-K");
    int64_t x2[3] = {2, 5, 211}, x3[2] = {13, 200};
    check_linear("[2, 5, 211] -> 7", WGT_F32, 3, x2, 0, 7, true);
    check_linear("[13, 200] sliced -> 30", WGT_F32, 2, x3, STEP2 | OFFSET, 30, true);
    check_linear("[13, 200] -> 30", WGT_F16, 2, x3, 0, 30, true);
    /* batches: the parts cover every batch's outputs */
    int64_t a1[4] = {3, 1, 33, 120}, b1[4] = {1, 4, 120, 17}, a2[3] = {5, 24, 160}, b2[2] = {160, 12};
    check_product("split [3,1,M,K] x [1,4,K,N]", WGT_F32, 4, a1, TRANSPOSED, 4, b1, 0);
    CHECK(last_dispatches == 2, "batched split-K: %llu dispatches", (unsigned long long)last_dispatches);
    check_product("split [5,M,K] x [K,N]", WGT_I32, 3, a2, 0, 2, b2, TRANSPOSED);
    /* a broadcast batch folded into M (autograd's dx = dy W), automatic split */
    use_knobs(NULL);
    int64_t a3[3] = {4, 6, 2200}, b3[2] = {2200, 10}, a4[3] = {3, 7, 2100};
    check_product("folded [4,6,K] x [K,10]", WGT_F32, 3, a3, STEP2, 2, b3, 0);
    CHECK(last_dispatches == 2, "folded split-K: %llu dispatches", (unsigned long long)last_dispatches);
    check_linear("[3, 7, 2100] -> 9", WGT_F32, 3, a4, OFFSET, 9, true);
    use_knobs((const char *[]){"WGT_SPLITK", "3", NULL});
    /* f16 operands with an f32 result (wgt_matmul_ex, as autograd's f16 matmul rule runs) */
    {
        int64_t sa[2] = {21, 260}, sb[2] = {260, 18};
        void *da = random_data(WGT_F16, 21 * 260, false), *db = random_data(WGT_F16, 260 * 18, false);
        wgt_tensor *ga = make_operand(gpu, WGT_F16, 2, sa, TRANSPOSED, da), *gb = make_operand(gpu, WGT_F16, 2, sb, 0, db);
        wgt_tensor *ca = make_operand(cpu, WGT_F16, 2, sa, TRANSPOSED, da), *cb = make_operand(cpu, WGT_F16, 2, sb, 0, db);
        free(da);
        free(db);
        wgt_tensor *g = ga && gb ? wgt_matmul_ex(ga, gb, WGT_F32) : NULL, *c = ca && cb ? wgt_matmul_ex(ca, cb, WGT_F32) : NULL;
        double err = result_error("split f16 -> f32", WGT_F32, g, c);
        CHECK(err <= tolerance(WGT_F32), "split f16 -> f32: normalized error %.3g", err);
        wgt_tensor *all[6] = {g, c, ga, gb, ca, cb};
        for (int i = 0; i < 6; i++) wgt_tensor_release(all[i]);
    }
    /* more parts than BK slices: capped (K = 20: 3 slices of 8) */
    use_knobs((const char *[]){"WGT_SPLITK", "1000", NULL});
    check_split(WGT_F32, 30, 30, 20, 0, 0, true);
    check_split(WGT_F32, 30, 30, 5, 0, 0, false); /* one slice: nothing to split */
    /* with a forced tile config, large tiles */
    use_knobs((const char *[]){"WGT_SPLITK", "5", "WGT_MATMUL_CONFIG", "tile128x128k8", NULL});
    check_split(WGT_F32, 130, 129, 333, TRANSPOSED, 0, true);
    use_knobs((const char *[]){"WGT_SPLITK", "5", "WGT_MATMUL_CONFIG", "tile64x64k16b", NULL});
    check_split(WGT_F32, 70, 68, 400, 0, TRANSPOSED, true);

    /* deterministic: the parts are added in a fixed order, so two runs agree bit for bit */
    use_knobs((const char *[]){"WGT_SPLITK", "7", NULL});
    int64_t sa[2] = {45, 900}, sb[2] = {900, 38};
    void *da = random_data(WGT_F32, 45 * 900, false), *db = random_data(WGT_F32, 900 * 38, false);
    wgt_tensor *ga = wgt_tensor_from_host(gpu, WGT_F32, 2, sa, da), *gb = wgt_tensor_from_host(gpu, WGT_F32, 2, sb, db);
    free(da);
    free(db);
    wgt_tensor *r1 = ga && gb ? wgt_matmul(ga, gb) : NULL, *r2 = ga && gb ? wgt_matmul(ga, gb) : NULL;
    float *h1 = calloc(45 * 38, 4), *h2 = calloc(45 * 38, 4);
    bool read = r1 && r2 && wgt_tensor_read(r1, h1, 45 * 38 * 4) == WGT_OK && wgt_tensor_read(r2, h2, 45 * 38 * 4) == WGT_OK;
    CHECK(read && memcmp(h1, h2, 45 * 38 * 4) == 0, "split-K results differ between two runs: %s",
          wgt_context_error_message(gpu));
    free(h1);
    free(h2);
    wgt_tensor_release(r1);
    wgt_tensor_release(r2);
    wgt_tensor_release(ga);
    wgt_tensor_release(gb);

    /* a malformed setting is an error with a message at the product (the
     * context is still created), and the context stays usable */
    use_knobs((const char *[]){"WGT_SPLITK", "four", NULL});
    da = random_data(WGT_F32, 45 * 900, false), db = random_data(WGT_F32, 900 * 38, false);
    ga = wgt_tensor_from_host(gpu, WGT_F32, 2, sa, da), gb = wgt_tensor_from_host(gpu, WGT_F32, 2, sb, db);
    wgt_tensor *bad = ga && gb ? wgt_matmul(ga, gb) : NULL;
    CHECK(bad == NULL && wgt_context_status(gpu) == WGT_ERR_INVALID_ARGUMENT &&
              strstr(wgt_context_error_message(gpu), "WGT_SPLITK=\"four\"") != NULL,
          "WGT_SPLITK=four accepted: %s", wgt_context_error_message(gpu));
    wgt_tensor_release(bad);
    wgt_context_clear_error(gpu);
    wgt_tensor *ok = wgt_binary_scalar(WGT_OP_MUL, ga, 2.0);
    CHECK(ok != NULL, "an op after a bad WGT_SPLITK: %s", wgt_context_error_message(gpu));
    wgt_tensor_release(ok);
    wgt_tensor_release(ga);
    wgt_tensor_release(gb);
    /* without it, the same product runs */
    use_knobs(NULL);
    ga = wgt_tensor_from_host(gpu, WGT_F32, 2, sa, da), gb = wgt_tensor_from_host(gpu, WGT_F32, 2, sb, db);
    free(da);
    free(db);
    ok = ga && gb ? wgt_matmul(ga, gb) : NULL;
    CHECK(ok != NULL, "matmul without a bad WGT_SPLITK: %s", wgt_context_error_message(gpu));
    wgt_tensor_release(ok);
    wgt_tensor_release(ga);
    wgt_tensor_release(gb);
}

/* Wrong shapes and dtypes give errors and leave the context usable. */
static void test_errors(void)
{
    int64_t s1[2] = {3, 4}, s2[2] = {5, 6};
    float zeros[30] = {0};
    wgt_tensor *a = wgt_tensor_from_host(gpu, WGT_F32, 2, s1, zeros), *b = wgt_tensor_from_host(gpu, WGT_F32, 2, s2, zeros);
    wgt_tensor *r = a && b ? wgt_matmul(a, b) : NULL;
    CHECK(r == NULL && wgt_context_status(gpu) == WGT_ERR_SHAPE_MISMATCH, "inner dims 4 vs 5 accepted: %s",
          wgt_context_error_message(gpu));
    wgt_context_clear_error(gpu);
    wgt_tensor_release(a);
    wgt_tensor_release(b);
}

/* Runs one group of cases and prints its time (lavapipe is slow: keep an eye on it). */
static void run_group(const char *name, void (*group)(void))
{
    struct timespec t0, t1;
    int failed = test_failed;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    group();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%-14s %6.2f s%s\n", name, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
           test_failed > failed ? "  (failures)" : "");
}

int main(void)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.debug_guards = true;
    o.wait_timeout_ms = 120000; /* lavapipe runs the large grids slowly */
    /* the knobs are read when a context is created: none set for gpu */
    unsetenv("WGT_MATMUL_CONFIG");
    unsetenv("WGT_MATMUL_F16_EMULATE");
    unsetenv("WGT_MATMUL_HALF");
    unsetenv("WGT_SPLITK");
    unsetenv("WGT_SPLITK_TARGET");
    gpu_options = o;
    gpu = wgt_context_create(&o);
    if (!gpu || wgt_context_status(gpu) != WGT_OK) {
        fprintf(stderr, "FAIL: no WebGPU context: %s\n", gpu ? wgt_context_error_message(gpu) : "out of memory");
        wgt_context_destroy(gpu);
        return 1;
    }
    cpu = test_cpu_context();
    if (!cpu) return test_summary();
    run_group("split_k", test_split_k);
    run_group("shapes", test_shapes);
    run_group("layouts", test_layouts);
    run_group("vectors", test_vectors);
    run_group("batches", test_batches);
    run_group("i32_wrap", test_i32_wrap);
    run_group("large_grid", test_large_grid);
    run_group("configs", test_configs);
    run_group("transposed_copies", test_transposed_copies);
    run_group("narrow_tiles", test_narrow_tiles);
    run_group("f16_emulated", test_f16_emulated);
    run_group("f16_reduced", test_f16_reduced);
    run_group("errors", test_errors);
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
