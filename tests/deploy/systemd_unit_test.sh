#!/usr/bin/env bash
# systemd-analyze verify on deploy/systemd/stratad.service, with ExecStart
# pointed at the built stratad (verify checks that the binary exists). Any
# warning fails the test: verify itself exits 0 on unknown keys and bad values.
# A copy with a seeded typo must fail the same check, so the check can fail.
# Usage: systemd_unit_test.sh SOURCE_DIR STRATAD_BINARY
set -euo pipefail
src="$1"; stratad="$2"
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
systemd-analyze --version | head -1
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

check() {  # prints verify's complaints; fails if there are any
  local out
  out="$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$1" 2>&1)" || { echo "$out"; return 1; }
  [ -z "$out" ] || { echo "$out"; return 1; }
}

sed "s|/usr/local/bin/stratad|$stratad|" "$src/deploy/systemd/stratad.service" >"$work/stratad.service"
grep -q "^ExecStart=$stratad " "$work/stratad.service" || { echo "FAIL: ExecStart is not /usr/local/bin/stratad"; exit 1; }
check "$work/stratad.service" || { echo "FAIL: systemd-analyze verify complained"; exit 1; }
echo "ok   systemd-analyze verify: no complaints"

for key in Type=notify WatchdogSec= NoNewPrivileges=yes ProtectSystem=strict ReadWritePaths=/var/lib/strata \
           LimitNOFILE= User=strata KillSignal=SIGTERM; do
  grep -q "^$key" "$work/stratad.service" || { echo "FAIL: the unit lacks $key"; exit 1; }
done
echo "ok   notify type, watchdog, hardening, data dir, file limit, user"

sed 's/^WatchdogSec=30s/WatchdogSec=thirty/' "$work/stratad.service" >"$work/broken.service"
if check "$work/broken.service" >/dev/null; then echo "FAIL: a unit with a bad value passed the check"; exit 1; fi
echo "ok   a seeded bad value fails the check"
echo "3 passed, 0 failed"
