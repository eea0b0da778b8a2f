#!/usr/bin/env bash
# Reproduces bench/results/data-cpu/: the same generated reviews trained with every batch padded
# to seq_len (max_length), to its longest sample (longest), and longest + length bucketing.
# distilbert-base-uncased on CPU, fp32, 2 threads, batch 8, seq_len 128, 3,000 reviews (log-normal
# lengths, mean 60 words). Each setting runs twice, interleaved, so drift hits all alike.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/data-cpu}"
steps="${STEPS:-24}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
python3 "$root/bench/make_reviews.py" --out "$work" --rows 3000
cat > "$work/spec.json" <<JSON
{"name": "padding", "model": "distilbert-base-uncased",
 "data": {"source": "text", "path": "$work/reviews.csv", "text_column": "review", "label_column": "sentiment",
          "seq_len": 128, "tokenizer": {"path": "$work"}, "cache_dir": "$work/cache"},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": $steps, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
for rep in 1 2; do
  "$tbench" run -q --force "$work/spec.json" --set name=max_length-$rep --set data.padding=max_length
  "$tbench" run -q --force "$work/spec.json" --set name=longest-$rep --set data.padding=longest
  "$tbench" run -q --force "$work/spec.json" --set name=bucketed-$rep --set data.padding=longest \
    --set data.bucket_by_length=true
done
"$tbench" report --by name --format markdown "$out"/*.json
for rep in 1 2; do
  "$tbench" compare "$out/max_length-$rep.json" "$out/longest-$rep.json"
  "$tbench" compare "$out/max_length-$rep.json" "$out/bucketed-$rep.json"
done
