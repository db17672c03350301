#!/usr/bin/env bash
# Engine benchmark at scale: the same number of messages on machines of
# growing size, so the cost per event shows what more nodes cost the engine
# (their state spread over more memory). The workload is `flashkit pipeline`
# (README.md, Benchmark) with TOTAL messages split evenly over the nodes.
# Runs are interleaved across sizes (one of each per round), and each size
# reports the median of its rounds. This is a benchmark, not a test: the
# 4096-node target (within 10% of the first size's cost per event) is
# reported as PASS/MISS and never fails the script.
#
# Usage: bench/scale.sh            (from anywhere; it cd's to the repo root)
# Environment:
#   SIZES      node counts, space separated, first is the baseline (default "64 1024 4096")
#   TOTAL      messages in all, split over the nodes              (default 262144)
#   PATTERN    destination pattern: ring|shift|rand               (default rand)
#   REPS       interleaved rounds                                 (default 5)
#   SKIP_BUILD =1: use the release binary as it is
#   FLASHKIT   the binary to time (default target/release/flashkit; set to
#              a copy kept elsewhere, it is not built: e.g. the build
#              before a change, to compare; it must take
#              `pipeline --timing`)
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-64 1024 4096}
TOTAL=${TOTAL:-262144}
PATTERN=${PATTERN:-rand}
REPS=${REPS:-5}
SKIP_BUILD=${SKIP_BUILD:-0}
TARGET_RATIO=1.1
FLASHKIT=${FLASHKIT:-}
if [[ -n $FLASHKIT ]]; then SKIP_BUILD=1; else FLASHKIT=target/release/flashkit; fi

die() { echo "scale.sh: $*" >&2; exit 1; }

# Median of the arguments (mean of the middle two for an even count).
median() {
  printf '%s\n' "$@" | sort -g |
    awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

[[ $SKIP_BUILD == 1 ]] || cargo build --release >&2
[[ -x $FLASHKIT ]] || die "$FLASHKIT is missing (build it, or unset SKIP_BUILD)"
for n in $SIZES; do
  (( TOTAL % n == 0 )) || die "TOTAL=$TOTAL is not a multiple of $n nodes"
done

declare -A NS EVENTS
for ((r = 1; r <= REPS; r++)); do
  for n in $SIZES; do
    out=$("$FLASHKIT" pipeline --nodes "$n" --msgs $((TOTAL / n)) --pattern "$PATTERN" --timing --format json) ||
      die "flashkit failed at $n nodes"
    read -r events wall < <(printf '%s\n' "$out" | python3 -c '
import json, sys
d = json.loads([l for l in sys.stdin if l.lstrip().startswith("{")][-1])
print(d["events"], d["wall_s"])')
    EVENTS[$n]=$events
    NS[$n]="${NS[$n]:-} $(awk -v w="$wall" -v e="$events" 'BEGIN { printf "%.2f", w * 1e9 / e }')"
  done
  echo "round $r/$REPS done" >&2
done

base=""
printf '%-6s %12s %14s %10s\n' nodes events "ns/event" "vs first"
for n in $SIZES; do
  # shellcheck disable=SC2086
  med=$(median ${NS[$n]})
  base=${base:-$med}
  ratio=$(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
  printf '%-6s %12s %14s %10s\n' "$n" "${EVENTS[$n]}" "$med" "$ratio"
  last_ratio=$ratio
  last_n=$n
done
verdict=$(awk -v r="$last_ratio" -v t="$TARGET_RATIO" 'BEGIN { print (r <= t) ? "PASS" : "MISS" }')
echo "target: $last_n nodes within ${TARGET_RATIO}x of the first size's cost per event: $verdict ($last_ratio)"
