#!/usr/bin/env bash
# Install the npm packages the tests run against (ajv, the MCP SDK, ...)
# into build/npm, from the pinned spec/js/package-lock.json. Idempotent:
# does nothing when the installed lock matches.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=build/npm
if [ -f "$dest/package-lock.json" ] && cmp -s spec/js/package-lock.json "$dest/package-lock.json" \
   && [ -d "$dest/node_modules" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed for the test peers (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
cp spec/js/package.json spec/js/package-lock.json "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
