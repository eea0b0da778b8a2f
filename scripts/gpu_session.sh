#!/usr/bin/env bash
# The GPU machine's work, in as few `run` calls as the 10-minute limit allows (see
# ../shared/docs/GPU.md). Prepare here first: `../shared/tools/gpu-deps`, then drop the static ICU
# archives so `.deps` fits the 64 MiB carry (rm .deps/usr/lib/x86_64-linux-gnu/libicu*.a). Then:
#   run(carry=[".deps"], command="scripts/gpu_session.sh build test")      # call 1
#   run(command="scripts/gpu_session.sh fixtures runs")                      # call 2 (build-gpu kept while warm)
# Stages:
#   build     configure and build build-gpu/ against python3's torch, for sm_90, -j16
#   test      ctest (CPU and GPU tests), its log and the skipped tests' names
#   fixtures  scripts/hf_reference.py: HF's own parity fixtures (classifiers and masked-LM heads)
#   runs      a short run of each architecture in fp32/fp16/bf16 on cuda:0; the masked-LM and
#             distillation tasks; NCCL at world size 1 against the same spec without it; and
#             configs/distilbert_fp16.json capped at 300 steps
# Every stage writes under $OUT/<stage>/ and goes on after a failure (its exit code is in
# $OUT/<stage>/rc); at the end everything is packed into $OUT/<stages>.tar.gz (one file back).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out="${OUT:?set OUT (the run tool does)}"
build=build-gpu
tbench="$build/tbench"
export LD_LIBRARY_PATH="$root/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"

stage_build() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTBENCH_TORCH_FROM_PYTHON=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_PREFIX_PATH="$root/.deps/usr;$root/.deps/usr/lib/x86_64-linux-gnu/cmake" &&
    cmake --build "$build" -j16
}

stage_test() {
  ctest --test-dir "$build" --output-on-failure -j8 --timeout 300 --output-junit "$out/test/junit.xml"
  local rc=$?
  grep -E 'status="(notrun|disabled)"' "$out/test/junit.xml" | sed -E 's/.*<testcase name="([^"]*)".*/\1/' \
    > "$out/test/skipped.txt"
  return $rc
}

stage_fixtures() {
  python3 scripts/hf_reference.py --out tests/data/parity && cp -r tests/data/parity "$out/fixtures/parity"
}

run_one() {  # name, then tbench run arguments; RUN_ENV (e.g. "RANK=0 WORLD_SIZE=1") goes before it
  local name=$1
  shift
  env ${RUN_ENV:-} "$tbench" run -q --force "$@" -o "$out/runs/$name.json" > "$out/runs/$name.log" 2>&1
  echo "$name: exit $?" | tee -a "$out/runs/summary.txt"
}

stage_runs() {
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
  # NCCL at world size 1 against the same spec without a launcher: the overhead of the process group.
  run_one nccl-off "${short[@]}" --set model=distilbert-base-uncased --set precision=bf16
  RUN_ENV="RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000))" \
    run_one nccl-world-1 "${short[@]}" --set model=distilbert-base-uncased --set precision=bf16
  # The mission's headline run, capped (its result and iterations go to bench/results/gpu/<machine>/).
  run_one distilbert_fp16-300 configs/distilbert_fp16.json --set train.max_steps=300
  nvidia-smi > "$out/runs/nvidia-smi.txt" 2>&1
}

stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(build test fixtures runs)
for stage in "${stages[@]}"; do
  mkdir -p "$out/$stage"
  start=$(date +%s)
  "stage_$stage" > "$out/$stage/log.txt" 2>&1
  rc=$?
  echo "$rc" > "$out/$stage/rc"
  echo "stage $stage: exit $rc in $(( $(date +%s) - start )) s"
  tail -5 "$out/$stage/log.txt"
done
tar -C "$out" -czf "$out/$(IFS=-; echo "${stages[*]}").tar.gz" "${stages[@]}" && rm -rf "${stages[@]/#/$out/}"
