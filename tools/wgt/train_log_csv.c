/* Loss history rows and their CSV (see train_log.h): no cairo here, so the
 * web build (web/CMakeLists.txt), which draws its chart in a canvas, links this
 * file alone while `wgt` links it with train_log.c's plots. */
#include "train_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void put_cell(FILE *f, float v, const char *sep)
{
    if (isnan(v)) fprintf(f, "%s", sep);
    else fprintf(f, "%.6g%s", v, sep);
}

bool train_history_write_csv(const train_history *h, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "step,loss,train_eval,val_eval,lr\n");
    for (int64_t i = 0; i < h->n; i++) {
        const train_record *r = &h->rows[i];
        fprintf(f, "%.0f,", r->step);
        put_cell(f, r->loss, ",");
        put_cell(f, r->train_eval, ",");
        put_cell(f, r->val_eval, ",");
        put_cell(f, r->lr, "\n");
    }
    return fclose(f) == 0;
}

/* One CSV cell: empty is NaN; false on anything but a number. */
static bool parse_cell(const char **p, float *out, char end)
{
    char *stop;
    if (**p == end || **p == '\0' || **p == '\n' || **p == '\r') {
        *out = NAN;
    } else {
        *out = strtof(*p, &stop);
        if (stop == *p) return false;
        *p = stop;
    }
    if (**p != end && !(end == '\n' && (**p == '\0' || **p == '\r'))) return false;
    if (**p == end) (*p)++;
    return true;
}

bool train_history_read_csv(train_history *h, const char *path, char *msg, size_t msg_size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, msg_size, "cannot open %s", path);
        return false;
    }
    char line[512];
    bool ok = fgets(line, sizeof(line), f) && strncmp(line, "step,loss,train_eval,val_eval,lr", 32) == 0;
    if (!ok) snprintf(msg, msg_size, "%s: the first line is not step,loss,train_eval,val_eval,lr", path);
    for (int n = 2; ok && fgets(line, sizeof(line), f); n++) {
        train_record r;
        const char *p = line;
        float *cells[5] = {&r.step, &r.loss, &r.train_eval, &r.val_eval, &r.lr};
        for (int k = 0; ok && k < 5; k++) ok = parse_cell(&p, cells[k], k < 4 ? ',' : '\n');
        ok = ok && isfinite(r.step) && train_history_add(h, r);
        if (!ok) snprintf(msg, msg_size, "%s:%d: not 5 numbers (empty for none)", path, n);
    }
    fclose(f);
    return ok;
}
