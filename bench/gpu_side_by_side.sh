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

# The rows a session's budget may cut short come last: first the ones that have no result under
# the defaults yet (as of 2026-11-27 the CUDA graph: bert-base seq 512, the MFU target's row;
# roberta; xlnet; bert-base bf16), then the ones the H100 has measured graphed.
default_rows="bert-base-cased:512:bf16"
for model in roberta-base xlnet-base-cased; do
  for precision in fp32 fp16 bf16; do default_rows+=" $model:128:$precision"; done
done
default_rows+=" bert-base-cased:128:bf16 distilbert-base-uncased:128:fp32 distilbert-base-uncased:128:fp16"
default_rows+=" distilbert-base-uncased:128:bf16 bert-base-cased:128:fp32 bert-base-cased:128:fp16"
rows=${ROWS:-$default_rows}

failed=0  # rows where HF or tbench failed: the script then exits 1, after the table
for row in $rows; do
  IFS=: read -r model seq precision <<<"$row"
  id="$model-seq$seq-$precision"
  echo "== $id" >&2
  [[ -n ${TBENCH_ONLY:-} ]] || python3 bench/hf_side_by_side.py --model "$model" --batch "$batch" --seq "$seq" --precision "$precision" \
    --warmup "$warmup" --steps "$steps" --out "$out/raw/hf-$id.json" \
    || { failed=$((failed + 1)); echo "{\"impl\": \"hf\", \"model\": \"$model\", \"error\": \"failed, see the log\"}" > "$out/raw/hf-$id.json"; }
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
    || { failed=$((failed + 1)); echo "tbench failed on $id (its result, if any, says why)" >&2; }
  # The kernel split lives in the result's profile section; the traces (megabytes a row) would not
  # fit the GPU session's files back. `scripts/gpu_session.sh profile` keeps its own.
  rm -f "$out/raw/tbench-$id.trace.json"
done

python3 bench/gpu_side_by_side_table.py "$out" "$gpu" "$warmup" "$steps" || exit
(( failed == 0 )) || { echo "gpu_side_by_side.sh: $failed run(s) failed" >&2; exit 1; }
