/* `wgt train` takes the optimizer steps of nanoGPT / PyTorch.
 *
 * tests/golden/train_ref.safetensors (made by bench/train_step_check.py) holds
 * initial weights (model.<name>) and what PyTorch in float64 made of them:
 * nanoGPT's train.py loop (warmup + cosine lr, AdamW with decay on the 2-D
 * tensors, clipping at global norm 1) on wgt's batches, with dropout off and
 * with dropout 0.2 under wgt's own Philox masks (recomputed in NumPy). Here
 * `wgt train --init` starts from those weights with the fixture's flags and
 * its checkpoint is compared with the reference:
 *   - the loss of every step and the learning rate of every step,
 *   - the train/val evaluations at step 0 and at the end,
 *   - every parameter: the norm of its update and its first 8 values.
 * Tolerances: PyTorch float32 against float64 on the same runs differs by up
 * to 1e-6 in the loss over the first 10 steps and 3e-3 after 50 (the no-dropout
 * run is sensitive between steps 30 and 50); wgt's CPU and WebGPU backends are
 * as close (bench/train_step_check.py prints both). One changed detail of the
 * recipe (warmup formula, decay on the embeddings, tanh GELU, LayerNorm eps,
 * AdamW eps, no clipping) moves the losses by 0.14 or more within 50 steps and
 * by over 1e-4 within 10, so the bounds below catch each of them.
 * CPU: 1, 10 and 50 steps, dropout off and on. WebGPU (lavapipe), to stay
 * short: 10 steps with dropout, on lavapipe's own attention kernels and on the
 * kernels a GPU picks. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

static const char *WORK = WGT_TEST_WORK_DIR;
static const char *DATA = WGT_SOURCE_DIR "/data/tinyshakespeare.txt";
static const char *FIXTURE = WGT_SOURCE_DIR "/tests/golden/train_ref.safetensors";

#define MAX_PARAMS 32
#define HEAD 8 /* first values of each parameter kept in the fixture */

typedef struct fixture {
    wgt_safetensors *file;
    const char *args;
    char names[MAX_PARAMS][80];
    int n_params;
    int steps; /* the longest run */
    double dropout;
} fixture;

/* A float tensor of f (any shape) into a malloc'ed host array; NULL if absent. */
static float *load_floats(wgt_safetensors *f, const char *name, int64_t *count)
{
    wgt_tensor *t = wgt_safetensors_find(f, name) >= 0 ? wgt_safetensors_load(f, name) : NULL;
    if (!t) return NULL;
    int64_t n = wgt_tensor_numel(t);
    float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (host && wgt_tensor_read(t, host, (size_t)n * sizeof(float)) != WGT_OK) {
        free(host);
        host = NULL;
    }
    wgt_tensor_release(t);
    if (count) *count = n;
    return host;
}

static bool open_fixture(wgt_context *cpu, fixture *fx)
{
    memset(fx, 0, sizeof(*fx));
    fx->file = wgt_safetensors_open(cpu, FIXTURE);
    CHECK(fx->file != NULL, "cannot open %s: %s", FIXTURE, wgt_context_error_message(cpu));
    if (!fx->file) return false;
    fx->args = wgt_safetensors_metadata_find(fx->file, "args");
    const char *params = wgt_safetensors_metadata_find(fx->file, "params");
    const char *steps = wgt_safetensors_metadata_find(fx->file, "steps");
    const char *dropout = wgt_safetensors_metadata_find(fx->file, "dropout");
    CHECK(fx->args && params && steps && dropout, "%s lacks its metadata", FIXTURE);
    if (!fx->args || !params || !steps || !dropout) return false;
    fx->steps = atoi(steps);
    fx->dropout = atof(dropout);
    for (const char *p = params; *p && fx->n_params < MAX_PARAMS; fx->n_params++) {
        size_t len = strcspn(p, ",");
        snprintf(fx->names[fx->n_params], sizeof(fx->names[0]), "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    return fx->n_params > 0 && fx->steps > 0;
}

/* Runs `wgt train` from the fixture's weights; 0 on success. The CPU backend
 * runs on 2 threads whatever the machine, so a run does not depend on the
 * core count or on the backend lowering its thread count under load (its
 * sums over rows split by thread: 16 threads end the 50-step run without
 * dropout elsewhere than 2 do). */
static int run_train(const fixture *fx, const char *backend, double dropout, int steps, const char *out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "OMP_NUM_THREADS=2 '%s' train %s --data '%s' --backend %s --dropout %g --max-iters %d --init '%s' "
             "--out '%s' --quiet >'%s.log' 2>&1",
             WGT_CLI_PATH, fx->args, DATA, backend, dropout, steps, FIXTURE, out, out);
    int status = system(cmd);
    return status == -1 || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
}

/* Loss and lr of every step, then the evaluations, checked against ref.<label>.* */
static void check_history(const fixture *fx, wgt_safetensors *ck, const char *what, const char *label, int steps,
                          double early_tol, double late_tol, double eval_tol)
{
    int64_t n_rows = 0, n_ref = 0, n_eval = 0, n_lr = 0;
    float *h = load_floats(ck, "history", &n_rows);
    char name[128];
    snprintf(name, sizeof(name), "ref.%s.loss", label);
    float *ref = load_floats(fx->file, name, &n_ref);
    snprintf(name, sizeof(name), "ref.%s.eval", label);
    float *ref_eval = load_floats(fx->file, name, &n_eval);
    float *ref_lr = load_floats(fx->file, "ref.lr", &n_lr);
    CHECK(h && ref && ref_eval && ref_lr, "%s: history or reference missing", what);
    if (!h || !ref || !ref_eval || !ref_lr) goto done;
    n_rows /= 5;
    int seen = 0, evals = 0;
    double worst_early = 0, worst_late = 0, worst_lr = 0, worst_eval = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        const float *row = h + 5 * r; /* step, loss, train_eval, val_eval, lr */
        int step = (int)row[0];
        if (!isnan(row[1])) { /* a training step's loss */
            CHECK(step == seen && step < n_ref, "%s: history row %lld is step %d, expected %d", what, (long long)r,
                  step, seen);
            if (step != seen || step >= n_ref) break;
            double d = fabs(row[1] - ref[step]);
            if (step < 10) worst_early = fmax(worst_early, d);
            else worst_late = fmax(worst_late, d);
            worst_lr = fmax(worst_lr, fabs(row[4] - ref_lr[step]) / ref_lr[step]);
            seen++;
        } else { /* an evaluation: the reference has steps 0, eval_interval, ..., the end of the longest run */
            for (int64_t e = 0; e < n_eval / 3; e++)
                if ((int)ref_eval[3 * e] == step) {
                    worst_eval = fmax(worst_eval, fmax(fabs(row[2] - ref_eval[3 * e + 1]), fabs(row[3] - ref_eval[3 * e + 2])));
                    evals++;
                }
        }
    }
    CHECK(seen == steps, "%s: %d step losses logged, expected %d", what, seen, steps);
    CHECK(worst_early <= early_tol, "%s: loss of steps 0..9 differs from PyTorch float64 by %.3g (bound %.1g)", what,
          worst_early, early_tol);
    CHECK(worst_late <= late_tol, "%s: loss of steps 10.. differs from PyTorch float64 by %.3g (bound %.1g)", what,
          worst_late, late_tol);
    CHECK(worst_lr <= 1e-6, "%s: learning rate differs from nanoGPT's get_lr by %.3g (relative)", what, worst_lr);
    CHECK(evals >= 1 && worst_eval <= eval_tol, "%s: %d evaluations, worst train/val difference %.3g (bound %.1g)",
          what, evals, worst_eval, eval_tol);
    printf("%s: loss vs PyTorch f64: steps 0-9 %.1e, later %.1e; lr %.1e; %d evaluations %.1e\n", what, worst_early,
           worst_late, worst_lr, evals, worst_eval);
done:
    free(h);
    free(ref);
    free(ref_eval);
    free(ref_lr);
}

/* Every parameter after `steps` steps: its update's norm and first values. */
static void check_params(const fixture *fx, wgt_safetensors *ck, const char *what, const char *label, int steps,
                         double tol)
{
    char name[160];
    snprintf(name, sizeof(name), "ref.%s.update_norm.%d", label, steps);
    float *ref_norm = load_floats(fx->file, name, NULL);
    snprintf(name, sizeof(name), "ref.%s.head.%d", label, steps);
    float *ref_head = load_floats(fx->file, name, NULL);
    CHECK(ref_norm && ref_head, "%s: the fixture has no parameters after %d steps", what, steps);
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; ref_norm && ref_head && i < fx->n_params; i++) {
        int64_t n = 0, n0 = 0;
        snprintf(name, sizeof(name), "model.%s", fx->names[i]);
        float *w = load_floats(ck, name, &n), *w0 = load_floats(fx->file, name, &n0);
        CHECK(w && w0 && n == n0 && n >= HEAD, "%s: parameter %s missing or resized", what, fx->names[i]);
        if (w && w0 && n == n0 && n >= HEAD) {
            double sq = 0;
            for (int64_t k = 0; k < n; k++) sq += ((double)w[k] - w0[k]) * ((double)w[k] - w0[k]);
            /* errors relative to the reference update: its norm, and its rms for single values */
            double upd = ref_norm[i], rms = upd / sqrt((double)n);
            double e = fabs(sqrt(sq) - upd) / upd;
            for (int k = 0; k < HEAD; k++) e = fmax(e, fabs(w[k] - ref_head[i * HEAD + k]) / rms);
            if (e > worst) worst = e, worst_name = fx->names[i];
        }
        free(w);
        free(w0);
    }
    CHECK(worst <= tol, "%s: parameters after %d steps differ from PyTorch float64 by %.3g of the update (%s; bound %.1g)",
          what, steps, worst, worst_name, tol);
    printf("%s: parameters after %d steps within %.1e of the update (worst %s)\n", what, steps, worst, worst_name);
    free(ref_norm);
    free(ref_head);
}

static void check_run(wgt_context *cpu, const fixture *fx, const char *backend, const char *label, int steps)
{
    double dropout = strcmp(label, "drop") == 0 ? fx->dropout : 0.0;
    char out[600], what[128], path[700];
    snprintf(out, sizeof(out), "%s/%s_%s_%d", WORK, backend, label, steps);
    snprintf(what, sizeof(what), "%s%s, dropout %g, %d steps", backend,
             getenv("WGT_ATTENTION_FORWARD") ? " (a GPU's attention kernels)" : "", dropout, steps);
    int rc = run_train(fx, backend, dropout, steps, out);
    CHECK(rc == 0, "%s: wgt train exit %d (see %s.log)", what, rc, out);
    if (rc != 0) return;
    snprintf(path, sizeof(path), "%s/ckpt.safetensors", out);
    wgt_safetensors *ck = wgt_safetensors_open(cpu, path);
    CHECK(ck != NULL, "%s: cannot open %s", what, path);
    if (!ck) return;
    /* The no-dropout run is the sensitive one after step 30 (PyTorch f32: 3e-3). */
    double late = dropout > 0 ? 2e-3 : 2e-2;
    check_history(fx, ck, what, label, steps, 2e-5, late, steps <= 10 ? 1e-4 : late);
    /* After 1 and 10 steps the updates agree to 1e-4 (f32 rounding of Adam's
     * first steps); after 50, PyTorch f32 itself is 1e-2 away, and the run
     * without dropout magnifies rounding most: on this project's 2-core VM it
     * ends 0.026 of the update from float64, on an H100 host (other BLAS
     * kernels, AVX-512) 0.138. A changed recipe detail moves the losses by
     * 0.14 within 50 steps and the 10-step updates past 2e-3, which the bounds
     * on the losses and on 10 steps catch. */
    check_params(fx, ck, what, label, steps, steps <= 10 ? 2e-3 : dropout > 0 ? 0.1 : 0.3);
    wgt_safetensors_close(ck);
}

/* --init refuses a file that does not fit the model, with a message. */
static void check_bad_init(const fixture *fx)
{
    char cmd[4096], out[600];
    snprintf(out, sizeof(out), "%s/bad_init", WORK);
    snprintf(cmd, sizeof(cmd), "'%s' train %s --n-embd 32 --data '%s' --backend cpu --max-iters 1 --init '%s' --out '%s' "
             "--quiet >'%s.log' 2>&1", WGT_CLI_PATH, fx->args, DATA, FIXTURE, out, out);
    int status = system(cmd);
    CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0, "--init with another width: status %d", status);
    snprintf(cmd, sizeof(cmd), "grep -q 'another shape' '%s.log'", out);
    CHECK(system(cmd) == 0, "--init with another width: no message naming the shape (see %s.log)", out);
    snprintf(cmd, sizeof(cmd), "'%s' train --init /nonexistent.safetensors --backend cpu --data '%s' --out '%s' "
             "--quiet >'%s.log' 2>&1", WGT_CLI_PATH, DATA, out, out);
    status = system(cmd);
    CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0, "--init of a missing file: status %d", status);
}

int main(void)
{
    setenv("OMP_WAIT_POLICY", "passive", 0);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", WORK);
    CHECK(system(cmd) == 0, "mkdir %s", WORK);
    wgt_context *cpu = test_cpu_context();
    CHECK(cpu != NULL, "cpu context");
    fixture fx;
    if (!cpu || !open_fixture(cpu, &fx)) return test_summary();
    for (int d = 0; d < 2; d++) {
        const char *label = d ? "drop" : "nodrop";
        check_run(cpu, &fx, "cpu", label, 1);
        check_run(cpu, &fx, "cpu", label, 10);
        check_run(cpu, &fx, "cpu", label, fx.steps);
    }
    check_run(cpu, &fx, "webgpu", "drop", 10);
    /* The attention kernels a GPU with subgroups gets by default (the forward
     * with rows split over subgroup quads, the fused backward), which lavapipe
     * runs only when asked. */
    setenv("WGT_ATTENTION_FORWARD", "quad", 1);
    setenv("WGT_ATTENTION_BACKWARD", "fused", 1);
    check_run(cpu, &fx, "webgpu", "drop", 10); /* the run above's folder, read before it is reused */
    check_bad_init(&fx);
    wgt_safetensors_close(fx.file);
    wgt_context_destroy(cpu);
    return test_summary();
}
