/* Bad input never crashes: every public entry point tried with wrong shapes,
 * dtypes, axes, NULLs, tensors of two contexts and out-of-range views; each
 * must give its status and a message naming the call and the shapes, and the
 * context must work again after the error is cleared. */
#include <string.h>

#include "test_util.h"

static void expect(wgt_context *ctx, bool returned_failure, wgt_status status, const char *call, const char *needle,
                   const char *what)
{
    CHECK(returned_failure, "%s: the call did not report failure", what);
    const char *msg = wgt_context_error_message(ctx);
    CHECK(strstr(msg, call) != NULL, "%s: message does not name %s: \"%s\"", what, call, msg);
    if (needle) CHECK(strstr(msg, needle) != NULL, "%s: message lacks \"%s\": \"%s\"", what, needle, msg);
    check_error_and_recover(ctx, status, what);
}

static void run(wgt_context *ctx, wgt_context *other)
{
    int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s4[1] = {4}, s5[1] = {5};
    wgt_tensor *a = wgt_ones(ctx, WGT_F32, 2, s23);
    wgt_tensor *b = wgt_ones(ctx, WGT_F32, 2, s34);
    wgt_tensor *v4 = wgt_ones(ctx, WGT_F32, 1, s4);
    wgt_tensor *i5 = wgt_zeros(ctx, WGT_I32, 1, s5);
    wgt_tensor *u8 = wgt_zeros(ctx, WGT_U8, 2, s23);
    wgt_tensor *foreign = wgt_ones(other, WGT_F32, 2, s23);
    CHECK(a && b && v4 && i5 && u8 && foreign, "setup: %s", wgt_context_error_message(ctx));

    /* shape mismatches */
    expect(ctx, !wgt_add(a, b), WGT_ERR_SHAPE_MISMATCH, "wgt_add", "[2, 3]", "add [2,3]+[3,4]");
    expect(ctx, !wgt_where(a, a, b), WGT_ERR_SHAPE_MISMATCH, "wgt_where", "[3, 4]", "where");
    expect(ctx, !wgt_matmul(a, a), WGT_ERR_SHAPE_MISMATCH, "wgt_matmul", "[2, 3]", "matmul inner dims");
    wgt_tensor *parts[2] = {a, b};
    expect(ctx, !wgt_concat(parts, 2, 0), WGT_ERR_SHAPE_MISMATCH, "wgt_concat", "[3, 4]", "concat");
    expect(ctx, !wgt_stack(parts, 2, 0), WGT_ERR_SHAPE_MISMATCH, "wgt_stack", "[3, 4]", "stack");
    int64_t bad_view[2] = {5, 5};
    expect(ctx, !wgt_view(a, 2, bad_view), WGT_ERR_SHAPE_MISMATCH, "wgt_view", "[5, 5]", "view 6 as 25");
    int64_t to[2] = {4, 3};
    expect(ctx, !wgt_expand(a, 2, to), WGT_ERR_SHAPE_MISMATCH, "wgt_expand", "[4, 3]", "expand");
    expect(ctx, wgt_assign(a, b) != WGT_OK, WGT_ERR_SHAPE_MISMATCH, "wgt_assign", "[3, 4]", "assign");
    int64_t sizes[2] = {1, 1};
    wgt_tensor *pieces[2];
    CHECK(wgt_split(a, 0, sizes, 2, pieces) == WGT_OK, "valid split: %s", wgt_context_error_message(ctx));
    wgt_tensor_release(pieces[0]);
    wgt_tensor_release(pieces[1]);
    int64_t wrong_sizes[2] = {1, 5};
    expect(ctx, wgt_split(a, 1, wrong_sizes, 2, pieces) != WGT_OK, WGT_ERR_SHAPE_MISMATCH, "wgt_split", NULL, "split sizes");

    /* dtypes */
    expect(ctx, !wgt_matmul(a, wgt_scope_keep(u8)), WGT_ERR_DTYPE, "wgt_matmul", "u8", "matmul dtypes");
    expect(ctx, !wgt_softmax(u8, 0), WGT_ERR_DTYPE, "wgt_softmax", "u8", "softmax of u8");
    expect(ctx, !wgt_gather(a, 0, a), WGT_ERR_DTYPE, "wgt_gather", "f32", "gather f32 index");
    expect(ctx, !wgt_cast(a, (wgt_dtype)42), WGT_ERR_DTYPE, "wgt_cast", NULL, "cast to bad dtype");
    expect(ctx, !wgt_rand(ctx, WGT_I32, 1, s4, 1), WGT_ERR_DTYPE, "wgt_rand", "i32", "rand of i32");
    expect(ctx, !wgt_tensor_empty(ctx, (wgt_dtype)-3, 1, s4), WGT_ERR_DTYPE, "wgt_tensor_empty", NULL, "bad dtype");

    /* axes */
    int axis5 = 5, axes_dup[2] = {1, -1};
    expect(ctx, !wgt_sum(a, &axis5, 1, false), WGT_ERR_INVALID_ARGUMENT, "wgt_sum", "axis 5", "sum axis 5");
    expect(ctx, !wgt_sum(a, axes_dup, 2, false), WGT_ERR_INVALID_ARGUMENT, "wgt_sum", "twice", "duplicate axes");
    expect(ctx, !wgt_softmax(a, -3), WGT_ERR_INVALID_ARGUMENT, "wgt_softmax", "axis -3", "softmax axis");
    expect(ctx, !wgt_transpose(a, 0, 2), WGT_ERR_INVALID_ARGUMENT, "wgt_transpose", "axis 2", "transpose axis");
    expect(ctx, !wgt_slice(a, 0, 0, 2, 0), WGT_ERR_INVALID_ARGUMENT, "wgt_slice", "step 0", "slice step 0");
    int perm_bad[2] = {0, 0};
    expect(ctx, !wgt_permute(a, perm_bad), WGT_ERR_INVALID_ARGUMENT, "wgt_permute", "repeated", "permute");
    expect(ctx, !wgt_cumsum(a, 2), WGT_ERR_INVALID_ARGUMENT, "wgt_cumsum", "axis 2", "cumsum axis");
    expect(ctx, !wgt_argmax(a, 7, false), WGT_ERR_INVALID_ARGUMENT, "wgt_argmax", "axis 7", "argmax axis");
    expect(ctx, !wgt_unsqueeze(a, 4), WGT_ERR_INVALID_ARGUMENT, "wgt_unsqueeze", "axis 4", "unsqueeze axis");

    /* values */
    wgt_tensor *tv = NULL, *ti = NULL;
    expect(ctx, wgt_topk(a, 9, true, &tv, &ti) != WGT_OK, WGT_ERR_INVALID_ARGUMENT, "wgt_topk", "k 9", "topk k");
    expect(ctx, !wgt_arange(ctx, WGT_F32, 0, 1, 0), WGT_ERR_INVALID_ARGUMENT, "wgt_arange", "step 0", "arange step 0");
    expect(ctx, !wgt_clamp(a, 2, 1), WGT_ERR_INVALID_ARGUMENT, "wgt_clamp", NULL, "clamp lo > hi");
    int64_t pads_bad[4] = {0, -1, 0, 0};
    expect(ctx, !wgt_pad(a, pads_bad, 0), WGT_ERR_INVALID_ARGUMENT, "wgt_pad", "negative", "pad");
    expect(ctx, !wgt_fused(ctx, "a +* b", parts, 2), WGT_ERR_INVALID_ARGUMENT, "wgt_fused", "column", "fused syntax");
    expect(ctx, !wgt_fused(ctx, "a + q", parts, 2), WGT_ERR_INVALID_ARGUMENT, "wgt_fused", "column 5", "fused unknown");
    expect(ctx, !wgt_fused(ctx, "frob(a)", parts, 2), WGT_ERR_INVALID_ARGUMENT, "wgt_fused", "unknown function",
           "fused function");
    wgt_tensor *ma[1] = {a};
    expect(ctx, !wgt_fused(ctx, "a + b", ma, 1), WGT_ERR_INVALID_ARGUMENT, "wgt_fused", "beyond", "fused letters");
    int64_t empty_rows[2] = {0, 3};
    wgt_tensor *empty = wgt_zeros(ctx, WGT_F32, 2, empty_rows);
    int axis0 = 0;
    expect(ctx, !wgt_max(empty, &axis0, 1, false), WGT_ERR_INVALID_ARGUMENT, "wgt_max", "empty", "max over empty");
    wgt_tensor_release(empty);

    /* NULLs */
    CHECK(!wgt_add(NULL, NULL), "add(NULL, NULL) returns NULL without a context to blame");
    expect(ctx, !wgt_add(a, NULL), WGT_ERR_INVALID_ARGUMENT, "wgt_add", "NULL", "add(a, NULL)");
    expect(ctx, !wgt_matmul(NULL, a), WGT_ERR_INVALID_ARGUMENT, "wgt_matmul", "NULL", "matmul(NULL, a)");
    expect(ctx, wgt_tensor_read(a, NULL, 24) != WGT_OK, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_read", "NULL", "read NULL");
    float small[2];
    expect(ctx, wgt_tensor_read(a, small, sizeof(small)) != WGT_OK, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_read", "24",
           "read into a short buffer");
    expect(ctx, !wgt_tensor_from_host(ctx, WGT_F32, 1, s4, NULL), WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_from_host",
           "NULL", "from_host NULL");
    expect(ctx, !wgt_tensor_empty(ctx, WGT_F32, 9, s4), WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_empty", "ndim 9", "ndim 9");
    expect(ctx, !wgt_tensor_empty(ctx, WGT_F32, 2, NULL), WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_empty", "NULL",
           "NULL shape");
    expect(ctx, wgt_topk(a, 1, true, NULL, &ti) != WGT_OK, WGT_ERR_INVALID_ARGUMENT, "wgt_topk", "NULL", "topk NULL out");
    CHECK(wgt_context_status(NULL) == WGT_ERR_INVALID_ARGUMENT, "status of NULL context");
    CHECK(wgt_synchronize(NULL) == WGT_ERR_INVALID_ARGUMENT, "sync NULL");
    wgt_tensor_release(NULL); /* must be a no-op */
    wgt_context_destroy(NULL);

    /* two contexts */
    expect(ctx, !wgt_add(a, foreign), WGT_ERR_CONTEXT_MISMATCH, "wgt_add", "another context", "cross-context add");
    expect(ctx, !wgt_matmul(a, foreign), WGT_ERR_CONTEXT_MISMATCH, "wgt_matmul", "another context", "cross matmul");
    expect(ctx, wgt_assign(a, foreign) != WGT_OK, WGT_ERR_CONTEXT_MISMATCH, "wgt_assign", "another context",
           "cross assign");
    wgt_tensor *mixed[2] = {a, foreign};
    expect(ctx, !wgt_fused(ctx, "a + b", mixed, 2), WGT_ERR_CONTEXT_MISMATCH, "wgt_fused", "another context",
           "cross fused");

    /* sticky: after an error, later calls return at once */
    CHECK(!wgt_add(a, b), "first error");
    CHECK(!wgt_add(a, a), "a valid call after an uncleared error must also fail");
    CHECK(strstr(wgt_context_error_message(ctx), "[3, 4]") != NULL, "the first error is kept: %s",
          wgt_context_error_message(ctx));
    check_error_and_recover(ctx, WGT_ERR_SHAPE_MISMATCH, "sticky");

    wgt_tensor *all[] = {a, b, v4, i5, u8, foreign};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) wgt_tensor_release(all[i]);
}

int main(void)
{
    wgt_context *cpu = test_cpu_context(), *gpu = test_webgpu_context();
    if (cpu && gpu) {
        printf("-- cpu\n");
        run(cpu, gpu);
        printf("-- webgpu\n");
        run(gpu, cpu);
    }
    wgt_context_destroy(cpu);
    wgt_context_destroy(gpu);
    return test_summary();
}
