/* The loss history calls train_checkpoint.c makes, for the web build:
 * tools/wgt/train_log.c draws its PNG with cairo, which the page does not
 * link (it draws its own chart in a canvas). Same behaviour as there. */
#include <stdlib.h>

#include "train_log.h"

bool train_history_add(train_history *h, train_record row)
{
    if (h->n == h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 256;
        train_record *grown = realloc(h->rows, (size_t)cap * sizeof(train_record));
        if (!grown) return false;
        h->rows = grown;
        h->cap = cap;
    }
    h->rows[h->n++] = row;
    return true;
}

void train_history_free(train_history *h)
{
    free(h->rows);
    h->rows = NULL;
    h->n = h->cap = 0;
}
