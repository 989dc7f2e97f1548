/* Temperature / top-k / top-p sampling on the host (see sampler.h). */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct sampler_entry {
    double prob;
    int id;
} sampler_entry;

struct sampler {
    sampler_config config;
    int vocab_size;
    uint64_t rng;
    sampler_entry *order; /* [V] candidates, sorted by probability, largest first */
};

void sampler_config_init(sampler_config *c)
{
    c->temperature = 1.0;
    c->top_k = 0;
    c->top_p = 1.0;
    c->seed = 0;
}

bool sampler_config_check(const sampler_config *c, char *msg, size_t msg_size)
{
    const char *why = NULL;
    if (!(c->temperature >= 0) || !isfinite(c->temperature)) why = "temperature must be a finite number >= 0";
    else if (c->top_k < 0) why = "top_k must be >= 0 (0: no limit)";
    else if (!(c->top_p > 0 && c->top_p <= 1)) why = "top_p must be in (0, 1]";
    if (why) {
        snprintf(msg, msg_size, "sampler: temperature %g, top_k %d, top_p %g: %s", c->temperature, c->top_k, c->top_p,
                 why);
        return false;
    }
    return true;
}

sampler *sampler_create(const sampler_config *config, int vocab_size)
{
    char msg[160];
    if (!config || vocab_size < 1 || !sampler_config_check(config, msg, sizeof(msg))) return NULL;
    sampler *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->config = *config;
    s->vocab_size = vocab_size;
    s->rng = config->seed;
    s->order = malloc((size_t)vocab_size * sizeof(sampler_entry));
    if (!s->order) {
        sampler_destroy(s);
        return NULL;
    }
    return s;
}

void sampler_destroy(sampler *s)
{
    if (!s) return;
    free(s->order);
    free(s);
}

uint64_t sampler_state(const sampler *s) { return s->rng; }
void sampler_set_state(sampler *s, uint64_t state) { s->rng = state; }

/* splitmix64 -> uniform double in [0, 1) with 53 bits. */
static double next_uniform(sampler *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static int by_probability(const void *a, const void *b)
{
    const sampler_entry *x = a, *y = b;
    if (x->prob != y->prob) return x->prob < y->prob ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id); /* ties: lower id first, so the order is total */
}

int sampler_pick(sampler *s, const float *logits)
{
    const int V = s->vocab_size;
    int best = -1;
    for (int i = 0; i < V; i++)
        if (!isnan(logits[i]) && logits[i] != -INFINITY && (best < 0 || logits[i] > logits[best])) best = i;
    if (best < 0 || s->config.temperature == 0) return best;
    /* softmax(logits / T) with the max subtracted (unnormalized); NaN counts as impossible */
    int n = 0;
    for (int i = 0; i < V; i++) {
        double p = isnan(logits[i]) ? 0 : exp(((double)logits[i] - logits[best]) / s->config.temperature);
        if (p > 0) s->order[n++] = (sampler_entry){p, i};
    }
    qsort(s->order, (size_t)n, sizeof(sampler_entry), by_probability);
    if (s->config.top_k > 0 && s->config.top_k < n) n = s->config.top_k;
    double kept = 0;
    for (int i = 0; i < n; i++) kept += s->order[i].prob;
    if (s->config.top_p < 1) {
        /* the smallest prefix whose mass reaches top_p of what top-k left */
        double need = s->config.top_p * kept, mass = 0;
        int m = 0;
        while (m < n && mass < need) mass += s->order[m++].prob;
        n = m;
        kept = mass;
    }
    double u = next_uniform(s) * kept, acc = 0;
    for (int i = 0; i < n; i++) {
        acc += s->order[i].prob;
        if (u < acc) return s->order[i].id;
    }
    return s->order[n - 1].id; /* rounding left u at the very top */
}
