#!/usr/bin/env bash
# The demo command: install what is missing, build, run the agent demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -s
make -s demo
