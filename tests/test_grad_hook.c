/* wgt_backward_set_grad_hook (the gradient-ready callback data-parallel
 * training starts its all-reduce from, docs/distributed.md), on the CPU
 * backend and on WebGPU (lavapipe in CI). Cases:
 *  - each reached leaf is reported exactly once per backward, a leaf used by
 *    two ops only after both contributions (the value read inside the hook
 *    equals the .grad after backward, so it was final);
 *  - the order is the order backward finishes leaves (w2 before w1 below,
 *    since w1 also feeds the last op backward reaches);
 *  - leaves that do not require grad or are not reached are not reported;
 *  - gradients accumulated over two backward passes: the hook sees the sum;
 *  - a loss that is itself a leaf is reported;
 *  - removing the hook (NULL) stops the calls. */
#include <math.h>
#include <string.h>

#include "test_util.h"

typedef struct record {
    wgt_tensor *leaves[8];
    float values[8][3];
    int n;
} record;

static void on_ready(wgt_tensor *leaf, wgt_tensor *grad, void *user)
{
    record *r = user;
    if (r->n < 8) {
        r->leaves[r->n] = leaf;
        memset(r->values[r->n], 0, sizeof(r->values[r->n]));
        size_t bytes = (size_t)wgt_tensor_numel(grad) * sizeof(float);
        if (bytes <= sizeof(r->values[r->n])) wgt_tensor_read(grad, r->values[r->n], bytes);
    }
    r->n++;
}

static wgt_tensor *vec(wgt_context *ctx, const float *v, bool grad)
{
    int64_t shape[1] = {3};
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, shape, v);
    if (grad) wgt_tensor_set_requires_grad(t, true);
    return t;
}

/* loss = sum(z * z), z = (x * w1) * w2 + w1: w1 reaches the loss twice */
static wgt_tensor *loss_of(wgt_tensor *x, wgt_tensor *w1, wgt_tensor *w2, wgt_tensor *unused)
{
    (void)unused;
    wgt_tensor *z = wgt_add(wgt_mul(wgt_mul(x, w1), w2), w1);
    return wgt_sum(wgt_mul(z, z), NULL, 0, false);
}

static void run(wgt_context *ctx, const char *name)
{
    const float xv[3] = {1.0f, -2.0f, 0.5f}, w1v[3] = {0.5f, 1.5f, -1.0f}, w2v[3] = {2.0f, -0.5f, 3.0f};
    wgt_scope_push(ctx);
    wgt_tensor *x = vec(ctx, xv, false), *w1 = vec(ctx, w1v, true), *w2 = vec(ctx, w2v, true);
    wgt_tensor *w3 = vec(ctx, w2v, true); /* requires grad, never used */
    record r = {0};
    wgt_backward_set_grad_hook(ctx, on_ready, &r);
    wgt_backward(loss_of(x, w1, w2, w3));
    CHECK(wgt_context_status(ctx) == WGT_OK, "%s: %s", name, wgt_context_error_message(ctx));
    CHECK(r.n == 2, "%s: %d leaves reported, want 2 (w1, w2)", name, r.n);
    CHECK(r.n == 2 && r.leaves[0] == w2 && r.leaves[1] == w1, "%s: order is not w2, w1", name);
    /* expected by hand: z = x w1 w2 + w1, dL/dw1 = 2 z (x w2 + 1), dL/dw2 = 2 z x w1 */
    float g1[3], g2[3];
    for (int i = 0; i < 3; i++) {
        float z = xv[i] * w1v[i] * w2v[i] + w1v[i];
        g1[i] = 2 * z * (xv[i] * w2v[i] + 1);
        g2[i] = 2 * z * xv[i] * w1v[i];
    }
    float final1[3] = {0}, final2[3] = {0};
    wgt_tensor_read(wgt_tensor_grad(w1), final1, sizeof(final1));
    wgt_tensor_read(wgt_tensor_grad(w2), final2, sizeof(final2));
    for (int i = 0; r.n == 2 && i < 3; i++) {
        CHECK(fabsf(r.values[1][i] - g1[i]) <= 1e-5f * (1 + fabsf(g1[i])), "%s: w1 grad in hook [%d] %g, want %g", name,
              i, r.values[1][i], g1[i]);
        CHECK(fabsf(r.values[0][i] - g2[i]) <= 1e-5f * (1 + fabsf(g2[i])), "%s: w2 grad in hook [%d] %g, want %g", name,
              i, r.values[0][i], g2[i]);
        CHECK(r.values[1][i] == final1[i] && r.values[0][i] == final2[i], "%s: hook value differs from the final .grad",
              name);
    }
    CHECK(wgt_tensor_grad(w3) == NULL, "%s: unused leaf got a gradient", name);

    /* a second pass without zero_grad: the hook sees the accumulated sum */
    r.n = 0;
    wgt_backward(loss_of(x, w1, w2, w3));
    CHECK(r.n == 2, "%s: second pass reported %d leaves", name, r.n);
    for (int i = 0; r.n == 2 && i < 3; i++)
        CHECK(fabsf(r.values[1][i] - 2 * g1[i]) <= 1e-5f * (1 + fabsf(g1[i])), "%s: accumulated w1 grad [%d] %g, want %g",
              name, i, r.values[1][i], 2 * g1[i]);

    /* the loss itself a leaf */
    r.n = 0;
    int64_t one[1] = {1};
    float v = 3.0f;
    wgt_tensor *leaf = wgt_tensor_from_host(ctx, WGT_F32, 1, one, &v);
    wgt_tensor_set_requires_grad(leaf, true);
    wgt_backward(leaf);
    CHECK(r.n == 1 && r.leaves[0] == leaf && r.values[0][0] == 1.0f, "%s: leaf loss: %d reports", name, r.n);

    /* removed */
    wgt_backward_set_grad_hook(ctx, NULL, NULL);
    r.n = 0;
    wgt_backward(loss_of(x, w1, w2, w3));
    CHECK(r.n == 0 && wgt_context_status(ctx) == WGT_OK, "%s: %d reports after removing the hook", name, r.n);
    CHECK(wgt_backward_set_grad_hook(NULL, on_ready, NULL) == WGT_ERR_INVALID_ARGUMENT, "%s: NULL context accepted",
          name);
    wgt_scope_pop(ctx);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context();
    if (cpu) run(cpu, "cpu");
    else CHECK(0, "no CPU context");
    wgt_context_destroy(cpu);
    wgt_context *gpu = test_webgpu_context();
    if (gpu) run(gpu, "webgpu");
    else CHECK(0, "no WebGPU context");
    wgt_context_destroy(gpu);
    return test_summary();
}
