/* Loss history drawn as a PNG with cairo (see train_log.h); the rows and
 * their CSV are in train_log_csv.c, which the cairo-less web build shares. */
#include "train_log.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>

/* Plot area in pixels and the data range it shows. */
typedef struct plot_frame {
    double x0, y0, width, height; /* left, top */
    double step_max, loss_min, loss_max;
} plot_frame;

static double px(const plot_frame *p, double step) { return p->x0 + p->width * step / p->step_max; }
static double py(const plot_frame *p, double loss)
{
    return p->y0 + p->height * (p->loss_max - loss) / (p->loss_max - p->loss_min);
}

static float field(const train_record *r, int which)
{
    return which == 0 ? r->loss : which == 1 ? r->train_eval : r->val_eval;
}

static void draw_series(cairo_t *cr, const plot_frame *p, const train_history *h, int which)
{
    bool open = false;
    for (int64_t i = 0; i < h->n; i++) {
        float v = field(&h->rows[i], which);
        if (!isfinite(v)) continue;
        double x = px(p, h->rows[i].step), y = py(p, v);
        if (open) cairo_line_to(cr, x, y);
        else cairo_move_to(cr, x, y);
        open = true;
        if (which > 0) { /* eval points are few: mark each */
            cairo_stroke(cr);
            cairo_arc(cr, x, y, 2.5, 0, 6.283185307179586);
            cairo_fill(cr);
            cairo_move_to(cr, x, y);
        }
    }
    cairo_stroke(cr);
}

bool train_history_plot(const train_history *h, const char *path, const char *title)
{
    const char *label = "";
    return train_history_plot_runs(h, &label, 1, path, title);
}

bool train_history_plot_runs(const train_history *runs, const char *const *labels, int n_runs, const char *path,
                             const char *title)
{
    const int W = 900, H = 540;
    plot_frame p = {.x0 = 70, .y0 = 40, .width = W - 100, .height = H - 100, .step_max = 1,
                    .loss_min = INFINITY, .loss_max = -INFINITY};
    for (int r = 0; r < n_runs; r++) {
        for (int64_t i = 0; i < runs[r].n; i++) {
            for (int k = 0; k < 3; k++) {
                float v = field(&runs[r].rows[i], k);
                if (!isfinite(v)) continue;
                p.loss_min = fmin(p.loss_min, v);
                p.loss_max = fmax(p.loss_max, v);
            }
            p.step_max = fmax(p.step_max, runs[r].rows[i].step);
        }
    }
    if (!(p.loss_min <= p.loss_max)) p.loss_min = 0, p.loss_max = 1;
    double pad = fmax(0.05 * (p.loss_max - p.loss_min), 0.01);
    p.loss_min = fmax(0, p.loss_min - pad);
    p.loss_max += pad;

    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);

    /* grid and tick labels: 5 divisions on each axis */
    char label[160];
    cairo_set_line_width(cr, 1);
    for (int i = 0; i <= 5; i++) {
        double loss = p.loss_min + (p.loss_max - p.loss_min) * i / 5, y = py(&p, loss);
        double step = p.step_max * i / 5, x = px(&p, step);
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, p.x0, y);
        cairo_line_to(cr, p.x0 + p.width, y);
        cairo_move_to(cr, x, p.y0);
        cairo_line_to(cr, x, p.y0 + p.height);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        snprintf(label, sizeof(label), "%.2f", loss);
        cairo_move_to(cr, 20, y + 4);
        cairo_show_text(cr, label);
        snprintf(label, sizeof(label), "%.0f", step);
        cairo_move_to(cr, x - 10, p.y0 + p.height + 18);
        cairo_show_text(cr, label);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_rectangle(cr, p.x0, p.y0, p.width, p.height);
    cairo_stroke(cr);
    cairo_move_to(cr, p.x0 + p.width / 2 - 15, H - 20);
    cairo_show_text(cr, "step");
    cairo_set_font_size(cr, 14);
    cairo_move_to(cr, p.x0, 25);
    cairo_show_text(cr, title);

    /* per run: batch loss (light), eval train loss (one run only), eval val loss;
     * a legend in the top-right corner */
    static const double colors[4][3][3] = {
        {{0.55, 0.7, 0.9}, {0.1, 0.35, 0.8}, {0.85, 0.3, 0.1}},
        {{0.95, 0.7, 0.55}, {0.8, 0.35, 0.1}, {0.6, 0.1, 0.5}},
        {{0.6, 0.85, 0.6}, {0.1, 0.55, 0.2}, {0.1, 0.45, 0.15}},
        {{0.8, 0.8, 0.8}, {0.4, 0.4, 0.4}, {0.1, 0.1, 0.1}},
    };
    static const char *names[3] = {"batch loss", "train loss (eval)", "val loss (eval)"};
    cairo_set_font_size(cr, 12);
    int legend = 0;
    for (int r = 0; r < n_runs; r++) {
        const double(*c)[3] = colors[r % 4];
        for (int k = 0; k < 3; k++) {
            if (k == 1 && n_runs > 1) continue;
            cairo_set_source_rgb(cr, c[k][0], c[k][1], c[k][2]);
            cairo_set_line_width(cr, k == 0 ? 1.0 : 2.0);
            draw_series(cr, &p, &runs[r], k);
            double ly = p.y0 + 20 + 18 * legend++, lx = p.x0 + p.width - 260;
            cairo_move_to(cr, lx, ly - 4);
            cairo_line_to(cr, lx + 25, ly - 4);
            cairo_stroke(cr);
            cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
            cairo_move_to(cr, lx + 32, ly);
            snprintf(label, sizeof(label), "%s%s%s", labels[r], labels[r][0] ? ": " : "", names[k]);
            cairo_show_text(cr, label);
        }
    }
    cairo_destroy(cr);
    bool ok = cairo_surface_write_to_png(surface, path) == CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(surface);
    return ok;
}
