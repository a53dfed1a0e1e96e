#!/usr/bin/env bash
# The test files of core and server that reach storage, one per line (relative to the repository
# root): the PostgreSQL pass of scripts/test.sh runs these with OPENCODE_TEST_DATABASE=postgres.
# A file reaches storage when it builds a Core, a database or a server, directly or through the
# shared helpers (worlds, harnesses, the built binary). Files that already run over PostgreSQL of
# their own accord (both dialects side by side, or PostgreSQL only) are left out: the first pass ran them.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  grep -rlE "TestDatabase|Core\.layer|Database\.layer|world\.js" packages/core/test --include='*.test.ts' || true
  grep -rlE "TestDatabase|Core\.layer|WebHandler|startServer|harness\.js|scripted-host|stream-harness|dist/bin" \
    packages/server/test --include='*.test.ts' || true
} | sort -u | while read -r file; do
  grep -qE "PostgresServer|dialects\.js" "$file" && continue
  # A core file that neither names TestDatabase nor imports a world that does opens SQLite whatever
  # the switch says (the SQLite file's own tests, the config world, leases built on Core.layer): the
  # first pass ran exactly that.
  if [[ "$file" == packages/core/* ]] && ! grep -q "TestDatabase" "$file"; then
    dir=$(dirname "$file")
    reaches=false
    while read -r world; do
      grep -q "TestDatabase" "$(realpath -m "$dir/${world%.js}.ts")" 2>/dev/null && reaches=true
    done < <(grep -oE "from \"(\.\.?/)+([a-z-]+/)*world\.js\"" "$file" | sed -E 's/^from "(.*)"$/\1/')
    $reaches || continue
  fi
  case "$file" in
    # A server runs under them, but what they test is the browser side or the log format, the same
    # over either database: Chromium pages (docs, the Promise client, origins) and log lines.
    */doc-ui.test.ts | */browser-client.test.ts | */browser-origin.test.ts | */log-output.test.ts) continue ;;
  esac
  echo "$file"
done
