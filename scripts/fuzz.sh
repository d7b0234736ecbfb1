#!/usr/bin/env bash
# Runs every Fuzz target in the module for FUZZTIME (default 30s) each.
#
# Go 1.26's fuzz coordinator can end a -fuzztime run with a bare "context
# deadline exceeded" and no failing input (golang/go#75804, fixed in Go
# 1.27): a worker still busy when the deadline fires. Such a run is not a
# finding; it is reported, and the target's seeds and corpus are replayed
# (go test -run), which fails on anything real. A failure that wrote an
# input to testdata/fuzz, or any other failure, stops the script.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-30s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($t)"
    corpus="$dir/testdata/fuzz/$f"
    before=$(ls "$corpus" 2>/dev/null | sort || true)
    log=$(mktemp)
    # Large seeds make the default input minimisation stall; bound it.
    if go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime 20x "$pkg" >"$log" 2>&1; then
      tail -n 2 "$log"
      rm -f "$log"
      continue
    fi
    after=$(ls "$corpus" 2>/dev/null | sort || true)
    if [ "$before" = "$after" ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      tail -n 3 "$log"
      rm -f "$log"
      echo "   no failing input: the coordinator's shutdown race (golang/go#75804); replaying $f's seeds and corpus"
      go test -run "^$f\$" "$pkg"
      continue
    fi
    cat "$log"
    rm -f "$log"
    exit 1
  done
done
