#!/usr/bin/env bash
# The test suite: set up, build, run every CTest test (GPU tests skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python
cd build
ctest --output-on-failure -j 2 "$@"
