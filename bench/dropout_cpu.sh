#!/usr/bin/env bash
# Reproduces bench/results/dropout-cpu/: what the fused CPU dropout kernel (cpu.dropout: fused, the
# default) saves against LibTorch's (cpu.dropout: torch). distilbert-base-uncased, bert-base-cased
# and xlnet-base-cased on synthetic samples of 128 tokens, fp32, batch 8, 2 threads, dropout on
# (HF's rates), 10 steps of which 3 are warm-up; the two kernels run in turn, ROUNDS times, so
# drift hits both alike. `tbench compare` gives each pair's throughput ratio with its 95%
# interval; the table, each run's step time and final loss.
# Then whether the two train alike (other draws, the same distribution): tiny-bert learns the
# synthetic label (10 epochs of 100 steps, lr 1e-3, dropout 0.1) with each kernel under SEEDS
# seeds; the table gives each epoch's mean loss per kernel, with the spread over seeds.
# SKIP_SPEED=1 runs only that second part.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/dropout-cpu}"
rounds="${ROUNDS:-2}"
models="${MODELS:-distilbert-base-uncased bert-base-cased xlnet-base-cased}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/spec.json" <<JSON
{"name": "dropout", "data": {"source": "synthetic", "num_samples": 80, "seq_len": 128},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": 10, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
speed() {
for round in $(seq "$rounds"); do
  for model in $models; do
    for kernel in torch fused; do
      "$tbench" run -q --force "$work/spec.json" --set model="$model" --set cpu.dropout="$kernel" \
        --set name="$model-$kernel-$round"
    done
  done
done
for round in $(seq "$rounds"); do
  for model in $models; do
    "$tbench" compare "$out/$model-torch-$round.json" "$out/$model-fused-$round.json"
  done
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
print("| run | cpu.dropout | step median (p10–p90) | samples/s | final loss |")
print("|---|---|---:|---:|---:|")
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    s = r["summary"]
    step = s["step_ms"]
    print(f"| {path.stem} | {r['spec']['cpu']['dropout']} | {step['median']:.0f} ms ({step['p10']:.0f}–{step['p90']:.0f}) "
          f"| {s['samples_per_s']:.2f} | {r['iterations'][-1]['loss']:.4f} |")
PY
}
[[ ${SKIP_SPEED:-0} == 1 ]] || speed

mkdir -p "$out/learning"
cat > "$work/tiny.json" <<JSON
{"name": "learning", "model": "tiny-bert", "data": {"source": "synthetic", "num_samples": 1600, "seq_len": 64},
 "train": {"epochs": 10, "batch_size": 16, "lr": 0.001}, "timing": {"warmup_steps": 3}, "threads": 2,
 "output": "$out/learning/{name}.json"}
JSON
for seed in $(seq "${SEEDS:-3}"); do
  for kernel in torch fused; do
    "$tbench" run -q --force "$work/tiny.json" --set cpu.dropout="$kernel" --set train.seed="$seed" \
      --set name="tiny-bert-$kernel-seed$seed"
  done
done
python3 - "$out/learning" <<'PY'
import json, statistics, sys
from pathlib import Path
runs = {}
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    runs.setdefault(r["spec"]["cpu"]["dropout"], []).append([e["loss"] for e in r["epochs"]])
kernels = sorted(runs)
print("| epoch | " + " | ".join(f"{k}: mean loss (min–max over {len(runs[k])} seeds)" for k in kernels) + f" | {kernels[-1]} − {kernels[0]} |")
print("|---:|" + "---:|" * (len(kernels) + 1))
for e in range(len(runs[kernels[0]][0])):
    cells, means = [], []
    for k in kernels:
        losses = [run[e] for run in runs[k]]
        means.append(statistics.fmean(losses))
        cells.append(f"{means[-1]:.4f} ({min(losses):.4f}–{max(losses):.4f})")
    print(f"| {e + 1} | " + " | ".join(cells) + f" | {means[-1] - means[0]:+.4f} |")
PY
