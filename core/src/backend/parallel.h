/*
 * parallel.h: OpenMP thread queries that also compile without OpenMP.
 */
#pragma once

#ifdef _OPENMP
#include <omp.h>
static inline int fnq__max_threads(void) { return omp_get_max_threads(); }
static inline int fnq__thread_num(void) { return omp_get_thread_num(); }
#else
static inline int fnq__max_threads(void) { return 1; }
static inline int fnq__thread_num(void) { return 0; }
#endif
