/*
 * safetensors checkpoints on the CPU and the WebGPU backend:
 *   - round trip of every dtype (f32, f16, i32, u8, bool; scalars, empty
 *     tensors, views), the metadata map, and bf16 read as f32;
 *   - a parameter set + AdamW state + step counters saved, loaded into a new
 *     optimizer, and stepped: bit for bit the same parameters as the original;
 *   - atomic writes (no temporary left behind, a failed save leaves the old
 *     file);
 *   - hand-made corrupt files, each refused with WGT_ERR_BAD_FORMAT and a
 *     reason, never a crash, the context usable afterwards.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

static char folder[256];

static void path_in_folder(char *buf, size_t size, const char *name) { snprintf(buf, size, "%s/%s", folder, name); }

/* -------------------------------------------------------- file builders */

/* An 8-byte little-endian length, the header text as given, then data. */
static unsigned char *make_file(const char *header, const void *data, size_t data_len, size_t *size)
{
    size_t n = strlen(header);
    *size = 8 + n + data_len;
    unsigned char *f = malloc(*size + 1);
    for (int i = 0; i < 8; i++) f[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(f + 8, header, n);
    if (data_len) memcpy(f + 8 + n, data, data_len);
    return f;
}

/* ---------------------------------------------------------------- round trip */

static void test_round_trip(wgt_context *ctx, const char *backend)
{
    char path[300];
    path_in_folder(path, sizeof(path), "round_trip.safetensors");
    int64_t shape23[2] = {2, 3}, shape5[1] = {5}, shape0[2] = {3, 0};
    float f32[6] = {1.5f, -2.25f, 3e-38f, -0.0f, 65504.0f, 1e30f};
    uint16_t f16[6] = {0x3c00, 0xbc00, 0x7bff, 0x0001, 0x8000, 0x3555};
    int32_t i32[5] = {0, -1, 2147483647, -2147483647 - 1, 42};
    uint8_t u8[5] = {0, 1, 127, 128, 255};
    uint8_t b[6] = {1, 0, 0, 1, 1, 0};
    float scalar = 7.0f;
    wgt_tensor *big = wgt_tensor_from_host(ctx, WGT_F32, 2, shape23, f32);
    wgt_named_tensor list[] = {
        {"weight.f32", big},
        {"half", wgt_tensor_from_host(ctx, WGT_F16, 2, shape23, f16)},
        {"ints", wgt_tensor_from_host(ctx, WGT_I32, 1, shape5, i32)},
        {"bytes", wgt_tensor_from_host(ctx, WGT_U8, 1, shape5, u8)},
        {"mask", wgt_tensor_from_host(ctx, WGT_BOOL, 2, shape23, b)},
        {"scalar", wgt_tensor_from_host(ctx, WGT_F32, 0, NULL, &scalar)},
        {"empty", wgt_zeros(ctx, WGT_F32, 2, shape0)},
        {"transposed view \"quoted\" \xc3\xa9", wgt_transpose(big, 0, 1)}, /* a view, escapes, UTF-8 */
    };
    int n = (int)(sizeof(list) / sizeof(list[0]));
    wgt_metadata_entry meta[] = {{"format", "pt"}, {"step", "1234"}, {"note", "line\nbreak \"q\" \xe2\x82\xac"}};
    wgt_status s = wgt_safetensors_save(ctx, path, list, n, meta, 3);
    CHECK(s == WGT_OK, "%s: save: %s", backend, wgt_context_error_message(ctx));
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    CHECK(f != NULL, "%s: open: %s", backend, wgt_context_error_message(ctx));
    if (f) {
        CHECK(wgt_safetensors_count(f) == n, "%s: %d tensors, expected %d", backend, wgt_safetensors_count(f), n);
        CHECK(wgt_safetensors_metadata_count(f) == 3, "%s: metadata count %d", backend,
              wgt_safetensors_metadata_count(f));
        for (int i = 0; i < 3; i++) {
            const char *v = wgt_safetensors_metadata_find(f, meta[i].key);
            CHECK(v && strcmp(v, meta[i].value) == 0, "%s: metadata %s = %s", backend, meta[i].key, v ? v : "(none)");
        }
        for (int i = 0; i < n; i++) {
            wgt_tensor *t = wgt_safetensors_load(f, list[i].name);
            CHECK(t != NULL, "%s: load %s: %s", backend, list[i].name, wgt_context_error_message(ctx));
            if (!t) {
                wgt_context_clear_error(ctx);
                continue;
            }
            wgt_tensor *o = list[i].tensor;
            CHECK(wgt_tensor_dtype(t) == wgt_tensor_dtype(o) && wgt_tensor_ndim(t) == wgt_tensor_ndim(o) &&
                      memcmp(wgt_tensor_shape(t), wgt_tensor_shape(o), sizeof(int64_t) * (size_t)wgt_tensor_ndim(o)) == 0,
                  "%s: %s: dtype or shape differs", backend, list[i].name);
            size_t bytes = (size_t)wgt_tensor_numel(o) * wgt_dtype_size(wgt_tensor_dtype(o));
            unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
            wgt_tensor_read(o, x, bytes);
            wgt_tensor_read(t, y, bytes);
            CHECK(memcmp(x, y, bytes) == 0, "%s: %s: bytes differ after the round trip", backend, list[i].name);
            free(x), free(y);
            wgt_tensor_release(t);
        }
        wgt_safetensors_info info;
        CHECK(wgt_safetensors_info_get(f, 0, &info) == WGT_OK && strcmp(info.name, "weight.f32") == 0 &&
                  strcmp(info.dtype, "F32") == 0 && info.data_bytes == 24,
              "%s: info of the first tensor", backend);
        CHECK(wgt_safetensors_load(f, "missing") == NULL, "%s: a missing name loaded", backend);
        check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "load of a missing name");
        wgt_safetensors_close(f);
    }
    for (int i = 0; i < n; i++) wgt_tensor_release(list[i].tensor);
    /* The temporary file is gone: only round_trip.safetensors is in the folder. */
    DIR *d = opendir(folder);
    int others = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) others++;
    if (d) closedir(d);
    CHECK(others == 0, "%s: %d temporary files left behind", backend, others);
    wgt_context_clear_error(ctx);
}

/* Hand-made BF16 and F64 tensors: bf16 loads as exact f32; F64 opens (the file
 * is valid) but loads as UNSUPPORTED. */
static void test_bf16_and_unsupported(wgt_context *ctx, const char *backend)
{
    /* bf16 1.0 = 0x3f80, -2.5 = 0xc020, 3.140625 = 0x4049; then one f64 2.0 */
    unsigned char data[14] = {0x80, 0x3f, 0x20, 0xc0, 0x49, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x40};
    size_t size;
    unsigned char *file = make_file("{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                                    "\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[6,14]}}",
                                    data, sizeof(data), &size);
    wgt_safetensors *f = wgt_safetensors_open_memory(ctx, file, size, "bf16 test");
    CHECK(f != NULL, "%s: bf16 file: %s", backend, wgt_context_error_message(ctx));
    if (f) {
        wgt_tensor *t = wgt_safetensors_load(f, "b");
        float got[3] = {0};
        CHECK(t && wgt_tensor_dtype(t) == WGT_F32 && wgt_tensor_read(t, got, sizeof(got)) == WGT_OK &&
                  got[0] == 1.0f && got[1] == -2.5f && got[2] == 3.140625f,
              "%s: bf16 as f32: %g %g %g", backend, got[0], got[1], got[2]);
        wgt_tensor_release(t);
        CHECK(wgt_safetensors_load(f, "d") == NULL, "%s: F64 loaded", backend);
        check_error_and_recover(ctx, WGT_ERR_UNSUPPORTED, "F64 tensor");
        wgt_safetensors_close(f);
    }
    free(file);
    /* A BOOL byte that is not 0 or 1. */
    unsigned char bools[3] = {0, 2, 1};
    file = make_file("{\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", bools, 3, &size);
    f = wgt_safetensors_open_memory(ctx, file, size, "bool test");
    CHECK(f && wgt_safetensors_load(f, "m") == NULL, "%s: BOOL byte 2 loaded", backend);
    check_error_and_recover(ctx, WGT_ERR_BAD_FORMAT, "BOOL byte 2");
    wgt_safetensors_close(f);
    free(file);
}

/* ------------------------------------------------ optimizer state, bit exact */

static void test_optimizer_checkpoint(wgt_context *ctx, const char *backend)
{
    char path[300];
    path_in_folder(path, sizeof(path), "checkpoint.safetensors");
    int64_t shape_a[2] = {16, 9}, shape_b[1] = {31};
    wgt_tensor *params[2] = {wgt_randn(ctx, WGT_F32, 2, shape_a, 11), wgt_randn(ctx, WGT_F32, 1, shape_b, 12)};
    wgt_tensor *grads[2][4];
    for (int k = 0; k < 4; k++) {
        grads[0][k] = wgt_randn(ctx, WGT_F32, 2, shape_a, 100 + (uint64_t)k);
        grads[1][k] = wgt_randn(ctx, WGT_F32, 1, shape_b, 200 + (uint64_t)k);
    }
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_ADAMW);
    c.lr = 0.01;
    wgt_optimizer *opt = wgt_optimizer_create(params, 2, &c);
    /* Three steps, parameter 1 skipped on the second. */
    for (int k = 0; opt && k < 3; k++) {
        wgt_tensor_set_grad(params[0], grads[0][k]);
        wgt_tensor_set_grad(params[1], k == 1 ? NULL : grads[1][k]);
        wgt_optimizer_step(opt);
    }
    /* Save parameters, state and counters. */
    wgt_named_tensor list[8];
    int n = 0;
    list[n++] = (wgt_named_tensor){"param.0", params[0]};
    list[n++] = (wgt_named_tensor){"param.1", params[1]};
    for (int i = 0; opt && i < wgt_optimizer_state_count(opt); i++) {
        const char *name;
        wgt_tensor *t;
        wgt_optimizer_state_get(opt, i, &name, &t);
        list[n++] = (wgt_named_tensor){name, t};
    }
    char steps[64], steps0[32], steps1[32];
    snprintf(steps, sizeof(steps), "%lld", (long long)wgt_optimizer_step_count(opt));
    snprintf(steps0, sizeof(steps0), "%lld", (long long)wgt_optimizer_param_steps(opt, 0));
    snprintf(steps1, sizeof(steps1), "%lld", (long long)wgt_optimizer_param_steps(opt, 1));
    wgt_metadata_entry meta[3] = {{"step", steps}, {"param_steps.0", steps0}, {"param_steps.1", steps1}};
    CHECK(opt && wgt_safetensors_save(ctx, path, list, n, meta, 3) == WGT_OK, "%s: checkpoint save: %s", backend,
          wgt_context_error_message(ctx));

    /* Restore into fresh tensors and a fresh optimizer. */
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    wgt_tensor *loaded[2] = {f ? wgt_safetensors_load(f, "param.0") : NULL, f ? wgt_safetensors_load(f, "param.1") : NULL};
    wgt_optimizer *opt2 = loaded[0] && loaded[1] ? wgt_optimizer_create(loaded, 2, &c) : NULL;
    CHECK(opt2 != NULL, "%s: restore: %s", backend, wgt_context_error_message(ctx));
    for (int i = 0; opt2 && i < wgt_optimizer_state_count(opt2); i++) {
        const char *name;
        wgt_tensor *t;
        wgt_optimizer_state_get(opt2, i, &name, &t);
        wgt_tensor *saved = wgt_safetensors_load(f, name);
        CHECK(saved && wgt_assign(t, saved) == WGT_OK, "%s: restore %s", backend, name);
        wgt_tensor_release(saved);
    }
    if (opt2 && f) {
        int64_t per[2] = {atoll(wgt_safetensors_metadata_find(f, "param_steps.0")),
                          atoll(wgt_safetensors_metadata_find(f, "param_steps.1"))};
        CHECK(wgt_optimizer_set_steps(opt2, atoll(wgt_safetensors_metadata_find(f, "step")), per) == WGT_OK,
              "%s: set_steps", backend);
        CHECK(per[0] == 3 && per[1] == 2, "%s: saved per-parameter steps %lld %lld", backend, (long long)per[0],
              (long long)per[1]);
    }
    /* One more step on both: the parameters agree bit for bit. */
    for (int p = 0; opt && opt2 && p < 2; p++) {
        wgt_tensor_set_grad(params[p], grads[p][3]);
        wgt_tensor_set_grad(loaded[p], grads[p][3]);
    }
    if (opt && opt2) {
        wgt_optimizer_step(opt);
        wgt_optimizer_step(opt2);
        for (int p = 0; p < 2; p++) {
            int64_t numel = wgt_tensor_numel(params[p]);
            float *x = malloc((size_t)numel * 4), *y = malloc((size_t)numel * 4);
            wgt_tensor_read(params[p], x, (size_t)numel * 4);
            wgt_tensor_read(loaded[p], y, (size_t)numel * 4);
            CHECK(memcmp(x, y, (size_t)numel * 4) == 0, "%s: parameter %d differs after a step from the checkpoint",
                  backend, p);
            free(x), free(y);
        }
        CHECK(wgt_optimizer_step_count(opt2) == 4, "%s: restored step count %lld", backend,
              (long long)wgt_optimizer_step_count(opt2));
    }
    wgt_optimizer_destroy(opt);
    wgt_optimizer_destroy(opt2);
    wgt_safetensors_close(f);
    for (int p = 0; p < 2; p++) {
        wgt_tensor_release(params[p]);
        wgt_tensor_release(loaded[p]);
        for (int k = 0; k < 4; k++) wgt_tensor_release(grads[p][k]);
    }
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: checkpoint: %s", backend, wgt_context_error_message(ctx));
    wgt_context_clear_error(ctx);
}

/* wgt_checkpoint_save / _load: the same round trip in one call each, and
 * refused loads that change nothing. */
static bool same_bits(wgt_tensor *a, wgt_tensor *b)
{
    size_t bytes = (size_t)wgt_tensor_numel(a) * wgt_dtype_size(wgt_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    bool same = wgt_tensor_read(a, x, bytes) == WGT_OK && wgt_tensor_read(b, y, bytes) == WGT_OK &&
                memcmp(x, y, bytes) == 0;
    free(x), free(y);
    return same;
}

static void test_checkpoint_api(wgt_context *ctx, const char *backend)
{
    char path[300];
    path_in_folder(path, sizeof(path), "api.safetensors");
    int64_t shape_a[2] = {8, 5}, shape_b[1] = {13};
    wgt_tensor *p[2] = {wgt_randn(ctx, WGT_F32, 2, shape_a, 21), wgt_randn(ctx, WGT_F32, 1, shape_b, 22)};
    wgt_tensor *q[2] = {wgt_zeros(ctx, WGT_F32, 2, shape_a), wgt_zeros(ctx, WGT_F32, 1, shape_b)};
    wgt_tensor *g[2] = {wgt_randn(ctx, WGT_F32, 2, shape_a, 23), wgt_randn(ctx, WGT_F32, 1, shape_b, 24)};
    wgt_optimizer_config c;
    wgt_optimizer_config_init(&c, WGT_OPTIMIZER_SGD);
    c.momentum = 0.9, c.nesterov = true, c.lr = 0.1;
    wgt_optimizer *opt = wgt_optimizer_create(p, 2, &c), *opt2 = wgt_optimizer_create(q, 2, &c);
    for (int k = 0; opt && k < 3; k++) {
        wgt_tensor_set_grad(p[0], g[0]);
        wgt_tensor_set_grad(p[1], k == 0 ? NULL : g[1]);
        wgt_optimizer_step(opt);
    }
    wgt_named_tensor saved[2] = {{"layer.weight", p[0]}, {"layer.bias", p[1]}};
    wgt_named_tensor target[2] = {{"layer.weight", q[0]}, {"layer.bias", q[1]}};
    wgt_metadata_entry meta = {"epoch", "2"};
    CHECK(opt && opt2 && wgt_checkpoint_save(path, saved, 2, opt, &meta, 1) == WGT_OK, "%s: checkpoint_save: %s",
          backend, wgt_context_error_message(ctx));
    /* Refusals change nothing: a wrong shape, a missing name, another kind. */
    int64_t shape_c[1] = {14};
    wgt_tensor *wrong = wgt_zeros(ctx, WGT_F32, 1, shape_c);
    wgt_named_tensor bad_shape[2] = {{"layer.weight", q[0]}, {"layer.bias", wrong}};
    CHECK(wgt_checkpoint_load(path, bad_shape, 2, opt2) == WGT_ERR_SHAPE_MISMATCH, "%s: wrong shape loaded", backend);
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "checkpoint into a wrong shape");
    float kept[40] = {1};
    CHECK(wgt_tensor_read(q[0], kept, sizeof(kept)) == WGT_OK && kept[0] == 0.0f && kept[39] == 0.0f,
          "%s: a refused checkpoint changed a parameter", backend);
    wgt_named_tensor missing = {"layer.missing", q[1]};
    CHECK(wgt_checkpoint_load(path, &missing, 1, NULL) == WGT_ERR_BAD_FORMAT, "%s: missing name loaded", backend);
    check_error_and_recover(ctx, WGT_ERR_BAD_FORMAT, "checkpoint without a parameter");
    wgt_optimizer_config ca;
    wgt_optimizer_config_init(&ca, WGT_OPTIMIZER_ADAM);
    wgt_optimizer *adam = wgt_optimizer_create(q, 2, &ca);
    CHECK(wgt_checkpoint_load(path, target, 2, adam) == WGT_ERR_INVALID_ARGUMENT, "%s: sgd state into adam", backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "sgd checkpoint into adam");
    wgt_optimizer_destroy(adam);
    wgt_metadata_entry reserved = {"optimizer.step", "1"};
    CHECK(wgt_checkpoint_save(path, saved, 2, opt, &reserved, 1) == WGT_ERR_INVALID_ARGUMENT, "%s: reserved key",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "checkpoint with a reserved metadata key");
    /* The real load, then one more step on both: the same bits. */
    CHECK(wgt_checkpoint_load(path, target, 2, opt2) == WGT_OK, "%s: checkpoint_load: %s", backend,
          wgt_context_error_message(ctx));
    CHECK(same_bits(p[0], q[0]) && same_bits(p[1], q[1]), "%s: parameters differ after checkpoint_load", backend);
    CHECK(wgt_optimizer_step_count(opt2) == 3 && wgt_optimizer_param_steps(opt2, 1) == 2,
          "%s: counters %lld, %lld after checkpoint_load", backend, (long long)wgt_optimizer_step_count(opt2),
          (long long)wgt_optimizer_param_steps(opt2, 1));
    for (int k = 0; k < 2; k++) wgt_tensor_set_grad(p[k], g[k]), wgt_tensor_set_grad(q[k], g[k]);
    if (opt && opt2) wgt_optimizer_step(opt), wgt_optimizer_step(opt2);
    CHECK(same_bits(p[0], q[0]) && same_bits(p[1], q[1]), "%s: a step after checkpoint_load differs", backend);
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    const char *epoch = f ? wgt_safetensors_metadata_find(f, "epoch") : NULL;
    CHECK(epoch && strcmp(epoch, "2") == 0, "%s: caller metadata lost", backend);
    wgt_safetensors_close(f);
    wgt_optimizer_destroy(opt);
    wgt_optimizer_destroy(opt2);
    wgt_tensor_release(wrong);
    for (int k = 0; k < 2; k++) wgt_tensor_release(p[k]), wgt_tensor_release(q[k]), wgt_tensor_release(g[k]);
    wgt_context_clear_error(ctx);
}

/* ------------------------------------------------------------ atomic saves */

static void test_atomic_and_bad_saves(wgt_context *ctx, const char *backend)
{
    char path[300], bad[320];
    path_in_folder(path, sizeof(path), "atomic.safetensors");
    int64_t n4 = 4;
    float a[4] = {1, 2, 3, 4};
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n4, a);
    wgt_named_tensor one = {"t", t};
    CHECK(wgt_safetensors_save(ctx, path, &one, 1, NULL, 0) == WGT_OK, "%s: save", backend);
    /* A save into a folder that does not exist fails with IO; nothing is created. */
    snprintf(bad, sizeof(bad), "%s/no/such/folder/x.safetensors", folder);
    CHECK(wgt_safetensors_save(ctx, bad, &one, 1, NULL, 0) == WGT_ERR_IO, "%s: save into a missing folder", backend);
    check_error_and_recover(ctx, WGT_ERR_IO, "save into a missing folder");
    /* Refused arguments leave the existing file as it was. */
    wgt_named_tensor twice[2] = {{"t", t}, {"t", t}};
    CHECK(wgt_safetensors_save(ctx, path, twice, 2, NULL, 0) == WGT_ERR_INVALID_ARGUMENT, "%s: duplicate names",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "save with duplicate names");
    wgt_named_tensor bad_utf8 = {"\xff\xfe", t};
    CHECK(wgt_safetensors_save(ctx, path, &bad_utf8, 1, NULL, 0) == WGT_ERR_INVALID_ARGUMENT, "%s: non-UTF-8 name",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "save with a non-UTF-8 name");
    wgt_named_tensor reserved = {"__metadata__", t};
    CHECK(wgt_safetensors_save(ctx, path, &reserved, 1, NULL, 0) == WGT_ERR_INVALID_ARGUMENT, "%s: reserved name",
          backend);
    check_error_and_recover(ctx, WGT_ERR_INVALID_ARGUMENT, "save with the name __metadata__");
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    CHECK(f && wgt_safetensors_count(f) == 1 && wgt_safetensors_find(f, "t") == 0, "%s: the old file changed", backend);
    wgt_safetensors_close(f);
    /* The file starts with the header length and the data is 8-byte aligned. */
    FILE *fp = fopen(path, "rb");
    unsigned char len[8] = {0};
    size_t got = fp ? fread(len, 1, 8, fp) : 0;
    if (fp) fclose(fp);
    uint64_t header = 0;
    for (int i = 7; i >= 0; i--) header = header << 8 | len[i];
    CHECK(got == 8 && (8 + header) % 8 == 0, "%s: data section not 8-byte aligned (header %llu)", backend,
          (unsigned long long)header);
    CHECK(wgt_safetensors_open(ctx, bad) == NULL, "%s: opened a missing file", backend);
    check_error_and_recover(ctx, WGT_ERR_IO, "open of a missing file");
    wgt_tensor_release(t);
}

/* ------------------------------------------------------------ corrupt files */

typedef struct corrupt_case {
    const char *what;
    const char *header;     /* NULL: raw bytes below */
    size_t data_len;        /* zero bytes of data after the header */
    const char *reason;     /* a word the message must contain */
} corrupt_case;

static const corrupt_case corrupt_cases[] = {
    {"invalid JSON (cut off)", "{\"a\":{\"dtype\":\"F32\",", 0, "JSON"},
    {"invalid JSON (trailing comma)", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "JSON"},
    {"not an object", "[1, 2]", 0, "JSON"},
    {"bytes after the object", "{} x", 0, "after"},
    {"non-UTF-8 name", "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "UTF-8"},
    {"overlong UTF-8", "{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "UTF-8"},
    {"lone surrogate escape", "{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "surrogate"},
    {"control character in a name", "{\"a\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "control"},
    {"duplicate tensor names",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate"},
    {"duplicate key in a tensor", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     4, "duplicate"},
    {"duplicate metadata key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicate"},
    {"two __metadata__", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate"},
    {"metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0, "string"},
    {"unknown dtype", "{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
    {"missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "lacks"},
    {"shape x size != range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 20, "shape"},
    {"negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "negative"},
    {"fractional shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "integer"},
    {"shape overflowing int64",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904,4],\"data_offsets\":[0,4]}}", 4,
     "overflow"},
    {"shape x dtype size overflowing",
     "{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", 8, "shape"},
    {"dim over 2^63", "{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999],\"data_offsets\":[0,1]}}", 1, "2^63"},
    {"offsets out of range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "beyond"},
    {"offsets end < begin", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, "end < begin"},
    {"three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "exactly two"},
    {"overlapping ranges",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlaps"},
    {"gap between ranges",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "gap"},
    {"range not starting at 0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap"},
    {"trailing data bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, "cover"},
    {"unknown member nested too deep",
     "{\"a\":{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],\"dtype\":\"U8\",\"shape\":[0],"
     "\"data_offsets\":[0,0]}}", 0, "deeper"},
    {"duplicate key in an unknown member", "{\"a\":{\"x\":{\"k\":1,\"k\":2},\"dtype\":\"U8\",\"shape\":[0],"
     "\"data_offsets\":[0,0]}}", 0, "duplicate"},
    {"escaped NUL in a name", "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "u0000"},
};

static void expect_bad_format(wgt_context *ctx, const unsigned char *file, size_t size, const char *what,
                              const char *reason)
{
    wgt_safetensors *f = wgt_safetensors_open_memory(ctx, file, size, what);
    CHECK(f == NULL, "%s: accepted", what);
    wgt_safetensors_close(f);
    const char *msg = wgt_context_error_message(ctx);
    CHECK(strstr(msg, reason) != NULL && strstr(msg, what) != NULL, "%s: message \"%s\" lacks \"%s\" or the file",
          what, msg, reason);
    check_error_and_recover(ctx, WGT_ERR_BAD_FORMAT, what);
}

static void test_corrupt_files(wgt_context *ctx, const char *backend)
{
    unsigned char zeros[64] = {0};
    for (size_t i = 0; i < sizeof(corrupt_cases) / sizeof(corrupt_cases[0]); i++) {
        const corrupt_case *c = &corrupt_cases[i];
        size_t size;
        unsigned char *file = make_file(c->header, zeros, c->data_len, &size);
        expect_bad_format(ctx, file, size, c->what, c->reason);
        free(file);
    }
    /* Truncated: fewer than 8 bytes; a header length past the end of the file;
     * a header length over the 100 MB limit (checked before anything else). */
    unsigned char tiny[5] = {2, 0, 0, 0, 0};
    expect_bad_format(ctx, tiny, sizeof(tiny), "truncated file", "truncated");
    size_t size;
    unsigned char *file = make_file("{}", NULL, 0, &size);
    file[0] = 200; /* claims 200 header bytes, has 2 */
    expect_bad_format(ctx, file, size, "header length past the end", "past the end");
    uint64_t huge = 100000001;
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)(huge >> (8 * i));
    expect_bad_format(ctx, file, size, "oversized header", "limit");
    for (int i = 0; i < 8; i++) file[i] = 0xff;
    expect_bad_format(ctx, file, size, "header length 2^64-1", "limit");
    free(file);
    /* The same checks on a real file (the mmap path). */
    char path[300];
    path_in_folder(path, sizeof(path), "corrupt.safetensors");
    const corrupt_case *overlap = &corrupt_cases[0];
    for (size_t i = 0; i < sizeof(corrupt_cases) / sizeof(corrupt_cases[0]); i++)
        if (strcmp(corrupt_cases[i].what, "overlapping ranges") == 0) overlap = &corrupt_cases[i];
    file = make_file(overlap->header, zeros, overlap->data_len, &size);
    FILE *fp = fopen(path, "wb");
    if (fp) fwrite(file, 1, size, fp), fclose(fp);
    CHECK(wgt_safetensors_open(ctx, path) == NULL, "%s: corrupt file on disk accepted", backend);
    CHECK(strstr(wgt_context_error_message(ctx), "overlaps") && strstr(wgt_context_error_message(ctx), "\"b\""),
          "%s: message names the reason and the tensor: %s", backend, wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_BAD_FORMAT, "corrupt file on disk");
    free(file);
    /* An empty file on disk. */
    path_in_folder(path, sizeof(path), "empty.safetensors");
    fp = fopen(path, "wb");
    if (fp) fclose(fp);
    CHECK(wgt_safetensors_open(ctx, path) == NULL, "%s: empty file accepted", backend);
    check_error_and_recover(ctx, WGT_ERR_BAD_FORMAT, "empty file");
    /* A FIFO or a folder named as a checkpoint: refused as IO, without blocking. */
    path_in_folder(path, sizeof(path), "fifo.safetensors");
    if (mkfifo(path, 0600) == 0) {
        CHECK(wgt_safetensors_open(ctx, path) == NULL, "%s: a FIFO opened", backend);
        check_error_and_recover(ctx, WGT_ERR_IO, "FIFO as a checkpoint");
    }
    CHECK(wgt_safetensors_open(ctx, folder) == NULL, "%s: a folder opened", backend);
    check_error_and_recover(ctx, WGT_ERR_IO, "folder as a checkpoint");
    /* Valid edge cases are accepted: no tensors, padding spaces, escapes. */
    file = make_file("{\"__metadata__\":{\"k\\u00e9\\ud83d\\ude00\":\"v\"}}   ", NULL, 0, &size);
    wgt_safetensors *f = wgt_safetensors_open_memory(ctx, file, size, "valid edge cases");
    CHECK(f && wgt_safetensors_count(f) == 0 &&
              wgt_safetensors_metadata_find(f, "k\xc3\xa9\xf0\x9f\x98\x80") != NULL,
          "%s: valid header refused: %s", backend, wgt_context_error_message(ctx));
    wgt_safetensors_close(f);
    free(file);
    wgt_context_clear_error(ctx);
}

static void run_backend(wgt_context *ctx, const char *backend)
{
    if (!ctx) return;
    test_round_trip(ctx, backend);
    test_bf16_and_unsupported(ctx, backend);
    test_optimizer_checkpoint(ctx, backend);
    test_checkpoint_api(ctx, backend);
    test_atomic_and_bad_saves(ctx, backend);
    test_corrupt_files(ctx, backend);
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: context left in error: %s", backend, wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);
}

static void remove_folder(void)
{
    DIR *d = opendir(folder);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", folder, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(folder);
}

int main(void)
{
    snprintf(folder, sizeof(folder), "%s/wgt_safetensors_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(folder)) {
        fprintf(stderr, "FAIL: cannot create a temporary folder\n");
        return 1;
    }
    run_backend(test_cpu_context(), "cpu");
    run_backend(test_webgpu_context(), "webgpu");
    remove_folder();
    return test_summary();
}
