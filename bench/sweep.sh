#!/usr/bin/env bash
# Sweep benchmark: one small sweep (8 points of the 4 KB transfer, the
# chunk from 1 to 8 lines) checked, run and written as CSV through the
# library on 1, 2 and 4 worker threads, the runs interleaved (one of each
# per round) so machine noise hits every thread count alike, each
# reporting the median of its rounds. The time is measured in the process
# (bench/sweep.rs), so the process's start is not in it. The rows must be
# the same on every thread count before any timing counts (exit 1 if not).
# The target, 2 threads no slower than 1 (within 5%), is reported as
# PASS/MISS and never fails the script: this is a benchmark, not a test.
#
# Usage: bench/sweep.sh            (from anywhere; it cd's to the repo root)
# Environment:
#   THREADS    thread counts, space separated, first is the baseline (default "1 2 4")
#   VARY       the sweep's --vary values, space separated (default "transfer.chunk=1,2,3,4,5,6,7,8")
#   SCENARIO   the scenario file                          (default examples/transfer.toml)
#   REPS       interleaved rounds                         (default 101)
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-1 2 4}
VARY=${VARY:-transfer.chunk=1,2,3,4,5,6,7,8}
SCENARIO=${SCENARIO:-examples/transfer.toml}
REPS=${REPS:-101}

# shellcheck disable=SC2086 # THREADS and VARY are lists
exec cargo run --quiet --release --example sweep-bench -- "$SCENARIO" "$REPS" $THREADS -- $VARY
