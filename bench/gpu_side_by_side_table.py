#!/usr/bin/env python3
"""The table of bench/gpu_side_by_side.sh from its raw results, also for rows a stopped call left:

    bench/gpu_side_by_side_table.py RESULTS_DIR GPU_NAME WARMUP STEPS [TABLE_FILE]

Reads RESULTS_DIR/raw/{hf,tbench}-<row>.json and writes RESULTS_DIR/TABLE_FILE (default README.md)
and prints it."""
import json, sys
from pathlib import Path

out, gpu, warmup, steps = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
table_file = sys.argv[5] if len(sys.argv) > 5 else "README.md"

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

# tbench's speed switches as its results record them (TBENCH_SET may turn some on), so a table
# made with them says so. A switch the rows ran differently is listed with each setting.
SWITCHES = ["model.attention", "model.padding_mask", "model.fused_qkv", "model.fused_layer_norm",
            "model.sparse_last_layer", "model.unpad", "train.cuda_graph", "train.optimizer_impl", "cuda.tf32"]

def field(result, dotted):
    value = (result or {}).get("spec", {})
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value

def switch_settings():
    settings = []
    for name in SWITCHES:
        values = {field(load(path), name) for path in tbench_results}  # None: not recorded (older results)
        shown = sorted("-" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in values)
        settings.append(f"`{name}` {' / '.join(shown)}")
    return ", ".join(settings)
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
    f"tbench's switches (as its results record them): {switch_settings()}." if tbench_results else "",
    "",
    "| row | HF samples/s | tbench samples/s | tbench steps | tbench / HF | tbench MFU | timing gap | tbench GPU W (J/sample) "
    "| allocated GiB HF / tbench "
    "| reserved GiB HF / tbench | final loss HF / tbench | tbench status |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    *rows,
    "",
    "Raw results: `raw/hf-<row>.json` (with every step's loss) and `raw/tbench-<row>.json` (+ `.iterations.jsonl`).",
]
(out / table_file).write_text("\n".join(lines) + "\n")
print("\n".join(lines))
