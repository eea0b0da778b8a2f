#!/usr/bin/env bash
# Reproduces bench/results/distill-dp-cpu/: the seed's distillation table rows at CPU scale
# (configs/experiments/distillation-cpu-*.yaml: a distilbert-mini student of a bert-mini teacher,
# seq 128, 10 accumulation micro-batches per step), each trained by 2 data-parallel processes of 1
# thread (Gloo over loopback):
#   baseline      batch 4, all-reduce after every micro-batch      (seed row 1)
#   batch8        batch 8, all-reduce after every micro-batch      (seed row 2: more memory, bigger batch)
#   delayed_sync  batch 4, all-reduce after the last micro-batch   (seed row 3)
# plus the baseline in 1 process (no all-reduce) for the scaling table. The three 2-process rows
# run in turn, REPEATS times (default 2), so slow spells of a shared machine fall on each of them;
# the table gives each row's mean and spread over its repeats. The ranks are started as
# torchrun starts them (RANK, WORLD_SIZE, ... MASTER_PORT), so no Python is needed; with torchrun:
#   torchrun --no-python --nproc-per-node=2 build/tbench run SPEC
# Run on a quiet machine: the figures change with load.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"
out="${1:-$root/bench/results/distill-dp-cpu}"
repeats="${REPEATS:-2}"
configs="$root/configs/experiments"
mkdir -p "$out"
export OMP_NUM_THREADS=1  # tbench sets torch's threads from the spec; this keeps OpenMP from oversubscribing

two_ranks() {  # spec name, repeat
  local port=$((29500 + RANDOM % 1000)) pids=()
  for rank in 0 1; do
    RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$tbench" run -q --force "$configs/$1.yaml" --set "output=$out/$1-r$2.json" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}

"$tbench" run -q --force "$configs/distillation-cpu-baseline.yaml" --set name=distillation-cpu-1process \
  --set "output=$out/distillation-cpu-1process.json"
for rep in $(seq 1 "$repeats"); do
  for spec in distillation-cpu-baseline distillation-cpu-batch8 distillation-cpu-delayed_sync; do two_ranks "$spec" "$rep"; done
done

"$tbench" report --by name --format markdown "$out"/distillation-cpu-*.json | tee "$out/table.md"
"$tbench" report --scaling --format markdown "$out"/distillation-cpu-{1process,baseline-r*}.json | tee "$out/scaling.md"
for rep in $(seq 1 "$repeats"); do
  "$tbench" compare "$out/distillation-cpu-baseline-r$rep.json" "$out/distillation-cpu-delayed_sync-r$rep.json"
done | tee "$out/compare.txt"
