/* Random text for the fuzzers: wgt_fused expressions and WGSL compute shaders,
 * valid ones and broken ones (mutated bytes, non-UTF-8, deep nesting, wrong
 * names), all from a caller-owned 64-bit RNG state so a seed replays a run. */
#ifndef WGT_FUZZ_TEXT_H
#define WGT_FUZZ_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: the fuzzers' only source of randomness. */
uint64_t fuzz_next(uint64_t *state);
/* Uniform in [0, n); 0 when n <= 0. */
int fuzz_below(uint64_t *state, int n);

/* A wgt_fused expression over inputs a.. (n_inputs letters, sometimes one more)
 * and, when n_params > 0, p0..: usually valid, sometimes mutated, truncated,
 * nested thousands of levels deep or carrying non-UTF-8 bytes. Returns a
 * malloc'd NUL-terminated string (NULL only when out of memory). */
char *fuzz_expression(uint64_t *state, int n_inputs, int n_params);

/* WGSL for a custom kernel over n_buffers array<f32> bindings (and a uniform at
 * binding n_buffers when uniform is set), with entry point "main": valid, or
 * with mismatched bindings, fixed-size arrays larger than the buffers, mutated
 * bytes or invalid UTF-8. Returns a malloc'd string. */
char *fuzz_wgsl(uint64_t *state, int n_buffers, int uniform);

/* Flips, inserts, deletes or duplicates a few bytes of text[0..*len) in place
 * (capacity bytes available, NUL kept at text[*len]); may insert bytes >= 0x80. */
void fuzz_mutate(uint64_t *state, char *text, size_t *len, size_t capacity);

#endif
