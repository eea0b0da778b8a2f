#!/usr/bin/env bash
# tbench against Hugging Face transformers (PyTorch eager) on one GPU, row by row, in one call:
#
#   bench/gpu_side_by_side.sh [MACHINE]        # MACHINE names the results folder (default: the GPU)
#
# Rows: distilbert-base-uncased, bert-base-cased, roberta-base, xlnet-base-cased at batch 32,
# seq 128 in fp32, fp16 and bf16, plus bert-base-cased at seq 512 in bf16. Each row runs
# bench/hf_side_by_side.py (random init, same batch, precision and optimizer, WARMUP untimed then
# STEPS timed steps) and then build-gpu/tbench with the same settings through --set. Raw JSON
# goes to bench/results/gpu/<MACHINE>/raw/, the comparison table to
# bench/results/gpu/<MACHINE>/README.md (samples/s of both over the same window, the ratio,
# tbench's MFU, GPU power and energy, peak memory, final losses). Needs a CUDA torch and transformers for python3; builds build-gpu/ if
# it is missing. Environment: WARMUP (10), STEPS (60), ROWS (a subset, e.g. "bert-base-cased:128:bf16"),
# TBENCH_ONLY=1 (skip HF: the rows for a second GPU that bench/score_cross_gpu.py compares),
# TBENCH_SET ("key=value ..." more --set for tbench: a variant to compare), RESULTS_DIR (write there
# instead of bench/results/gpu/<MACHINE>/, row by row, e.g. straight into the GPU session's $OUT),
# PROFILE_STEPS (3: tbench's last steps run under the profiler, after the timed ones, so each result
# carries its kernel split for `tbench predict --target`; 0: none).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
warmup=${WARMUP:-10}
steps=${STEPS:-60}
profile_steps=${PROFILE_STEPS:-3}
batch=32

python3 -c "import torch, transformers; assert torch.cuda.is_available(), 'no CUDA device'" \
  || { echo "gpu_side_by_side.sh: needs python3 with a CUDA torch and transformers" >&2; exit 2; }
gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name(0))")
machine=${1:-$(echo "$gpu" | tr ' ' '-' | tr -cd 'A-Za-z0-9._-')}
out=${RESULTS_DIR:-$root/bench/results/gpu/$machine}
mkdir -p "$out/raw"

if [[ ! -x build-gpu/tbench ]]; then
  # The non-Torch dependencies from ../shared/tools/gpu-deps, where the GPU session carried them.
  deps=()
  if [[ -d .deps/usr ]]; then
    deps=(-DCMAKE_PREFIX_PATH="$root/.deps/usr;$root/.deps/usr/lib/x86_64-linux-gnu/cmake")
    export LD_LIBRARY_PATH="$root/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  fi
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTBENCH_TORCH_FROM_PYTHON=ON -DTBENCH_BUILD_TESTS=OFF \
    "${deps[@]}"
  cmake --build build-gpu --target tbench
fi

default_rows=""
for model in distilbert-base-uncased bert-base-cased roberta-base xlnet-base-cased; do
  for precision in fp32 fp16 bf16; do default_rows+="$model:128:$precision "; done
done
default_rows+="bert-base-cased:512:bf16"
rows=${ROWS:-$default_rows}

for row in $rows; do
  IFS=: read -r model seq precision <<<"$row"
  id="$model-seq$seq-$precision"
  echo "== $id" >&2
  [[ -n ${TBENCH_ONLY:-} ]] || python3 bench/hf_side_by_side.py --model "$model" --batch "$batch" --seq "$seq" --precision "$precision" \
    --warmup "$warmup" --steps "$steps" --out "$out/raw/hf-$id.json" \
    || echo "{\"impl\": \"hf\", \"model\": \"$model\", \"error\": \"failed, see the log\"}" > "$out/raw/hf-$id.json"
  # tbench: the embedded default spec, reshaped to the same row. One epoch of exactly
  # warmup + steps + profile_steps optimizer steps; the first `warmup` and the profiled last ones
  # are left out of the summary, so `steps` are timed, as HF's are.
  total=$(( warmup + steps + profile_steps ))
  build-gpu/tbench run --force --quiet \
    --set name="$id" --set model="$model" --set device=cuda --set precision="$precision" \
    --set train.batch_size="$batch" --set data.seq_len="$seq" \
    --set data.num_samples=$(( total * batch )) --set train.max_steps="$total" \
    --set train.epochs=1 --set train.warmup_steps=0 --set timing.warmup_steps="$warmup" \
    --set timing.profile_steps="$profile_steps" \
    $(for kv in ${TBENCH_SET:-}; do printf -- '--set %s ' "$kv"; done) \
    --set output="$out/raw/tbench-$id.json" \
    || echo "tbench failed on $id (its result, if any, says why)" >&2
  # The kernel split lives in the result's profile section; the traces (megabytes a row) would not
  # fit the GPU session's files back. `scripts/gpu_session.sh profile` keeps its own.
  rm -f "$out/raw/tbench-$id.trace.json"
done

python3 - "$out" "$gpu" "$warmup" "$steps" <<'PY'
import json, sys
from pathlib import Path

out, gpu, warmup, steps = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None

def gib(b):
    return f"{b / 2**30:.1f}" if isinstance(b, (int, float)) else "-"

def num(x, fmt):
    return format(x, fmt) if isinstance(x, (int, float)) else "-"

def window_rate(iterations):
    """tbench's samples/s over its timed steps, from the end of the last warm-up step to the end of
    the last timed one (CUDA events: ended_at), gaps between steps included: what HF's wall time
    over its timed steps measures. summary.samples_per_s sums the steps' own times instead."""
    timed = [it for it in iterations if not it.get("warmup")]
    warm = [it for it in iterations if it.get("warmup")]
    if not timed or not warm:
        return None
    span = timed[-1].get("ended_at", 0) - warm[-1].get("ended_at", 0)
    return sum(it["samples"] for it in timed) / span if span > 0 else None

rows = []
row_ids = sorted({p.name.split("-", 1)[1][:-len(".json")] for p in out.glob("raw/*-*.json")
                  if p.name.startswith(("hf-", "tbench-")) and not p.name.endswith(".iterations.jsonl")})
for row_id in row_ids:
    hf_path = out / "raw" / f"hf-{row_id}.json"
    hf = load(hf_path) or {}
    tb = load(out / "raw" / f"tbench-{row_id}.json") or {}
    s = tb.get("summary", {})
    # The loss at the same step as HF's last: the profiled steps come after the timed ones.
    iterations = [it for it in tb.get("iterations", []) if not it.get("profiled")]
    tb_rate, tb_window, hf_rate = s.get("samples_per_s"), window_rate(iterations), hf.get("samples_per_s")
    ratio = tb_window / hf_rate if isinstance(tb_window, (int, float)) and isinstance(hf_rate, (int, float)) else None
    check = s.get("timing_check", {})
    rows.append("| {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} / {} | {} / {} | {} / {} | {} |".format(
        row_id, num(hf_rate, ".1f"), num(tb_window, ".1f"), num(tb_rate, ".1f"), num(ratio, ".2f"),
        num(s.get("mfu"), ".1%"), num(check.get("gap_fraction"), ".1%"),
        num(s.get("gpu_power_w_mean"), ".0f"), num(s.get("gpu_energy_j_per_sample"), ".2f"),
        gib(hf.get("peak_allocated_bytes")), gib(s.get("peak_allocated_bytes")),
        gib(hf.get("peak_reserved_bytes")), gib(s.get("peak_reserved_bytes")),
        num(hf.get("final_loss"), ".3f"), num(iterations[-1]["loss"] if iterations else None, ".3f"),
        s.get("status", hf.get("error", "-"))))

tbench_results = sorted(out.glob("raw/tbench-*.json"))
spec = (load(tbench_results[0]) or {}).get("spec", {}) if tbench_results else {}
lines = [
    f"# tbench vs Hugging Face transformers (eager) on {gpu}",
    "",
    f"Batch 32, {warmup} warm-up steps then {steps} timed steps per row, random init, synthetic data;",
    "AdamW (tbench `train.optimizer_impl` "
    f"{spec.get('train', {}).get('optimizer_impl', '?')}, HF `torch.optim.AdamW(fused=True)`), clipping at 1.0, TF32 off.",
    "HF's samples/s is wall time over the timed steps between two `torch.cuda.synchronize()`; tbench's is the",
    "same window on its CUDA events (end of the last warm-up step to the end of the last timed step, gaps",
    "included), and the ratio compares these two. *tbench steps*: its summary's samples/s, over the sum of the",
    "steps' own event times. *timing gap*: tbench's epoch wall time not covered by",
    "its step times (`summary.timing_check`). Peak memory: the caching allocator's high-water marks, allocated",
    "(`torch.cuda.max_memory_allocated`) and reserved, over the timed steps for HF and over the epoch for tbench.",
    "*tbench GPU W*: the GPU's mean power draw through the run (NVML, sampled every 100 ms) and its energy per",
    "sample. Losses: the last timed step's.",
    "",
    "| row | HF samples/s | tbench samples/s | tbench steps | tbench / HF | tbench MFU | timing gap | tbench GPU W (J/sample) "
    "| allocated GiB HF / tbench "
    "| reserved GiB HF / tbench | final loss HF / tbench | tbench status |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    *rows,
    "",
    "Raw results: `raw/hf-<row>.json` (with every step's loss) and `raw/tbench-<row>.json` (+ `.iterations.jsonl`).",
]
(out / "README.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
