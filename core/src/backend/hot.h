/*
 * hot.h: FNQ_HOT marks a hot loop to be compiled for several x86 instruction sets; the loader
 * picks the best one for the machine once (GCC function multi-versioning). Results are
 * identical run to run on a given machine; FMA contraction is off (-std=c11), so they also
 * agree across the versions.
 */
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(FNQ_NO_CLONES)
#define FNQ_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FNQ_HOT
#endif
