#!/usr/bin/env bash
# The GPU machine's work, in as few `run` calls as the 10-minute limit allows (see
# ../shared/docs/GPU.md). Prepare here first, once a session:
#   GPU_DEPS_EXTRA="libicu-dev libicu72" ../shared/tools/gpu-deps
#   rm .deps/usr/lib/x86_64-linux-gnu/libicu*.a && tar -cJf .deps.tar.xz .deps
# The working tree (35 MiB tracked as of 2026-11-27, most of it committed results; the CPU runs'
# .iterations.jsonl copies were dropped for room, see bench/results/README.md) and `.deps` (53 MB)
# together pass the 64 MiB a call carries, so the calls carry `.deps.tar.xz` (11.3 MiB;
# git-ignored) and this script unpacks it where `.deps` is missing: 46 MiB in all, so mind what
# new results add. A machine goes back after 30 idle seconds and a fresh one starts bare, so every stage
# builds what it runs first if it is not there (all of build-gpu/: 2 minutes at -j16 on the H200;
# the binary alone: less). A session's device time (15 minutes as of 2026-11, each machine's start
# included, about 30 s) holds about one full call and a short one, so the stages go in order of
# what the issues need most, and a stage stopped at the budget still brings back what it finished:
#   run(carry=[".deps.tar.xz"], command="BUDGET_S=560 scripts/gpu_session.sh build runs test perf")
# (the first session, 2026-11-26, did that: bench/results/gpu/NVIDIA-H200/; the second, 2026-11-27 on
# an H100, ran "build test nccl tf32 rows", then perf and sweep: bench/results/gpu/NVIDIA-H100-80GB-HBM3/).
# (a third, 2026-11-27 on an H100: "build test graphs" confirmed the libstdc++ link fix, 20/20 GPU
# tests, and measured the graph rows: bench/results/gpu/NVIDIA-H100-80GB-HBM3/tests/, graphs/.)
# Next: the tests again (the fixed kill test, the graph tests of every architecture and of the
# unset default), then the side-by-side under the new default (the CUDA graph wherever the step can
# be captured: roberta, xlnet and seq 512 have no graphed row yet, so bench/gpu_side_by_side.sh runs
# them first: build ~166 s and test ~241 s leave perf ~150 s, about 5 rows), all in ONE call,
# because a machine left idle 30 s goes back and the next call starts bare:
#   run(carry=[".deps.tar.xz"], command="BUDGET_S=560 scripts/gpu_session.sh build test perf", timeout_s=600)
# then, with what is left, at once (within seconds) on the same machine:
#   run(carry=[".deps.tar.xz"], command="BUDGET_S=... scripts/gpu_session.sh norm profile")
# (norm: the fused LayerNorm's bf16 copy and one-kernel backward, new 2026-11-28, whose kernel
# tests run in `test`; about 8 runs of ~15 s.)
# and in a session lent the other kind: scripts/gpu_session.sh rows (train.cuda_graph, unset, is
# used wherever the step can be captured since 2026-11-27: TBENCH_SET="train.cuda_graph=false" for eager rows)
# Stages:
#   build     configure and build build-gpu/ against python3's torch, for sm_90, -j16
#   test      ctest: the GPU tests first, one at a time (one of them fills the GPU until it runs out
#             of memory), then the rest 8 at a time (the HF parity tests against the committed
#             fixtures, on this machine's torch); the logs and the skipped tests' names
#   runs      configs/distilbert_fp16.json capped at 300 steps (first: the issue's headline); a
#             short run of each architecture in fp32/fp16/bf16 on cuda:0, and bert-base in TF32; the
#             masked-LM, distillation and permutation-LM tasks; loss curves against fp32
#   nccl      NCCL at world size 1 (a group of one) against the same spec without a launcher, two
#             alternated rounds and `tbench compare`; 2 ranks on the one GPU (NCCL refuses them)
#   tf32      bert-base-cased fp32 with and without TF32 tensor cores (cuda.tf32): speed and loss curves
#   norm      model.fused_layer_norm (its bf16 copy for the matmul and one-kernel backward) against
#             LibTorch's ops, bert-base-cased bf16 at seq 128 and 512, graphed, two alternated rounds
#   perf      bench/gpu_side_by_side.sh: HF eager and tbench (its defaults: the CUDA graph where the
#             step can be captured), row by row (batch 32, seq 128 in
#             fp32/fp16/bf16 for the four models, bert-base-cased seq 512 bf16), and its table
#   sweep     each speed switch alone against the eager defaults (train.cuda_graph=false), fused QKV on the CUDA graph
#             (graph_fused_qkv against cuda_graph: whether model.fused_qkv should become a default), and the CUDA graph with fused QKV,
#             fused LayerNorm and the sparse last layer together, on bert-base-cased bf16 at seq 128
#             and 512; then samples of mixed lengths padded to seq_len (`ragged`), and model.unpad
#             (alone, and with fused QKV, fused LayerNorm and the sparse last layer) against them
#   profile   3 profiled steps of tbench (timing.profile_steps) and of HF (torch.profiler) on the
#             same rows: device time by kernel and by kind of work, and both traces
#   graphs    perf with train.cuda_graph=true on tbench's side (HF's rows as they are); before the
#             graph became the default, the way to put it on every row
#   rows      tbench alone on the perf rows (for bench/score_cross_gpu.py on a second GPU;
#             TBENCH_SET="train.cuda_graph=false" for the eager rows the host holds)
# Every stage writes under $OUT/<stage>/ and goes on after a failure (its exit code is in
# $OUT/<stage>/rc: 1 where a run ended otherwise than expected, listed in <stage>/failed.txt; 124:
# stopped at the call's time budget, BUDGET_S); at the end everything is packed into
# $OUT/<stages>.tar.gz (one file back).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out="${OUT:?set OUT (the run tool does)}"
build=build-gpu
tbench="$build/tbench"
if [[ ! -d .deps/usr && -f .deps.tar.xz ]]; then
  python3 -c "import tarfile; tarfile.open('.deps.tar.xz').extractall()"  # no xz(1) is promised there
fi
export LD_LIBRARY_PATH="$root/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
# nvcc builds tbench's own kernels (model.fused_layer_norm); the toolkit may be off the PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi

# `build` makes everything; a stage that finds nothing built makes only what it runs (`stage_build
# tbench`: the binary without the test suite, about half the time).
stage_build() {
  # A test that hangs stops at 300 s, not the suite's 600 (ctest --timeout yields to the property).
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTBENCH_TORCH_FROM_PYTHON=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTBENCH_TEST_TIMEOUT=300 \
    -DCMAKE_PREFIX_PATH="$root/.deps/usr;$root/.deps/usr/lib/x86_64-linux-gnu/cmake" &&
    cmake --build "$build" -j16 ${1:+--target "$1"}
  local rc=$?
  # Into the folder of the stage that built (the archive takes it): `build`, or one that found
  # nothing built.
  mkdir -p "$out/${STAGE:-build}"
  link_facts > "$out/${STAGE:-build}/link-facts.txt" 2>&1
  return $rc
}

# Which libstdc++ the binaries load first (pip torch exports its own std::filesystem; see
# CMakeLists.txt): the compiler's own files and each binary's first DT_NEEDED entries.
link_facts() {
  local cxx
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  echo "compiler: $cxx"
  echo "its libstdc++.so: $("$cxx" -print-file-name=libstdc++.so)"
  echo "its libstdc++.a: $("$cxx" -print-file-name=libstdc++.a)"
  grep -h "TBENCH_SHARED_LIBSTDCXX\|TBENCH_COMPILERS_LIBSTDCXX" "$build/CMakeCache.txt"
  local binary
  for binary in "$tbench" "$build/tests/tbench_tests"; do
    [[ -x $binary ]] || continue
    echo "== $binary"
    readelf -d "$binary" | grep NEEDED | head -4
    # The libstdc++ the process loads, and the newest of its versions the binary needs from it.
    echo "loads: $(ldd "$binary" | grep libstdc++)"
    echo "needs: $(objdump -T "$binary" | grep -o 'GLIBCXX_3\.4\.[0-9]*' | sort -uV | tail -1)"
  done
}

stage_test() {
  [[ -x $build/tests/tbench_tests ]] || stage_build || return
  ctest --test-dir "$build" --output-on-failure -j1 --timeout 300 -R '^Cuda[A-Z]' --output-junit "$out/test/junit-gpu.xml"
  local gpu_rc=$?
  ctest --test-dir "$build" --output-on-failure -j8 --timeout 300 -E '^Cuda[A-Z]' --output-junit "$out/test/junit.xml"
  local rc=$?
  cat "$out"/test/junit*.xml | grep -E 'status="(notrun|disabled)"' | sed -E 's/.*<testcase name="([^"]*)".*/\1/' \
    > "$out/test/skipped.txt"
  return $(( gpu_rc != 0 ? gpu_rc : rc ))
}

# A fresh machine has no build-gpu/: build the binary (a minute or two) before the stage's runs need it.
ensure_built() {
  [[ -x $tbench ]] && return 0
  echo "no $tbench on this machine: building it first"
  stage_build tbench
}

# A run whose exit code is not the one expected (EXPECT_EXIT, default 0) is listed in
# $out/<stage>/failed.txt, and the stage then exits 1 (stage_outcome), so its rc file tells.
run_one_in() {  # stage, name, then tbench run arguments; RUN_ENV (e.g. "RANK=0 WORLD_SIZE=1") goes before it
  local stage=$1 name=$2
  shift 2
  # DRY_SET ("key=value ..."): overrides last, for a dry run off the GPU (device=cpu model=tiny-bert ...).
  env ${RUN_ENV:-} "$tbench" run -q --force "$@" $(for kv in ${DRY_SET:-}; do printf -- '--set %s ' "$kv"; done) \
    -o "$out/$stage/$name.json" > "$out/$stage/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc" | tee -a "$out/$stage/summary.txt"
  (( rc == ${EXPECT_EXIT:-0} )) || echo "$name: exit $rc, expected ${EXPECT_EXIT:-0}" >> "$out/$stage/failed.txt"
}

# A stage's exit code: 1 where any of its runs ended otherwise than expected.
stage_outcome() {
  [[ ! -s $out/$STAGE/failed.txt ]] || { echo "runs that failed:"; cat "$out/$STAGE/failed.txt"; return 1; }
}
run_one() { run_one_in runs "$@"; }

stage_runs() {
  ensure_built || return
  # The mission's headline run, capped (its result and iterations go to bench/results/gpu/<machine>/).
  run_one distilbert_fp16-300 configs/distilbert_fp16.json --set train.max_steps=300
  nvidia-smi > "$out/runs/nvidia-smi.txt" 2>&1
  local short=(--set device=cuda:0 --set data.num_samples=2048 --set train.max_steps=30 --set timing.warmup_steps=5
               --set train.batch_size=32 --set data.seq_len=128)
  for model in distilbert-base-uncased bert-base-cased roberta-base xlnet-base-cased; do
    for precision in fp32 fp16 bf16; do
      run_one "$model-$precision" "${short[@]}" --set model="$model" --set precision="$precision"
    done
  done
  run_one mlm-bert-base-uncased-bf16 "${short[@]}" --set model=bert-base-uncased --set task=mlm --set precision=bf16 \
    --set data.eval_fraction=0.05 --set mlm.pseudo_perplexity_fraction=0.05
  run_one distillation-fp16 "${short[@]}" --set model=distilbert-base-uncased --set task=distillation \
    --set distillation.teacher=bert-base-uncased --set precision=fp16
  run_one plm-xlnet-base-cased-fp16 "${short[@]}" --set model=xlnet-base-cased --set task=plm --set precision=fp16 \
    --set data.eval_fraction=0.05
  # TF32 tensor cores for fp32 (cuda.tf32): its loss curve joins the fp32/fp16/bf16 comparison below.
  run_one bert-base-cased-tf32 "${short[@]}" --set model=bert-base-cased --set precision=fp32 --set cuda.tf32=true
  # fp16 (loss-scaled) and bf16 against fp32: do the loss curves agree within noise?
  for model in distilbert-base-uncased bert-base-cased roberta-base xlnet-base-cased; do
    python3 bench/loss_curves.py "$out/runs/$model-fp32.json" "$out/runs/$model-fp16.json" "$out/runs/$model-bf16.json" \
      $([[ -f $out/runs/$model-tf32.json ]] && echo "$out/runs/$model-tf32.json")
  done > "$out/runs/loss_curves.md" 2>&1
}

# NCCL at world size 1 against the same spec without a launcher: the overhead of the process group
# (a launcher's one process joins a group of one only where dist.group_at_world_size_1 asks). Then
# two ranks sharing the one GPU (both LOCAL_RANK 0): NCCL refuses it ("Duplicate GPU detected", seen
# on the H200 2026-11-26), and both ranks must end with that error, exit 4, not hang.
stage_nccl() {
  ensure_built || return
  local short=(--set device=cuda:0 --set data.num_samples=4096 --set train.max_steps=60 --set timing.warmup_steps=10
               --set train.batch_size=32 --set data.seq_len=128 --set model=distilbert-base-uncased --set precision=bf16
               --set train.cuda_graph=false)  # eager on both sides: a process group cannot capture its step
  local round
  for round in 1 2; do  # alternated, so a drifting host shows in the pair, not as the group's cost
    run_one_in nccl "nccl-off-$round" "${short[@]}"
    RUN_ENV="RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000))" \
      run_one_in nccl "nccl-world-1-$round" "${short[@]}" --set dist.group_at_world_size_1=true
  done
  local port=$((30500 + RANDOM % 1000)) rank pids=()
  for rank in 0 1; do
    EXPECT_EXIT=4 RUN_ENV="RANK=$rank WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port" \
      run_one_in nccl "nccl-2-ranks-1-gpu-rank$rank" "${short[@]}" --set dist.timeout_s=60 &
    pids+=($!)
  done
  wait "${pids[@]}"
  for round in 1 2; do
    "$tbench" compare "$out/nccl/nccl-off-$round.json" "$out/nccl/nccl-world-1-$round.json"
  done > "$out/nccl/compare.txt" 2>&1
}

# TF32 tensor cores for fp32 GEMMs (cuda.tf32) against plain fp32, same seed and row: the speed-up
# (`tbench compare`) and the loss curves (bench/loss_curves.py), the one precision setting no other
# stage runs.
stage_tf32() {
  ensure_built || return
  local short=(--set device=cuda:0 --set data.num_samples=2560 --set train.max_steps=70 --set timing.warmup_steps=10
               --set train.batch_size=32 --set data.seq_len=128 --set model=bert-base-cased --set precision=fp32)
  run_one_in tf32 bert-base-cased-fp32 "${short[@]}"
  run_one_in tf32 bert-base-cased-tf32 "${short[@]}" --set cuda.tf32=true
  { "$tbench" compare "$out/tf32/bert-base-cased-fp32.json" "$out/tf32/bert-base-cased-tf32.json"
    python3 bench/loss_curves.py "$out/tf32/bert-base-cased-fp32.json" "$out/tf32/bert-base-cased-tf32.json"
  } > "$out/tf32/compare.txt" 2>&1
}

# model.fused_layer_norm against LibTorch's ops on the rows where the step's memory-bound passes
# weigh most (bert-base-cased bf16, seq 128 and 512, the default CUDA graph), alternated twice so
# drift shows: since 2026-11-28 the pass also writes the bf16 copy the next matmul reads and its
# backward is one kernel (on the H100, 2026-11-27, the forward-only version ran 0.98x at seq 512).
# Then `tbench compare` per seq and the loss curves (bench/loss_curves.py).
stage_norm() {
  ensure_built || return
  local seq round variant
  for seq in 128 512; do
    local row=(--set device=cuda:0 --set model=bert-base-cased --set precision=bf16 --set train.batch_size=32
               --set data.seq_len="$seq" --set data.num_samples=2560 --set train.max_steps=70
               --set timing.warmup_steps=10 --set train.warmup_steps=0)
    for round in 1 2; do
      for variant in ops fused; do
        run_one_in norm "bert-base-cased-seq$seq-bf16-$variant-$round" "${row[@]}" \
          --set model.fused_layer_norm=$([[ $variant == fused ]] && echo true || echo false)
      done
    done
    { "$tbench" compare "$out/norm/bert-base-cased-seq$seq-bf16-ops-"{1,2}.json --vs "$out/norm/bert-base-cased-seq$seq-bf16-fused-"{1,2}.json
      python3 bench/loss_curves.py "$out/norm/bert-base-cased-seq$seq-bf16-ops-1.json" "$out/norm/bert-base-cased-seq$seq-bf16-fused-1.json"
    } > "$out/norm/compare-seq$seq.txt" 2>&1
  done
}

machine_name() { python3 -c "import torch; print(torch.cuda.get_device_name(0))" | tr ' ' '-' | tr -cd 'A-Za-z0-9._-'; }

# Rows are written straight under $OUT as they finish, so a stage stopped at the time budget still
# brings back the rows it measured.
stage_perf() {
  ensure_built || return
  local machine
  machine=$(machine_name)
  RESULTS_DIR="$out/perf/$machine" bench/gpu_side_by_side.sh "$machine"
}

# The side-by-side again with tbench's step captured in a CUDA graph: the switch that took the host
# out of the step on the H100 (2.68x at bert-base bf16 seq 128, 2026-11-27), on every row.
stage_graphs() {
  ensure_built || return
  local machine
  machine=$(machine_name)
  RESULTS_DIR="$out/graphs/$machine" TBENCH_SET="train.cuda_graph=true ${TBENCH_SET:-}" bench/gpu_side_by_side.sh "$machine"
}

stage_rows() {
  ensure_built || return
  local machine
  machine=$(machine_name)
  RESULTS_DIR="$out/rows/$machine" TBENCH_ONLY=1 bench/gpu_side_by_side.sh "$machine"
}

# One switch at a time against the eager defaults (train.cuda_graph=false, then each variant's
# settings), same row, same call: its effect on samples/s and the loss.
stage_sweep() {
  ensure_built || return
  local variants=("defaults:" "padding_mask_always:model.padding_mask=always" "fused_qkv:model.fused_qkv=true"
                  "fused_layer_norm:model.fused_layer_norm=true"
                  "cuda_graph:train.cuda_graph=true" "eager_attention:model.attention=eager"
                  "foreach_adamw:train.optimizer_impl=foreach" "no_prefetch:data.prefetch=0"
                  "sparse_last_layer:model.sparse_last_layer=true"
                  "graph_fused_qkv:train.cuda_graph=true model.fused_qkv=true"
                  "graph_fused_sparse:train.cuda_graph=true model.fused_qkv=true model.fused_layer_norm=true model.sparse_last_layer=true")
  for seq in 128 512; do
    # Samples of mixed lengths (log-normal, mean 3/8 of seq_len, padded to it): HF's work at every
    # padded position, then model.unpad's on the real tokens alone (compared against `ragged`).
    local ragged="data.lengths.distribution=lognormal data.lengths.mean=$((seq * 3 / 8)) data.lengths.std=$((seq * 7 / 32))"
    for variant in "${variants[@]}" "ragged:$ragged" "ragged_unpad:$ragged model.unpad=true" \
                   "ragged_unpad_fused_sparse:$ragged model.unpad=true model.fused_qkv=true model.fused_layer_norm=true model.sparse_last_layer=true"; do
      local name=${variant%%:*} kv sets=()
      for kv in ${variant#*:}; do sets+=(--set "$kv"); done  # a variant may set several fields
      run_one_in sweep "bert-base-cased-seq$seq-bf16-$name" --set device=cuda:0 --set model=bert-base-cased \
        --set precision=bf16 --set train.batch_size=32 --set data.seq_len="$seq" --set data.num_samples=2560 \
        --set train.max_steps=70 --set timing.warmup_steps=10 --set train.warmup_steps=0 --set train.cuda_graph=false \
        "${sets[@]}"
    done
  done
  python3 - "$out/sweep" <<'PY'
import json, sys
from pathlib import Path
def load(path):  # a run that failed may have left no result, or one without figures
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}

def fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) else "-"

rows = []
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    result = load(path)
    s, its = result.get("summary", {}), result.get("iterations") or [{}]
    # Each variant against the defaults on the same data: the ragged ones against `ragged`, and
    # fused QKV on the graph against the graph alone (whether fused QKV should become a default).
    variant = path.stem.rsplit("-", 1)[1]
    baseline = ("ragged" if variant.startswith("ragged_") else "cuda_graph" if variant == "graph_fused_qkv"
                else "defaults")
    base = load(path.parent / (path.name.rsplit("-", 1)[0] + f"-{baseline}.json")).get("summary", {})
    rate, base_rate = s.get("samples_per_s"), base.get("samples_per_s")
    ratio = rate / base_rate if isinstance(rate, (int, float)) and isinstance(base_rate, (int, float)) and base_rate else None
    rows.append(f"| {path.stem} | {fmt(rate, '.1f')} | {fmt(ratio, '.3f')} | {fmt(s.get('mfu'), '.1%')} "
                f"| {fmt(its[-1].get('loss'), '.4f')} | {s.get('status', 'no result')} |")
table = ["| run | samples/s | vs defaults (ragged_*: vs ragged; graph_fused_qkv: vs cuda_graph) | MFU | final loss | status |", "|---|---:|---:|---:|---:|---|", *rows]
(Path(sys.argv[1]) / "sweep.md").write_text("\n".join(table) + "\n")
print("\n".join(table))
PY
}

stage_profile() {
  ensure_built || return
  local row
  for seq in 128 512; do
    row="bert-base-cased-seq$seq-bf16"
    run_one_in profile "tbench-$row" --set device=cuda:0 --set model=bert-base-cased --set precision=bf16 \
      --set train.batch_size=32 --set data.seq_len="$seq" --set data.num_samples=1280 --set train.max_steps=30 \
      --set timing.warmup_steps=10 --set timing.profile_steps=3
    python3 bench/hf_side_by_side.py --model bert-base-cased --batch 32 --seq "$seq" --precision bf16 --warmup 10 \
      --steps 20 --profile-steps 3 --trace "$out/profile/hf-$row.trace.json" --out "$out/profile/hf-$row.json" \
      > "$out/profile/hf-$row.log" 2>&1
    local rc=$?
    echo "hf-$row: exit $rc" | tee -a "$out/profile/summary.txt"
    (( rc == 0 )) || echo "hf-$row: exit $rc" >> "$out/profile/failed.txt"
  done
  gzip -f "$out"/profile/*.trace.json
}

# `gpu_session.sh --stage NAME`: one stage, as the loop below runs it under `timeout`.
if [[ ${1:-} == --stage ]]; then
  STAGE=$2
  "stage_$2" || exit
  stage_outcome
  exit
fi

# The device tool kills a command at its timeout_s, and then nothing comes back: every stage gets
# what is left of BUDGET_S (default 560, for timeout_s=600) and is stopped there, so the archive is
# always written. After the budget come up to 20 s of waiting for stopped runs and the archive:
# give BUDGET_S at most timeout_s - 45 (a `profile` call with less device time left needs it).
budget=${BUDGET_S:-560}
# `timeout` signals the stage's whole process group, but returns once the stage's shell is gone: a
# tbench run stopped by SIGTERM still finishes its step and writes its result (what a stopped run
# should do), and tar must not read that folder half-written (seen 2026-11-27: "file changed as we
# read it"). Wait for such runs, at most 20 s (the device tool's 600 s leave room for it).
wait_for_stopped_runs() {
  command -v pgrep >/dev/null || { sleep 5; return; }
  local waited=0
  while pgrep -f "$tbench run|hf_side_by_side.py" >/dev/null && (( waited < 20 )); do
    sleep 1
    waited=$((waited + 1))
  done
}
session_start=$(date +%s)
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(build test runs)
for stage in "${stages[@]}"; do
  mkdir -p "$out/$stage"
  start=$(date +%s)
  left=$(( budget - (start - session_start) ))
  if (( left < 15 )); then
    echo "skipped: no time left in this call" > "$out/$stage/rc"
    echo "stage $stage: skipped (no time left; run it in another call)"
    continue
  fi
  timeout -k 5 "$left" "$root/scripts/gpu_session.sh" --stage "$stage" > "$out/$stage/log.txt" 2>&1
  rc=$?
  (( rc == 124 )) && wait_for_stopped_runs
  echo "$rc" > "$out/$stage/rc"
  echo "stage $stage: exit $rc in $(( $(date +%s) - start )) s$( (( rc == 124 )) && echo ' (stopped at the time limit)')"
  tail -5 "$out/$stage/log.txt"
done
# Only 8 files come back: the stage folders go once the archive holds them. A file still growing
# (a run that outlived its stage) makes tar exit 1 with the archive whole, so test the archive,
# not tar's exit code.
archive="$out/$(IFS=-; echo "${stages[*]}").tar.gz"
tar --warning=no-file-changed --ignore-failed-read -C "$out" -czf "$archive" "${stages[@]}"
if tar -tzf "$archive" >/dev/null 2>&1; then
  rm -rf "${stages[@]/#/$out/}"
else
  echo "the archive $archive is unreadable: the stage folders stay in \$OUT"
fi
