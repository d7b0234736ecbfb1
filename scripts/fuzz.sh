#!/usr/bin/env bash
# Runs every Fuzz target in the module for FUZZTIME (default 30s) each.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-30s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($t)"
    # Large seeds make the default input minimisation stall; bound it.
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime 20x "$pkg"
  done
done
