/* Character-level data for `wgt train` (see train_data.h). */
#include "train_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool train_data_load(train_data *d, const char *path, char *msg, size_t msg_size)
{
    memset(d, 0, sizeof(*d));
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msg_size, "cannot open the data file %s: %s", path, strerror(errno));
        return false;
    }
    unsigned char *text = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            unsigned char *grown = cap > ((size_t)1 << 31) ? NULL : realloc(text, cap);
            if (!grown) {
                snprintf(msg, msg_size, "the data file %s is over 2 GiB or memory ran out", path);
                free(text);
                fclose(f);
                return false;
            }
            text = grown;
        }
        size_t got = fread(text + size, 1, cap - size, f);
        size += got;
        if (got == 0) break;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed || size == 0) {
        snprintf(msg, msg_size, failed ? "cannot read the data file %s" : "the data file %s is empty", path);
        free(text);
        return false;
    }
    bool present[256] = {false};
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) {
        present[text[i]] = true;
        hash = (hash ^ text[i]) * 0x100000001b3ull;
    }
    for (int b = 0; b < 256; b++) {
        d->id_of[b] = -1;
        if (present[b]) {
            d->id_of[b] = (int16_t)d->vocab_size;
            d->vocab[d->vocab_size++] = (unsigned char)b;
        }
    }
    d->ids = malloc(size * sizeof(int32_t));
    if (!d->ids) {
        snprintf(msg, msg_size, "no memory to encode %s (%zu bytes)", path, size);
        free(text);
        return false;
    }
    for (size_t i = 0; i < size; i++) d->ids[i] = d->id_of[text[i]];
    free(text);
    d->n_train = (int64_t)(size * 9 / 10); /* nanoGPT: n = len(data); train = data[:int(n*0.9)] */
    d->n_val = (int64_t)size - d->n_train;
    d->text_hash = hash;
    return true;
}

void train_data_free(train_data *d)
{
    free(d->ids);
    d->ids = NULL;
}

uint64_t train_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t train_eval_seed(uint64_t seed, int64_t step, int split)
{
    uint64_t s = seed ^ 0x5eed5eed5eed5eedull;
    s += (uint64_t)step * 2 + (uint64_t)split;
    return train_rng_next(&s);
}

void train_data_batch(const train_data *d, int split, int64_t batch, int64_t block, uint64_t *rng, int32_t *x,
                      int32_t *y)
{
    const int32_t *src = split == 0 ? d->ids : d->ids + d->n_train;
    const uint64_t n = (uint64_t)(split == 0 ? d->n_train : d->n_val);
    for (int64_t b = 0; b < batch; b++) {
        uint64_t offset = train_rng_next(rng) % (n - (uint64_t)block);
        memcpy(x + b * block, src + offset, (size_t)block * sizeof(int32_t));
        memcpy(y + b * block, src + offset + 1, (size_t)block * sizeof(int32_t));
    }
}

/* splitmix64's state moves by a constant per draw, so skipping k draws is one
 * addition. */
void train_data_batch_part(const train_data *d, int split, int64_t batch, int64_t first, int64_t count, int64_t block,
                           uint64_t *rng, int32_t *x, int32_t *y)
{
    uint64_t part = *rng + (uint64_t)first * 0x9e3779b97f4a7c15ull;
    train_data_batch(d, split, count, block, &part, x, y);
    *rng += (uint64_t)batch * 0x9e3779b97f4a7c15ull;
}
