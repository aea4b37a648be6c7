#!/usr/bin/env bash
# The browser tests RUNS times in a row while two CPU-bound processes run beside them (a stability check:
# a test that waits on the clock instead of on the state it asserts fails here first).
# The runs share one artefact folder: the first starts cold, the others find every cache warm.
# Usage: make browser-stress [RUNS=5]
set -uo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
home="$(mktemp -d -t hepwb-stress-XXXXXX)"
busy() { python3 -c 'while True: pass' & }
busy; one=$!
busy; two=$!
trap 'kill "$one" "$two" 2>/dev/null; rm -rf "$home"' EXIT
log="reports/screenshots/stress.log"
mkdir -p reports/screenshots
: > "$log"
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  HEPWB_HOME="$home" .venv/bin/python -m pytest -m browser -p no:cacheprovider -q tests/browser >> "$log" 2>&1
  rc=$?
  echo "run $i of $runs: exit $rc in $(( $(date +%s) - start )) s (two busy processes beside it)" | tee -a "$log"
  [ "$rc" -eq 0 ] || { echo "the browser tests failed under load: see $log"; exit 1; }
done
echo "$runs of $runs runs passed under load" | tee -a "$log"
