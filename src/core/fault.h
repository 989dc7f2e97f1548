/*
 * Fault injection (tests only): makes a backend fail on demand at one of its
 * failure points, so tests can drive every error path (timeouts, device loss,
 * allocation and map failures) without a broken driver.
 *
 * Armed from the environment when a context is created (WGT_FAULT=<spec>) or
 * at run time with wgt_debug_fault(ctx, spec). <spec> is "<kind>[@N]": the
 * N-th (default first) time the backend passes that point it fails; later
 * passes succeed again. Kinds:
 *   timeout        a GPU wait returns WGT_ERR_TIMEOUT at once (the work goes on)
 *   lost_dispatch  the device is lost while recording the N-th dispatch
 *   lost_read      the device is lost after a read's copy is submitted
 *   lost_wait      the device is lost inside a GPU wait
 *   alloc          a device (or CPU) storage allocation fails as out of memory
 *   host_alloc     a host allocation of the WebGPU backend (request records,
 *                  pipeline entries, custom-kernel keys and uniforms) fails
 *   map            a read's staging buffer fails to map
 * "none" (or an empty spec) disarms.
 */
#ifndef WGT_FAULT_H
#define WGT_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "wgtensor.h"

typedef enum wgt_fault_kind {
    WGT_FAULT_NONE = 0,
    WGT_FAULT_TIMEOUT,
    WGT_FAULT_LOST_DISPATCH,
    WGT_FAULT_LOST_READ,
    WGT_FAULT_LOST_WAIT,
    WGT_FAULT_ALLOC,
    WGT_FAULT_MAP,
    WGT_FAULT_HOST_ALLOC,
} wgt_fault_kind;

typedef struct wgt_fault {
    wgt_fault_kind kind;
    int64_t countdown;  /* passes left before the one that fails */
    int64_t injected;   /* faults injected so far */
} wgt_fault;

/* Parses spec into f; false (f disarmed) if spec is not understood. */
bool wgt_fault_parse(wgt_fault *f, const char *spec);
/* Arms f from WGT_FAULT (disarmed if unset). */
void wgt_fault_from_environment(wgt_fault *f);
/* A backend's failure point: true when this pass of kind must fail. */
bool wgt_fault_hit(wgt_fault *f, wgt_fault_kind kind);

/* Test-only entry point (not in wgtensor.h): arms the context's backend.
 * WGT_ERR_INVALID_ARGUMENT for an unknown spec. */
wgt_status wgt_debug_fault(wgt_context *ctx, const char *spec);
/* Faults the context's backend has injected so far. */
int64_t wgt_debug_faults_injected(wgt_context *ctx);

#endif /* WGT_FAULT_H */
