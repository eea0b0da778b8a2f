#!/usr/bin/env bash
# Reproduces bench/results/dist-cpu/: the same spec (distilbert-base-uncased, seq 64, batch 8 per
# process, 1 thread per process) trained by 1 process, then by 2 data-parallel processes (Gloo over
# loopback), plus 1 process with 2 threads for comparison; then the scaling table.
# The 2 ranks are started the way torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
# MASTER_PORT), so no Python is needed; with torchrun installed the same run is
#   torchrun --no-python --nproc-per-node=2 build/tbench run SPEC --set name=dp-2
# Run on a quiet machine: the figures change with load.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"
out="${1:-$root/bench/results/dist-cpu}"
spec=$(mktemp --suffix=.json)
trap 'rm -f "$spec"' EXIT
cat > "$spec" <<JSON
{"name": "dp", "model": "distilbert-base-uncased",
 "data": {"num_samples": 192, "seq_len": 64},
 "train": {"epochs": 1, "batch_size": 8, "seed": 42},
 "timing": {"warmup_steps": 2}, "threads": 1, "output": "$out/{name}.json"}
JSON
mkdir -p "$out"
export OMP_NUM_THREADS=1  # tbench sets torch's threads from the spec anyway; this keeps OpenMP from oversubscribing

"$tbench" run -q --force "$spec" --set name=dp-1
"$tbench" run -q --force "$spec" --set name=dp-1-threads-2 --set threads=2

port=$((29500 + RANDOM % 1000))
pids=()
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$tbench" run -q --force "$spec" --set name=dp-2 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

"$tbench" report --scaling "$out/dp-1.json" "$out/dp-2.json"
"$tbench" report --by world_size "$out/dp-1.json" "$out/dp-2.json"
"$tbench" compare "$out/dp-1-threads-2.json" "$out/dp-2.json"
