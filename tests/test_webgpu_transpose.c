/*
 * The WebGPU tiled transpose path (src/webgpu/webgpu_transpose.c) against the
 * CPU backend, through the public API.
 *
 * Each case builds the same data on a WebGPU context, a WebGPU context with
 * debug guard bytes and a CPU context, takes the same transposed / permuted /
 * sliced view, and compares wgt_copy and wgt_contiguous of it bit for bit (f32
 * data includes NaN with a payload, infinities and -0). Guarded outputs must
 * keep their guards. Every case also says whether the tiled path must take it,
 * checked with webgpu_transpose_count(), so the test fails if the hook in
 * webgpu_elementwise_run stops applying (or starts applying where it must not).
 * Cases whose sides, strides and offsets are whole quads must take the
 * 16-byte kernel (transpose_tiled_vec4.wgsl; webgpu_transpose_vec4_count()),
 * the others the one-word kernel, and WGT_TRANSPOSE_VEC4=0 sends the aligned
 * ones back to it. Edge tiles (sides not multiples of 32), batch dims, an
 * output with an offset, the 2-D grid fold and the other tile configs are
 * covered too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "webgpu/webgpu_transpose.h"

static wgt_context *G, *GG, *C; /* WebGPU, WebGPU with guards, CPU */

typedef wgt_tensor *(*view_fn)(wgt_tensor *base);

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* n elements of dtype: f32 values in [-100, 100) with specials sprinkled in,
 * i32 any bits. */
static void fill(wgt_dtype dtype, uint32_t *bits, int64_t n)
{
    static const uint32_t specials[] = {0x7fc12345u /* NaN with payload */, 0x7f800000u, 0xff800000u, 0x80000000u,
                                        0x00000001u /* denormal */};
    for (int64_t i = 0; i < n; i++) {
        if (dtype == WGT_I32) {
            bits[i] = rng();
        } else if (i % 37 == 5) {
            bits[i] = specials[(i / 37) % 5];
        } else {
            float f = -100.0f + 200.0f * (float)(rng() & 0xffffff) / 16777216.0f;
            memcpy(&bits[i], &f, 4);
        }
    }
}

/* Views used by the cases. */
static wgt_tensor *t01(wgt_tensor *b) { return wgt_transpose(b, 0, 1); }
static wgt_tensor *p021(wgt_tensor *b) { return wgt_permute(b, (const int[]){0, 2, 1}); }
/* R outermost, batch dim between R and C */
static wgt_tensor *p210(wgt_tensor *b) { return wgt_permute(b, (const int[]){2, 1, 0}); }
static wgt_tensor *p1032(wgt_tensor *b) { return wgt_permute(b, (const int[]){1, 0, 3, 2}); } /* two batch dims */
static wgt_tensor *p0213(wgt_tensor *b) { return wgt_permute(b, (const int[]){0, 2, 1, 3}); } /* inner dim kept */
static wgt_tensor *rows_step_t(wgt_tensor *b) /* rows 1, 3, .. of [70, 40], transposed: x stride 1 along R */
{
    wgt_tensor *s = wgt_slice(b, 0, 1, 70, 2);
    wgt_tensor *t = s ? wgt_transpose(s, 0, 1) : NULL;
    wgt_tensor_release(s);
    return t;
}
static wgt_tensor *cols_step_t(wgt_tensor *b) /* columns with step 2, transposed: no stride-1 dim */
{
    wgt_tensor *s = wgt_slice(b, 1, 0, 64, 2);
    wgt_tensor *t = s ? wgt_transpose(s, 0, 1) : NULL;
    wgt_tensor_release(s);
    return t;
}
/* Columns lo .. lo + width - 1 of [40, 68], transposed: x's offset lo, R = width, column stride 68. */
static wgt_tensor *cols_from_t(wgt_tensor *b, int64_t lo, int64_t width)
{
    wgt_tensor *s = wgt_slice(b, 1, lo, lo + width, 1);
    wgt_tensor *t = s ? wgt_transpose(s, 0, 1) : NULL;
    wgt_tensor_release(s);
    return t;
}
static wgt_tensor *cols_from4_t(wgt_tensor *b) { return cols_from_t(b, 4, 60); } /* whole quads */
static wgt_tensor *cols_from2_t(wgt_tensor *b) { return cols_from_t(b, 2, 60); } /* offset 2: not a quad */
static wgt_tensor *cols_30_t(wgt_tensor *b) { return cols_from_t(b, 0, 30); }     /* R = 30 */
static wgt_tensor *cols40_t(wgt_tensor *b) /* columns 0 .. 39 of [36, 42], transposed: column stride 42 */
{
    wgt_tensor *s = wgt_slice(b, 1, 0, 40, 1);
    wgt_tensor *t = s ? wgt_transpose(s, 0, 1) : NULL;
    wgt_tensor_release(s);
    return t;
}
static wgt_tensor *unsq_t(wgt_tensor *b) /* [40, 1, 50] view of a transpose: size-1 dim dropped */
{
    wgt_tensor *t = wgt_transpose(b, 0, 1);
    wgt_tensor *u = t ? wgt_unsqueeze(t, 1) : NULL;
    wgt_tensor_release(t);
    return u;
}

/* The copy and the contiguous copy of view(base) on ctx, read to host; false on any error. */
static bool run_on(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const uint32_t *data,
                   view_fn view, uint32_t *copy, uint32_t *contig, size_t bytes, bool guarded, const char *name)
{
    wgt_tensor *base = wgt_tensor_from_host(ctx, dtype, ndim, shape, data);
    wgt_tensor *v = base ? view(base) : NULL;
    wgt_tensor *a = v ? wgt_copy(v) : NULL;
    wgt_tensor *b = v ? wgt_contiguous(v) : NULL;
    bool ok = a && b && wgt_tensor_read(a, copy, bytes) == WGT_OK && wgt_tensor_read(b, contig, bytes) == WGT_OK;
    CHECK(ok, "%s: %s", name, wgt_context_error_message(ctx));
    if (ok && guarded) {
        CHECK(wgt_tensor_check_guards(a) == WGT_OK, "%s: copy guards: %s", name, wgt_context_error_message(ctx));
        CHECK(wgt_tensor_check_guards(b) == WGT_OK, "%s: contiguous guards: %s", name, wgt_context_error_message(ctx));
    }
    wgt_tensor_release(b);
    wgt_tensor_release(a);
    wgt_tensor_release(v);
    wgt_tensor_release(base);
    wgt_context_clear_error(ctx);
    return ok;
}

static bool same(const uint32_t *a, const uint32_t *b, int64_t n, const char *name, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            CHECK(false, "%s: %s element %lld: 0x%08x, cpu 0x%08x", name, what, (long long)i, a[i], b[i]);
            return false;
        }
    test_passed++;
    return true;
}

/* Which kernel a case must take: none (the generic elementwise kernel), the
 * tiled transpose one word a lane, or its 16-byte variant. */
typedef enum { NONE, TILED, QUADS } tp_path;

/* One case: base [shape] of dtype, view(base) copied on every context, which
 * must take `path` (both copies, both WebGPU contexts). */
static void run_case(const char *label, wgt_dtype dtype, int ndim, const int64_t *shape, view_fn view, tp_path path)
{
    char name[128];
    snprintf(name, sizeof name, "%s %s", label, wgt_dtype_name(dtype));
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    size_t bytes = (size_t)n * 4;
    uint32_t *data = malloc(bytes), *buf = malloc(6 * bytes);
    if (!data || !buf) {
        CHECK(false, "%s: out of host memory", name);
        free(data);
        free(buf);
        return;
    }
    fill(dtype, data, n);
    uint32_t *ref_copy = buf, *ref_contig = buf + n, *g_copy = buf + 2 * n, *g_contig = buf + 3 * n,
             *gg_copy = buf + 4 * n, *gg_contig = buf + 5 * n;
    /* Views may use fewer elements than the base (slices): compare what the view holds. */
    memset(buf, 0, 6 * bytes);
    uint64_t before = webgpu_transpose_count(), before_quads = webgpu_transpose_vec4_count();
    bool ok = run_on(C, dtype, ndim, shape, data, view, ref_copy, ref_contig, bytes, false, name) &&
              run_on(G, dtype, ndim, shape, data, view, g_copy, g_contig, bytes, false, name) &&
              run_on(GG, dtype, ndim, shape, data, view, gg_copy, gg_contig, bytes, true, name);
    uint64_t ran = webgpu_transpose_count() - before, quads = webgpu_transpose_vec4_count() - before_quads;
    bool tiled = path != NONE;
    if (ok) {
        same(ref_copy, ref_contig, n, name, "cpu contiguous vs copy");
        same(g_copy, ref_copy, n, name, "copy");
        same(g_contig, ref_copy, n, name, "contiguous");
        same(gg_copy, ref_copy, n, name, "guarded copy");
        same(gg_contig, ref_copy, n, name, "guarded contiguous");
        CHECK(ran == (tiled ? 4u : 0u), "%s: tiled path ran %llu times, expected %d", name, (unsigned long long)ran,
              tiled ? 4 : 0);
        CHECK(quads == (path == QUADS ? 4u : 0u), "%s: the 16-byte kernel ran %llu times, expected %d", name,
              (unsigned long long)quads, path == QUADS ? 4 : 0);
    }
    free(data);
    free(buf);
}

/* Sides, strides and offsets in whole quads: the 16-byte kernel's cases
 * (path QUADS), or the one-word kernel's when that is turned off. */
static void aligned_cases(wgt_dtype dtype, tp_path path)
{
    run_case("64x96 t", dtype, 2, (const int64_t[]){64, 96}, t01, path);
    run_case("36x100 t", dtype, 2, (const int64_t[]){36, 100}, t01, path); /* edge tiles of whole quads */
    run_case("[8,36,44] p021", dtype, 3, (const int64_t[]){8, 36, 44}, p021, path);
    run_case("[4,8,20,16] p1032", dtype, 4, (const int64_t[]){4, 8, 20, 16}, p1032, path);
    run_case("[40,68] cols 4.. t", dtype, 2, (const int64_t[]){40, 68}, cols_from4_t, path);
}

static void run_cases(wgt_dtype dtype)
{
    run_case("1x1 t", dtype, 2, (const int64_t[]){1, 1}, t01, NONE);
    run_case("7x13 t", dtype, 2, (const int64_t[]){7, 13}, t01, NONE); /* sides below half a tile */
    run_case("32x32 t", dtype, 2, (const int64_t[]){32, 32}, t01, QUADS);
    run_case("33x65 t", dtype, 2, (const int64_t[]){33, 65}, t01, TILED);
    run_case("1000x3 t", dtype, 2, (const int64_t[]){1000, 3}, t01, NONE);
    run_case("3x1000 t", dtype, 2, (const int64_t[]){3, 1000}, t01, NONE);
    run_case("513x257 t", dtype, 2, (const int64_t[]){513, 257}, t01, TILED);
    run_case("[3,40,50] p021", dtype, 3, (const int64_t[]){3, 40, 50}, p021, TILED);
    run_case("[20,24,36] p210", dtype, 3, (const int64_t[]){20, 24, 36}, p210, QUADS);
    run_case("[2,3,17,19] p1032", dtype, 4, (const int64_t[]){2, 3, 17, 19}, p1032, TILED);
    run_case("[4,30,20,5] p0213", dtype, 4, (const int64_t[]){4, 30, 20, 5}, p0213, NONE); /* no stride-1 dim */
    run_case("[70,40] rows step 2 t", dtype, 2, (const int64_t[]){70, 40}, rows_step_t, TILED);
    run_case("[40,64] cols step 2 t", dtype, 2, (const int64_t[]){40, 64}, cols_step_t, NONE);
    run_case("[50,40] t unsqueeze", dtype, 2, (const int64_t[]){50, 40}, unsq_t, TILED);
    aligned_cases(dtype, QUADS);
    /* one thing short of whole quads each */
    run_case("[40,68] cols 2.. t", dtype, 2, (const int64_t[]){40, 68}, cols_from2_t, TILED);
    run_case("[36,42] cols ..40 t", dtype, 2, (const int64_t[]){36, 42}, cols40_t, TILED);
    run_case("[40,68] cols ..30 t", dtype, 2, (const int64_t[]){40, 68}, cols_30_t, TILED);
    run_case("30x36 t", dtype, 2, (const int64_t[]){30, 36}, t01, TILED); /* C = 30 */
}

/* wgt_assign of a transposed view into rows 5..37 of a [40, 50] tensor: a
 * contiguous output at an offset; the rows around it must stay untouched. */
static void assign_case(wgt_context *ctx, uint32_t *result, bool guarded)
{
    int64_t src_shape[2] = {50, 32}, dst_shape[2] = {40, 50};
    uint32_t src[50 * 32];
    rng_state = 12345;
    fill(WGT_F32, src, 50 * 32);
    wgt_tensor *s = wgt_tensor_from_host(ctx, WGT_F32, 2, src_shape, src);
    wgt_tensor *st = s ? wgt_transpose(s, 0, 1) : NULL;
    wgt_tensor *d = wgt_full(ctx, WGT_F32, 2, dst_shape, 7.0);
    wgt_tensor *rows = d ? wgt_slice(d, 0, 5, 37, 1) : NULL;
    bool ok = st && rows && wgt_assign(rows, st) == WGT_OK && wgt_tensor_read(d, result, 40 * 50 * 4) == WGT_OK;
    CHECK(ok, "assign: %s", wgt_context_error_message(ctx));
    if (ok && guarded) CHECK(wgt_tensor_check_guards(d) == WGT_OK, "assign guards: %s", wgt_context_error_message(ctx));
    wgt_tensor_release(rows);
    wgt_tensor_release(d);
    wgt_tensor_release(st);
    wgt_tensor_release(s);
    wgt_context_clear_error(ctx);
}

/* G and GG again, created with env (name, value pairs: test_context_env), as
 * the knobs WGT_WEBGPU_GRID_LIMIT and WGT_WEBGPU_TRANSPOSE are read when a
 * context is created. False when one could not be created. */
static bool recreate(const char *const *env)
{
    CHECK(wgt_context_live_tensors(G) == 0, "WebGPU context leaks %lld tensors",
          (long long)wgt_context_live_tensors(G));
    wgt_context_destroy(G);
    wgt_context_destroy(GG);
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    G = test_context_env(&o, env);
    o.debug_guards = true;
    GG = test_context_env(&o, env);
    return G && GG;
}

int main(void)
{
    G = test_webgpu_context();
    C = test_cpu_context();
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.debug_guards = true;
    GG = wgt_context_create(&o);
    if (!GG || wgt_context_status(GG) != WGT_OK) {
        CHECK(false, "guarded WebGPU context: %s", GG ? wgt_context_error_message(GG) : "out of memory");
        wgt_context_destroy(GG);
        GG = NULL;
    }
    if (!G || !C || !GG) {
        wgt_context_destroy(G);
        wgt_context_destroy(C);
        wgt_context_destroy(GG);
        return test_summary();
    }

    run_cases(WGT_F32);
    run_cases(WGT_I32);

    {
        uint32_t ref[2000], gpu[2000], guarded[2000];
        uint64_t before = webgpu_transpose_count();
        assign_case(C, ref, false);
        assign_case(G, gpu, false);
        assign_case(GG, guarded, true);
        same(gpu, ref, 2000, "assign", "dst");
        same(guarded, ref, 2000, "assign", "guarded dst");
        CHECK(webgpu_transpose_count() - before == 2, "assign: tiled path ran %llu times, expected 2",
              (unsigned long long)(webgpu_transpose_count() - before));
    }

    /* The 2-D grid fold without a huge tensor: 17 x 9 tiles in rows of 4. */
    if (recreate((const char *[]){"WGT_WEBGPU_GRID_LIMIT", "4", NULL})) {
        run_case("513x257 t grid fold", WGT_F32, 2, (const int64_t[]){513, 257}, t01, TILED);
        run_case("[3,40,50] p021 grid fold", WGT_I32, 3, (const int64_t[]){3, 40, 50}, p021, TILED);
    }

    /* WGT_TRANSPOSE_VEC4=0: whole quads one word a lane. */
    if (recreate((const char *[]){"WGT_TRANSPOSE_VEC4", "0", NULL})) {
        aligned_cases(WGT_F32, TILED);
        aligned_cases(WGT_I32, TILED);
    }

    /* Other tile configs (each falls back to 32x8 where the device lacks the limits). */
    static const char *const configs[] = {"64x8", "64x4", "32x4", "32x32"};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        if (!recreate((const char *[]){"WGT_WEBGPU_TRANSPOSE", configs[i], NULL})) break;
        char label[64];
        snprintf(label, sizeof label, "513x257 t tile %s", configs[i]);
        run_case(label, WGT_F32, 2, (const int64_t[]){513, 257}, t01, TILED);
        snprintf(label, sizeof label, "[2,3,17,19] p1032 tile %s", configs[i]);
        run_case(label, WGT_I32, 4, (const int64_t[]){2, 3, 17, 19}, p1032, TILED);
        /* whole quads: the 16-byte kernel takes 32-wide tiles, a 64-wide
         * tile (where the device allows it) stays one word a lane */
        wgt_adapter_info info;
        bool tile64 = configs[i][0] == '6' && wgt_context_adapter_info(G, &info) == WGT_OK &&
                      info.limits.max_compute_workgroup_storage_size >= 64 * 65 * 4;
        snprintf(label, sizeof label, "[20,24,36] p210 tile %s", configs[i]);
        run_case(label, WGT_F32, 3, (const int64_t[]){20, 24, 36}, p210, tile64 ? TILED : QUADS);
    }

    CHECK(!G || wgt_context_live_tensors(G) == 0, "WebGPU context leaks %lld tensors",
          (long long)wgt_context_live_tensors(G));
    wgt_context_destroy(GG);
    wgt_context_destroy(G);
    wgt_context_destroy(C);
    return test_summary();
}
