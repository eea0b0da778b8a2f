#!/usr/bin/env bash
# Reproduces bench/results/grad-bucket-view-cpu/: what dist.gradient_as_bucket_view saves. Two
# data-parallel processes (Gloo over loopback, started as torchrun starts them, 1 thread each) train
# distilbert-base-uncased on synthetic samples of 64 tokens, batch 8 per process, with gradients
# copied in and out of the all-reduce buckets (false) and kept in them (true), in turn, ROUNDS
# times. The table gives rank 0's step time, its peak RSS and the caching allocator's peak:
# keeping the gradients in the buckets should save one gradient-sized buffer (67.0M fp32
# parameters: 255 MiB) per process and change nothing else.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tbench="${TBENCH:-$root/scripts/tbench}"   # TBENCH=build/tbench: no rebuild first
out="${1:-$root/bench/results/grad-bucket-view-cpu}"
rounds="${ROUNDS:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/dp.json" <<JSON
{"name": "dp", "model": "distilbert-base-uncased",
 "data": {"num_samples": 192, "seq_len": 64},
 "train": {"epochs": 1, "batch_size": 8, "seed": 42},
 "timing": {"warmup_steps": 2}, "threads": 1, "output": "$out/{name}.json"}
JSON
export OMP_NUM_THREADS=1
for round in $(seq "$rounds"); do
  for in_buckets in false true; do
    port=$((29500 + RANDOM % 1000))
    pids=()
    for rank in 0 1; do
      RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$tbench" run -q --force "$work/dp.json" --set dist.gradient_as_bucket_view=$in_buckets \
        --set name="bucket-view-$in_buckets-$round" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
  done
done
for round in $(seq "$rounds"); do
  "$tbench" compare "$out/bucket-view-false-$round.json" "$out/bucket-view-true-$round.json"
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
print("| run | gradients | step median (p10–p90) | comm wait median | peak RSS | allocator peak | final loss |")
print("|---|---|---:|---:|---:|---:|---:|")
for path in sorted(Path(sys.argv[1]).glob("bucket-view-*.json")):
    r = json.loads(path.read_text())
    s, ranks = r["summary"], r["dist"]["ranks"]
    step = s["step_ms"]
    wait = ranks[0]["comm_wait_ms"]["median"]
    alloc = r["env"]["cpu"]["allocator"]["peak_cached_bytes"]
    where = "in the buckets" if r["dist"]["gradient_as_bucket_view"] else "copied"
    print(f"| {path.stem} | {where} | {step['median']:.0f} ms ({step['p10']:.0f}–{step['p90']:.0f}) | {wait:.0f} ms "
          f"| {s['peak_rss_bytes'] / 2**20:.0f} MiB | {alloc / 2**20:.0f} MiB | {r['iterations'][-1]['loss']:.6f} |")
PY
