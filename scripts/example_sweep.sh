#!/usr/bin/env bash
# The seeds' experiments as shell sweeps. Each block is one question; results land in results/,
# the table prints at the end of each sweep. Run from the repository root:
#   scripts/example_sweep.sh cpu        # CPU: thread counts and batch sizes (runs anywhere)
#   scripts/example_sweep.sh gpu        # GPU: the model x precision epoch table (3 repeats)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="$root/scripts/tbench"

case "${1:-cpu}" in
  cpu)
    # "2 vs 16 CPUs": the same workload at each thread count, 2 repeats for the spread.
    "$tbench" sweep "$root/configs/experiments/threads-all.json" \
      --grid threads=1,2 --grid train.batch_size=4,8 --repeat 2 --resume
    "$tbench" report --by name results/sweep-threads-all/*.json
    ;;
  gpu)
    # "1 epoch of each model", fp16 and fp32, averaged over 3 runs.
    "$tbench" sweep "$root/configs/distilbert_fp16.json" \
      --grid model=bert-base-cased,roberta-base,distilbert-base-uncased,distilroberta-base \
      --grid precision=fp16,fp32 --repeat 3 --resume
    ;;
  *)
    echo "usage: $0 cpu|gpu" >&2
    exit 2
    ;;
esac
