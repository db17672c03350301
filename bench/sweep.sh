#!/usr/bin/env bash
# Sweep benchmark: one small sweep (8 points of the 4 KB transfer, the
# chunk from 1 to 8 lines) on 1, 2 and 4 worker threads, the runs
# interleaved (one of each per round) so machine noise hits every thread
# count alike, each reporting the median of its rounds. The rows must be
# the same byte for byte on every thread count before any timing counts
# (exit 1 if not). The target, 2 threads no slower than 1 (within 5%, the
# noise of a process's start), is reported as PASS/MISS and never fails
# the script: this is a benchmark, not a test.
#
# The time is the process's wall time less the median start of
# `flashkit --version` (measured in the same rounds), so what is left is
# reading the scenario, checking the points and running them.
#
# Usage: bench/sweep.sh            (from anywhere; it cd's to the repo root)
# Environment:
#   THREADS    thread counts, space separated, first is the baseline (default "1 2 4")
#   VARY       the sweep's --vary arguments       (default "transfer.chunk=1,2,3,4,5,6,7,8")
#   SCENARIO   the scenario file                  (default examples/transfer.toml)
#   REPS       interleaved rounds                 (default 41)
#   SKIP_BUILD =1: use the release binary as it is
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-1 2 4}
VARY=${VARY:-transfer.chunk=1,2,3,4,5,6,7,8}
SCENARIO=${SCENARIO:-examples/transfer.toml}
REPS=${REPS:-41}
SKIP_BUILD=${SKIP_BUILD:-0}
FLASHKIT=target/release/flashkit

die() { echo "sweep.sh: $*" >&2; exit 1; }

[[ $SKIP_BUILD == 1 ]] || cargo build --release >&2
[[ -x $FLASHKIT ]] || die "$FLASHKIT is missing (build it, or unset SKIP_BUILD)"

# The timing loop is Python's (a monotonic clock in nanoseconds; bash's
# `time` rounds to milliseconds, the size of the whole sweep).
FLASHKIT=$FLASHKIT THREADS=$THREADS VARY=$VARY SCENARIO=$SCENARIO REPS=$REPS python3 - <<'PY'
import os, statistics, subprocess, sys, time

fk, scenario, reps = os.environ["FLASHKIT"], os.environ["SCENARIO"], int(os.environ["REPS"])
threads = [int(t) for t in os.environ["THREADS"].split()]
vary = [a for v in os.environ["VARY"].split() for a in ("--vary", v)]

def run(args):
    t0 = time.perf_counter_ns()
    p = subprocess.run(args, capture_output=True)
    t = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode != 0:
        sys.exit(f"sweep.sh: {' '.join(args)} failed: {p.stderr.decode().strip()}")
    return t, p.stdout

sweep = lambda t: [fk, "sweep", scenario, *vary, "--threads", str(t), "--quiet"]
# The rows first: every thread count must write the same table.
want = run(sweep(threads[0]))[1]
points = want.count(b"\n") - 1
for t in threads[1:]:
    if run(sweep(t))[1] != want:
        sys.exit(f"sweep.sh: MISMATCH: {t} threads write other rows than {threads[0]} (timings discarded)")

walls = {t: [] for t in threads}
start = []
for _ in range(reps):
    start.append(run([fk, "--version"])[0])
    for t in threads:
        walls[t].append(run(sweep(t))[0])

base = statistics.median(start)
print(f"== {scenario} {' '.join(vary)}: {points} points, {reps} interleaved rounds ==")
print(f"  process start (flashkit --version)  median {base:7.2f} ms")
first = statistics.median(walls[threads[0]]) - base
for t in threads:
    m = statistics.median(walls[t]) - base
    print(f"  {t} thread{'s' if t > 1 else ' '}  median {m:7.2f} ms  ({m / first:5.2f} x {threads[0]} thread)")
if 2 in walls and 1 in walls:
    ratio = (statistics.median(walls[2]) - base) / (statistics.median(walls[1]) - base)
    print(f"  2 threads / 1 thread = {ratio:5.2f}  (target <= 1.05)  {'PASS' if ratio <= 1.05 else 'MISS'}")
PY
