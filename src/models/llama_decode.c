/* Greedy decoding with the host one step ahead of the device.
 *
 * One step at a time, a token's host recording (~130 dispatches) and its
 * device work run one after the other: the host must read token n before it
 * can record step n+1. Here the pick stays on the device (llama_argmax_token,
 * i32 [1]) and feeds step n+1's embedding lookup directly, and its read is
 * started (wgt_tensor_read_start: the copy is queued right behind step n)
 * before step n+1 is recorded. So while the device runs step n, the host
 * records step n+1, then waits only for step n's 4 bytes. A token then costs
 * max(host recording, device time) instead of their sum.
 *
 * The step recorded ahead is speculative: when the caller stops (an end
 * token, enough tokens), it is dropped, its read discarded and the cache
 * truncated, so the cache ends exactly as the sequential loop leaves it. */
#include <stdio.h>

#include "llama.h"

/* One pending step: the pick on the device and its read in flight. */
typedef struct step {
    wgt_tensor *token;
    wgt_read *read;
} step;

static void step_drop(step *s)
{
    if (s->read) wgt_read_finish(s->read, NULL, 0);
    wgt_tensor_release(s->token);
    *s = (step){NULL, NULL};
}

/* Records the pick from logits and starts reading it; false on error. */
static bool step_start(step *s, wgt_tensor *logits)
{
    s->token = llama_argmax_token(logits);
    s->read = s->token ? wgt_tensor_read_start(s->token) : NULL;
    return s->read != NULL;
}

static int64_t generate_sequential(llama_cache *c, wgt_tensor *logits, int64_t max_tokens, llama_token_fn on_token,
                                   void *user, char *msg, size_t msg_size)
{
    int64_t produced = 0;
    int32_t tok = llama_argmax(logits);
    while (tok >= 0) {
        produced++;
        if (!on_token(tok, user) || produced == max_tokens || llama_cache_length(c) >= llama_cache_context(c))
            return produced;
        wgt_tensor *l = llama_forward(c, &tok, 1, false, msg, msg_size);
        tok = l ? llama_argmax(l) : -1;
        wgt_tensor_release(l);
    }
    if (!msg[0]) snprintf(msg, msg_size, "llama_generate_greedy: %s", wgt_context_error_message(wgt_tensor_context(logits)));
    return -1;
}

int64_t llama_generate_greedy(llama_cache *c, wgt_tensor *logits, int64_t max_tokens, bool pipelined,
                              llama_token_fn on_token, void *user, char *msg, size_t msg_size)
{
    if (msg_size) msg[0] = '\0';
    if (!c || !logits || !on_token || max_tokens < 1) {
        snprintf(msg, msg_size, "llama_generate_greedy: needs a cache, logits, a callback and max_tokens >= 1");
        return -1;
    }
    if (!pipelined) return generate_sequential(c, logits, max_tokens, on_token, user, msg, msg_size);
    wgt_context *ctx = wgt_tensor_context(logits);
    step cur = {NULL, NULL}, next = {NULL, NULL};
    int64_t produced = 0;
    bool ok = step_start(&cur, logits);
    while (ok) {
        /* record the step after cur (fed by cur's pick on the device) unless
         * cur's token is the last one wanted or the cache is full */
        const bool ahead = produced + 1 < max_tokens && llama_cache_length(c) < llama_cache_context(c);
        if (ahead) {
            wgt_tensor *l = llama_forward_token(c, cur.token, msg, msg_size);
            ok = l && step_start(&next, l);
            wgt_tensor_release(l);
            if (!ok) break;
        }
        int32_t tok = -1;
        ok = wgt_read_finish(cur.read, &tok, sizeof(tok)) == WGT_OK && tok >= 0;
        cur.read = NULL;
        step_drop(&cur);
        if (!ok) break;
        produced++;
        if (!on_token(tok, user) || !ahead) {
            if (ahead) llama_cache_truncate(c, llama_cache_length(c) - 1);
            step_drop(&next);
            return produced;
        }
        cur = next;
        next = (step){NULL, NULL};
    }
    step_drop(&cur);
    step_drop(&next);
    if (!msg[0]) snprintf(msg, msg_size, "llama_generate_greedy: %s", wgt_context_error_message(ctx));
    return -1;
}
