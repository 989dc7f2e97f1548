/* MPI_Allreduce of f32 sums on the host, the collective data-parallel
 * training uses (issue 15, bench/results/h200x4-2026-11-27): each size in MB,
 * 2 warm-up calls, the mean of 5.
 *   mpicc -O2 bench/mpi_allreduce_bench.c -o mpi_allreduce_bench
 *   mpirun -np 2 ./mpi_allreduce_bench 25 43 340 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc; a++) {
        size_t mb = (size_t)atoll(argv[a]), count = mb * 262144;
        float *x = malloc(count * sizeof(float));
        if (!x) MPI_Abort(MPI_COMM_WORLD, 1);
        for (size_t i = 0; i < count; i++) x[i] = 1.0f;
        for (int w = 0; w < 2; w++) MPI_Allreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int r = 0; r < 5; r++) MPI_Allreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double dt = (MPI_Wtime() - t0) / 5;
        if (rank == 0)
            printf("allreduce %d ranks %4zu MB: %.2f ms  %.2f GB/s (size/time)\n", size, mb, dt * 1e3,
                   (double)mb / 1024.0 / dt);
        free(x);
    }
    MPI_Finalize();
    return 0;
}
