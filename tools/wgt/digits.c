/*
 * wgt digits: trains the digits CNN (src/models/digits_cnn.h) on the 8x8
 * handwritten digits that ship in data/digits.csv.gz, with a fixed 80/20
 * split (a Fisher-Yates shuffle from a fixed seed: the same split on every
 * machine), SGD with momentum, a progress bar, and at the end a CSV log and a
 * PNG plot of the training loss and the test accuracy per epoch (cairo, as
 * `wgt train`). --min-accuracy makes it a test: exit 1 below it.
 */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "digits_cnn.h"
#include "wgt_commands.h"

#define DIGITS_MAX 4096
#define DIGITS_PIXELS 64

typedef struct digits_set {
    int n;
    float pixels[DIGITS_MAX][DIGITS_PIXELS]; /* scaled to [0, 1] */
    int32_t labels[DIGITS_MAX];
} digits_set;

/* Reads the gzip CSV: 64 integers 0..16 then the label 0..9 per row. Every
 * value is validated: a malformed file is an error naming the line. */
static bool load_digits(const char *path, digits_set *d)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "wgt digits: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    char line[1024];
    d->n = 0;
    int lineno = 0;
    bool ok = true;
    while (ok && gzgets(f, line, sizeof(line))) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\0') continue;
        if (d->n >= DIGITS_MAX) {
            fprintf(stderr, "wgt digits: %s has more than %d rows\n", path, DIGITS_MAX);
            ok = false;
            break;
        }
        char *p = line;
        for (int k = 0; k <= DIGITS_PIXELS && ok; k++) {
            char *end;
            long v = strtol(p, &end, 10);
            bool last = k == DIGITS_PIXELS;
            if (end == p || v < 0 || v > (last ? 9 : 16) || (!last && *end != ',')) {
                fprintf(stderr, "wgt digits: %s line %d, value %d: expected %s\n", path, lineno, k + 1,
                        last ? "a label 0..9" : "a pixel 0..16 followed by a comma");
                ok = false;
                break;
            }
            if (last) d->labels[d->n] = (int32_t)v;
            else d->pixels[d->n][k] = (float)v / 16.0f;
            p = end + 1;
        }
        if (ok) d->n++;
    }
    gzclose(f);
    if (ok && d->n < 10) {
        fprintf(stderr, "wgt digits: %s has only %d rows\n", path, d->n);
        ok = false;
    }
    return ok;
}

typedef struct digits_options {
    const char *data, *out;
    int epochs, batch;
    double lr, momentum, min_accuracy;
    uint64_t seed;
    bool quiet;
} digits_options;

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt digits [--data FILE] [--epochs N] [--batch B] [--lr LR] [--momentum M] [--seed S]\n"
               "                  [--out DIR] [--min-accuracy A] [--quiet]\n"
               "  trains the digits CNN (src/models/digits_cnn.h) on data/digits.csv.gz, 80/20 split;\n"
               "  writes DIR/digits_log.csv and DIR/digits_plot.png (default DIR: digits-out)\n"
               "  --min-accuracy A: exit 1 if the final test accuracy is below A (e.g. 0.97)\n");
}

static bool parse(int argc, char **argv, digits_options *o)
{
    *o = (digits_options){"data/digits.csv.gz", "digits-out", 8, 32, 0.05, 0.9, 0, 1, false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (strcmp(a, "--data") == 0 && v) o->data = v;
        else if (strcmp(a, "--out") == 0 && v) o->out = v;
        else if (strcmp(a, "--epochs") == 0 && v) o->epochs = atoi(v);
        else if (strcmp(a, "--batch") == 0 && v) o->batch = atoi(v);
        else if (strcmp(a, "--lr") == 0 && v) o->lr = atof(v);
        else if (strcmp(a, "--momentum") == 0 && v) o->momentum = atof(v);
        else if (strcmp(a, "--seed") == 0 && v) o->seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--min-accuracy") == 0 && v) o->min_accuracy = atof(v);
        else if (strcmp(a, "--quiet") == 0) o->quiet = true, takes = false;
        else {
            fprintf(stderr, "wgt digits: unknown or incomplete option \"%s\"\n", a);
            usage(stderr);
            return false;
        }
        if (takes) i++;
    }
    if (o->epochs < 1 || o->batch < 2 || !(o->lr > 0) || !(o->momentum >= 0 && o->momentum < 1)) {
        fprintf(stderr, "wgt digits: --epochs >= 1, --batch >= 2, --lr > 0, --momentum in [0, 1)\n");
        return false;
    }
    return true;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Uploads rows idx[0..n) as x [n, 1, 8, 8] and y [n]. */
static bool batch_tensors(wgt_context *ctx, const digits_set *d, const int *idx, int n, wgt_tensor **x, wgt_tensor **y)
{
    static float px[DIGITS_MAX * DIGITS_PIXELS];
    static int32_t lb[DIGITS_MAX];
    for (int i = 0; i < n; i++) {
        memcpy(px + (size_t)i * DIGITS_PIXELS, d->pixels[idx[i]], sizeof(float) * DIGITS_PIXELS);
        lb[i] = d->labels[idx[i]];
    }
    int64_t xs[4] = {n, 1, 8, 8}, ys = n;
    *x = wgt_tensor_from_host(ctx, WGT_F32, 4, xs, px);
    *y = wgt_tensor_from_host(ctx, WGT_I32, 1, &ys, lb);
    return *x && *y;
}

/* Fraction of idx[0..n) the model classifies right (eval mode). */
static double accuracy(digits_cnn *m, const digits_set *d, const int *idx, int n)
{
    wgt_context *ctx = m->ctx;
    int right = 0;
    wgt_no_grad_push(ctx);
    for (int start = 0; start < n; start += 256) {
        int count = n - start < 256 ? n - start : 256;
        wgt_scope_push(ctx);
        wgt_tensor *x, *y;
        int32_t pred[256];
        if (batch_tensors(ctx, d, idx + start, count, &x, &y)) {
            wgt_tensor *logits = digits_cnn_forward(m, x, false);
            wgt_tensor *arg = logits ? wgt_argmax(logits, 1, false) : NULL;
            if (arg && wgt_tensor_read(arg, pred, sizeof(int32_t) * (size_t)count) == WGT_OK)
                for (int i = 0; i < count; i++) right += pred[i] == d->labels[idx[start + i]];
        }
        wgt_scope_pop(ctx);
    }
    wgt_no_grad_pop(ctx);
    return (double)right / n;
}

/* Two panels: training loss and test accuracy against the epoch. */
static bool plot(const char *path, const double *loss, const double *acc, int epochs)
{
    const int W = 900, H = 420;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    for (int panel = 0; panel < 2; panel++) {
        const double *v = panel ? acc : loss;
        double x0 = 60 + panel * 450, y0 = 50, w = 360, h = 310, lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < epochs; i++) lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
        if (panel) lo = fmin(lo, 0.9), hi = 1.0;
        else lo = 0;
        if (!(hi > lo)) hi = lo + 1;
        char label[64];
        cairo_set_font_size(cr, 11);
        for (int k = 0; k <= 5; k++) {
            double y = y0 + h - h * k / 5.0;
            cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
            cairo_move_to(cr, x0, y);
            cairo_line_to(cr, x0 + w, y);
            cairo_stroke(cr);
            cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
            snprintf(label, sizeof(label), panel ? "%.1f%%" : "%.2f", panel ? 100 * (lo + (hi - lo) * k / 5) : lo + (hi - lo) * k / 5);
            cairo_move_to(cr, x0 - 50, y + 4);
            cairo_show_text(cr, label);
        }
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_rectangle(cr, x0, y0, w, h);
        cairo_stroke(cr);
        snprintf(label, sizeof(label), "epoch (1..%d)", epochs);
        cairo_move_to(cr, x0 + w / 2 - 30, y0 + h + 25);
        cairo_show_text(cr, label);
        cairo_set_font_size(cr, 14);
        cairo_move_to(cr, x0, y0 - 15);
        cairo_show_text(cr, panel ? "test accuracy (20% split)" : "training loss (mean cross-entropy per epoch)");
        cairo_set_source_rgb(cr, panel ? 0.1 : 0.8, panel ? 0.5 : 0.2, panel ? 0.1 : 0.1);
        cairo_set_line_width(cr, 2);
        for (int i = 0; i < epochs; i++) {
            double x = x0 + (epochs > 1 ? w * i / (epochs - 1) : w / 2), y = y0 + h - h * (v[i] - lo) / (hi - lo);
            if (i) cairo_line_to(cr, x, y);
            else cairo_move_to(cr, x, y);
        }
        cairo_stroke(cr);
        cairo_set_line_width(cr, 1);
    }
    cairo_status_t st = cairo_surface_write_to_png(s, path);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return st == CAIRO_STATUS_SUCCESS;
}

int wgt_command_digits(int argc, char **argv)
{
    digits_options o;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (!parse(argc, argv, &o)) return 2;
    static digits_set data;
    if (!load_digits(o.data, &data)) return 1;

    /* the fixed split: shuffle 0..n-1 with xorshift from seed 1, first 80% train */
    int order[DIGITS_MAX], n = data.n, n_train = n * 4 / 5, n_test = n - n_train;
    uint32_t st = 1;
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        st ^= st << 13, st ^= st >> 17, st ^= st << 5;
        int j = (int)(st % (uint32_t)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    const int *train = order, *test = order + n_train;

    wgt_context *ctx = wgt_context_create(NULL);
    if (!ctx || wgt_context_status(ctx) != WGT_OK) {
        fprintf(stderr, "wgt digits: no context: %s\n", ctx ? wgt_context_error_message(ctx) : "out of memory");
        wgt_context_destroy(ctx);
        return 1;
    }
    wgt_adapter_info info;
    if (wgt_context_adapter_info(ctx, &info) == WGT_OK && !o.quiet)
        printf("wgt digits: %d train / %d test images on %s (%s)\n", n_train, n_test, info.name,
               wgt_context_backend(ctx) == WGT_BACKEND_CPU ? "cpu backend" : "webgpu backend");
    digits_cnn m;
    wgt_optimizer *opt = NULL;
    wgt_optimizer_config cfg;
    wgt_optimizer_config_init(&cfg, WGT_OPTIMIZER_SGD);
    cfg.lr = o.lr, cfg.momentum = o.momentum;
    if (digits_cnn_init(&m, ctx, o.seed)) opt = wgt_optimizer_create(m.params, DIGITS_CNN_PARAMS, &cfg);
    double *epoch_loss = calloc((size_t)o.epochs, sizeof(double)), *epoch_acc = calloc((size_t)o.epochs, sizeof(double));
    int steps_per_epoch = n_train / o.batch; /* the last partial batch is dropped */
    int rc = 0;
    double t0 = now_s(), acc = 0;
    uint32_t shuffle = (uint32_t)(o.seed * 2654435761u) | 1u;
    int perm[DIGITS_MAX];
    for (int epoch = 0; opt && epoch < o.epochs && rc == 0; epoch++) {
        for (int i = 0; i < n_train; i++) perm[i] = train[i];
        for (int i = n_train - 1; i > 0; i--) {
            shuffle ^= shuffle << 13, shuffle ^= shuffle >> 17, shuffle ^= shuffle << 5;
            int j = (int)(shuffle % (uint32_t)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        double sum = 0;
        for (int step = 0; step < steps_per_epoch; step++) {
            wgt_scope_push(ctx);
            wgt_tensor *x, *y, *loss = NULL;
            if (batch_tensors(ctx, &data, perm + step * o.batch, o.batch, &x, &y)) {
                wgt_tensor *logits = digits_cnn_forward(&m, x, true);
                loss = logits ? wgt_cross_entropy(logits, y, WGT_REDUCTION_MEAN, -100) : NULL;
            }
            float lv = NAN;
            if (!loss || wgt_optimizer_zero_grad(opt) != WGT_OK || wgt_backward(loss) != WGT_OK ||
                wgt_optimizer_step(opt) != WGT_OK || wgt_tensor_read(loss, &lv, sizeof(lv)) != WGT_OK)
                rc = 1;
            wgt_scope_pop(ctx);
            if (rc) break;
            sum += lv;
            if (!o.quiet) {
                int done = (epoch * steps_per_epoch + step + 1) * 30 / (o.epochs * steps_per_epoch);
                char bar[31];
                for (int k = 0; k < 30; k++) bar[k] = k < done ? '#' : ' ';
                bar[30] = '\0';
                printf("\r[%s] epoch %d/%d  step %d/%d  loss %.4f  %.1f s\033[K", bar, epoch + 1, o.epochs, step + 1,
                       steps_per_epoch, lv, now_s() - t0);
                fflush(stdout);
            }
        }
        if (rc) break;
        epoch_loss[epoch] = sum / steps_per_epoch;
        epoch_acc[epoch] = acc = accuracy(&m, &data, test, n_test);
        if (!o.quiet) printf("\r  epoch %2d: train loss %.4f, test accuracy %.2f%%\033[K\n", epoch + 1, epoch_loss[epoch], 100 * acc);
    }
    if (rc || !opt) {
        fprintf(stderr, "\nwgt digits: %s\n", wgt_context_error_message(ctx));
        rc = 1;
    } else {
        double elapsed = now_s() - t0;
        printf("wgt digits: test accuracy %.2f%% (%d of %d) after %d epochs in %.1f s\n", 100 * acc,
               (int)lround(acc * n_test), n_test, o.epochs, elapsed);
        char path[1024];
        if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "wgt digits: cannot create %s: %s\n", o.out, strerror(errno));
        } else {
            snprintf(path, sizeof(path), "%s/digits_log.csv", o.out);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "epoch,train_loss,test_accuracy\n");
                for (int e = 0; e < o.epochs; e++) fprintf(f, "%d,%.6f,%.6f\n", e + 1, epoch_loss[e], epoch_acc[e]);
                fclose(f);
            }
            snprintf(path, sizeof(path), "%s/digits_plot.png", o.out);
            if (plot(path, epoch_loss, epoch_acc, o.epochs) && !o.quiet) printf("wgt digits: plot in %s\n", path);
        }
        if (acc < o.min_accuracy) {
            fprintf(stderr, "wgt digits: test accuracy %.4f is below --min-accuracy %.4f\n", acc, o.min_accuracy);
            rc = 1;
        }
    }
    free(epoch_loss), free(epoch_acc);
    wgt_optimizer_destroy(opt);
    digits_cnn_free(&m);
    wgt_context_destroy(ctx);
    return rc;
}
