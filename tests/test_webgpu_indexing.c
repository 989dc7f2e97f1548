/*
 * WebGPU GATHER, SCATTER_ADD and TOPK against the CPU backend, through the
 * public API (wgt_gather, wgt_index_select, wgt_embedding, wgt_scatter_add,
 * wgt_topk). Both contexts run with debug guards, so every output is also
 * checked for writes outside its elements.
 *
 * Tolerances: gather, index_select, embedding and topk (values and indices)
 * must match bit for bit; scatter_add must match exactly for i32. For f32
 * scatter_add the GPU adds colliding elements in atomic order (or, by sorted
 * rows, in segments of 64), not the CPU's serial order, so each output
 * element may differ by rounding:
 *     |gpu - cpu| <= 1e-6 * n * S
 * where n is the number of terms summed into that element (dst included) and
 * S the sum of their magnitudes. The sorted-rows path must also give the same
 * bits run to run.
 *
 * Sizes are small: CI runs this on lavapipe (Vulkan on the CPU).
 */
#define _POSIX_C_SOURCE 200809L /* setenv: WGT_SCATTER_SORTED */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static wgt_context *gpu, *cpu;
/* A WebGPU context created with WGT_SCATTER_SORTED=0 (the atomic scatter_add
 * kernel): the knob is read when a context is created. Code that runs on it
 * sets gpu to it for a while (upload, dispatches and the messages use gpu). */
static wgt_context *atomic_gpu;

/* ------------------------------------------------------------------ helpers */

static uint32_t rng_state = 12345u;
/* Uniform integer in [lo, hi). */
static int32_t rnd_range(int32_t lo, int32_t hi) { return lo + (int32_t)(test_xorshift(&rng_state) % (uint32_t)(hi - lo)); }

/* n random elements of dtype: f32/f16 multiples of 1/4 in [-8, 8) (ties are
 * common), i32 full range, u8 any byte, bool 0/1. */
static void *random_data(wgt_dtype dtype, int64_t n)
{
    void *data = malloc((size_t)(n > 0 ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        float f = (float)rnd_range(-32, 32) / 4.0f;
        switch (dtype) {
        case WGT_F32: ((float *)data)[i] = f; break;
        case WGT_F16: ((uint16_t *)data)[i] = test_f32_to_f16(f); break;
        case WGT_I32: ((int32_t *)data)[i] = (int32_t)test_xorshift(&rng_state); break;
        case WGT_U8: ((uint8_t *)data)[i] = (uint8_t)test_xorshift(&rng_state); break;
        default: ((uint8_t *)data)[i] = (uint8_t)(test_xorshift(&rng_state) & 1); break;
        }
    }
    return data;
}

/* The same tensor on both backends. */
typedef struct both {
    wgt_tensor *g, *c;
} both;

static both upload(wgt_dtype dtype, int ndim, const int64_t *shape, const void *data)
{
    both t = {wgt_tensor_from_host(gpu, dtype, ndim, shape, data), wgt_tensor_from_host(cpu, dtype, ndim, shape, data)};
    return t;
}

static both upload_random(wgt_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *data = random_data(dtype, n);
    both t = upload(dtype, ndim, shape, data);
    free(data);
    return t;
}

/* i32 index data, uniform in [lo, hi). */
static both upload_index(int ndim, const int64_t *shape, int32_t lo, int32_t hi)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int32_t *data = malloc((size_t)(n > 0 ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) data[i] = rnd_range(lo, hi);
    both t = upload(WGT_I32, ndim, shape, data);
    free(data);
    return t;
}

static void drop(both t)
{
    wgt_tensor_release(t.g);
    wgt_tensor_release(t.c);
}

static both transposed(both t, int a, int b)
{
    both r = {wgt_transpose(t.g, a, b), wgt_transpose(t.c, a, b)};
    return r;
}

static both sliced(both t, int axis, int64_t start, int64_t stop, int64_t step)
{
    both r = {wgt_slice(t.g, axis, start, stop, step), wgt_slice(t.c, axis, start, stop, step)};
    return r;
}

/* Whether both contexts are fine; prints and clears errors otherwise. */
static bool contexts_ok(const char *what)
{
    bool ok = true;
    wgt_context *ctxs[2] = {gpu, cpu};
    for (int i = 0; i < 2; i++) {
        if (wgt_context_status(ctxs[i]) != WGT_OK) {
            CHECK(false, "%s: %s error: %s", what, i ? "cpu" : "webgpu", wgt_context_error_message(ctxs[i]));
            wgt_context_clear_error(ctxs[i]);
            ok = false;
        }
    }
    return ok;
}

/* Reads both sides of out (same dtype and shape) into fresh buffers. */
static bool read_both(const char *what, both out, void **g, void **c, int64_t *numel)
{
    *g = *c = NULL;
    if (!contexts_ok(what) || !out.g || !out.c) {
        CHECK(out.g && out.c, "%s: no output", what);
        return false;
    }
    int ndim = wgt_tensor_ndim(out.g);
    bool same = ndim == wgt_tensor_ndim(out.c) && wgt_tensor_dtype(out.g) == wgt_tensor_dtype(out.c);
    for (int d = 0; same && d < ndim; d++) same = wgt_tensor_shape(out.g)[d] == wgt_tensor_shape(out.c)[d];
    CHECK(same, "%s: webgpu and cpu outputs differ in dtype or shape", what);
    if (!same) return false;
    *numel = wgt_tensor_numel(out.g);
    size_t bytes = (size_t)*numel * wgt_dtype_size(wgt_tensor_dtype(out.g));
    *g = malloc(bytes + 4);
    *c = malloc(bytes + 4);
    wgt_status sg = wgt_tensor_read(out.g, *g, bytes), sc = wgt_tensor_read(out.c, *c, bytes);
    CHECK(sg == WGT_OK && sc == WGT_OK, "%s: read failed: %s / %s", what, wgt_context_error_message(gpu),
          wgt_context_error_message(cpu));
    wgt_status guards = wgt_tensor_check_guards(out.g);
    CHECK(guards == WGT_OK, "%s: %s", what, wgt_context_error_message(gpu));
    if (sg != WGT_OK || sc != WGT_OK || guards != WGT_OK) {
        contexts_ok(what);
        free(*g);
        free(*c);
        return false;
    }
    return true;
}

/* out must match bit for bit. */
static void check_exact(const char *what, both out)
{
    void *g, *c;
    int64_t n;
    if (!read_both(what, out, &g, &c, &n)) return;
    size_t size = wgt_dtype_size(wgt_tensor_dtype(out.g));
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (memcmp((char *)g + i * (int64_t)size, (char *)c + i * (int64_t)size, size) != 0) bad = i;
    uint32_t gv = 0, cv = 0;
    if (bad >= 0) {
        memcpy(&gv, (char *)g + bad * (int64_t)size, size);
        memcpy(&cv, (char *)c + bad * (int64_t)size, size);
    }
    CHECK(bad < 0, "%s: element %lld of %lld: webgpu 0x%x, cpu 0x%x", what, (long long)bad, (long long)n, gv, cv);
    free(g);
    free(c);
}

/* ------------------------------------------------------------------ gather */

static const wgt_dtype all_dtypes[] = {WGT_F32, WGT_F16, WGT_I32, WGT_U8, WGT_BOOL};

static void test_gather_axes(void)
{
    char what[128];
    const int64_t xs[3] = {3, 4, 5};
    for (size_t t = 0; t < sizeof(all_dtypes) / sizeof(all_dtypes[0]); t++) {
        wgt_dtype dtype = all_dtypes[t];
        both x = upload_random(dtype, 3, xs);
        for (int axis = 0; axis < 3; axis++) {
            /* index smaller than x off the axis, longer along it; values cover
             * [-D, D): negative wraps (out-of-range is an error: test_semantics) */
            int64_t is[3] = {2, 3, 4};
            is[axis] = 7;
            int32_t D = (int32_t)xs[axis];
            both index = upload_index(3, is, -D, D);
            both out = {wgt_gather(x.g, axis, index.g), wgt_gather(x.c, axis, index.c)};
            snprintf(what, sizeof(what), "gather %s axis %d", wgt_dtype_name(dtype), axis);
            check_exact(what, out);
            drop(out);
            drop(index);
        }
        /* transposed x (dims 0 and 2 swapped: [5, 4, 3]) and a strided index slice */
        both xt = transposed(x, 0, 2);
        const int64_t is[3] = {9, 4, 3};
        both index_full = upload_index(3, is, -4, 4); /* axis 1 has size 4 */
        both index = sliced(index_full, 0, 1, 9, 2); /* [4, 4, 3], stride 24 along axis 0 */
        both out = {wgt_gather(xt.g, 1, index.g), wgt_gather(xt.c, 1, index.c)};
        snprintf(what, sizeof(what), "gather %s transposed x, strided index", wgt_dtype_name(dtype));
        check_exact(what, out);
        drop(out);
        drop(index);
        drop(index_full);
        /* a gather whose output has an odd element count (packed boundary words) */
        const int64_t one_d = 7;
        both idx1 = upload_index(1, &one_d, -3, 3);
        both x1 = sliced(x, 0, 1, 2, 1);
        both row = {wgt_reshape(x1.g, 1, (int64_t[]){20}), wgt_reshape(x1.c, 1, (int64_t[]){20})};
        both out1 = {wgt_gather(row.g, 0, idx1.g), wgt_gather(row.c, 0, idx1.c)};
        snprintf(what, sizeof(what), "gather %s 1-D, 7 elements", wgt_dtype_name(dtype));
        check_exact(what, out1);
        drop(out1);
        drop(row);
        drop(x1);
        drop(idx1);
        drop(xt);
        drop(x);
    }
}

static void test_index_select_and_embedding(void)
{
    char what[128];
    for (size_t t = 0; t < sizeof(all_dtypes) / sizeof(all_dtypes[0]); t++) {
        wgt_dtype dtype = all_dtypes[t];
        const int64_t xs[3] = {6, 5, 3};
        both x = upload_random(dtype, 3, xs);
        const int64_t n = 11;
        both base = upload_index(1, &n, -3, 3); /* in range on every axis (sizes 6, 5, 3) */
        both index = sliced(base, 0, 1, 11, 2); /* 5 indices, stride 2, offset 1 */
        for (int axis = 0; axis < 3; axis++) {
            both out = {wgt_index_select(x.g, axis, index.g), wgt_index_select(x.c, axis, index.c)};
            snprintf(what, sizeof(what), "index_select %s axis %d, strided index", wgt_dtype_name(dtype), axis);
            check_exact(what, out);
            drop(out);
        }
        drop(index);
        drop(base);
        drop(x);

        /* embedding: weight [7, 5], ids [2, 3] */
        const int64_t ws[2] = {7, 5}, ids_shape[2] = {2, 3};
        both weight = upload_random(dtype, 2, ws);
        const int32_t id_values[6] = {0, 6, 3, 3, -1, 2};
        both ids = upload(WGT_I32, 2, ids_shape, id_values);
        both out = {wgt_embedding(weight.g, ids.g), wgt_embedding(weight.c, ids.c)};
        snprintf(what, sizeof(what), "embedding %s [7, 5] by ids [2, 3]", wgt_dtype_name(dtype));
        check_exact(what, out);
        CHECK(out.g && wgt_tensor_ndim(out.g) == 3 && wgt_tensor_shape(out.g)[2] == 5, "%s: shape", what);
        drop(out);
        drop(ids);
        drop(weight);
    }
}

/* Whole-row gathers (indexing_gather_rows.wgsl): embedding and index_select
 * along dim 0 of tables with rows of C % 4 == 0 4-byte elements, on a context
 * without debug guards (the kernel binds vec4s, so buffers must be whole
 * 16-byte words). Exact against the CPU; the first such gather must create a
 * pipeline (the generic one exists by then), or the path was not taken;
 * negative ids wrap; an out-of-range id gives zeros and is reported at the
 * read, naming the op and the axis. */
static void test_gather_rows(void)
{
    wgt_context *plain = test_webgpu_context(), *keep = gpu;
    CHECK(plain != NULL, "gather rows: context");
    if (!plain) return;
    gpu = plain;
    const int64_t V = 65, C = 24, ws[2] = {V, C}, ids_shape[2] = {4, 50}, xs[3] = {6, 5, 3};
    int32_t ids[200];
    for (int i = 0; i < 200; i++) ids[i] = rnd_range(-(int32_t)V, (int32_t)V);
    both x3 = upload_random(WGT_F32, 3, xs);
    const int64_t n = 4;
    both idx3 = upload_index(1, &n, 0, 6);
    both generic = {wgt_index_select(x3.g, 0, idx3.g), wgt_index_select(x3.c, 0, idx3.c)};
    check_exact("index_select of a 3-D table (the generic kernel)", generic);
    for (size_t t = 0; t < 2; t++) {
        wgt_dtype dtype = t ? WGT_I32 : WGT_F32;
        both weight = upload_random(dtype, 2, ws);
        both id = upload(WGT_I32, 2, ids_shape, ids);
        wgt_pipeline_stats before, after;
        wgt_pipeline_stats_get(gpu, &before);
        both out = {wgt_embedding(weight.g, id.g), wgt_embedding(weight.c, id.c)};
        char what[96];
        snprintf(what, sizeof(what), "embedding %s [65, 24] by ids [4, 50] (rows kernel)", wgt_dtype_name(dtype));
        check_exact(what, out);
        wgt_pipeline_stats_get(gpu, &after);
        if (t == 0)
            CHECK(after.misses == before.misses + 1, "%s: %llu new pipelines, expected the rows kernel's one", what,
                  (unsigned long long)(after.misses - before.misses));
        /* rows 3 .. 9 of a table viewed from its 4th row (an offset of 3 rows) */
        both tail = sliced(weight, 0, 3, 65, 1);
        both idx = upload_index(1, &n, -10, 10);
        both sel = {wgt_index_select(tail.g, 0, idx.g), wgt_index_select(tail.c, 0, idx.c)};
        snprintf(what, sizeof(what), "index_select %s rows of a sliced table", wgt_dtype_name(dtype));
        check_exact(what, sel);
        drop(sel), drop(idx), drop(tail), drop(out), drop(id), drop(weight);
    }
    both weight = upload_random(WGT_F32, 2, ws);
    int32_t bad_ids[8] = {1, 2, 65, 3, 4, 5, 6, 7};
    wgt_tensor *bad_id = wgt_tensor_from_host(gpu, WGT_I32, 1, (int64_t[]){8}, bad_ids);
    wgt_tensor *bad = wgt_embedding(weight.g, bad_id);
    float v[8 * 24];
    wgt_status s = bad ? wgt_tensor_read(bad, v, sizeof(v)) : wgt_context_status(gpu);
    const char *m = wgt_context_error_message(gpu);
    CHECK(s == WGT_ERR_INVALID_ARGUMENT && strstr(m, "out of range") && strstr(m, "index 65") &&
              strstr(m, "axis 0 of size 65"),
          "embedding with id 65 of 65 rows: status %s, message \"%s\"", wgt_status_string(s), m);
    wgt_context_clear_error(gpu);
    wgt_tensor_release(bad), wgt_tensor_release(bad_id), drop(weight);
    drop(generic), drop(idx3), drop(x3);
    gpu = keep;
    wgt_context_destroy(plain);
}

/* More than 65535 workgroups of 256: the grid folds into 2-D. x is a stride-0
 * broadcast row, so only the output is large. */
static void test_gather_folded_grid(void)
{
    const int64_t n = 65536LL * 256 + 1000, small = 1;
    both row = upload_random(WGT_I32, 1, &small);
    both x = {wgt_expand(row.g, 1, &n), wgt_expand(row.c, 1, &n)};
    both x2 = {wgt_unsqueeze(x.g, 0), wgt_unsqueeze(x.c, 0)}; /* [1, n], stride 0 along n */
    const int64_t one = 1;
    int32_t zero = 0;
    both index = upload(WGT_I32, 1, &one, &zero);
    both out = {wgt_index_select(x2.g, 0, index.g), wgt_index_select(x2.c, 0, index.c)}; /* [1, n] */
    check_exact("gather with a folded 2-D grid", out);
    drop(out);
    drop(index);
    drop(x2);
    drop(x);
    drop(row);
}

/* ------------------------------------------------------------- scatter_add */

/* f32 scatter_add of (dst, index, src) along axis against the CPU, within
 * 1e-6 * n * S per element (see the top of the file). dst and out are
 * contiguous [R, C]; index/src given as host arrays in their own shape. */
static void check_scatter_f32(const char *what, both out, both dst, both index, both src, int axis)
{
    void *g, *c;
    int64_t n;
    if (!read_both(what, out, &g, &c, &n)) return;
    /* terms per element, on the host (CPU tensors are contiguous reads) */
    int64_t dn = wgt_tensor_numel(dst.c), in = wgt_tensor_numel(index.c);
    float *d = malloc((size_t)dn * 4), *s = malloc((size_t)in * 4);
    int32_t *ix = malloc((size_t)in * 4);
    double *mag = calloc((size_t)dn, sizeof(double));
    int *count = calloc((size_t)dn, sizeof(int));
    wgt_tensor_read(dst.c, d, (size_t)dn * 4);
    wgt_tensor_read(src.c, s, (size_t)in * 4);
    wgt_tensor_read(index.c, ix, (size_t)in * 4);
    const int64_t *os = wgt_tensor_shape(dst.c), *is = wgt_tensor_shape(index.c);
    for (int64_t i = 0; i < dn; i++) {
        mag[i] = fabs(d[i]);
        count[i] = 1;
    }
    for (int64_t r = 0; r < is[0]; r++)
        for (int64_t col = 0; col < is[1]; col++) {
            int64_t e = r * is[1] + col, D = os[axis];
            int64_t i = ix[e] < 0 ? ix[e] + D : ix[e];
            if (i < 0 || i >= D) continue;
            int64_t o = axis == 0 ? i * os[1] + col : r * os[1] + i;
            mag[o] += fabs(s[e]);
            count[o]++;
        }
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double gv = ((float *)g)[i], cv = ((float *)c)[i];
        if (!(fabs(gv - cv) <= 1e-6 * count[i] * mag[i])) bad = i;
    }
    CHECK(bad < 0, "%s: element %lld: webgpu %.9g, cpu %.9g (%d terms)", what, (long long)bad,
          bad >= 0 ? ((float *)g)[bad] : 0.0, bad >= 0 ? ((float *)c)[bad] : 0.0, bad >= 0 ? count[bad] : 0);
    free(d);
    free(s);
    free(ix);
    free(mag);
    free(count);
    free(g);
    free(c);
}

static void test_scatter_add(void)
{
    char what[128];
    for (int t = 0; t < 2; t++) {
        wgt_dtype dtype = t ? WGT_I32 : WGT_F32;
        for (int axis = 0; axis < 2; axis++) {
            /* dst [5, 6]; index/src [40, 6] (axis 0) or [5, 40] (axis 1): about 8
             * adds per element, indices in [-D, D) (out of range: test_semantics) */
            const int64_t ds[2] = {5, 6};
            int64_t is[2] = {5, 6};
            is[axis] = 40;
            int32_t D = (int32_t)ds[axis];
            both dst = upload_random(dtype, 2, ds);
            both index = upload_index(2, is, -D, D);
            both src = upload_random(dtype, 2, is);
            if (dtype == WGT_F32) {
                /* values with many significant bits, so rounding order matters */
                int64_t n = is[0] * is[1];
                float *v = malloc((size_t)n * 4);
                for (int64_t i = 0; i < n; i++) v[i] = (float)((double)(int32_t)test_xorshift(&rng_state) / 3e8);
                wgt_tensor_write(src.g, v, (size_t)n * 4);
                wgt_tensor_write(src.c, v, (size_t)n * 4);
                free(v);
            }
            both out = {wgt_scatter_add(dst.g, axis, index.g, src.g), wgt_scatter_add(dst.c, axis, index.c, src.c)};
            snprintf(what, sizeof(what), "scatter_add %s axis %d, 40 x 6 into 5 x 6", wgt_dtype_name(dtype), axis);
            if (dtype == WGT_I32) check_exact(what, out);
            else check_scatter_f32(what, out, dst, index, src, axis);
            drop(out);
            drop(src);
            drop(index);
            drop(dst);
        }
        /* every element of a large src into one output element: 4096 collisions */
        const int64_t ds[1] = {3}, is[1] = {4096};
        both dst = upload_random(dtype, 1, ds);
        int32_t *ones = malloc(4096 * 4);
        for (int i = 0; i < 4096; i++) ones[i] = i % 7 == 0 ? 2 : -2; /* -2 wraps to 1 */
        both index = upload(WGT_I32, 1, is, ones);
        both src = upload_random(dtype, 1, is);
        both out = {wgt_scatter_add(dst.g, 0, index.g, src.g), wgt_scatter_add(dst.c, 0, index.c, src.c)};
        snprintf(what, sizeof(what), "scatter_add %s, 4096 adds into one element", wgt_dtype_name(dtype));
        if (dtype == WGT_I32) {
            check_exact(what, out);
        } else {
            void *g, *c;
            int64_t n;
            if (read_both(what, out, &g, &c, &n)) {
                /* src are multiples of 1/4 in [-8, 8): every partial sum is exact in f32 */
                CHECK(memcmp(g, c, 12) == 0, "%s: %g %g %g vs %g %g %g", what, ((float *)g)[0], ((float *)g)[1],
                      ((float *)g)[2], ((float *)c)[0], ((float *)c)[1], ((float *)c)[2]);
                free(g);
                free(c);
            }
        }
        free(ones);
        drop(out);
        drop(src);
        drop(index);
        drop(dst);
    }

    /* transposed index and src views (strides not contiguous) */
    const int64_t ds[2] = {4, 5}, is[2] = {5, 9};
    both dst = upload_random(WGT_I32, 2, ds);
    both index_t = upload_index(2, is, -4, 4);
    both src_t = upload_random(WGT_I32, 2, is);
    both index = transposed(index_t, 0, 1), src = transposed(src_t, 0, 1); /* [9, 5] */
    both out = {wgt_scatter_add(dst.g, 0, index.g, src.g), wgt_scatter_add(dst.c, 0, index.c, src.c)};
    check_exact("scatter_add i32 transposed index and src", out);
    drop(out);
    drop(index);
    drop(src);
    drop(index_t);
    drop(src_t);
    drop(dst);
}

/* ------------------------------------------------ scatter_add by sorted rows */
/* index_select's backward (and so embedding's): out [P, V, Q] += src [P, N, Q]
 * at rows index [N] along axis 1, the index broadcast off the axis (stride 0)
 * as wgt_backward_index_select passes it; P = 1 gives the embedding's 2-D
 * [V, C] += [N, C] along axis 0. The WebGPU backend sums these by sorted
 * rows (WGT_SCATTER_SORTED=0: the atomic kernel). */

typedef struct rows_case {
    const char *what;
    int64_t P, V, N, Q;
    int skew;            /* percent of the entries on row 3 (half of them written as 3 - V) */
    int bad;             /* entries out of range (alternately V + k and -V - 1 - k) */
    bool dst_random;     /* accumulate into a non-zero out */
    bool transposed_src; /* P = 1 only: src read through strides (1, N) */
} rows_case;

typedef struct rows_data {
    int64_t dst_shape[3], src_shape[3];
    int ndim, axis;
    int32_t *idx;
    float *dst, *src;    /* host copies, contiguous [P, V, Q] and [P, N, Q] */
    both idx_t, dst_t, src_t, spread, src_view;
} rows_data;

static int64_t dispatches(void)
{
    wgt_execution_stats st;
    memset(&st, 0, sizeof(st));
    wgt_execution_stats_get(gpu, &st);
    return (int64_t)st.dispatches;
}

static void rows_upload(const rows_case *rc, rows_data *d);

static void rows_make(const rows_case *rc, rows_data *d)
{
    memset(d, 0, sizeof(*d));
    int64_t P = rc->P, V = rc->V, N = rc->N, Q = rc->Q;
    d->ndim = P == 1 ? 2 : 3;
    d->axis = P == 1 ? 0 : 1;
    int64_t ds[3] = {P, V, Q}, ss[3] = {P, N, Q};
    memcpy(d->dst_shape, P == 1 ? ds + 1 : ds, sizeof(int64_t) * (size_t)d->ndim);
    memcpy(d->src_shape, P == 1 ? ss + 1 : ss, sizeof(int64_t) * (size_t)d->ndim);
    d->idx = malloc((size_t)N * 4);
    for (int64_t j = 0; j < N; j++) {
        int32_t r = rnd_range(-(int32_t)V, (int32_t)V); /* negative values wrap */
        if (rnd_range(0, 100) < rc->skew) r = rnd_range(0, 2) ? 3 : 3 - (int32_t)V;
        d->idx[j] = r;
    }
    for (int k = 0; k < rc->bad; k++) /* spread over the list, not only at its end */
        d->idx[(k * 7919 + 11) % N] = k % 2 ? -(int32_t)V - 1 - k : (int32_t)V + k;
    d->dst = malloc((size_t)(P * V * Q) * 4);
    d->src = malloc((size_t)(P * N * Q) * 4);
    for (int64_t e = 0; e < P * V * Q; e++) d->dst[e] = rc->dst_random ? (float)rnd_range(-64, 64) / 8.0f : 0.0f;
    /* many significant bits, so the summation order shows in the rounding */
    for (int64_t e = 0; e < P * N * Q; e++) d->src[e] = (float)((double)(int32_t)test_xorshift(&rng_state) / 3e8);
    rows_upload(rc, d);
}

/* d's host copies onto gpu and cpu: the operands of rows_scatter. */
static void rows_upload(const rows_case *rc, rows_data *d)
{
    int64_t N = rc->N, Q = rc->Q;
    d->idx_t = upload(WGT_I32, 1, &N, d->idx);
    d->dst_t = upload(WGT_F32, d->ndim, d->dst_shape, d->dst);
    if (rc->transposed_src) {
        /* the same [N, Q] values stored as [Q, N] */
        float *t = malloc((size_t)(N * Q) * 4);
        for (int64_t j = 0; j < N; j++)
            for (int64_t q = 0; q < Q; q++) t[q * N + j] = d->src[j * Q + q];
        const int64_t ts[2] = {Q, N};
        d->src_t = upload(WGT_F32, 2, ts, t);
        free(t);
        d->src_view = transposed(d->src_t, 0, 1);
    } else {
        d->src_t = upload(WGT_F32, d->ndim, d->src_shape, d->src);
        d->src_view = (both){wgt_tensor_retain(d->src_t.g), wgt_tensor_retain(d->src_t.c)};
    }
    int64_t column[3] = {1, 1, 1};
    column[d->axis] = N;
    both col = {wgt_view(d->idx_t.g, d->ndim, column), wgt_view(d->idx_t.c, d->ndim, column)};
    d->spread = (both){wgt_expand(col.g, d->ndim, d->src_shape), wgt_expand(col.c, d->ndim, d->src_shape)};
    drop(col);
}

/* The tensors rows_upload made (not the host copies). */
static void rows_drop(rows_data *d)
{
    drop(d->spread);
    drop(d->src_view);
    drop(d->src_t);
    drop(d->dst_t);
    drop(d->idx_t);
}

static void rows_free(rows_data *d)
{
    rows_drop(d);
    free(d->idx);
    free(d->dst);
    free(d->src);
}

static wgt_tensor *rows_scatter(rows_data *d, bool on_gpu)
{
    return on_gpu ? wgt_scatter_add(d->dst_t.g, d->axis, d->spread.g, d->src_view.g)
                  : wgt_scatter_add(d->dst_t.c, d->axis, d->spread.c, d->src_view.c);
}

/* out against the CPU, within 1e-6 * n * S per element (top of the file),
 * the terms counted from the host copies. */
static void rows_check(const char *what, const rows_case *rc, const rows_data *d, both out)
{
    void *g, *c;
    int64_t n;
    if (!read_both(what, out, &g, &c, &n)) return;
    int64_t P = rc->P, V = rc->V, N = rc->N, Q = rc->Q;
    double *mag = malloc((size_t)n * sizeof(double));
    int64_t *count = malloc((size_t)n * sizeof(int64_t));
    for (int64_t e = 0; e < n; e++) {
        mag[e] = fabs(d->dst[e]);
        count[e] = 1;
    }
    for (int64_t j = 0; j < N; j++) {
        int64_t r = d->idx[j] < 0 ? d->idx[j] + V : d->idx[j];
        if (r < 0 || r >= V) continue;
        for (int64_t p = 0; p < P; p++)
            for (int64_t q = 0; q < Q; q++) {
                int64_t o = (p * V + r) * Q + q;
                mag[o] += fabs(d->src[(p * N + j) * Q + q]);
                count[o]++;
            }
    }
    int64_t bad = -1;
    for (int64_t e = 0; e < n && bad < 0; e++) {
        double gv = ((float *)g)[e], cv = ((float *)c)[e];
        if (!(fabs(gv - cv) <= 1e-6 * (double)count[e] * mag[e])) bad = e;
    }
    CHECK(bad < 0, "%s: element %lld: webgpu %.9g, cpu %.9g (%lld terms)", what, (long long)bad,
          bad >= 0 ? ((float *)g)[bad] : 0.0, bad >= 0 ? ((float *)c)[bad] : 0.0,
          bad >= 0 ? (long long)count[bad] : 0LL);
    free(mag);
    free(count);
    free(g);
    free(c);
}

/* The GPU result's bits (NULL after a CHECK on failure). */
static float *gpu_bits(const char *what, wgt_tensor *t)
{
    CHECK(t != NULL, "%s: no output: %s", what, wgt_context_error_message(gpu));
    if (!t) {
        wgt_context_clear_error(gpu);
        return NULL;
    }
    size_t bytes = (size_t)wgt_tensor_numel(t) * 4;
    float *v = malloc(bytes + 4);
    wgt_status s = wgt_tensor_read(t, v, bytes);
    CHECK(s == WGT_OK, "%s: read: %s", what, wgt_context_error_message(gpu));
    if (s != WGT_OK) {
        wgt_context_clear_error(gpu);
        free(v);
        return NULL;
    }
    return v;
}

static void test_scatter_rows_case(const rows_case *rc)
{
    char what[200];
    rows_data d;
    rows_make(rc, &d);
    int64_t before = dispatches();
    both out = {rows_scatter(&d, true), rows_scatter(&d, false)};
    int64_t sorted_dispatches = dispatches() - before;
    snprintf(what, sizeof(what), "scatter_add rows %s (sorted)", rc->what);
    rows_check(what, rc, &d, out);

    /* run to run: the same bits */
    wgt_tensor *again = rows_scatter(&d, true);
    float *a = gpu_bits(what, out.g), *b = gpu_bits(what, again);
    if (a && b) {
        int64_t n = wgt_tensor_numel(out.g), diff = -1;
        for (int64_t e = 0; e < n && diff < 0; e++)
            if (memcmp(&a[e], &b[e], 4) != 0) diff = e;
        CHECK(diff < 0, "%s: not deterministic: element %lld is %.9g, then %.9g", what, (long long)diff,
              diff >= 0 ? a[diff] : 0.0, diff >= 0 ? b[diff] : 0.0);
    }
    free(a);
    free(b);
    wgt_tensor_release(again);

    /* the atomic kernel still gives the same answer within rounding, in one
     * dispatch (the sorted path: at least the three sort kernels and the row sum):
     * the same operands on atomic_gpu */
    wgt_context *sorted_gpu = gpu;
    gpu = atomic_gpu;
    rows_data da = d; /* d's host copies, tensors of its own */
    rows_upload(rc, &da);
    before = dispatches();
    wgt_tensor *atomic = rows_scatter(&da, true);
    int64_t atomic_dispatches = dispatches() - before;
    rows_drop(&da);
    gpu = sorted_gpu;
    snprintf(what, sizeof(what), "scatter_add rows %s (atomic)", rc->what);
    both out_atomic = {atomic, wgt_tensor_retain(out.c)};
    rows_check(what, rc, &d, out_atomic);
    CHECK(sorted_dispatches >= atomic_dispatches + 3, "%s: the sorted path was not taken (%lld vs %lld dispatches)",
          rc->what, (long long)sorted_dispatches, (long long)atomic_dispatches);
    drop(out_atomic);
    drop(out);
    rows_free(&d);
}

/* Out-of-range entries are skipped and reported at the next read-back, naming
 * the op, one of the bad values and the axis, on both paths. */
static void test_scatter_rows_out_of_range(void)
{
    const rows_case rc = {"[50, 7] into [9, 7], 3 out of range", 1, 9, 50, 7, 30, 3, true, false};
    rows_data d;
    rows_make(&rc, &d);
    char messages[2][512];
    wgt_context *sorted_gpu = gpu;
    for (int path = 0; path < 2; path++) {
        gpu = path ? atomic_gpu : sorted_gpu;
        rows_data dp = d; /* path 1: d's host copies, tensors on atomic_gpu */
        if (path) rows_upload(&rc, &dp);
        wgt_tensor *out = rows_scatter(&dp, true);
        if (path) rows_drop(&dp);
        float v[9 * 7];
        wgt_status s = out ? wgt_tensor_read(out, v, sizeof(v)) : wgt_context_status(gpu);
        snprintf(messages[path], sizeof(messages[path]), "%s", wgt_context_error_message(gpu));
        CHECK(s == WGT_ERR_INVALID_ARGUMENT && strstr(messages[path], "wgt_scatter_add") &&
                  strstr(messages[path], "out of range") && strstr(messages[path], "axis 0 of size 9"),
              "scatter_add rows %s path: status %s, message \"%s\"", path ? "atomic" : "sorted",
              wgt_status_string(s), messages[path]);
        wgt_context_clear_error(gpu);
        wgt_tensor_release(out);
    }
    gpu = sorted_gpu;
    /* which of the bad values is named depends on which invocation wrote last */
    for (int path = 0; path < 2; path++) {
        bool named = false;
        for (int k = 0; k < rc.bad; k++) {
            char want[48];
            snprintf(want, sizeof(want), "index %d is", k % 2 ? -9 - 1 - k : 9 + k);
            named = named || strstr(messages[path], want) != NULL;
        }
        CHECK(named, "out-of-range report names none of the bad values: \"%s\"", messages[path]);
    }
    wgt_tensor *c = rows_scatter(&d, false);
    CHECK(!c && wgt_context_status(cpu) == WGT_ERR_INVALID_ARGUMENT, "cpu: out-of-range scatter_add accepted");
    wgt_context_clear_error(cpu);
    wgt_tensor_release(c);
    /* the in-range entries of a fixed list: after the report the next call is fine */
    rows_free(&d);
    const rows_case ok = {"[50, 7] into [9, 7] after a report", 1, 9, 50, 7, 30, 0, true, false};
    test_scatter_rows_case(&ok);
}

/* The training path: wgt_embedding's backward reaches the sorted kernels. */
static void test_embedding_backward(void)
{
    const int64_t V = 65, C = 24, ids_shape[2] = {4, 50}, ws[2] = {V, C}, ys[3] = {4, 50, C};
    int32_t ids[200];
    for (int i = 0; i < 200; i++) ids[i] = rnd_range(0, 100) < 50 ? 7 : rnd_range(0, (int32_t)V);
    void *wdata = random_data(WGT_F32, V * C);
    both weight = upload(WGT_F32, 2, ws, wdata);
    both id = upload(WGT_I32, 2, ids_shape, ids);
    float *dy = malloc(200 * C * 4);
    for (int64_t e = 0; e < 200 * C; e++) dy[e] = (float)((double)(int32_t)test_xorshift(&rng_state) / 3e8);
    both d = upload(WGT_F32, 3, ys, dy);
    wgt_tensor_set_requires_grad(weight.g, true);
    wgt_tensor_set_requires_grad(weight.c, true);
    int64_t counted[2] = {0, 0};
    float *grads[2] = {NULL, NULL};
    wgt_context *sorted_gpu = gpu;
    for (int path = 0; path < 2; path++) {
        /* path 1: the same weight, ids and dy on atomic_gpu */
        gpu = path ? atomic_gpu : sorted_gpu;
        wgt_tensor *w = path ? wgt_tensor_from_host(gpu, WGT_F32, 2, ws, wdata) : wgt_tensor_retain(weight.g);
        wgt_tensor *i = path ? wgt_tensor_from_host(gpu, WGT_I32, 2, ids_shape, ids) : wgt_tensor_retain(id.g);
        wgt_tensor *dd = path ? wgt_tensor_from_host(gpu, WGT_F32, 3, ys, dy) : wgt_tensor_retain(d.g);
        if (path) wgt_tensor_set_requires_grad(w, true);
        wgt_zero_grad(&w, 1);
        int64_t before = dispatches();
        wgt_tensor *y = w && i && dd ? wgt_embedding(w, i) : NULL;
        wgt_status s = y ? wgt_backward_ex(y, dd, false) : WGT_ERR_INVALID_ARGUMENT;
        counted[path] = dispatches() - before;
        CHECK(s == WGT_OK, "embedding backward: %s", wgt_context_error_message(gpu));
        grads[path] = s == WGT_OK ? gpu_bits("embedding backward", wgt_tensor_grad(w)) : NULL;
        wgt_tensor_release(y);
        wgt_tensor_release(w);
        wgt_tensor_release(i);
        wgt_tensor_release(dd);
    }
    gpu = sorted_gpu;
    CHECK(counted[0] >= counted[1] + 3, "embedding backward did not take the sorted path (%lld vs %lld dispatches)",
          (long long)counted[0], (long long)counted[1]);
    wgt_tensor *yc = wgt_embedding(weight.c, id.c);
    CHECK(yc && wgt_backward_ex(yc, d.c, false) == WGT_OK, "cpu embedding backward: %s",
          wgt_context_error_message(cpu));
    float gc[65 * 24];
    wgt_tensor *grad_c = wgt_tensor_grad(weight.c);
    if (grads[0] && grads[1] && grad_c && wgt_tensor_read(grad_c, gc, sizeof(gc)) == WGT_OK) {
        /* grad[r, q] = the sum of dy[i, q] over ids[i] == r: within 1e-6 n S */
        int64_t bad = -1, bad_path = 0;
        for (int64_t e = 0; e < V * C && bad < 0; e++) {
            double mag = 0;
            int terms = 0;
            for (int i = 0; i < 200; i++)
                if (ids[i] == e / C) {
                    mag += fabs(dy[i * C + e % C]);
                    terms++;
                }
            for (int path = 0; path < 2 && bad < 0; path++)
                if (!(fabs((double)grads[path][e] - gc[e]) <= 1e-6 * terms * mag)) {
                    bad = e;
                    bad_path = path;
                }
        }
        CHECK(bad < 0, "embedding backward (%s) grad element %lld: webgpu %.9g, cpu %.9g",
              bad_path ? "atomic" : "sorted", (long long)bad, bad >= 0 ? grads[bad_path][bad] : 0.0,
              bad >= 0 ? gc[bad] : 0.0);
    } else {
        CHECK(false, "embedding backward: no gradient to compare (%s)", wgt_context_error_message(cpu));
    }
    wgt_tensor_release(yc);
    free(grads[0]);
    free(grads[1]);
    free(dy);
    free(wdata);
    drop(d);
    drop(id);
    drop(weight);
}

static void test_scatter_rows(void)
{
    const rows_case cases[] = {
        /* a character vocabulary: 65 rows, over half the entries on one (runs over many segments) */
        {"[1000, 37] into [65, 37], skewed", 1, 65, 1000, 37, 60, 0, false, false},
        {"[3000, 40] into [65, 40], 80% on one row", 1, 65, 3000, 40, 80, 0, true, false},
        /* a row over more than 64 segments of 64 (its end found by binary search) */
        {"[5000, 3] into [8, 3], 95% on one row", 1, 8, 5000, 3, 95, 0, false, false},
        /* every entry on one row, N a multiple of 256 and of the segment */
        {"[2048, 9] into [10, 9], one row", 1, 10, 2048, 9, 100, 0, true, false},
        /* two radix passes (V > 255), several column chunks, V <= N: one unit per row */
        {"[700, 70] into [300, 70]", 1, 300, 700, 70, 10, 0, true, false},
        /* V > N: one unit per run start; few entries per row */
        {"[600, 5] into [5000, 5]", 1, 5000, 600, 5, 5, 0, true, false},
        /* three passes (V > 65535), fewer entries than a segment */
        {"[45, 3] into [70000, 3]", 1, 70000, 45, 3, 20, 0, false, false},
        /* one entry, one column */
        {"[1, 1] into [4, 1]", 1, 4, 1, 1, 0, 0, true, false},
        /* src read through strides (a transposed gradient) */
        {"[500, 6] transposed into [30, 6]", 1, 30, 500, 6, 40, 0, true, true},
        /* index_select along the middle axis of a 3-D tensor: columns over two dims */
        {"[3, 260, 5] into [3, 40, 5] along axis 1", 3, 40, 260, 5, 50, 0, true, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_scatter_rows_case(&cases[i]);
    test_scatter_rows_out_of_range();
    test_embedding_backward();

    /* signed zeros: -0 terms into a -0 out stay -0 (bit-exact with the CPU) */
    const int64_t zs[2] = {4, 2}, zn = 3, zsrc[2] = {3, 2}, zcol[2] = {3, 1};
    float neg[8];
    for (int i = 0; i < 8; i++) neg[i] = -0.0f;
    both zdst = upload(WGT_F32, 2, zs, neg), zsrc_t = upload(WGT_F32, 2, zsrc, neg);
    both zidx = upload(WGT_I32, 1, &zn, (int32_t[]){1, 1, 2});
    both zv = {wgt_view(zidx.g, 2, zcol), wgt_view(zidx.c, 2, zcol)};
    both zspread = {wgt_expand(zv.g, 2, zsrc), wgt_expand(zv.c, 2, zsrc)};
    both zout = {wgt_scatter_add(zdst.g, 0, zspread.g, zsrc_t.g), wgt_scatter_add(zdst.c, 0, zspread.c, zsrc_t.c)};
    check_exact("scatter_add rows of -0 into -0", zout);
    drop(zout);
    drop(zspread);
    drop(zv);
    drop(zidx);
    drop(zsrc_t);
    drop(zdst);
}

/* -------------------------------------------------------------------- topk */

static void check_topk(const char *what, both x, int64_t k, bool largest)
{
    both v, i;
    wgt_status sg = wgt_topk(x.g, k, largest, &v.g, &i.g);
    wgt_status sc = wgt_topk(x.c, k, largest, &v.c, &i.c);
    CHECK(sg == WGT_OK && sc == WGT_OK, "%s: %s / %s", what, wgt_context_error_message(gpu),
          wgt_context_error_message(cpu));
    if (sg != WGT_OK || sc != WGT_OK) {
        contexts_ok(what);
        if (sg == WGT_OK) drop((both){v.g, i.g});
        if (sc == WGT_OK) drop((both){v.c, i.c});
        return;
    }
    char buf[160];
    snprintf(buf, sizeof(buf), "%s: indices", what);
    check_exact(buf, i);
    snprintf(buf, sizeof(buf), "%s: values", what);
    check_exact(buf, v);
    drop(v);
    drop(i);
}

/* x [rows, n] of dtype with random data (f32: with NaN/-0/inf mixed in). */
static both topk_input(wgt_dtype dtype, int64_t rows, int64_t n, bool specials)
{
    const int64_t shape[2] = {rows, n};
    void *data = random_data(dtype, rows * n);
    if (specials && dtype == WGT_F32) {
        float sp[6] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, -NAN};
        for (int64_t e = 0; e < rows * n; e++)
            if (test_xorshift(&rng_state) % 5 == 0) ((float *)data)[e] = sp[test_xorshift(&rng_state) % 6];
    }
    if (specials && dtype == WGT_F16) {
        uint16_t sp[6] = {0x7e00, 0x8000, 0x0000, 0x7c00, 0xfc00, 0x0001};
        for (int64_t e = 0; e < rows * n; e++)
            if (test_xorshift(&rng_state) % 5 == 0) ((uint16_t *)data)[e] = sp[test_xorshift(&rng_state) % 6];
    }
    if (dtype == WGT_I32) /* values beyond 2^24 that differ by one, and ties */
        for (int64_t e = 0; e < rows * n; e++) ((int32_t *)data)[e] = (1 << 25) + rnd_range(-3, 3) * (test_xorshift(&rng_state) % 2 ? 1 : 1 << 28);
    both x = upload(dtype, 2, shape, data);
    free(data);
    return x;
}

static void test_topk(void)
{
    char what[160];
    const wgt_dtype dtypes[4] = {WGT_F32, WGT_F16, WGT_I32, WGT_U8};
    /* short rows, one dispatch: odd lengths, k = 1 and k = N, both orders */
    const int64_t lengths[5] = {1, 7, 13, 64, 1000};
    for (int t = 0; t < 4; t++) {
        for (int l = 0; l < 5; l++) {
            int64_t n = lengths[l];
            both x = topk_input(dtypes[t], 5, n, true);
            int64_t ks[3] = {1, (n + 1) / 2, n};
            for (int j = 0; j < 3; j++)
                for (int largest = 0; largest < 2; largest++) {
                    snprintf(what, sizeof(what), "topk %s [5, %lld] k=%lld %s", wgt_dtype_name(dtypes[t]),
                             (long long)n, (long long)ks[j], largest ? "largest" : "smallest");
                    check_topk(what, x, ks[j], largest);
                }
            drop(x);
        }
    }

    /* ties only: every value equal, so the order is by index */
    const int64_t ts[2] = {3, 9};
    float same[27];
    for (int e = 0; e < 27; e++) same[e] = 1.5f;
    both tie = upload(WGT_F32, 2, ts, same);
    check_topk("topk all ties largest", tie, 4, true);
    check_topk("topk all ties smallest", tie, 9, false);
    drop(tie);

    /* transposed input: the last axis has stride != 1 */
    both x = topk_input(WGT_F32, 11, 6, true);
    both xt = transposed(x, 0, 1); /* [6, 11] */
    check_topk("topk f32 transposed [6, 11] k=4", xt, 4, true);
    check_topk("topk f32 transposed [6, 11] k=11 smallest", xt, 11, false);
    drop(xt);
    drop(x);

    /* 3-D input with a sliced leading dim */
    const int64_t s3[3] = {4, 3, 10};
    both x3 = upload_random(WGT_F32, 3, s3);
    both x3s = sliced(x3, 0, 1, 4, 2); /* [2, 3, 10] */
    check_topk("topk f32 [2, 3, 10] sliced k=3", x3s, 3, true);
    drop(x3s);
    drop(x3);

    /* more than 65535 rows of 3 */
    both many = topk_input(WGT_F32, 70000, 3, true);
    check_topk("topk f32 [70000, 3] k=2", many, 2, true);
    drop(many);
    both many_u8 = topk_input(WGT_U8, 70000, 5, false);
    check_topk("topk u8 [70000, 5] k=5 smallest", many_u8, 5, false);
    drop(many_u8);

    /* long rows: the multi-pass sort (P = 4096 and 8192) */
    const int64_t long_lengths[3] = {2049, 4096, 5001};
    for (int t = 0; t < 4; t++)
        for (int l = 0; l < 3; l++) {
            int64_t n = long_lengths[l];
            both xl = topk_input(dtypes[t], 3, n, true);
            int64_t ks[3] = {1, 2500, n};
            for (int j = 0; j < 3; j++) {
                if (ks[j] > n) continue;
                bool largest = j != 1;
                snprintf(what, sizeof(what), "topk %s [3, %lld] k=%lld %s", wgt_dtype_name(dtypes[t]), (long long)n,
                         (long long)ks[j], largest ? "largest" : "smallest");
                check_topk(what, xl, ks[j], largest);
            }
            drop(xl);
        }
}

/* ------------------------------------------------------------------- main */

static wgt_context *guarded_context(wgt_backend_kind kind)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = kind;
    o.debug_guards = true;
    wgt_context *ctx = wgt_context_create(&o);
    if (ctx && wgt_context_status(ctx) == WGT_OK) return ctx;
    fprintf(stderr, "FAIL: cannot create %s context: %s\n", kind == WGT_BACKEND_CPU ? "cpu" : "webgpu",
            ctx ? wgt_context_error_message(ctx) : "out of memory");
    test_failed++;
    wgt_context_destroy(ctx);
    return NULL;
}

int main(void)
{
    gpu = guarded_context(WGT_BACKEND_WEBGPU);
    cpu = guarded_context(WGT_BACKEND_CPU);
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.debug_guards = true;
    atomic_gpu = test_context_env(&o, (const char *[]){"WGT_SCATTER_SORTED", "0", NULL});
    if (gpu && cpu && atomic_gpu) {
        test_gather_axes();
        test_index_select_and_embedding();
        test_gather_folded_grid();
        test_gather_rows();
        test_scatter_add();
        test_scatter_rows();
        test_topk();
    }
    wgt_context_destroy(atomic_gpu);
    wgt_context_destroy(gpu);
    wgt_context_destroy(cpu);
    return test_summary();
}
