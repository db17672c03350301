#!/usr/bin/env bash
# Engine benchmark: flashkit vs. three peers on the "pipeline" workload
# (its definition is in each peer's header comment and in README.md, Benchmark).
#   - peers/heap.rs        : hand-written std-only BinaryHeap loop (near the single-core limit)
#   - nexosim/             : the workload as user code of nexosim 1.0, the Rust
#                            discrete-event framework, on one thread
#   - peers/simpy_model.py : what a user would otherwise write (SimPy 4)
# All must agree exactly on completion / sum of completions / sum of latencies
# before any timing counts (exit 1 if not). Each round runs every implementation
# once, in turn; the figures are medians over the rounds and ratios of medians, with
# the range of the rounds' own ratios beside them. Speed targets are reported as
# PASS/MISS but never fail the script: this is a benchmark, not a test.
#
# Usage: bench/peers.sh            (from anywhere; it cd's to the repo root)
# Environment:
#   PEERS_DIR      peers directory, relative to the repo root  (default bench/peers)
#   NODES          node counts, space separated                (default 64)
#   MSGS           messages per node, space separated          (default 1000)
#   PATTERNS       destination patterns: ring|shift|rand       (default "rand ring")
#   REPS           interleaved rounds per run                  (default 5)
#   PEERS          peers to run, space separated               (default "heap nexosim simpy")
#   SKIP_FLASHKIT  =1: skip building/running flashkit and its checks
#                  (lets the peer half of this script be exercised on its own)
#   FLASHKIT       the flashkit binary to time (default target/release/flashkit,
#                  built first; set to a copy kept elsewhere, it is not built:
#                  e.g. the build before a change, to compare; it must
#                  take `pipeline --timing`)
set -euo pipefail
cd "$(dirname "$0")/.."

PEERS_DIR=${PEERS_DIR:-bench/peers}
NODES=${NODES:-64}
MSGS=${MSGS:-1000}
PATTERNS=${PATTERNS:-rand ring}
REPS=${REPS:-5}
PEERS=${PEERS:-heap nexosim simpy}
SKIP_FLASHKIT=${SKIP_FLASHKIT:-0}

FLASHKIT=${FLASHKIT:-}
BUILD_FLASHKIT=1
if [[ -n $FLASHKIT ]]; then BUILD_FLASHKIT=0; else FLASHKIT=target/release/flashkit; fi
HEAP=target/bench/heap
NEXOSIM_DIR=bench/nexosim
NEXOSIM=$NEXOSIM_DIR/target/release/flashkit-nexosim-peer
SIMPY="$PEERS_DIR/simpy_model.py"

# Targets: flashkit must beat SimPy by a wide margin and take at most half the
# hand-written loop's time.
TARGET_VS_SIMPY=50    # flashkit events/s / SimPy events/s  >=
TARGET_VS_HEAP=0.5    # flashkit wall / heap wall            <=

die() { echo "peers.sh: $*" >&2; exit 1; }

# Median of the arguments (mean of the middle two for an even count).
median() {
  printf '%s\n' "$@" | sort -g |
    awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# Floating-point helper: calc 'expression' -> value (awk, so no bc dependency).
# div(a, b) gives "inf" rather than aborting when a tiny run times as 0 s.
calc() { awk "function div(a, b) { return b == 0 ? \"inf\" : a / b } BEGIN { print $1 }"; }

# ---- setup -------------------------------------------------------------------------------
has_peer() { [[ " $PEERS " == *" $1 "* ]]; }
for p in $PEERS; do
  [[ $p == heap || $p == nexosim || $p == simpy ]] || die "PEERS: unknown peer '$p' (heap, nexosim, simpy)"
done
[[ -n ${PEERS// /} ]] || die "PEERS is empty (heap, nexosim, simpy)"

if [[ $SKIP_FLASHKIT != 1 ]]; then
  if [[ $BUILD_FLASHKIT == 1 ]]; then
    cargo build --release >&2
    [[ -x $FLASHKIT ]] || die "cargo build succeeded but $FLASHKIT is missing (CARGO_TARGET_DIR set?)"
  fi
  [[ -x $FLASHKIT ]] || die "$FLASHKIT is missing"
fi

if has_peer heap; then
  [[ -f "$PEERS_DIR/heap.rs" ]] || die "the heap peer is not in '$PEERS_DIR' (set PEERS_DIR)"
  mkdir -p target/bench
  rustc -C opt-level=3 -o "$HEAP" "$PEERS_DIR/heap.rs"
fi

if has_peer nexosim; then
  # Its own Cargo project, outside the workspace, with its own target/ (CARGO_TARGET_DIR
  # would move it, so it is unset here).
  env -u CARGO_TARGET_DIR cargo build --release --quiet --manifest-path "$NEXOSIM_DIR/Cargo.toml" >&2
  [[ -x $NEXOSIM ]] || die "cargo build succeeded but $NEXOSIM is missing"
fi

if has_peer simpy; then
  [[ -f "$SIMPY" ]] || die "the SimPy peer is not in '$PEERS_DIR' (set PEERS_DIR)"
  python3 -c 'import simpy' 2>/dev/null || python3 -m pip install --quiet simpy
fi

# ---- one invocation of each implementation -------------------------------------------------
# Each sets R_COMPLETION R_SUM_DONE R_SUM_LAT R_WALL (wall = event-loop time in seconds, as
# each implementation measures it itself, so process start-up and builds are excluded).

run_flashkit() {  # N M PATTERN
  local out
  out=$("$FLASHKIT" pipeline --nodes "$1" --msgs "$2" --pattern "$3" --timing --format json) ||
    die "flashkit failed on N=$1 M=$2 $3"
  # Take the last line that looks like a JSON object, so stray log lines do not break parsing.
  read -r R_COMPLETION R_SUM_DONE R_SUM_LAT R_EVENTS R_WALL < <(
    printf '%s\n' "$out" | python3 -c '
import json, sys
line = [l for l in sys.stdin if l.lstrip().startswith("{")][-1]
d = json.loads(line)
print(d["completion"], d["sum_completion"], d["sum_latency"], d["events"], d["wall_s"])
' 2>/dev/null) || die "cannot parse flashkit JSON output: $out"
  [[ $R_EVENTS == "$CANON" ]] ||
    echo "  note: flashkit reports events=$R_EVENTS, expected $CANON (rates use $CANON)" >&2
}

# The peers print: completion sum_completion sum_latency events wall_s
parse_peer() {  # NAME OUTPUT
  local re='^([0-9]+) ([0-9]+) ([0-9]+) ([0-9]+) ([0-9.]+)$'
  [[ $2 =~ $re ]] || die "cannot parse the $1 peer's output: $2"
  R_COMPLETION=${BASH_REMATCH[1]} R_SUM_DONE=${BASH_REMATCH[2]}
  R_SUM_LAT=${BASH_REMATCH[3]} R_WALL=${BASH_REMATCH[5]}
}

run_heap() {  # N M PATTERN
  local out
  out=$("$HEAP" "$1" "$2" "$3" 1) || die "heap peer failed on N=$1 M=$2 $3"
  parse_peer heap "$out"
}

run_nexosim() {  # N M PATTERN
  local out
  out=$("$NEXOSIM" "$1" "$2" "$3" 1) || die "nexosim peer failed on N=$1 M=$2 $3"
  parse_peer nexosim "$out"
}

run_simpy() {  # N M PATTERN
  local out
  out=$(python3 "$SIMPY" "$1" "$2" "$3" 1) || die "SimPy peer failed on N=$1 M=$2 $3"
  parse_peer SimPy "$out"
}

# Run one implementation, check its results against the first ones seen for this run,
# and append its wall time to the array WALLS_<impl>.
measure() {  # IMPL N M PATTERN
  local impl=$1 got
  local -n walls="WALLS_$impl"
  "run_$impl" "$2" "$3" "$4"
  got="completion=$R_COMPLETION sum_completion=$R_SUM_DONE sum_latency=$R_SUM_LAT"
  if [[ -z $EXPECT ]]; then
    EXPECT=$got EXPECT_FROM=$impl
  elif [[ $got != "$EXPECT" ]]; then
    echo "peers.sh: MISMATCH on N=$2 M=$3 $4 (results must agree exactly; timings discarded):" >&2
    echo "  $EXPECT_FROM: $EXPECT" >&2
    echo "  $impl: $got" >&2
    exit 1
  fi
  walls+=("$R_WALL")
}

# One line of the table: IMPL MEDIAN_WALL
report_impl() {
  printf '  %-10s median wall %10.4f s   %8.3f M events/s\n' "$1" "$2" "$(calc "div($CANON / 1e6, $2)")"
}

verdict() {  # VALUE OP TARGET  (OP is >= or <=)
  if awk "BEGIN { v = \"$1\"; v = (v == \"inf\") ? 1e300 : v + 0; exit !(v $2 $3) }"; then
    echo PASS
  else
    echo MISS
  fi
}

# One ratio line: LABEL A B [OP TARGET]. The ratio of A's median wall to B's, the range
# of the rounds' own A/B ratios, and the verdict against the target if one is given.
ratio_line() {
  local -n a="WALLS_$2" b="WALLS_$3"
  local k r lo hi rounds=()
  r=$(calc "div($(median "${a[@]}"), $(median "${b[@]}"))")
  for ((k = 0; k < ${#a[@]}; k++)); do rounds+=("$(calc "div(${a[k]}, ${b[k]})")"); done
  lo=$(printf '%s\n' "${rounds[@]}" | sort -g | head -n 1)
  hi=$(printf '%s\n' "${rounds[@]}" | sort -g | tail -n 1)
  printf '  %-36s = %8.3f  (rounds %.3f-%.3f)' "$1" "$r" "$lo" "$hi"
  if [[ $# -ge 5 ]]; then
    printf '  target %s %s: %s' "$4" "$5" "$(verdict "$r" "$4" "$5")"
  fi
  echo
}

# ---- the runs ------------------------------------------------------------------------------
IMPLS=()
if [[ $SKIP_FLASHKIT == 1 ]]; then
  echo "SKIP_FLASHKIT=1: peers only, flashkit not built or run"
else
  IMPLS=(flashkit)
fi
for p in heap nexosim simpy; do
  if has_peer "$p"; then IMPLS+=("$p"); fi
done

for n in $NODES; do
  for m in $MSGS; do
    for p in $PATTERNS; do
      CANON=$((n * m * (1 + 4 * 32)))  # model events, counted the same way for all
      EXPECT='' EXPECT_FROM=''
      WALLS_flashkit=() WALLS_heap=() WALLS_nexosim=() WALLS_simpy=()
      # Interleave rounds so machine noise hits every implementation alike.
      for ((r = 0; r < REPS; r++)); do
        for impl in "${IMPLS[@]}"; do measure "$impl" "$n" "$m" "$p"; done
      done

      echo "== N=$n M=$m $p: $CANON model events, $REPS interleaved rounds =="
      echo "  all agree: $EXPECT"
      for impl in "${IMPLS[@]}"; do
        walls_of="WALLS_$impl[@]"
        report_impl "$impl" "$(median "${!walls_of}")"
      done
      if [[ $SKIP_FLASHKIT != 1 ]]; then
        if has_peer heap; then
          ratio_line "flashkit wall / heap wall" flashkit heap '<=' "$TARGET_VS_HEAP"
        fi
        if has_peer nexosim; then
          ratio_line "nexosim wall / flashkit wall" nexosim flashkit
        fi
        if has_peer simpy; then
          # SimPy's wall over flashkit's is flashkit's events/s over SimPy's.
          ratio_line "flashkit events/s / SimPy events/s" simpy flashkit '>=' "$TARGET_VS_SIMPY"
        fi
      elif has_peer heap; then
        for impl in nexosim simpy; do
          if has_peer "$impl"; then ratio_line "$impl wall / heap wall" "$impl" heap; fi
        done
      fi
    done
  done
done
