#!/bin/bash
# One shard of a flashkit sweep per task of a Slurm job array.
#
#   sbatch --array=0-15 examples/slurm/sweep.sh SCENARIO OUTDIR --vary table.key=v1,v2,... [--vary ...]
#
# The array's size is the number of shards. Each task writes its part,
# OUTDIR/part-<task>.csv (.jsonl with --format json or jsonl), row by row; a task run
# again (a resubmitted index) keeps the rows its part holds and runs the rest.
# SCENARIO and OUTDIR may be relative to the directory sbatch ran in. When
# every task has finished, `flashkit merge OUTDIR/part-*.csv -o FILE` writes
# the table, or names the points that are missing. To run shards 3 and 7 of
# 16 again: SHARDS=16 sbatch --array=3,7 examples/slurm/sweep.sh ... (the
# same arguments).
#
# flashkit must be on the tasks' PATH: cargo install --path . --locked
#
# Threads follow --cpus-per-task: set it once for your nodes.
#SBATCH --job-name=flashkit-sweep
#SBATCH --cpus-per-task=1
#SBATCH --output=flashkit-sweep-%A_%a.out
set -euo pipefail

if [ $# -lt 3 ] || [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
    echo "usage: sbatch --array=0-N $0 SCENARIO OUTDIR --vary table.key=v1,v2,... [flashkit sweep flags]" >&2
    exit 2
fi
scenario=$1
outdir=$2
shift 2
case $scenario in /*) ;; *) scenario=$SLURM_SUBMIT_DIR/$scenario ;; esac
case $outdir in /*) ;; *) outdir=$SLURM_SUBMIT_DIR/$outdir ;; esac
shards=${SHARDS:-$SLURM_ARRAY_TASK_COUNT}
ext=csv
case " $* " in *" --format json"[\ l]* | *" --format=json"[\ l]*) ext=jsonl ;; esac
mkdir -p "$outdir"
exec flashkit sweep "$scenario" "$@" --quiet \
    --shard "$SLURM_ARRAY_TASK_ID/$shards" \
    --out "$outdir/part-$SLURM_ARRAY_TASK_ID.$ext" --resume
