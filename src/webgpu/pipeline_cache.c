/* Shader modules and compute pipelines, created once and cached under a string
 * key (kernel id + dtypes + specialization). Compile errors come back as
 * WGT_ERR_SHADER_COMPILE with the compiler's line:column. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

typedef struct {
    const char *name;
    const char *source;
} embedded_wgsl;
/* generated from src/webgpu/kernels by cmake/embed_wgsl.cmake */
extern const embedded_wgsl wgt_embedded_wgsl_files[];

const char *webgpu_kernel_source(const char *name)
{
    for (const embedded_wgsl *f = wgt_embedded_wgsl_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f->source;
    return NULL;
}

wgt_status webgpu_pipeline_assemble(webgpu_backend *wg, const char *key, const char *prelude, const char *const *files,
                                    int n_files, int n_read_only, int n_read_write, bool checked, const char *op,
                                    webgpu_pipeline **out)
{
    *out = webgpu_pipeline_find(wg, key);
    if (*out) return WGT_OK;
    size_t n = strlen(prelude) + 1;
    for (int i = 0; i < n_files; i++) {
        const char *src = webgpu_kernel_source(files[i]);
        if (!src)
            return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: kernel source %s is not embedded", op, files[i]);
        n += strlen(src) + 1;
    }
    char *source = malloc(n);
    if (!source) return wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    size_t at = (size_t)snprintf(source, n, "%s", prelude);
    for (int i = 0; i < n_files; i++)
        at += (size_t)snprintf(source + at, n - at, "%s\n", webgpu_kernel_source(files[i]));
    wgt_status s = webgpu_pipeline_create(wg, key, source, NULL, n_read_only, n_read_write, true, checked, op, out);
    free(source);
    return s;
}

static uint32_t hash_key(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 16777619u;
    return h;
}

void webgpu_pipeline_cache_init(webgpu_backend *wg) { memset(&wg->pipelines, 0, sizeof(wg->pipelines)); }

void webgpu_pipeline_cache_destroy(webgpu_backend *wg)
{
    for (int i = 0; i < WEBGPU_PIPELINE_BUCKETS; i++) {
        webgpu_pipeline *p = wg->pipelines.buckets[i];
        while (p) {
            webgpu_pipeline *next = p->next;
            if (p->pipeline) wgpuComputePipelineRelease(p->pipeline);
            if (p->layout) wgpuBindGroupLayoutRelease(p->layout);
            free(p->key);
            free(p);
            p = next;
        }
        wg->pipelines.buckets[i] = NULL;
    }
}

webgpu_pipeline *webgpu_pipeline_find(webgpu_backend *wg, const char *key)
{
    for (webgpu_pipeline *p = wg->pipelines.buckets[hash_key(key) % WEBGPU_PIPELINE_BUCKETS]; p; p = p->next)
        if (strcmp(p->key, key) == 0) {
            wg->pipelines.stats.hits++;
            return p;
        }
    return NULL;
}

/* Binding 0: uniform params (dynamic offset); then read-only storage; then read-write. */
static WGPUBindGroupLayout create_layout(webgpu_backend *wg, int n_storage, const bool *read_only, bool has_params,
                                         bool params_last)
{
    WGPUBindGroupLayoutEntry entries[WEBGPU_MAX_BINDINGS + 2];
    int n = 0;
    int first_storage = (has_params && !params_last) ? 1 : 0;
    for (int i = 0; i < n_storage; i++) {
        WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
        e.binding = (uint32_t)(first_storage + i);
        e.visibility = WGPUShaderStage_Compute;
        e.buffer.type = read_only[i] ? WGPUBufferBindingType_ReadOnlyStorage : WGPUBufferBindingType_Storage;
        entries[n++] = e;
    }
    if (has_params) {
        WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
        e.binding = params_last ? (uint32_t)n_storage : 0;
        e.visibility = WGPUShaderStage_Compute;
        e.buffer.type = WGPUBufferBindingType_Uniform;
        e.buffer.hasDynamicOffset = !params_last;
        entries[n++] = e;
    }
    WGPUBindGroupLayoutDescriptor desc = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
    desc.entryCount = (size_t)n;
    desc.entries = entries;
    return wgpuDeviceCreateBindGroupLayout(wg->device, &desc);
}

/* Pulls "wgsl:LINE:COL" (the location wgpu's WGSL front-end prints) out of message. */
static void find_location(const char *message, int *line, int *column)
{
    *line = *column = 0;
    const char *p = strstr(message, "wgsl:");
    if (p) sscanf(p + 5, "%d:%d", line, column);
}

/* WGT_WGSL_DUMP_DIR=folder: the source of a pipeline the device refused is
 * written there as <key>.wgsl (characters other than letters, digits, '.',
 * '_' and '-' become '_'), so a failure seen only on one GPU can be read and
 * validated elsewhere. Best effort: a dump that fails is not an error. */
static void dump_refused_source(const char *key, const char *source)
{
    const char *dir = getenv("WGT_WGSL_DUMP_DIR");
    if (!dir || !*dir) return;
    char path[512];
    int n = snprintf(path, sizeof(path), "%s/", dir);
    if (n < 0 || (size_t)n >= sizeof(path) - 8) return;
    size_t at = (size_t)n;
    for (const char *k = key; *k && at < sizeof(path) - 6; k++)
        path[at++] = (isalnum((unsigned char)*k) || *k == '.' || *k == '_' || *k == '-') ? *k : '_';
    memcpy(path + at, ".wgsl", 6);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(source, f);
    fclose(f);
}

wgt_status webgpu_pipeline_create_ex(webgpu_backend *wg, const char *key, const char *source, const char *entry,
                                     int n_storage, const bool *read_only, bool has_params, bool params_last,
                                     bool checked, const char *op, webgpu_pipeline **out)
{
    wgt_context *ctx = wg->base.ctx;
    *out = NULL;
    if (n_storage < 0 || n_storage > WEBGPU_MAX_BINDINGS)
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %d storage bindings, at most %d", op, n_storage,
                         WEBGPU_MAX_BINDINGS);
    /* wgpu-native passes a module over the workgroup memory limit on to the
     * driver (gfx-rs/wgpu#8946), where NVIDIA's hung: check it here */
    char unknown[64];
    int64_t shared = webgpu_wgsl_workgroup_bytes(source, unknown, sizeof(unknown));
    if (shared > (int64_t)wg->limits.maxComputeWorkgroupStorageSize)
        return wgt_error(ctx, WGT_ERR_INVALID_WORKGROUP_SIZE,
                         "%s: the kernel's workgroup variables take %lld bytes, the device allows %u", op,
                         (long long)shared, wg->limits.maxComputeWorkgroupStorageSize);
    double start = webgpu_now_ms();
    webgpu_error_scope_push(wg);
    WGPUShaderSourceWGSL wgsl = WGPU_SHADER_SOURCE_WGSL_INIT;
    wgsl.code = webgpu_string(source);
    WGPUShaderModuleDescriptor md = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
    md.nextInChain = &wgsl.chain;
    md.label = webgpu_string(key);
    WGPUShaderModule module =
        checked ? wgpuDeviceCreateShaderModule(wg->device, &md) : webgpu_native_create_unchecked_module(wg->device, &md);
    WGPUBindGroupLayout layout = create_layout(wg, n_storage, read_only, has_params, params_last);
    WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
    pld.bindGroupLayoutCount = 1;
    pld.bindGroupLayouts = &layout;
    WGPUPipelineLayout pipeline_layout = wgpuDeviceCreatePipelineLayout(wg->device, &pld);
    WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
    pd.label = webgpu_string(key);
    pd.layout = pipeline_layout;
    pd.compute.module = module;
    pd.compute.entryPoint = webgpu_string(entry ? entry : "main");
    WGPUComputePipeline pipeline = wgpuDeviceCreateComputePipeline(wg->device, &pd);
    WGPUErrorType type;
    char message[1024];
    wgt_status s = webgpu_error_scope_pop(wg, &type, message, sizeof(message));
    wgpuPipelineLayoutRelease(pipeline_layout);
    if (module) wgpuShaderModuleRelease(module);
    wg->pipelines.stats.compile_ms += webgpu_now_ms() - start;
    wg->pipelines.stats.misses++;
    if (s == WGT_OK && type != WGPUErrorType_NoError) {
        int line, column;
        find_location(message, &line, &column);
        s = wgt_error(ctx, WGT_ERR_SHADER_COMPILE, "%s: WGSL error at line %d, column %d: %s", op, line, column,
                      message);
        dump_refused_source(key, source);
    }
    if (s != WGT_OK) {
        if (pipeline) wgpuComputePipelineRelease(pipeline);
        if (layout) wgpuBindGroupLayoutRelease(layout);
        return s;
    }
    webgpu_pipeline *p = webgpu_host_alloc(wg, 1, sizeof(*p), true);
    char *key_copy = webgpu_host_alloc(wg, strlen(key) + 1, 1, false);
    if (key_copy) strcpy(key_copy, key);
    if (!p || !key_copy) {
        free(p);
        free(key_copy);
        wgpuComputePipelineRelease(pipeline);
        wgpuBindGroupLayoutRelease(layout);
        return wgt_error(ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes for a pipeline entry)", op,
                         sizeof(*p) + strlen(key) + 1);
    }
    p->key = key_copy;
    p->pipeline = pipeline;
    p->layout = layout;
    p->n_storage = n_storage;
    p->has_params = has_params;
    uint32_t bucket = hash_key(key) % WEBGPU_PIPELINE_BUCKETS;
    p->next = wg->pipelines.buckets[bucket];
    wg->pipelines.buckets[bucket] = p;
    wg->pipelines.stats.entries++;
    *out = p;
    return WGT_OK;
}

wgt_status webgpu_pipeline_create(webgpu_backend *wg, const char *key, const char *source, const char *entry,
                                  int n_read_only, int n_read_write, bool has_params, bool checked, const char *op,
                                  webgpu_pipeline **out)
{
    bool read_only[WEBGPU_MAX_BINDINGS];
    for (int i = 0; i < WEBGPU_MAX_BINDINGS; i++) read_only[i] = i < n_read_only;
    if (n_read_only < 0 || n_read_write < 0)
        return wgt_error(wg->base.ctx, WGT_ERR_INTERNAL, "%s: negative binding count", op);
    return webgpu_pipeline_create_ex(wg, key, source, entry, n_read_only + n_read_write, read_only, has_params, false,
                                     checked, op, out);
}

wgt_status webgpu_pipeline_stats(wgt_backend *b, wgt_pipeline_stats *stats)
{
    *stats = webgpu_of(b)->pipelines.stats;
    return WGT_OK;
}
