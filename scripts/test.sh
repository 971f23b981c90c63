#!/usr/bin/env bash
# The test suite: set up, build, run every CTest test (GPU tests skip without a GPU) except
# those labelled slow, then the quick tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/test-sanitize.sh). Arguments replace that selection and go
# to ctest, e.g. `-L slow` (the 512-atom NVE run, ~25 minutes on 2 cores) or `-L lammps`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python
cd build
if (($#)); then
  ctest --output-on-failure -j 2 "$@"
else
  ctest --output-on-failure -j 2 -LE slow
  cd .. && scripts/test-sanitize.sh
fi
