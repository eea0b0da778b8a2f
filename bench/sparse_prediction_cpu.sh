#!/usr/bin/env bash
# Reproduces bench/results/sparse-prediction-cpu/: masked-LM training with the vocabulary head on
# every position (HF's computation) against mlm.sparse_prediction (the masked positions only).
# Two workloads on synthetic blocks of 128 tokens, fp32, 2 threads, batch 8:
#   mlm:          distilbert-base-uncased, task mlm;
#   distillation: a distilbert-base-uncased student of bert-base-uncased, KL over the masked
#                 tokens (restrict_ce_to_mask: the only distillation sparse prediction serves).
# Each setting runs ROUNDS times, full and sparse in turn, so drift hits both alike; `tbench
# compare` gives each pair's throughput ratio with its 95% interval.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/sparse-prediction-cpu}"
steps="${STEPS:-16}"
rounds="${ROUNDS:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/mlm.json" <<JSON
{"name": "mlm", "task": "mlm", "model": "distilbert-base-uncased",
 "data": {"source": "synthetic", "num_samples": $((steps * 8)), "seq_len": 128},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": $steps, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
cat > "$work/distillation.json" <<JSON
{"name": "distillation", "task": "distillation", "model": "distilbert-base-uncased",
 "distillation": {"teacher": "bert-base-uncased", "restrict_ce_to_mask": true},
 "data": {"source": "synthetic", "num_samples": $((steps * 8)), "seq_len": 128},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": $steps, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
for workload in mlm distillation; do
  for round in $(seq "$rounds"); do
    "$tbench" run -q --force "$work/$workload.json" --set name="$workload-full-$round"
    "$tbench" run -q --force "$work/$workload.json" --set name="$workload-sparse-$round" --set mlm.sparse_prediction=true
  done
done
"$tbench" report --by name --format markdown "$out"/*.json
for workload in mlm distillation; do
  for round in $(seq "$rounds"); do
    "$tbench" compare "$out/$workload-full-$round.json" "$out/$workload-sparse-$round.json"
  done
done
