#!/usr/bin/env bash
# Installs the system packages the tests need and npm cannot provide, when they are missing:
# - Chromium, for the browser tests (packages/server/test/browser-origin.test.ts drives /usr/bin/chromium);
# - PostgreSQL's server binaries (initdb, pg_ctl, postgres), for the PostgreSQL tests: each test file
#   starts a throwaway server of its own (packages/core/src/testing/postgres-server.ts). No server is
#   set up or started here: the package is installed without its default cluster.
# Does nothing when both are there. Installing needs root and apt-get (Debian/Ubuntu); elsewhere it
# says what is missing and leaves it to you: those tests then skip, except in CI, where they fail.
set -euo pipefail

# The same places the test helper looks: initdb on PATH, or Debian's versioned directories.
has_postgres() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then return 0; fi
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then return 0; fi
  done
  return 1
}

missing=()
if [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
if ! has_postgres; then missing+=(postgresql); fi
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${missing[*]} with apt-get" >&2
  if [[ " ${missing[*]} " == *" postgresql "* ]]; then
    # postgresql-common reads this when it is installed: no "main" cluster, so nothing listens on 5432.
    mkdir -p /etc/postgresql-common
    if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
      echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
    fi
  fi
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
else
  echo "system-deps: missing ${missing[*]}: install them (as root: apt-get install -y ${missing[*]})" >&2
fi
