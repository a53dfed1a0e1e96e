#!/usr/bin/env bash
# One command: install the system packages the tests need (scripts/system-deps.sh: Chromium and
# PostgreSQL's server binaries), set up the workspace, verify generated files and types, then run
# every test (the PostgreSQL ones start throwaway servers of their own), then the storage-touching
# tests of core and server again over PostgreSQL (OPENCODE_TEST_DATABASE=postgres).
# Ends with a `failed: …` line per failed test, then `tests: N passed, N failed`, counting both passes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/setup.sh
npx -y pnpm@12.4.2 run generate:check
npx -y pnpm@12.4.2 run typecheck
npx biome ci .
# No test may reach models.dev: every test process (and every server it spawns) inherits this.
export OPENCODE_DISABLE_MODELS_FETCH=1
results="$(mktemp -d)"
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$results/sqlite.json" || status=$?
# The PostgreSQL pass: the test files that reach storage (a Core, a database, a server) in the core and
# server projects, again with OPENCODE_TEST_DATABASE=postgres. Each project's global setup starts one
# throwaway PostgreSQL server, and every test gets a database of its own (TestDatabase). The other
# files (parsers, tools, adapters, the client, codegen) do not touch storage and ran once, above; the
# embedded host (sdk-next) always keeps its SQLite file.
mapfile -t postgres_files < <(bash scripts/postgres-test-files.sh)
OPENCODE_TEST_DATABASE=postgres npx vitest run --project core --project server \
  --reporter=default --reporter=json --outputFile.json="$results/postgres.json" "${postgres_files[@]}" || status=$?
node -e '
const fs = require("node:fs")
const path = require("node:path")
let passed = 0
let failed = 0
for (const file of process.argv.slice(1)) {
  if (!fs.existsSync(file)) {
    console.log(`failed: ${path.basename(file, ".json")}: no report (the pass did not finish)`)
    failed += 1
    continue
  }
  const r = JSON.parse(fs.readFileSync(file, "utf8"))
  passed += r.numPassedTests
  failed += r.numFailedTests + (r.numRuntimeErrors ?? 0)
  // Name each failure here, next to the count, so that the end of a long log says what failed.
  for (const suite of r.testResults) {
    for (const test of suite.assertionResults) {
      if (test.status !== "failed") continue
      console.log(`failed: ${path.basename(file, ".json")} ${suite.name} > ${test.fullName}`)
      // And the start of why: the assertion and where it stands, without colour codes.
      const why = (test.failureMessages ?? []).join("\n").replace(/\u001b\[[0-9;]*m/g, "")
      for (const line of why.split("\n").slice(0, 12)) console.log(`  ${line}`)
    }
    if (suite.status === "failed" && suite.assertionResults.length === 0) console.log(`failed: ${path.basename(file, ".json")} ${suite.name}: ${suite.message}`)
  }
}
console.log(`tests: ${passed} passed, ${failed} failed`)
' "$results/sqlite.json" "$results/postgres.json"
exit $status
