/* ddp.h without MPI: this build cannot train on several processes. Every
 * entry point other than ddp_init is unreachable (ddp_init never returns a
 * handle); they exist so the tools link the same way in both builds. */
#include "ddp.h"

#include <stdio.h>
#include <stdlib.h>

bool ddp_compiled(void) { return false; }

bool ddp_launched_by_mpi(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) return true;
    }
    return false;
}

ddp *ddp_init(const ddp_options *opt, char *msg, size_t msg_size)
{
    (void)opt;
    snprintf(msg, msg_size, "this wgt was built without MPI, so it cannot train on several processes: install Open "
                            "MPI (scripts/setup-deps.sh installs libopenmpi-dev and openmpi-bin on Debian/Ubuntu), "
                            "configure again (cmake finds it with FindMPI) and rebuild; then run "
                            "mpirun -np N wgt train ... (docs/distributed.md)");
    return NULL;
}

int ddp_rank(const ddp *d) { return d ? 0 : 0; }
int ddp_size(const ddp *d) { return d ? 1 : 1; }
int ddp_local_rank(const ddp *d) { return d ? 0 : 0; }
const char *ddp_exchange_name(const ddp *d) { return d ? "none" : "none"; }

bool ddp_agree(ddp *d, const uint64_t *fingerprint, int n, const char *const *names, char *msg, size_t msg_size)
{
    (void)d, (void)fingerprint, (void)n, (void)names, (void)msg, (void)msg_size;
    return true;
}

bool ddp_broadcast(ddp *d, wgt_tensor *const *tensors, int n, char *msg, size_t msg_size)
{
    (void)d, (void)tensors, (void)n, (void)msg, (void)msg_size;
    return true;
}

bool ddp_attach(ddp *d, wgt_context *ctx, wgt_tensor *const *params, int n, char *msg, size_t msg_size)
{
    (void)d, (void)ctx, (void)params, (void)n, (void)msg, (void)msg_size;
    return true;
}

void ddp_begin_step(ddp *d) { (void)d; }

bool ddp_finish_step(ddp *d, char *msg, size_t msg_size)
{
    (void)d, (void)msg, (void)msg_size;
    return true;
}

bool ddp_allreduce_sum(ddp *d, double *values, int n, char *msg, size_t msg_size)
{
    (void)d, (void)values, (void)n, (void)msg, (void)msg_size;
    return true;
}

bool ddp_any(ddp *d, bool flag) { return (void)d, flag; }

void ddp_stats_get(const ddp *d, ddp_stats *stats)
{
    (void)d;
    *stats = (ddp_stats){0};
}

void ddp_stats_reset(ddp *d) { (void)d; }

void ddp_abort(ddp *d, const char *why, int code)
{
    (void)d;
    fprintf(stderr, "wgt train: %s\n", why);
    exit(code ? code : 1);
}

void ddp_finalize(ddp *d) { (void)d; }
