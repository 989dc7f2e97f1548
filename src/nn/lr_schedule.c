/* Learning-rate schedules as pure functions of the step: constant, linear
 * warmup, and nanoGPT's get_lr (linear warmup, cosine decay to a floor). */
#include <math.h>

#include "wgtensor.h"

double wgt_lr_at(const wgt_lr_schedule *s, int64_t step)
{
    if (!s || step < 0 || s->warmup_steps < 0 || !isfinite(s->lr)) return NAN;
    if (s->kind == WGT_LR_CONSTANT) return s->lr;
    if (s->kind != WGT_LR_LINEAR_WARMUP && s->kind != WGT_LR_WARMUP_COSINE) return NAN;
    /* nanoGPT: lr * (it + 1) / warmup_iters, so step 0 already moves. */
    if (step < s->warmup_steps) return s->lr * (double)(step + 1) / (double)s->warmup_steps;
    if (s->kind == WGT_LR_LINEAR_WARMUP) return s->lr;
    if (s->decay_steps <= s->warmup_steps || !isfinite(s->min_lr)) return NAN;
    if (step > s->decay_steps) return s->min_lr;
    double ratio = (double)(step - s->warmup_steps) / (double)(s->decay_steps - s->warmup_steps);
    const double pi = 3.14159265358979323846;
    double coeff = 0.5 * (1.0 + cos(pi * ratio));
    return s->min_lr + coeff * (s->lr - s->min_lr);
}
