#!/usr/bin/env bash
# The test command: install what is missing, build, run the whole suite.
# Prints busted's summary and then one line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -s
make -s test
