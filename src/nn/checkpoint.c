/*
 * Training checkpoints: parameters + optimizer state + step counters in one
 * safetensors file (docs/checkpoints.md).
 *
 *   tensors   "<parameter name>"            each parameter, as named by the caller
 *             "optimizer.<state name>"      e.g. optimizer.exp_avg.3 (wgt_optimizer_state_get)
 *   metadata  "optimizer.kind"              "sgd", "adam" or "adamw"
 *             "optimizer.step"              calls of wgt_optimizer_step
 *             "optimizer.param_steps"       "3,3,2": steps each parameter took
 *             the caller's own entries
 *
 * Loading checks everything it will restore before it writes a byte (names
 * present, shapes and dtypes equal, counters well formed), then copies each
 * tensor in place: f32 stays f32, so the round trip is bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_common.h"

#define PREFIX "optimizer."

static const char *kind_name(wgt_optimizer_kind kind)
{
    return kind == WGT_OPTIMIZER_SGD ? "sgd" : kind == WGT_OPTIMIZER_ADAM ? "adam" : "adamw";
}

/* The context of the call: the first tensor's, or the optimizer's state's. */
static wgt_context *checkpoint_context(const wgt_named_tensor *params, int n, wgt_optimizer *opt)
{
    for (int i = 0; params && i < n; i++)
        if (params[i].tensor) return wgt_tensor_context(params[i].tensor);
    wgt_tensor *t = NULL;
    if (opt && wgt_optimizer_state_count(opt) > 0) wgt_optimizer_state_get(opt, 0, NULL, &t);
    return t ? wgt_tensor_context(t) : NULL;
}

wgt_status wgt_checkpoint_save(const char *path, const wgt_named_tensor *params, int n, wgt_optimizer *opt,
                               const wgt_metadata_entry *metadata, int n_metadata)
{
    const char *op = "wgt_checkpoint_save";
    wgt_context *ctx = checkpoint_context(params, n, opt);
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->status != WGT_OK) return ctx->status;
    if (n < 0 || (n > 0 && !params) || n_metadata < 0 || (n_metadata > 0 && !metadata))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL list or negative count", op);
    for (int i = 0; i < n_metadata; i++)
        if (metadata[i].key && strncmp(metadata[i].key, PREFIX, strlen(PREFIX)) == 0)
            return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: metadata key \"%s\" uses the reserved prefix \"%s\"",
                             op, metadata[i].key, PREFIX);
    int n_state = opt ? wgt_optimizer_state_count(opt) : 0, n_opt_params = opt ? wgt_optimizer_param_count(opt) : 0;
    int n_tensors = n + n_state, n_meta = n_metadata + (opt ? 3 : 0);
    wgt_named_tensor *list = calloc((size_t)n_tensors + 1, sizeof(*list));
    wgt_metadata_entry *meta = calloc((size_t)n_meta + 1, sizeof(*meta));
    char *names = calloc((size_t)n_state + 1, 64);
    char *steps_text = calloc((size_t)n_opt_params + 1, 24);
    char step[24];
    wgt_status s = WGT_OK;
    if (!list || !meta || !names || !steps_text)
        s = wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int i = 0; s == WGT_OK && i < n; i++) list[i] = params[i];
    for (int i = 0; s == WGT_OK && i < n_state; i++) {
        const char *name;
        wgt_tensor *t;
        wgt_optimizer_state_get(opt, i, &name, &t);
        snprintf(names + 64 * (size_t)i, 64, PREFIX "%s", name);
        list[n + i] = (wgt_named_tensor){names + 64 * (size_t)i, t};
    }
    for (int i = 0; s == WGT_OK && i < n_metadata; i++) meta[i] = metadata[i];
    if (s == WGT_OK && opt) {
        wgt_optimizer_config config;
        wgt_optimizer_config_get(opt, &config);
        size_t used = 0;
        for (int i = 0; i < n_opt_params; i++)
            used += (size_t)snprintf(steps_text + used, 24, "%s%lld", i ? "," : "",
                                     (long long)wgt_optimizer_param_steps(opt, i));
        snprintf(step, sizeof(step), "%lld", (long long)wgt_optimizer_step_count(opt));
        meta[n_metadata] = (wgt_metadata_entry){PREFIX "kind", kind_name(config.kind)};
        meta[n_metadata + 1] = (wgt_metadata_entry){PREFIX "step", step};
        meta[n_metadata + 2] = (wgt_metadata_entry){PREFIX "param_steps", steps_text};
    }
    if (s == WGT_OK) s = wgt_safetensors_save(ctx, path, list, n_tensors, meta, n_meta);
    free(list), free(meta), free(names), free(steps_text);
    return s;
}

static bool dtype_matches(const char *file_dtype, wgt_dtype dtype)
{
    switch (dtype) {
    case WGT_F32: return strcmp(file_dtype, "F32") == 0 || strcmp(file_dtype, "BF16") == 0;
    case WGT_F16: return strcmp(file_dtype, "F16") == 0;
    case WGT_I32: return strcmp(file_dtype, "I32") == 0;
    case WGT_U8: return strcmp(file_dtype, "U8") == 0;
    case WGT_BOOL: return strcmp(file_dtype, "BOOL") == 0;
    default: return false;
    }
}

/* The file has a tensor name matching t's dtype and shape; else an error. */
static wgt_status check_entry(wgt_context *ctx, wgt_safetensors *f, const char *path, const char *name, wgt_tensor *t)
{
    const char *op = "wgt_checkpoint_load";
    int index = wgt_safetensors_find(f, name);
    if (index < 0) return wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s has no tensor \"%s\"", op, path, name);
    wgt_safetensors_info info;
    wgt_safetensors_info_get(f, index, &info);
    if (!dtype_matches(info.dtype, wgt_tensor_dtype(t)))
        return wgt_error(ctx, WGT_ERR_DTYPE, "%s: %s: \"%s\" is %s in the file, %s in memory", op, path, name,
                         info.dtype, wgt_dtype_name(wgt_tensor_dtype(t)));
    int ndim = wgt_tensor_ndim(t);
    if (info.ndim != ndim || memcmp(info.shape, wgt_tensor_shape(t), sizeof(int64_t) * (size_t)ndim) != 0) {
        char a[160], b[160];
        return wgt_error(ctx, WGT_ERR_SHAPE_MISMATCH, "%s: %s: \"%s\" is %s in the file, %s in memory", op, path,
                         name, info.ndim <= WGT_MAX_DIMS ? wgt_shape_string(info.ndim, info.shape, a, sizeof(a)) : "(rank > 8)",
                         wgt_shape_string(ndim, wgt_tensor_shape(t), b, sizeof(b)));
    }
    return WGT_OK;
}

static wgt_status restore(wgt_safetensors *f, const char *name, wgt_tensor *t)
{
    wgt_tensor *saved = wgt_safetensors_load(f, name);
    if (!saved) return wgt_context_status(wgt_tensor_context(t));
    wgt_status s = wgt_assign(t, saved);
    wgt_tensor_release(saved);
    return s;
}

/* "3,3,2" into steps[n]; false if malformed. */
static bool parse_steps(const char *text, int n, int64_t *steps)
{
    const char *p = text;
    for (int i = 0; i < n; i++) {
        if (i > 0 && *p++ != ',') return false;
        if (*p < '0' || *p > '9') return false;
        int64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            if (v > (INT64_MAX - 9) / 10) return false;
            v = v * 10 + (*p++ - '0');
        }
        steps[i] = v;
    }
    return *p == 0;
}

wgt_status wgt_checkpoint_load(const char *path, const wgt_named_tensor *params, int n, wgt_optimizer *opt)
{
    const char *op = "wgt_checkpoint_load";
    wgt_context *ctx = checkpoint_context(params, n, opt);
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    if (ctx->status != WGT_OK) return ctx->status;
    if (n < 0 || (n > 0 && !params) || !path)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL path or list, or a negative count", op);
    for (int i = 0; i < n; i++)
        if (!params[i].name || !params[i].tensor)
            return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: parameter %d has no name or tensor", op, i);
    wgt_safetensors *f = wgt_safetensors_open(ctx, path);
    if (!f) return ctx->status;
    int n_opt_params = opt ? wgt_optimizer_param_count(opt) : 0;
    int64_t *param_steps = calloc((size_t)n_opt_params + 1, sizeof(int64_t)), step = 0;
    wgt_status s = param_steps ? WGT_OK : wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    /* Check everything first: a refused checkpoint changes nothing. */
    for (int i = 0; s == WGT_OK && i < n; i++) s = check_entry(ctx, f, path, params[i].name, params[i].tensor);
    if (s == WGT_OK && opt) {
        wgt_optimizer_config config;
        wgt_optimizer_config_get(opt, &config);
        const char *kind = wgt_safetensors_metadata_find(f, PREFIX "kind");
        const char *step_text = wgt_safetensors_metadata_find(f, PREFIX "step");
        const char *steps_text = wgt_safetensors_metadata_find(f, PREFIX "param_steps");
        if (!kind || !step_text || !steps_text)
            s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s holds no optimizer counters (optimizer.kind, .step, "
                          ".param_steps)", op, path);
        else if (strcmp(kind, kind_name(config.kind)) != 0)
            s = wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s holds %s state, the optimizer is %s", op, path, kind,
                          kind_name(config.kind));
        else if (!parse_steps(step_text, 1, &step) || !parse_steps(steps_text, n_opt_params, param_steps))
            s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: optimizer.step \"%.40s\" or optimizer.param_steps "
                          "\"%.80s\" is not %d counters", op, path, step_text, steps_text, n_opt_params);
        for (int i = 0; s == WGT_OK && i < wgt_optimizer_state_count(opt); i++) {
            const char *name;
            wgt_tensor *t;
            char full[96];
            wgt_optimizer_state_get(opt, i, &name, &t);
            snprintf(full, sizeof(full), PREFIX "%s", name);
            s = check_entry(ctx, f, path, full, t);
        }
        for (int i = 0; s == WGT_OK && i < n_opt_params; i++)
            if (param_steps[i] > step)
                s = wgt_error(ctx, WGT_ERR_BAD_FORMAT, "%s: %s: parameter %d took %lld steps of %lld", op, path, i,
                              (long long)param_steps[i], (long long)step);
    }
    /* Then restore. */
    for (int i = 0; s == WGT_OK && i < n; i++) s = restore(f, params[i].name, params[i].tensor);
    for (int i = 0; s == WGT_OK && opt && i < wgt_optimizer_state_count(opt); i++) {
        const char *name;
        wgt_tensor *t;
        char full[96];
        wgt_optimizer_state_get(opt, i, &name, &t);
        snprintf(full, sizeof(full), PREFIX "%s", name);
        s = restore(f, full, t);
    }
    if (s == WGT_OK && opt) s = wgt_optimizer_set_steps(opt, step, param_steps);
    free(param_steps);
    wgt_safetensors_close(f);
    return s;
}
