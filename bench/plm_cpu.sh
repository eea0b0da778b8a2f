#!/usr/bin/env bash
# Reproduces bench/results/plm-cpu/: what XLNet's permutation LM (task plm) costs against
# fine-tuning the same model, and whether the cost model predicts it. xlnet-base-cased on
# synthetic samples of 128 tokens, fp32, 2 threads, batch 4; each task runs ROUNDS times, plm and
# classification in turn, so drift hits both alike. The table gives each run's step time and MFU
# (its FLOPs from the cost model); `tbench compare` gives each pair's throughput ratio with its
# 95% interval, to set beside the cost model's ratio of training FLOPs per sample.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/plm-cpu}"
steps="${STEPS:-10}"
rounds="${ROUNDS:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/xlnet.json" <<JSON
{"name": "xlnet", "model": "xlnet-base-cased",
 "data": {"source": "synthetic", "num_samples": $((steps * 4)), "seq_len": 128},
 "train": {"epochs": 1, "batch_size": 4, "max_steps": $steps, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
for round in $(seq "$rounds"); do
  for task in plm classification; do
    "$tbench" run -q --force "$work/xlnet.json" --set task="$task" --set name="$task-$round"
  done
done
"$tbench" report --by task --format markdown "$out"/*.json
for round in $(seq "$rounds"); do
  "$tbench" compare "$out/classification-$round.json" "$out/plm-$round.json"
done
python3 - "$out" <<'PY'
import json, sys
plm = json.load(open(f"{sys.argv[1]}/plm-1.json"))["model"]["train_flops_per_sample"]
cls = json.load(open(f"{sys.argv[1]}/classification-1.json"))["model"]["train_flops_per_sample"]
print(f"cost model: plm {plm / 1e9:.1f} GFLOP/sample, classification {cls / 1e9:.1f}: {plm / cls:.3f}x")
PY
