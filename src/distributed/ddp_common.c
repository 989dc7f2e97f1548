/* What ddp_mpi.c and ddp_shm.c both use: the clock, MPI error messages and
 * a wait with a deadline (ddp_internal.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "ddp_internal.h"

double ddp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool ddp_mpi_failed(int rc, const char *what, char *msg, size_t msg_size, const ddp *d)
{
    if (rc == MPI_SUCCESS) return false;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    snprintf(msg, msg_size, "rank %d of %d: %s failed: %s", d->rank, d->size, what, text);
    return true;
}

/* Waits for n requests, testing (a blocking MPI_Wait has no deadline). */
bool ddp_wait_all(ddp *d, MPI_Request *requests, int n, const char *what, char *msg, size_t msg_size)
{
    const double deadline = ddp_now_s() + d->opt.timeout_s;
    for (;;) {
        int flag = 0;
        int rc = MPI_Testall(n, requests, &flag, MPI_STATUSES_IGNORE);
        if (ddp_mpi_failed(rc, what, msg, msg_size, d)) return false;
        if (flag) return true;
        if (ddp_now_s() > deadline) {
            snprintf(msg, msg_size, "rank %d of %d: %s has waited %.0f s for the other ranks: one of them has "
                                    "stopped or hangs (--ddp-timeout sets the limit)",
                     d->rank, d->size, what, d->opt.timeout_s);
            return false;
        }
        sched_yield(); /* the peer may share this core */
    }
}
