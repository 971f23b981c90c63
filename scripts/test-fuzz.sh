#!/usr/bin/env bash
# Fuzzing of the three file readers with libFuzzer (clang; AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer on): the Nequix .nqx and .fnqm model loaders and
# the command-line tool's extended-XYZ reader (tests/fuzz/, tests/README.md). Builds the
# library and the harnesses into build-fuzz/, gathers the seeds (the committed ones, the real
# Nequix models from the model directory, the fixture models and structures), then runs each
# harness for SECONDS (default 60; scripts/test.sh runs this) with the inputs found so far in
# build-fuzz/corpus/ and every regression input of tests/fuzz/regressions/. A finding (crash,
# hang over 10 s, leak, an allocation larger than the input justifies, a refusal whose message
# does not name the file) stops that harness and is saved as build-fuzz/findings/<format>-*;
# the script then fails. Installs clang and libFuzzer with apt-get when missing (Debian 12).
#   scripts/test-fuzz.sh [SECONDS] [nqx|fnqm|xyz ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
formats=("$@")
((${#formats[@]})) || formats=(nqx fnqm xyz)

# clang with libFuzzer (Debian: clang, and libclang-rt-14-dev, which clang only recommends)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "test-fuzz: installing clang libclang-rt-14-dev"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    clang libclang-rt-14-dev cmake libcjson-dev python3
fi

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer"
flags+=" -fno-sanitize-recover=undefined -g -O1"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DFNQ_ENABLE_CUDA=OFF -DFNQ_BUILD_LAMMPS=OFF -DFNQ_FUZZ=ON -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target $(printf 'fuzz_%s ' "${formats[@]}") >/dev/null

# seeds, gathered afresh each run (build-fuzz/seeds/<format>); nothing from the model
# directory is copied into the source tree
models=()
for d in "${FUSEDNEQUIP_MODEL_DIR:-}" ../shared/models; do
  [ -n "$d" ] && [ -d "$d" ] || continue
  for f in "$d"/*.nqx "$d"/nequix/*.nqx; do [ -f "$f" ] && models+=("$f"); done
  ((${#models[@]})) && break
done
rm -rf build-fuzz/seeds
mkdir -p build-fuzz/seeds/{nqx,fnqm,xyz} build-fuzz/findings
cp tests/fuzz/seeds/nqx/* build-fuzz/seeds/nqx/
if ((${#models[@]})); then
  for f in "${models[@]}"; do
    ln -s "$(realpath "$f")" build-fuzz/seeds/nqx/
    # the real config line and first records alone: mutations of a 2.8 MB file rarely touch
    # its header
    head -c 32768 "$f" >"build-fuzz/seeds/nqx/head-$(basename "$f")"
  done
else
  echo "test-fuzz: no Nequix models found (FUSEDNEQUIP_MODEL_DIR, ../shared/models):" \
    "nqx seeds are the synthetic ones only"
fi
for f in tests/fixtures/nequip/*.fnqm; do
  cp "$f" build-fuzz/seeds/fnqm/
  head -n 1 "$f" >"build-fuzz/seeds/fnqm/header-only-$(basename "$f")" # mode 2's input
done
cp tests/data/*.xyz examples/*/*.xyz tests/fixtures/nequip/*.xyz build-fuzz/seeds/xyz/

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1 # one input at a time; idle OpenMP threads would spin
failed=()
for fmt in "${formats[@]}"; do
  mkdir -p "build-fuzz/corpus/$fmt"
  echo "fuzz_$fmt: ${seconds} s"
  regressions=()
  [ -d "tests/fuzz/regressions/$fmt" ] && regressions=("tests/fuzz/regressions/$fmt")
  if ! build-fuzz/tests/fuzz/"fuzz_$fmt" "build-fuzz/corpus/$fmt" "build-fuzz/seeds/$fmt" \
      "${regressions[@]}" -dict="tests/fuzz/$fmt.dict" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/findings/$fmt-" >"build-fuzz/fuzz_$fmt.log" 2>&1; then
    failed+=("$fmt")
    tail -n 60 "build-fuzz/fuzz_$fmt.log"
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ +DONE' \
    "build-fuzz/fuzz_$fmt.log" | sed "s/^/  /" || true
done
if ((${#failed[@]})); then
  echo "test-fuzz: findings in ${failed[*]} (inputs in build-fuzz/findings/, logs" \
    "build-fuzz/fuzz_<format>.log)"
  exit 1
fi
echo "test-fuzz: no findings"
