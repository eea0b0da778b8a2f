#!/usr/bin/env bash
# Reproduces bench/results/unpad-masked-lm-cpu/: masked-LM training and distillation on a corpus
# read a line a sample (data.line_by_line, HF run_mlm's --line_by_line), padded as HF pads it
# against model.unpad (the layers, the head and a teacher at the real tokens only).
# The corpus: generated reviews (bench/make_reviews.py: log-normal lengths, MEAN_WORDS words on
# average), one per line, with its WordPiece vocabulary. Padding `longest` per batch, as
# run_mlm's collator pads (PADDING=max_length pads every batch to seq_len 128).
# Two workloads, fp32, 2 threads, batch 8, dropout on, STEPS steps of which 3 are warm-up:
#   mlm:          distilbert-base-uncased, task mlm;
#   distillation: a distilbert-base-uncased student of bert-base-uncased (DistilBERT's loss).
# Each setting runs ROUNDS times, padded and unpadded in turn, so drift hits both alike; `tbench
# compare` gives each pair's throughput ratio with its 95% interval, and `tbench data` what each
# padding choice and model.unpad cost in FLOPs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/unpad-masked-lm-cpu}"
steps="${STEPS:-10}"
rounds="${ROUNDS:-2}"
padding="${PADDING:-longest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/books"
python3 "$root/bench/make_reviews.py" --out "$work/reviews" --rows $((steps * 8 + 8)) --mean-words "${MEAN_WORDS:-40}"
python3 - "$work/reviews/reviews.csv" "$work/books/reviews.txt" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f, open(sys.argv[2], "w") as out:
    for row in csv.DictReader(f):
        out.write(row["review"] + "\n")
PY
for workload in mlm distillation; do
  teacher=""
  [[ $workload == distillation ]] && teacher='"distillation": {"teacher": "bert-base-uncased"},'
  cat > "$work/$workload.json" <<JSON
{"name": "$workload", "task": "$workload", "model": "distilbert-base-uncased", $teacher
 "data": {"source": "corpus", "path": "$work/books", "line_by_line": true, "seq_len": 128, "padding": "$padding",
          "cache": false,
          "tokenizer": {"kind": "wordpiece", "vocab": "$work/reviews/vocab.txt", "lowercase": true}},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": $steps, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
  "$tbench" data "$work/$workload.json" | tee "$out/$workload-data.txt"
done
for workload in mlm distillation; do
  for round in $(seq "$rounds"); do
    "$tbench" run -q --force "$work/$workload.json" --set name="$workload-padded-$round"
    "$tbench" run -q --force "$work/$workload.json" --set name="$workload-unpadded-$round" --set model.unpad=true
  done
done
"$tbench" report --by name --format markdown "$out"/*.json
for workload in mlm distillation; do
  for round in $(seq "$rounds"); do
    "$tbench" compare "$out/$workload-padded-$round.json" "$out/$workload-unpadded-$round.json"
  done
done
