#!/bin/sh
# Runs every pollwarden benchmark and rewrites the generated section of
# docs/BENCHMARKS.md. Quick mode (default) takes a few minutes; -full takes
# much longer (see docs/BENCHMARKS.md). Extra flags go to `go run ./bench`:
#   bench/run.sh                 quick
#   bench/run.sh -full           full
#   bench/run.sh -only sim,herd  some parts only
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench "$@"
