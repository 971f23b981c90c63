#!/usr/bin/env bash
# The library and the command-line tool built with AddressSanitizer and
# UndefinedBehaviorSanitizer (LeakSanitizer on; any finding stops the test) into
# build-sanitize/ (CPU backend; the sanitizers do not reach into CUDA kernels: the GPU has
# compute-sanitizer for that), running the tests quick enough under them: the unit tests, the
# public-API tests of the ghost-atom path, invariance and create / evaluate / free cycles
# (leaks), the CLI's error handling (corrupt, truncated and hostile model and structure files),
# and the fuzz harnesses over their seeds and every regression input found by fuzzing
# (fuzz_replay_*). `--all` runs every cpu-labelled
# test that needs neither Python packages nor LAMMPS (mpi_halo and the finite differences take
# several minutes under the sanitizers). scripts/test.sh runs this after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DFNQ_ENABLE_CUDA=OFF \
  -DFNQ_BUILD_LAMMPS=OFF -DCMAKE_C_FLAGS="$flags -O1" -DCMAKE_CXX_FLAGS="$flags -O1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-sanitize -j "$(nproc)" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
quick='^(unit_|fuzz_replay_|cpu_graph_api$|cpu_invariance$|cpu_cycles$|cli_errors$|cli_fnqm_errors$|cli_models$)'
all='^(unit_|fuzz_replay_|cpu_|mpi_halo$|cli_errors$|cli_fnqm_errors$|cli_models$|cli_published_values$)'
# cpu_cycles: model and context create / evaluate / free cycles, LeakSanitizer at exit; a cycle
# takes ~1 s here (1,000 in the plain build take ~50 s), so 1 warm-up and 4 measured (~5 s)
export FNQ_TEST_CYCLES=${FNQ_TEST_CYCLES:-4,1}
pattern=$quick
[ "${1:-}" = "--all" ] && pattern=$all
cd build-sanitize
echo "sanitizers (AddressSanitizer, UndefinedBehaviorSanitizer, LeakSanitizer):"
ctest --output-on-failure -j 2 -R "$pattern"
