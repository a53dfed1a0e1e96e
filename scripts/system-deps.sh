#!/usr/bin/env bash
# Installs the system packages the tests need and npm cannot provide: Chromium, for the browser tests
# (packages/server/test/browser-origin.test.ts drives /usr/bin/chromium). Does nothing when it is
# already there. Installing needs root and apt-get (Debian/Ubuntu); elsewhere it says what is
# missing and leaves it to you: those tests then skip, except in CI, where they fail.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing chromium with apt-get" >&2
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
else
  echo "system-deps: /usr/bin/chromium is missing; install the chromium package (as root: apt-get install -y chromium)" >&2
fi
