/* Fault injection for tests (see fault.h): parsing and the countdown. */
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/internal.h"

static const struct {
    const char *name;
    wgt_fault_kind kind;
} fault_names[] = {
    {"timeout", WGT_FAULT_TIMEOUT},     {"lost_dispatch", WGT_FAULT_LOST_DISPATCH},
    {"lost_read", WGT_FAULT_LOST_READ}, {"lost_wait", WGT_FAULT_LOST_WAIT},
    {"alloc", WGT_FAULT_ALLOC},         {"map", WGT_FAULT_MAP},
    {"host_alloc", WGT_FAULT_HOST_ALLOC},
};

bool wgt_fault_parse(wgt_fault *f, const char *spec)
{
    memset(f, 0, sizeof(*f));
    if (!spec || !*spec || strcmp(spec, "none") == 0) return true;
    const char *at = strchr(spec, '@');
    size_t len = at ? (size_t)(at - spec) : strlen(spec);
    int64_t n = 1;
    if (at) {
        char *end = NULL;
        long long v = strtoll(at + 1, &end, 10);
        if (!end || *end != '\0' || v < 1) return false;
        n = v;
    }
    for (size_t i = 0; i < sizeof(fault_names) / sizeof(fault_names[0]); i++)
        if (strlen(fault_names[i].name) == len && strncmp(fault_names[i].name, spec, len) == 0) {
            f->kind = fault_names[i].kind;
            f->countdown = n - 1;
            return true;
        }
    return false;
}

void wgt_fault_from_environment(wgt_fault *f)
{
    if (!wgt_fault_parse(f, getenv("WGT_FAULT"))) memset(f, 0, sizeof(*f));
}

bool wgt_fault_hit(wgt_fault *f, wgt_fault_kind kind)
{
    if (f->kind != kind) return false;
    if (f->countdown > 0) {
        f->countdown--;
        return false;
    }
    f->kind = WGT_FAULT_NONE; /* one fault per arming */
    f->injected++;
    return true;
}

wgt_status wgt_debug_fault(wgt_context *ctx, const char *spec)
{
    if (!ctx || !ctx->backend) return WGT_ERR_INVALID_ARGUMENT;
    int64_t injected = ctx->backend->fault.injected;
    if (!wgt_fault_parse(&ctx->backend->fault, spec))
        return wgt_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_debug_fault: unknown fault \"%s\"", spec);
    ctx->backend->fault.injected = injected;
    return WGT_OK;
}

int64_t wgt_debug_faults_injected(wgt_context *ctx)
{
    return ctx && ctx->backend ? ctx->backend->fault.injected : 0;
}
