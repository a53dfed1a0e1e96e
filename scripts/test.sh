#!/usr/bin/env bash
# One command: install the system packages the tests need (scripts/system-deps.sh: Chromium and
# PostgreSQL's server binaries), set up the workspace, verify generated files and types, then run
# every test (the PostgreSQL ones start throwaway servers of their own). `OPENCODE_TEST_DATABASE=postgres`
# with `scripts/postgres-test-files.sh` runs the storage-touching files again over PostgreSQL; CI does not
# run that pass yet (see packages/core/README.md, "Storage").
# Ends with the line `tests: N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/setup.sh
npx -y pnpm@12.4.2 run generate:check
npx -y pnpm@12.4.2 run typecheck
npx biome ci .
# No test may reach models.dev: every test process (and every server it spawns) inherits this.
export OPENCODE_DISABLE_MODELS_FETCH=1
results="$(mktemp -d)/vitest.json"
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" || status=$?
node -e '
const fs = require("node:fs")
const file = process.argv[1]
if (!fs.existsSync(file)) { console.log("tests: 0 passed, 1 failed"); process.exit(0) }
const r = JSON.parse(fs.readFileSync(file, "utf8"))
console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests + (r.numRuntimeErrors ?? 0)} failed`)
' "$results"
exit $status
