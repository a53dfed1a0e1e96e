#!/usr/bin/env bash
# Installs the workspace with the pinned pnpm and builds what the `serve` command runs.
# Needs only Node 20+ and npm. Safe to run again: a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
# better-sqlite3 compiles against the local Node headers; without this node-gyp tries to download them.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
npx -y pnpm@12.4.2 install --frozen-lockfile
npx -y pnpm@12.4.2 run build
