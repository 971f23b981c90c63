#!/usr/bin/env bash
# The library, the command-line tool, the LAMMPS pair style and the Python bindings' library
# built with AddressSanitizer and UndefinedBehaviorSanitizer (LeakSanitizer on; any finding
# stops the test) into build-sanitize/ (CPU backend; the sanitizers do not reach into CUDA
# kernels: the GPU has compute-sanitizer for that), running the tests quick enough under them:
#   1. the unit tests, the public-API tests of the ghost-atom path, invariance and create /
#      evaluate / free cycles (leaks), the CLI's error handling (corrupt, truncated and hostile
#      model and structure files), and the fuzz harnesses over their seeds and every regression
#      input found by fuzzing (fuzz_replay_*);
#   2. the pair style in LAMMPS (lmp_fusednequip, built with the sanitizers over Debian's
#      LAMMPS and Open MPI, which are not): lammps_errors (every error deck, 1 and 2 ranks),
#      lammps_ranks (1, 2, 4 ranks, brick and tiled, float32, MD) and lammps_user_cases (empty
#      ranks, sparse IDs, migration, tiled + fix balance, npt flips, hybrid/overlay, restart,
#      clear), the last two on a 35 KB NequIP fixture (FNQ_LAMMPS_MODEL): nequix-mp-1 takes
#      ~0.15 s per atom and step here. Leaks of Open MPI and of LAMMPS' embedded Python are
#      suppressed (tests/lammps/lsan.supp says which); ours are not;
#   3. the Python tests (python_calculator: pytest over python/tests, except the ASE dynamics
#      of test_dynamics.py, 500 MD steps), Python with the sanitizers' runtimes preloaded
#      (FNQ_TEST_PRELOAD) to load the sanitized library; the leak check runs at the end of the
#      session (python/tests/conftest.py), not at exit, where Python leaves its own memory.
# `--all` adds every cpu-labelled C and CLI test that needs no Python packages (mpi_halo and
# the finite differences take several minutes under the sanitizers), lammps_vs_eval and
# lammps_nequip_fixtures. Needs scripts/setup.sh --python first (LAMMPS and its headers,
# build/venv with pytest and ASE); scripts/test.sh runs this after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=$root/build/venv/bin/python
if [ ! -x "$python" ]; then
  echo "test-sanitize: no $python: run scripts/setup.sh --python first" >&2
  exit 1
fi
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# the compiler's runtimes, which a host program built without them (python3) must load first
preload="$("${CC:-cc}" -print-file-name=libasan.so) $("${CC:-cc}" -print-file-name=libubsan.so)"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DFNQ_ENABLE_CUDA=OFF \
  -DFNQ_BUILD_LAMMPS=ON -DFNQ_LAMMPS_HEADERS="$(scripts/lammps-headers.sh)" \
  -DPython3_EXECUTABLE="$python" -DFNQ_TEST_PRELOAD="$preload" \
  -DCMAKE_C_FLAGS="$flags -O1" -DCMAKE_CXX_FLAGS="$flags -O1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-sanitize -j "$(nproc)" >/dev/null
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan=detect_leaks=1:halt_on_error=1
quick='^(unit_|fuzz_replay_|cpu_graph_api$|cpu_invariance$|cpu_cycles$|cli_errors$|cli_fnqm_errors$|cli_models$)'
all='^(unit_|fuzz_replay_|cpu_|mpi_halo$|cli_errors$|cli_fnqm_errors$|cli_models$|cli_published_values$)'
lammps='^lammps_(errors|ranks|user_cases)$'
lammps_all='^lammps_(errors|ranks|user_cases|vs_eval|nequip_fixtures)$'
# cpu_cycles: model and context create / evaluate / free cycles, LeakSanitizer at exit; a cycle
# takes ~1 s here (1,000 in the plain build take ~50 s), so 1 warm-up and 4 measured (~5 s)
export FNQ_TEST_CYCLES=${FNQ_TEST_CYCLES:-4,1}
pattern=$quick
if [ "${1:-}" = "--all" ]; then
  pattern=$all
  lammps=$lammps_all
fi
cd build-sanitize
echo "sanitizers (AddressSanitizer, UndefinedBehaviorSanitizer, LeakSanitizer):"
ASAN_OPTIONS=$asan ctest --output-on-failure -j 2 -R "$pattern"
echo "sanitizers: the LAMMPS pair style"
# full allocation stacks: Open MPI unloads its components at MPI_Finalize, and the fast unwinder
# stops inside them, short of the functions the suppressions name
ASAN_OPTIONS=$asan:fast_unwind_on_malloc=0 \
  LSAN_OPTIONS=suppressions=$root/tests/lammps/lsan.supp:print_suppressions=0 \
  FNQ_LAMMPS_MODEL=$root/tests/fixtures/nequip/classic_l3_noparity_4sp.fnqm \
  ctest --output-on-failure -j 2 -R "$lammps"
echo "sanitizers: the Python bindings and the ASE calculator"
# --capture=sys: a sanitizer's report goes to the real stderr, not pytest's capture
# full allocation stacks, which python/tests/lsan.supp's pattern needs to match
ASAN_OPTIONS=$asan:leak_check_at_exit=0:fast_unwind_on_malloc=0 \
  LSAN_OPTIONS=suppressions=$root/python/tests/lsan.supp:print_suppressions=0 \
  PYTEST_ADDOPTS="--capture=sys --ignore=$root/python/tests/test_dynamics.py" \
  ctest --output-on-failure -R '^python_calculator$'
