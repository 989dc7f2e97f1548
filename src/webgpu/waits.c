/* Waiting on the GPU: request records shared by waiters and callbacks, the
 * progress-based deadline, the stuck state that makes later calls fail fast,
 * device loss, and error scopes. Every wait in the backend goes through
 * webgpu_wait; docs/errors.md (Deadlines) says what a caller sees. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "webgpu/webgpu_internal.h"

/* ------------------------------------------------------------ requests */

void *webgpu_host_alloc(webgpu_backend *wg, size_t count, size_t size, bool zeroed)
{
    if (wgt_fault_hit(&wg->base.fault, WGT_FAULT_HOST_ALLOC)) return NULL;
    if (zeroed) return calloc(count, size);
    return size && count > SIZE_MAX / size ? NULL : malloc(count * size);
}

webgpu_request *webgpu_request_new(webgpu_backend *wg, const char *op)
{
    webgpu_request *r = webgpu_host_alloc(wg, 1, sizeof(*r), true);
    if (!r) {
        wgt_error(wg->base.ctx, WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", op, sizeof(*r));
        return NULL;
    }
    r->refs = 2; /* the waiter and the callback */
    return r;
}

void webgpu_request_release(webgpu_request *r)
{
    if (!r) return;
    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    /* A device that arrived after its waiter gave up belongs to no one else. */
    if (r->device) wgpuDeviceRelease(r->device);
    free(r);
}

void webgpu_on_map_request(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2)
{
    (void)u2;
    webgpu_request *r = u1;
    r->status = (int)status;
    webgpu_copy_string(message, r->message, sizeof(r->message));
    r->done = true;
    webgpu_request_release(r);
}

/* Counts completed submissions; shared like a request (each pending callback
 * and the backend hold a reference) so a late callback never reaches freed memory. */
static void on_submission_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2)
{
    (void)status, (void)message, (void)u2;
    webgpu_progress *p = u1;
    __atomic_add_fetch(&p->completed, 1, __ATOMIC_ACQ_REL);
    webgpu_progress_release(p);
}

void webgpu_progress_release(webgpu_progress *p)
{
    if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) free(p);
}

void webgpu_track_submission(webgpu_backend *wg)
{
    wg->submitted++;
    if (!wg->progress) return;
    __atomic_add_fetch(&wg->progress->refs, 1, __ATOMIC_ACQ_REL);
    WGPUQueueWorkDoneCallbackInfo cb = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_submission_done;
    cb.userdata1 = wg->progress;
    wgpuQueueOnSubmittedWorkDone(wg->queue, cb);
}

static uint64_t completed_submissions(const webgpu_backend *wg)
{
    return wg->progress ? __atomic_load_n(&wg->progress->completed, __ATOMIC_ACQUIRE) : 0;
}

void webgpu_lose_device(webgpu_backend *wg, const char *why)
{
    if (wg->device_lost) return;
    wg->device_lost = true;
    wgt_error_fatal(wg->base.ctx, WGT_ERR_DEVICE_LOST, "webgpu: device lost: %s", why);
    /* Really end the device, so pending maps and queued work are cancelled as
     * in a real loss. */
    if (wg->device) wgpuDeviceDestroy(wg->device);
}

wgt_status webgpu_check_stuck(webgpu_backend *wg, const char *what)
{
    if (!wg->stuck) return WGT_OK;
    webgpu_native_poll(wg->instance, wg->device);
    if (completed_submissions(wg) >= wg->stuck_until) {
        wg->stuck = false; /* the device caught up with the work that timed out */
        return WGT_OK;
    }
    return wgt_error(wg->base.ctx, WGT_ERR_TIMEOUT,
                     "%s: the GPU has not finished work that passed its deadline earlier (%llu of %llu "
                     "submissions done); failing at once instead of waiting again",
                     what, (unsigned long long)completed_submissions(wg), (unsigned long long)wg->stuck_until);
}

/* A wait that passed its deadline: from now on calls fail fast until the
 * outstanding submissions complete. */
static wgt_status timed_out(webgpu_backend *wg, const char *what, bool injected)
{
    if (wg->submitted > completed_submissions(wg)) {
        wg->stuck = true;
        wg->stuck_until = wg->submitted;
    }
    return wgt_error(wg->base.ctx, WGT_ERR_TIMEOUT, "%s: the GPU made no progress for %u ms%s", what, wg->timeout_ms,
                     injected ? " (injected fault)" : "");
}

wgt_status webgpu_wait(webgpu_backend *wg, volatile bool *done, const char *what)
{
    if (wgt_fault_hit(&wg->base.fault, WGT_FAULT_TIMEOUT)) return timed_out(wg, what, true);
    if (wgt_fault_hit(&wg->base.fault, WGT_FAULT_LOST_WAIT)) {
        webgpu_lose_device(wg, "injected fault during a wait");
        return WGT_ERR_DEVICE_LOST;
    }
    /* The deadline moves whenever a submission completes: it catches a device
     * that stopped, not one that is slow on a long queue. */
    double deadline = webgpu_now_ms() + wg->timeout_ms;
    uint64_t seen = completed_submissions(wg);
    for (int spins = 0; !*done; spins++) {
        webgpu_native_poll(wg->instance, wg->device);
        if (*done) break;
        if (wg->device_lost) return WGT_ERR_DEVICE_LOST;
        double now = webgpu_now_ms();
        uint64_t completed = completed_submissions(wg);
        if (completed != seen) {
            seen = completed;
            deadline = now + wg->timeout_ms;
        }
        if (now > deadline) return timed_out(wg, what, false);
        /* Spin briefly for latency, then back off so a long kernel costs no CPU. */
        if (spins > 200) {
            struct timespec ts = {0, spins > 2000 ? 1000000 : 50000};
            nanosleep(&ts, NULL);
        }
    }
    /* Destroying a lost device fires pending callbacks too: "done" then means
     * cancelled, not finished. */
    return wg->device_lost ? WGT_ERR_DEVICE_LOST : WGT_OK;
}

/* ------------------------------------------------------------ error scopes */

static void on_scope_popped(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1,
                            void *u2)
{
    (void)u2;
    webgpu_request *r = u1;
    r->status = (int)status;
    r->error_type = status == WGPUPopErrorScopeStatus_Success ? (int)type : (int)WGPUErrorType_Unknown;
    webgpu_copy_string(message, r->message, sizeof(r->message));
    r->done = true;
    webgpu_request_release(r);
}

/* A scope popped without a record to report into (out of host memory). */
static void on_scope_discarded(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1,
                               void *u2)
{
    (void)status, (void)type, (void)message, (void)u1, (void)u2;
}

void webgpu_error_scope_push(webgpu_backend *wg)
{
    wgpuDevicePushErrorScope(wg->device, WGPUErrorFilter_OutOfMemory);
    wgpuDevicePushErrorScope(wg->device, WGPUErrorFilter_Validation);
}

wgt_status webgpu_error_scope_pop(webgpu_backend *wg, WGPUErrorType *type, char *message, size_t size)
{
    webgpu_request *results[2] = {NULL, NULL};
    wgt_status s = WGT_OK;
    for (int i = 0; i < 2; i++) {
        /* Both scopes are popped even without memory for a record, so the
         * device's scope stack stays balanced. */
        results[i] = webgpu_request_new(wg, "webgpu error scope");
        WGPUPopErrorScopeCallbackInfo cb = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = results[i] ? on_scope_popped : on_scope_discarded;
        cb.userdata1 = results[i];
        wgpuDevicePopErrorScope(wg->device, cb);
        if (!results[i]) s = WGT_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < 2 && s == WGT_OK; i++) s = webgpu_wait(wg, &results[i]->done, "webgpu error scope");
    *type = WGPUErrorType_NoError;
    if (message && size) message[0] = '\0';
    for (int i = 0; i < 2 && s == WGT_OK; i++) {
        if (results[i]->error_type != WGPUErrorType_NoError) {
            *type = (WGPUErrorType)results[i]->error_type;
            if (message) snprintf(message, size, "%s", results[i]->message);
            break;
        }
    }
    for (int i = 0; i < 2; i++) webgpu_request_release(results[i]);
    return s;
}
