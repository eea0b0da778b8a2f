#!/usr/bin/env bash
# What one spec switch buys on the CPU, and whether the two settings train alike:
#   bench/cpu_switch_ab.sh FIELD BASELINE CANDIDATE OUT
# e.g. bench/cpu_switch_ab.sh cpu.dropout torch fused bench/results/dropout-cpu.
# Speed: distilbert-base-uncased, bert-base-cased and xlnet-base-cased (MODELS) on synthetic samples
# of 128 tokens, fp32, batch 8, 2 threads, dropout on (HF's rates), 10 steps of which 3 are warm-up;
# the two settings run in turn, ROUNDS times (default 2), so drift hits both alike. `tbench
# compare` gives each pair's throughput ratio with its 95% interval; the table, each run's step
# time and final loss.
# Learning: tiny-bert (LEARNING_MODEL; its runs in OUT/learning, another's in OUT/learning-MODEL)
# learns the synthetic label (10 epochs of 100 steps, lr 1e-3, dropout 0.1) with each setting under
# SEEDS seeds (default 3); the table gives each epoch's mean loss per
# setting, with the spread over seeds. SKIP_SPEED=1 / SKIP_LEARNING=1 leave a part out; SETS="a=1 b=2"
# adds --set a=1 --set b=2 to every speed run, LEARNING_SETS likewise to every learning run.
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 FIELD BASELINE CANDIDATE OUT" >&2; exit 2; }
field=$1 baseline=$2 candidate=$3 out=$4
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
rounds="${ROUNDS:-2}"
models="${MODELS:-distilbert-base-uncased bert-base-cased xlnet-base-cased}"
learning_model="${LEARNING_MODEL:-tiny-bert}"
# tiny-bert's runs in OUT/learning, another model's in OUT/learning-MODEL: the table reads one model's.
learning_dir="$out/learning"
[[ $learning_model == tiny-bert ]] || learning_dir="$out/learning-$learning_model"
extra=() learning_extra=()
for set in ${SETS:-}; do extra+=(--set "$set"); done
for set in ${LEARNING_SETS:-}; do learning_extra+=(--set "$set"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# The setting of FIELD a result's resolved spec records, for the tables, spelt as on the command
# line (a boolean as true/false, as the script's arguments give it).
setting_of='
def setting_of(result, field):
    value = result["spec"]
    for key in field.split("."):
        value = value[key]
    return json.dumps(value) if isinstance(value, bool) else value
'

speed() {
  cat > "$work/spec.json" <<JSON
{"name": "ab", "data": {"source": "synthetic", "num_samples": 80, "seq_len": 128},
 "train": {"epochs": 1, "batch_size": 8, "max_steps": 10, "seed": 42},
 "timing": {"warmup_steps": 3}, "threads": 2, "output": "$out/{name}.json"}
JSON
  for round in $(seq "$rounds"); do
    for model in $models; do
      for setting in "$baseline" "$candidate"; do
        "$tbench" run -q --force "$work/spec.json" --set model="$model" --set "$field=$setting" \
          --set name="$model-$setting-$round" ${extra[@]+"${extra[@]}"}
      done
    done
  done
  for round in $(seq "$rounds"); do
    for model in $models; do
      "$tbench" compare "$out/$model-$baseline-$round.json" "$out/$model-$candidate-$round.json"
    done
  done
  python3 - "$out" "$field" <<PY
import json, sys
from pathlib import Path
$setting_of
field = sys.argv[2]
print(f"| run | {field} | step median (p10–p90) | samples/s | final loss |")
print("|---|---|---:|---:|---:|")
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    s = r["summary"]
    step = s["step_ms"]
    print(f"| {path.stem} | {setting_of(r, field)} | {step['median']:.0f} ms ({step['p10']:.0f}–{step['p90']:.0f}) "
          f"| {s['samples_per_s']:.2f} | {r['iterations'][-1]['loss']:.4f} |")
PY
}

learning() {
  mkdir -p "$learning_dir"
  cat > "$work/tiny.json" <<JSON
{"name": "learning", "model": "$learning_model", "data": {"source": "synthetic", "num_samples": 1600, "seq_len": 64},
 "train": {"epochs": 10, "batch_size": 16, "lr": 0.001}, "timing": {"warmup_steps": 3}, "threads": 2,
 "output": "$learning_dir/{name}.json"}
JSON
  for seed in $(seq "${SEEDS:-3}"); do
    for setting in "$baseline" "$candidate"; do
      "$tbench" run -q --force "$work/tiny.json" --set "$field=$setting" --set train.seed="$seed" \
        --set name="$learning_model-$setting-seed$seed" ${learning_extra[@]+"${learning_extra[@]}"}
    done
  done
  python3 - "$learning_dir" "$field" "$baseline" "$candidate" <<PY
import json, statistics, sys
from pathlib import Path
$setting_of
field, settings = sys.argv[2], sys.argv[3:]
runs = {s: [] for s in settings}
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    runs[setting_of(r, field)].append([e["loss"] for e in r["epochs"]])
print("| epoch | " + " | ".join(f"{s}: mean loss (min–max over {len(runs[s])} seeds)" for s in settings) + f" | {settings[1]} − {settings[0]} |")
print("|---:|" + "---:|" * (len(settings) + 1))
for e in range(len(runs[settings[0]][0])):
    cells, means = [], []
    for s in settings:
        losses = [run[e] for run in runs[s]]
        means.append(statistics.fmean(losses))
        cells.append(f"{means[-1]:.4f} ({min(losses):.4f}–{max(losses):.4f})")
    print(f"| {e + 1} | " + " | ".join(cells) + f" | {means[1] - means[0]:+.4f} |")
PY
}

[[ ${SKIP_SPEED:-0} == 1 ]] || speed
[[ ${SKIP_LEARNING:-0} == 1 ]] || learning
