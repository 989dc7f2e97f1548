/*
 * ELEMENTWISE on WebGPU: out = expr(inputs) for every expression program of
 * src/core/expr.h (ops, casts, copies, fills, slice assignment, tril/triu,
 * one_hot, arange/linspace/eye, rand/randn), with the CPU backend's semantics.
 *
 *   inputs[k]: [d0, .., dn) (broadcast by stride 0), any dtype, strides, offset
 *   -> out:    [d0, .., dn) any view (slice assignment stores through strides)
 *
 * This file plans a call (collapses dims, classifies views, picks bindings and
 * the store strategy), finds or builds its pipeline, fills Params and
 * dispatches. The WGSL comes from webgpu_elementwise_codegen.c; one pipeline
 * serves every shape, stride, offset and seed of the same program and dtypes.
 *
 * Environment: WGT_WEBGPU_DISABLE_F16=1 forces the portable f16 paths: strided
 * f16 outputs through atomic word updates even where shader-f16 is available,
 * and the exact integer f16 conversions even where the hardware's were found
 * identical (so tests can cover both). WGT_WEBGPU_GRID_LIMIT=n folds the grid
 * into 2-D rows of n workgroups (tests reach the fold without huge tensors).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_elementwise.h"
#include "webgpu/webgpu_transpose.h"

#define EW_KEY_MAX 8192
#define EW_NUMEL_MAX (UINT32_MAX - 64) /* positions (index + shift, rounded to chunks) stay in u32 */

typedef struct ew_launch {
    ew_plan plan;
    uint32_t words[EW_P_WORDS];
    int n_words;                            /* Params prefix in use */
    uint64_t chunks;
    WGPUBuffer buffers[EW_MAX_VIEWS];       /* per binding */
    int aliased_input;                      /* input sharing the output's storage, or -1 */
} ew_launch;

/* ------------------------------------------------------------- validation */

static bool expr_is_valid(const wgt_expr *e, int n_inputs, int out_ndim)
{
    if (!e || e->n_nodes < 1 || e->n_nodes > WGT_EXPR_MAX_NODES) return false;
    for (int j = 0; j < e->n_nodes; j++) {
        const wgt_expr_node *n = &e->nodes[j];
        if (n->opcode >= WGT_EXPR_OPCODE_COUNT || n->type > WGT_EXPR_I32) return false;
        for (int a = 0; a < wgt_expr_opcode_arity((wgt_expr_opcode)n->opcode); a++)
            if (n->args[a] < 0 || n->args[a] >= j) return false;
        if (n->opcode == WGT_EXPR_INPUT && (n->input_index < 0 || n->input_index >= n_inputs)) return false;
        if (n->opcode == WGT_EXPR_INDEX && (n->axis < 0 || n->axis >= (out_ndim > 0 ? out_ndim : 1))) return false;
    }
    return true;
}

/* Smallest and largest element index a view touches. */
static void view_extent(const wgt_tensor_view *v, int64_t *lo, int64_t *hi)
{
    /* Checked: an extent past int64 reads as lo = -1, outside any storage. */
    if (!wgt_view_extent(v, lo, hi)) *lo = -1;
}

/* ------------------------------------------------------------------ planning */

static atomic_uint_fast64_t inner_contiguous_runs;

uint64_t webgpu_elementwise_inner_contiguous_count(void) { return (uint64_t)atomic_load(&inner_contiguous_runs); }

/* Bindings are array<vec4<u32>> where the buffer holds whole vec4s. */
static bool buffer_is_vec4(WGPUBuffer buffer) { return wgpuBufferGetSize(buffer) % 16 == 0; }

/* Whether a strided output's full chunks move as whole vec4s (plan.inner_contiguous).
 * Why: on an H100, wgt_assign of a contiguous [64, 6, 256, 64] f32 tensor into
 * the [B, H, T, D] view of a [64, 256, 1152] qkv buffer (strides 256*1152, 64,
 * 1152, 1) took 41 us for 25 MB read and 25 MB written, 1.2 TB/s where a plain
 * copy runs at ~2.8 TB/s: each invocation stored its 4 elements one by one, so
 * a warp's 4 store instructions each wrote 4-byte words 16 bytes apart. A GPT
 * training step does 18 such copies. Here C = 4 (every view f32 or i32) and
 * every strided view (the output among them) has stride 1 on the innermost
 * collapsed dim, whose size is a multiple of C, and an offset and outer strides
 * that are multiples of C: chunk [C t, C t + C) is then 4 consecutive elements
 * of one row, 16-byte aligned in a binding that holds whole vec4s. */
static bool inner_contiguous(const ew_plan *plan, const wgt_tensor_view *const *views, int nd, const int64_t *shape,
                             int64_t (*strides)[WGT_MAX_DIMS], bool out_vec4)
{
    int C = plan->chunk;
    if (plan->store != EW_STORE_WORD || !out_vec4 || nd < 1 || shape[nd - 1] % C != 0) return false;
    for (int v = 0; v < plan->n_views; v++) {
        if (plan->dtype[v] != WGT_F32 && plan->dtype[v] != WGT_I32) return false;
        if (plan->mode[v] != EW_MODE_STRIDED) continue;
        if (v > 0 && !plan->vec4_binding[plan->binding[v]]) return false;
        if (strides[v][nd - 1] != 1 || views[v]->offset % C != 0) return false;
        for (int d = 0; d < nd - 1; d++)
            if (strides[v][d] % C != 0) return false;
    }
    return true;
}

/* -------------------------------------------------------- f16 conversions */

/* Whether the hardware f16 conversions (unpack2x16float, pack2x16float) give
 * exactly the library's results: WGSL leaves their rounding and range to the
 * implementation, so a kernel compares them with the exact integer versions of
 * elementwise_common.wgsl on every half (widening) and on every f16 rounding
 * boundary, both sides of it and the overflow and underflow edges (narrowing;
 * NaNs need only stay NaN). Measured once per device; on any failure the
 * integer versions are used. */
static const char calibration_main[] =
    "@group(0) @binding(0) var<storage, read> cal_in: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> cal_out: array<atomic<u32>>;\n"
    "@compute @workgroup_size(256)\n"
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
    "    let i = gid.x;\n"
    "    if (i < 65536u) {\n"
    "        let a = unpack2x16float(i).x;\n"
    "        let b = ew_f16_to_f32_exact(i);\n"
    "        if (bitcast<u32>(a) != bitcast<u32>(b) && !(ew_isnan(a) && ew_isnan(b))) { atomicOr(&cal_out[0], 1u); }\n"
    "    }\n"
    "    if (i < cal_in[0]) {\n"
    "        let f = bitcast<f32>(cal_in[1u + i]);\n"
    "        let hw = pack2x16float(vec2<f32>(f, 0.0)) & 0xffffu;\n"
    "        let sw = ew_f32_to_f16_exact(f);\n"
    "        if (hw != sw && !((hw & 0x7fffu) > 0x7c00u && (sw & 0x7fffu) > 0x7c00u)) { atomicOr(&cal_out[0], 2u); }\n"
    "    }\n"
    "}\n";

static float half_value(uint32_t h) /* finite, non-negative halves */
{
    uint32_t e = h >> 10, m = h & 0x3ff;
    return e ? ldexpf((float)(m | 0x400), (int)e - 25) : ldexpf((float)m, -24);
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Narrowing cases: each finite half, the midpoint to the next one (the next of
 * 65504 being 65536, where rounding overflows) and its two neighbours, both
 * signs; then infinities, NaNs and values beyond both ends. */
static uint32_t *narrowing_cases(uint32_t *count)
{
    static const uint32_t extra[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffc00000u, 0x7f7fffffu,
                                     0x47800000u, 0x477fefffu, 0x477ff000u, 0x33000000u, 0x33000001u, 0x32ffffffu,
                                     0x2f800000u, 0x00000001u, 0x80000001u, 0x00800000u, 0x4f000000u, 0x00000000u};
    size_t n_extra = sizeof(extra) / sizeof(extra[0]), n = 0, cap = 1 + 8 * 0x7c00 + n_extra;
    uint32_t *v = malloc(cap * 4);
    if (!v) return NULL;
    n = 1;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float lo = half_value(h), hi = h + 1 < 0x7c00 ? half_value(h + 1) : 65536.0f, mid = (lo + hi) * 0.5f;
        uint32_t cases[4] = {float_bits(lo), float_bits(mid), float_bits(mid) - 1, float_bits(mid) + 1};
        for (int c = 0; c < 4; c++) {
            if (c == 2 && mid == 0.0f) continue;
            v[n++] = cases[c];
            v[n++] = cases[c] | 0x80000000u;
        }
    }
    for (size_t i = 0; i < n_extra; i++) v[n++] = extra[i];
    v[0] = (uint32_t)(n - 1);
    *count = (uint32_t)n;
    return v;
}

static bool measure_f16_conversions(webgpu_backend *wg, bool *widen, bool *narrow)
{
    const char *common = webgpu_kernel_source("elementwise_common");
    uint32_t n = 0;
    uint32_t *cases = narrowing_cases(&n);
    char *source = common ? malloc(strlen(common) + sizeof calibration_main) : NULL;
    void *in = NULL, *out = NULL;
    bool ok = false;
    if (cases && source) {
        strcpy(source, common);
        strcat(source, calibration_main);
        webgpu_pipeline *p = webgpu_pipeline_find(wg, "elementwise;f16-calibration");
        uint32_t zero[4] = {0, 0, 0, 0}, result = 0;
        ok = (p || webgpu_pipeline_create(wg, "elementwise;f16-calibration", source, "main", 1, 1, false, true,
                                          "f16 calibration", &p) == WGT_OK) &&
             webgpu_storage_alloc(&wg->base, (size_t)n * 4, &in) == WGT_OK &&
             webgpu_storage_alloc(&wg->base, sizeof zero, &out) == WGT_OK &&
             webgpu_storage_write(&wg->base, in, 0, cases, (size_t)n * 4) == WGT_OK &&
             webgpu_storage_write(&wg->base, out, 0, zero, sizeof zero) == WGT_OK;
        if (ok) {
            WGPUBuffer buffers[2] = {((webgpu_block *)in)->buffer, ((webgpu_block *)out)->buffer};
            uint32_t threads = n > 65536 ? n : 65536;
            ok = webgpu_dispatch(wg, p, buffers, 2, NULL, 0, (threads + 255) / 256, 1, 1, "f16 calibration") == WGT_OK &&
                 webgpu_storage_read(&wg->base, out, 0, &result, 4) == WGT_OK;
        }
        *widen = ok && !(result & 1u);
        *narrow = ok && !(result & 2u);
    }
    if (in) webgpu_storage_free(&wg->base, in);
    if (out) webgpu_storage_free(&wg->base, out);
    free(cases);
    free(source);
    return ok;
}

/* Results by adapter (name, driver, backend): one measurement per kind of device. */
#define EW_CALIBRATED_DEVICES 8
static struct {
    char adapter[320];
    bool widen, narrow;
} calibrated[EW_CALIBRATED_DEVICES];
static int n_calibrated;
static pthread_mutex_t calibrated_lock = PTHREAD_MUTEX_INITIALIZER;

static void f16_hardware_conversions(webgpu_backend *wg, bool *widen, bool *narrow)
{
    char adapter[320];
    snprintf(adapter, sizeof adapter, "%s|%s|%s|%x:%x", wg->info.name, wg->info.driver, wg->info.backend,
             wg->info.vendor_id, wg->info.device_id);
    pthread_mutex_lock(&calibrated_lock);
    for (int i = 0; i < n_calibrated; i++)
        if (strcmp(calibrated[i].adapter, adapter) == 0) {
            *widen = calibrated[i].widen;
            *narrow = calibrated[i].narrow;
            pthread_mutex_unlock(&calibrated_lock);
            return;
        }
    pthread_mutex_unlock(&calibrated_lock);

    wgt_context *ctx = wg->base.ctx;
    bool was_ok = wgt_context_status(ctx) == WGT_OK;
    if (!measure_f16_conversions(wg, widen, narrow)) {
        *widen = *narrow = false;
        if (was_ok) wgt_context_clear_error(ctx); /* the op itself goes on, with the integer versions */
        return; /* not cached: a later call measures again */
    }
    pthread_mutex_lock(&calibrated_lock);
    if (n_calibrated < EW_CALIBRATED_DEVICES) {
        snprintf(calibrated[n_calibrated].adapter, sizeof calibrated[n_calibrated].adapter, "%s", adapter);
        calibrated[n_calibrated].widen = *widen;
        calibrated[n_calibrated].narrow = *narrow;
        n_calibrated++;
    }
    pthread_mutex_unlock(&calibrated_lock);
}

/* Plans call into L. Returns WGT_OK, or a status with the reason in why
 * (WGT_ERR_UNSUPPORTED: a limit of this backend; others: a malformed call). */
static wgt_status plan_call(webgpu_backend *wg, const wgt_kernel_call *call, ew_launch *L, char *why, size_t size)
{
    const wgt_tensor_view *out = &call->outputs[0];
    ew_plan *plan = &L->plan;
    memset(L, 0, sizeof(*L));
    L->aliased_input = -1;
    if (call->n_outputs != 1 || call->n_inputs < 0 || call->n_inputs > WGT_MAX_KERNEL_INPUTS) {
        snprintf(why, size, "%d inputs and %d outputs (1 output, at most %d inputs)", call->n_inputs, call->n_outputs,
                 WGT_MAX_KERNEL_INPUTS);
        return WGT_ERR_INVALID_ARGUMENT;
    }
    if (!expr_is_valid(call->expr, call->n_inputs, out->ndim)) {
        snprintf(why, size, "malformed expression program");
        return WGT_ERR_INVALID_ARGUMENT;
    }
    int n_views = 1 + call->n_inputs;
    int64_t numel = wgt_shape_numel(out->ndim, out->shape);
    const wgt_tensor_view *views[EW_MAX_VIEWS];
    views[0] = out;
    for (int k = 0; k < call->n_inputs; k++) views[k + 1] = &call->inputs[k];
    for (int v = 0; v < n_views; v++) {
        const wgt_tensor_view *x = views[v];
        if ((unsigned)x->dtype >= WGT_DTYPE_COUNT) {
            snprintf(why, size, "view %d has an invalid dtype %d", v, (int)x->dtype);
            return WGT_ERR_INVALID_ARGUMENT;
        }
        bool same = x->ndim == out->ndim;
        for (int d = 0; same && d < out->ndim; d++) same = x->shape[d] == out->shape[d];
        if (!same) {
            char a[96], o[96];
            snprintf(why, size, "input %d has shape %s, output %s (inputs must be broadcast first)", v - 1,
                     wgt_shape_string(x->ndim, x->shape, a, sizeof a), wgt_shape_string(out->ndim, out->shape, o, sizeof o));
            return WGT_ERR_SHAPE_MISMATCH;
        }
        if (numel == 0) continue; /* nothing is read or written */
        if (!x->storage || !x->storage->handle) {
            snprintf(why, size, "view %d has no storage", v);
            return WGT_ERR_INVALID_ARGUMENT;
        }
        int64_t lo, hi;
        view_extent(x, &lo, &hi);
        int64_t elements = (int64_t)(x->storage->bytes / wgt_dtype_size(x->dtype));
        if (lo < 0 || hi >= elements) {
            snprintf(why, size, "view %d reaches elements %lld..%lld of a storage of %lld", v, (long long)lo,
                     (long long)hi, (long long)elements);
            return WGT_ERR_INVALID_ARGUMENT;
        }
        if (hi > (int64_t)UINT32_MAX) {
            snprintf(why, size, "view %d reaches element %lld; 32-bit element indices only", v, (long long)hi);
            return WGT_ERR_UNSUPPORTED;
        }
        if (v > 0 && x->storage == out->storage) L->aliased_input = v - 1;
    }
    if (numel == 0) return WGT_OK; /* the caller records nothing */
    if (numel > (int64_t)EW_NUMEL_MAX) {
        snprintf(why, size, "%lld elements; at most %lld", (long long)numel, (long long)EW_NUMEL_MAX);
        return WGT_ERR_UNSUPPORTED;
    }

    plan->expr = call->expr;
    plan->n_views = n_views;
    for (int v = 0; v < n_views; v++) plan->dtype[v] = views[v]->dtype;

    /* Bindings: inputs share one per storage; the output comes last. */
    int n_bindings = 0;
    for (int k = 0; k < call->n_inputs; k++) {
        int found = -1;
        for (int j = 0; j < k; j++)
            if (views[j + 1]->storage == views[k + 1]->storage && views[j + 1]->dtype == views[k + 1]->dtype) {
                found = plan->binding[j + 1];
                break;
            }
        if (found < 0) {
            found = n_bindings++;
            L->buffers[found] = webgpu_view_buffer(views[k + 1]);
            plan->vec4_binding[found] = buffer_is_vec4(L->buffers[found]);
        }
        plan->binding[k + 1] = found;
    }
    uint32_t limit = wg->limits.maxStorageBuffersPerShaderStage;
    if (limit > WEBGPU_MAX_BINDINGS) limit = WEBGPU_MAX_BINDINGS;
    if ((uint32_t)n_bindings + 1 > limit) {
        snprintf(why, size, "%d distinct input buffers and the output exceed %u storage bindings", n_bindings, limit);
        return WGT_ERR_UNSUPPORTED;
    }
    int ob = n_bindings++;
    L->buffers[ob] = webgpu_view_buffer(out);
    plan->binding[0] = ob;
    plan->n_bindings = n_bindings;

    /* Collapse: drop size-1 dims, merge dims contiguous in every view. */
    int nd = 0;
    int64_t shape[WGT_MAX_DIMS], strides[EW_MAX_VIEWS][WGT_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1) continue;
        bool merge = nd > 0;
        for (int v = 0; merge && v < n_views; v++) merge = strides[v][nd - 1] == views[v]->strides[d] * out->shape[d];
        if (merge) {
            shape[nd - 1] *= out->shape[d];
            for (int v = 0; v < n_views; v++) strides[v][nd - 1] = views[v]->strides[d];
            continue;
        }
        shape[nd] = out->shape[d];
        for (int v = 0; v < n_views; v++) strides[v][nd] = views[v]->strides[d];
        nd++;
    }
    plan->ndim = nd;

    /* Modes. */
    bool out_contiguous = true;
    for (int v = 0; v < n_views; v++) {
        bool contiguous = true, scalar = nd > 0;
        int64_t expect = 1;
        for (int d = nd - 1; d >= 0; d--) {
            contiguous &= strides[v][d] == expect;
            scalar &= strides[v][d] == 0;
            expect *= shape[d];
        }
        plan->mode[v] = contiguous ? EW_MODE_LINEAR : scalar ? EW_MODE_SCALAR : EW_MODE_STRIDED;
        if (v == 0) out_contiguous = contiguous;
    }
    /* C: 16 bytes of the narrowest dtype, so every vector view moves whole vec4s */
    size_t narrowest = 4;
    for (int v = 0; v < n_views; v++)
        if (wgt_dtype_size(views[v]->dtype) < narrowest) narrowest = wgt_dtype_size(views[v]->dtype);
    int chunk = plan->chunk = EW_CHUNK_BYTES / (int)narrowest;
    uint32_t shift = 0;
    plan->vec4_binding[ob] = buffer_is_vec4(L->buffers[ob]);
    if (out_contiguous && plan->vec4_binding[ob]) {
        plan->store = EW_STORE_CHUNK;
        plan->mode[0] = EW_MODE_VECTOR;
        shift = (uint32_t)(out->offset % chunk);
    } else {
        plan->mode[0] = EW_MODE_STRIDED; /* a contiguous output of an odd-sized buffer too */
        plan->vec4_binding[ob] = false;
        if (wgt_dtype_size(out->dtype) == 4) plan->store = EW_STORE_WORD;
        else if (out->dtype == WGT_F16 && wg->has_f16 && !wg->knobs.disable_f16) plan->store = EW_STORE_HALF;
        else plan->store = EW_STORE_ATOMIC;
        if (nd == 0) { /* a strided path needs a dim to walk */
            nd = plan->ndim = 1;
            shape[0] = 1;
            for (int v = 0; v < n_views; v++) strides[v][0] = 0;
        }
        if (inner_contiguous(plan, views, nd, shape, strides, buffer_is_vec4(L->buffers[ob])))
            plan->inner_contiguous = plan->vec4_binding[ob] = true;
    }
    bool any_f16 = false;
    for (int v = 0; v < n_views; v++) any_f16 |= views[v]->dtype == WGT_F16;
    if (any_f16 && !wg->knobs.disable_f16) f16_hardware_conversions(wg, &plan->f16_hw_widen, &plan->f16_hw_narrow);
    plan->philox_mul64 = wg->has_int64;
    for (int k = 0; k < call->n_inputs; k++) {
        int v = k + 1;
        bool aligned = (((views[v]->offset - (int64_t)shift) % chunk) + chunk) % chunk == 0;
        if (plan->mode[v] == EW_MODE_LINEAR && plan->vec4_binding[plan->binding[v]] && aligned)
            plan->mode[v] = EW_MODE_VECTOR;
    }
    bool uses_index = false;
    for (int j = 0; j < call->expr->n_nodes; j++) {
        int op = call->expr->nodes[j].opcode;
        uses_index |= op == WGT_EXPR_INDEX;
    }

    /* Params. */
    bool strided = false;
    for (int v = 0; v < n_views; v++) strided |= plan->mode[v] == EW_MODE_STRIDED;
    uint32_t *w = L->words;
    w[EW_P_NUMEL] = (uint32_t)numel;
    w[EW_P_SEED_LO] = (uint32_t)call->expr->seed;
    w[EW_P_SEED_HI] = (uint32_t)(call->expr->seed >> 32);
    w[EW_P_SHIFT] = shift;
    w[EW_P_ZERO] = 0;
    plan->chunk_in_row = strided && !plan->inner_contiguous && shift == 0 && nd > 0 && shape[nd - 1] % chunk == 0;
    L->chunks = ((uint64_t)numel + shift + (uint64_t)chunk - 1) / (uint64_t)chunk;
    w[EW_P_CHUNKS] = (uint32_t)L->chunks;
    for (int v = 0; v < n_views; v++) w[EW_P_OFFSET + v] = (uint32_t)views[v]->offset;
    for (int d = 0; d < nd; d++) {
        w[EW_P_SHAPE + d] = (uint32_t)shape[d];
        for (int v = 0; v < n_views; v++) w[EW_P_STRIDES + v * WGT_MAX_DIMS + d] = (uint32_t)strides[v][d];
    }
    int64_t inner = 1;
    for (int a = out->ndim - 1; a >= 0; a--) {
        w[EW_P_INDEX + 2 * a] = (uint32_t)inner;
        w[EW_P_INDEX + 2 * a + 1] = (uint32_t)out->shape[a];
        inner *= out->shape[a];
    }
    if (out->ndim == 0) w[EW_P_INDEX] = w[EW_P_INDEX + 1] = 1; /* INDEX(0) of a scalar is 0 */
    L->n_words = uses_index ? EW_P_CONST : strided ? EW_P_INDEX : EW_P_SHAPE;
    w[EW_P_ZERO2] = 0;
    /* CONST values: uniforms (see webgpu_elementwise.h), converted as the CPU does */
    for (int j = 0; j < call->expr->n_nodes; j++) {
        const wgt_expr_node *n = &call->expr->nodes[j];
        if (n->opcode != WGT_EXPR_CONST) continue;
        if (n->type == WGT_EXPR_F32) {
            float f = (float)n->constant;
            memcpy(&w[EW_P_CONST + j], &f, 4);
        } else {
            w[EW_P_CONST + j] = (uint32_t)wgt_expr_const_i32(n->constant);
        }
        L->n_words = EW_P_CONST + j + 1;
    }
    return WGT_OK;
}

/* ------------------------------------------------------------------- entry */

bool webgpu_elementwise_supports(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (call->kind != WGT_KERNEL_ELEMENTWISE) return false;
    ew_launch L;
    char why[256];
    /* malformed calls are "supported": run() reports them with their cause */
    return plan_call(wg, call, &L, why, sizeof why) != WGT_ERR_UNSUPPORTED;
}

/* A binary form of everything ew_plan_key writes as text: building the text key
 * (dozens of snprintf calls) would cost more than the rest of a small op. */
static size_t binary_plan_key(const ew_plan *plan, unsigned char *buf, size_t size)
{
    size_t used = 0;
#define PUT(value)                                                   \
    do {                                                             \
        if (used + sizeof(value) > size) return 0;                   \
        memcpy(buf + used, &(value), sizeof(value));                 \
        used += sizeof(value);                                       \
    } while (0)
    int header[11] = {plan->ndim, plan->chunk, (int)plan->store, plan->f16_hw_widen, plan->f16_hw_narrow,
                      plan->inner_contiguous, plan->chunk_in_row, plan->n_views, plan->n_bindings, plan->expr->n_nodes,
                      plan->philox_mul64};
    PUT(header);
    for (int v = 0; v < plan->n_views; v++) {
        int view[4] = {(int)plan->dtype[v], (int)plan->mode[v], plan->binding[v], plan->vec4_binding[v]};
        PUT(view);
    }
    int inputs = plan->expr->n_inputs;
    PUT(inputs);
    for (int i = 0; i < plan->expr->n_nodes; i++) {
        const wgt_expr_node *n = &plan->expr->nodes[i];
        int fields[7] = {n->opcode, n->type, n->args[0], n->args[1], n->args[2], n->input_index, n->axis};
        PUT(fields); /* constants are uniforms: their values are not part of the key */
    }
#undef PUT
    return used;
}

void webgpu_elementwise_destroy(webgpu_backend *wg)
{
    for (int i = 0; i < 64; i++) free(wg->recent_pipelines[i].key);
    memset(wg->recent_pipelines, 0, sizeof(wg->recent_pipelines));
}

static wgt_status find_pipeline_by_text(webgpu_backend *wg, const ew_plan *plan, const char *op, webgpu_pipeline **out);

/* The pipeline for plan: the recent-pipeline table, else the text-keyed cache
 * (compiling on a miss). */
static wgt_status find_pipeline(webgpu_backend *wg, const ew_plan *plan, const char *op, webgpu_pipeline **out)
{
    unsigned char key[4096];
    size_t size = binary_plan_key(plan, key, sizeof(key));
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ key[i]) * 1099511628211ull;
    struct webgpu_recent_pipeline *r = &wg->recent_pipelines[h % 64];
    if (size && r->key && r->hash == h && r->size == size && memcmp(r->key, key, size) == 0) {
        wg->pipelines.stats.hits++;
        *out = r->pipeline;
        return WGT_OK;
    }
    wgt_status s = find_pipeline_by_text(wg, plan, op, out);
    if (s == WGT_OK && size) {
        unsigned char *copy = malloc(size);
        if (copy) {
            free(r->key);
            memcpy(copy, key, size);
            *r = (struct webgpu_recent_pipeline){h, size, copy, *out};
        }
    }
    return s;
}

static wgt_status find_pipeline_by_text(webgpu_backend *wg, const ew_plan *plan, const char *op, webgpu_pipeline **out)
{
    char *key = malloc(EW_KEY_MAX);
    if (!key) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    wgt_status s = WGT_OK;
    if (!ew_plan_key(plan, key, EW_KEY_MAX)) {
        s = wgt_error(wg->base.ctx, WGT_ERR_UNSUPPORTED, "%s: expression program too long for a pipeline key", op);
    } else if (!(*out = webgpu_pipeline_find(wg, key))) {
        char *source = ew_generate_wgsl(plan);
        if (!source) s = wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: cannot generate the WGSL kernel", op);
        else s = webgpu_pipeline_create(wg, key, source, "main", plan->n_bindings - 1, 1, true, false, op, out);
        free(source);
    }
    free(key);
    return s;
}

wgt_status webgpu_elementwise_run(webgpu_backend *wg, const wgt_kernel_call *call)
{
    if (webgpu_transpose_applies(wg, call)) return webgpu_transpose_run(wg, call); /* coalesced tiled path */
    wgt_context *ctx = wg->base.ctx;
    const char *op = call->op_name ? call->op_name : "elementwise";
    ew_launch L;
    char why[256];
    wgt_status s = plan_call(wg, call, &L, why, sizeof why);
    if (s != WGT_OK) return wgt_error(ctx, s, "%s: %s", op, why);
    if (wgt_shape_numel(call->outputs[0].ndim, call->outputs[0].shape) == 0) return WGT_OK;

    if (L.aliased_input >= 0) {
        /* An input in the output's buffer cannot be bound read-only next to it:
         * read it from a snapshot (also right when the two views overlap). */
        wgt_kernel_call copy = *call;
        const wgt_tensor_view *in = &call->inputs[L.aliased_input];
        wgt_tensor_view snapshot;
        s = webgpu_temp_convert(wg, in, in->dtype, &snapshot, op);
        if (s != WGT_OK) return s;
        copy.inputs[L.aliased_input] = snapshot; /* further aliased inputs: the next level */
        s = webgpu_elementwise_run(wg, &copy);
        webgpu_temp_release(wg, &snapshot);
        return s;
    }

    webgpu_pipeline *pipeline;
    s = find_pipeline(wg, &L.plan, op, &pipeline);
    if (s != WGT_OK) return s;
    uint32_t x, y;
    uint64_t groups = (L.chunks + EW_WORKGROUP - 1) / EW_WORKGROUP;
    uint64_t row = wg->knobs.grid_limit; /* testing aid: fold into 2-D sooner */
    if (row > 0 && row < groups && (groups + row - 1) / row <= wg->limits.maxComputeWorkgroupsPerDimension) {
        x = (uint32_t)row;
        y = (uint32_t)((groups + row - 1) / row);
    } else {
        s = webgpu_grid(wg, groups, &x, &y, op);
        if (s != WGT_OK) return s;
    }
    s = webgpu_dispatch(wg, pipeline, L.buffers, L.plan.n_bindings, L.words, (size_t)L.n_words * 4, x, y, 1, op);
    if (s == WGT_OK && L.plan.inner_contiguous) atomic_fetch_add(&inner_contiguous_runs, 1);
    return s;
}

/* ------------------------------------------------------------ conversions */
/* A conversion is an ELEMENTWISE copy (any dtype, any strides), so it lives
 * here: the snapshot of an aliased input above then stays inside this file,
 * and temporaries.c, which every family uses, calls no kernel. */

wgt_status webgpu_convert(webgpu_backend *wg, const wgt_tensor_view *src, const wgt_tensor_view *dst, const char *op)
{
    wgt_expr e;
    wgt_expr_init(&e);
    wgt_expr_input(&e, 0, (src->dtype == WGT_F32 || src->dtype == WGT_F16) ? WGT_EXPR_F32 : WGT_EXPR_I32);
    wgt_kernel_call call;
    memset(&call, 0, sizeof(call));
    call.kind = WGT_KERNEL_ELEMENTWISE;
    call.op_name = op;
    call.expr = &e;
    call.n_inputs = 1;
    call.inputs[0] = *src;
    call.n_outputs = 1;
    call.outputs[0] = *dst;
    return webgpu_elementwise_run(wg, &call);
}

wgt_status webgpu_temp_convert(webgpu_backend *wg, const wgt_tensor_view *src, wgt_dtype dtype, wgt_tensor_view *out,
                               const char *op)
{
    wgt_status s = webgpu_temp_alloc(wg, dtype, src->ndim, src->shape, out);
    if (s == WGT_OK && wgt_shape_numel(src->ndim, src->shape) > 0) s = webgpu_convert(wg, src, out, op);
    if (s != WGT_OK) webgpu_temp_release(wg, out);
    return s;
}
