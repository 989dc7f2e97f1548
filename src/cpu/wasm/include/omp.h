/* WebAssembly build only: the page runs on one thread (no -pthread, so no
 * SharedArrayBuffer and no cross-origin isolation needed), the OpenMP pragmas
 * are ignored (-fno-openmp) and these calls describe that single thread. */
#ifndef WGT_WASM_OMP_H
#define WGT_WASM_OMP_H

static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }

#endif
