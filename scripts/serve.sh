#!/usr/bin/env bash
# One command: set up the workspace, then start `opencode serve` (default 127.0.0.1:4096).
# Extra arguments go to `opencode serve`, e.g. `bash scripts/serve.sh --port 5000`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
exec node packages/server/dist/bin.js serve "$@"
