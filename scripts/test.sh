#!/usr/bin/env bash
# The test suite: set up, build, run every CTest test (GPU tests skip without a GPU) except
# those labelled slow, then the quick tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/test-sanitize.sh), then a short fuzzing run of the model and
# structure file readers, 60 s per reader (scripts/test-fuzz.sh; FNQ_FUZZ_SECONDS changes it, 0
# skips it). Arguments replace that selection and go to ctest, e.g. `-L slow` (the 512-atom NVE
# run; its time: docs/developers.md) or `-L lammps`. About 45 minutes on 2 cores (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test: set up, build, CTest, sanitizers, fuzzing (about 45 minutes on 2 cores, a third of it the sanitized Python tests)"
scripts/setup.sh --python
cd build
if (($#)); then
  ctest --output-on-failure -j 2 "$@"
else
  ctest --output-on-failure -j 2 -LE slow
  cd .. && scripts/test-sanitize.sh
  if [ "${FNQ_FUZZ_SECONDS:-60}" != 0 ]; then
    scripts/test-fuzz.sh "${FNQ_FUZZ_SECONDS:-60}"
  fi
  echo "test: every stage passed"
fi
