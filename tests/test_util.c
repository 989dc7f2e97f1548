#include "test_util.h"

#include <string.h>

int test_passed, test_failed;

void check_error_and_recover(wgt_context *ctx, wgt_status expected, const char *what)
{
    wgt_status got = wgt_context_status(ctx);
    CHECK(got == expected, "%s: expected %s, got %s (%s)", what, wgt_status_string(expected), wgt_status_string(got),
          wgt_context_error_message(ctx));
    if (got != WGT_OK) CHECK(strlen(wgt_context_error_message(ctx)) > 0, "%s: empty error message", what);
    wgt_context_clear_error(ctx);
    /* The context must work again: a small op round trip. */
    float v[3] = {1, 2, 3}, out[3] = {0};
    int64_t n = 3;
    wgt_tensor *t = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v);
    wgt_tensor *s = t ? wgt_binary_scalar(WGT_OP_MUL, t, 2.0) : NULL;
    wgt_status rs = s ? wgt_tensor_read(s, out, sizeof(out)) : wgt_context_status(ctx);
    CHECK(rs == WGT_OK && out[0] == 2 && out[1] == 4 && out[2] == 6, "%s: context not usable after clear: %s", what,
          wgt_context_error_message(ctx));
    wgt_tensor_release(s);
    wgt_tensor_release(t);
    wgt_context_clear_error(ctx); /* a failure above must not cascade into later checks */
}

static wgt_context *make(wgt_backend_kind kind)
{
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = kind;
    wgt_context *ctx = wgt_context_create(&o);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "FAIL: cannot create %s context: %s\n", kind == WGT_BACKEND_CPU ? "cpu" : "webgpu",
                ctx ? wgt_context_error_message(ctx) : "out of memory");
        test_failed++;
        wgt_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

wgt_context *test_webgpu_context(void) { return make(WGT_BACKEND_WEBGPU); }
wgt_context *test_cpu_context(void) { return make(WGT_BACKEND_CPU); }

int test_summary(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed == 0 && test_passed > 0 ? 0 : 1;
}
