#!/usr/bin/env python3
"""What the harness costs per step: `tbench run` (loader thread, per-step records, the JSONL
stream, log lines) against build/tbench_step_loop, the same model, data, AdamW, clipping and CPU
allocator in a bare loop with one clock read per step. Alternating rounds in one call; the
overhead of a round is tbench's median step / the bare loop's - 1, reported as the mean over
rounds with a 95% t-interval. tiny-bert is where a fixed per-step cost shows most.

    python3 bench/harness_overhead.py --rows tiny-bert-128,distilbert-64 --rounds 5
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import mean_with_interval

ROOT = Path(__file__).resolve().parent.parent
ROWS = {  # label: (model, seq_len, warm-up steps, timed steps)
    "tiny-bert-128": ("tiny-bert", 128, 20, 300),
    "distilbert-64": ("distilbert-base-uncased", 64, 3, 20),
}


def run_tbench(model, seq, warmup, steps, threads, out, name):
    spec = {"name": name, "model": model, "data": {"source": "synthetic", "num_samples": 8 * (warmup + steps),
                                                  "seq_len": seq},
            "train": {"epochs": 1, "batch_size": 8, "seed": 42}, "device": "cpu", "threads": threads,
            "timing": {"warmup_steps": warmup}, "output": str(out / f"{name}.json")}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:  # not -q: the log lines are part of the harness; they go to a file, as in a batch job
        with open(out / f"{name}.log", "w") as log:
            subprocess.run([str(ROOT / "build/tbench"), "run", "--force", f.name], check=True,
                           stdout=subprocess.DEVNULL, stderr=log)
    finally:
        os.unlink(f.name)
    return json.loads((out / f"{name}.json").read_text())["summary"]["step_ms"]["median"] / 1e3


def run_loop(model, seq, warmup, steps, threads, out, name):
    text = subprocess.run([str(ROOT / "build/tbench_step_loop"), model, str(seq), "8", str(warmup + steps),
                           str(warmup), str(threads), "caching"], check=True, capture_output=True, text=True).stdout
    (out / f"{name}.json").write_text(text)
    return json.loads(text)["median_step_seconds"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "bench/results/harness-overhead"))
    args = p.parse_args()
    subprocess.run(["cmake", "--build", str(ROOT / "build"), "--target", "tbench", "tbench_step_loop"], check=True,
                   stdout=subprocess.DEVNULL)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for label in args.rows.split(","):
        model, seq, warmup, steps = ROWS[label]
        rounds = []
        for r in range(1, args.rounds + 1):
            order = [("tbench", run_tbench), ("loop", run_loop)]
            if r % 2 == 0:
                order.reverse()
            got = {side: fn(model, seq, warmup, steps, args.threads, out, f"{label}-{side}-r{r}") for side, fn in order}
            rounds.append({"round": r, "tbench_s": got["tbench"], "loop_s": got["loop"],
                           "overhead": got["tbench"] / got["loop"] - 1})
            print(f"{label} round {r}: tbench {got['tbench'] * 1e3:.3f} ms, bare loop {got['loop'] * 1e3:.3f} ms, "
                  f"overhead {rounds[-1]['overhead'] * 100:+.2f}%", file=sys.stderr)
        mean, low, high = mean_with_interval([x["overhead"] for x in rounds])
        rows.append({"row": label, "model": model, "seq_len": seq, "timed_steps": steps, "rounds": rounds,
                     "overhead_mean": mean, "overhead_ci95": [low, high]})
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "threads": args.threads, "rows": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for row in rows:
        low, high = row["overhead_ci95"]
        ci = f"95% CI {low * 100:+.2f}% to {high * 100:+.2f}%, " if low is not None else ""
        print(f"{row['row']}: harness overhead {row['overhead_mean'] * 100:+.2f}% of the step "
              f"({ci}{len(row['rounds'])} rounds)")


if __name__ == "__main__":
    main()
