#!/usr/bin/env bash
# Reproduces bench/results/cpu/: 1 vs 2 threads, and 1 vs 3 epochs, on distilbert-base-uncased.
# Run on a quiet machine; the figures change with load, so compare ratios measured together.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="$root/scripts/tbench"
out="${1:-$root/bench/results/cpu}"
spec=$(mktemp --suffix=.json)
trap 'rm -f "$spec"' EXIT
cat > "$spec" <<JSON
{"name": "measure", "model": "distilbert-base-uncased",
 "data": {"num_samples": 96, "seq_len": 64},
 "train": {"epochs": 1, "batch_size": 8, "seed": 42},
 "timing": {"warmup_steps": 2}, "threads": 2, "output": "$out/{name}.json"}
JSON
"$tbench" run -q --force "$spec" --set name=threads-1 --set threads=1
"$tbench" run -q --force "$spec" --set name=threads-2 --set threads=2
"$tbench" run -q --force "$spec" --set name=epochs-1
"$tbench" run -q --force "$spec" --set name=epochs-3 --set train.epochs=3
"$tbench" report --by threads "$out"/threads-*.json
"$tbench" compare "$out/threads-1.json" "$out/threads-2.json"
"$tbench" predict --epochs 3 --actual "$out/epochs-3.json" "$out/epochs-1.json"
