#!/usr/bin/env python3
"""Scores `tbench predict --epochs N` from a 1-epoch run against real N-epoch runs, repeatedly.

Each trial runs the same spec for 1, 3 and 5 epochs (in an order that rotates between trials, so
machine drift does not always favour one), then predicts N = 3 and 5 from that trial's 1-epoch
result and scores it, and the naive N x first-epoch figure, against the real runs. Every 1-epoch
result is also scored against every N-epoch result of the other trials, which shows how much of
the error is the machine drifting between runs rather than the model. Each prediction's 95%
interval (the mean steady step's) is scored too: how many of the actual runs it holds.

    python3 bench/predict_epochs.py --trials 3 --out bench/results/predict-epochs
    python3 bench/predict_epochs.py --trials 3 --rescore   # score the runs already in --out again
    python3 bench/predict_epochs.py --trials 3 --dynamic --from-steps 6 --out bench/results/predict-epochs-short

With --from-steps K the source is no whole epoch but a run that train.max_steps stops after K
steps (warm-up included): how long N epochs take, predicted from a short run.
"""
import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EPOCHS = (1, 3, 5)


def run(spec_path, out, name, epochs, max_steps=0):
    subprocess.run([str(ROOT / "build/tbench"), "run", "-q", "--force", spec_path, "--set", f"name={name}",
                    "--set", f"train.epochs={epochs}", "--set", f"train.max_steps={max_steps}",
                    "--set", f"output={out}/{name}.json"], check=True, stdout=subprocess.DEVNULL)
    return out / f"{name}.json"


def source_name(args, trial):
    """The run predictions are made from: one epoch, or --from-steps K steps."""
    return f"t{trial + 1}-s{args.from_steps}" if args.from_steps else f"t{trial + 1}-e1"


def predict(one_epoch, actual, epochs):
    text = subprocess.run([str(ROOT / "build/tbench"), "predict", "--json", "--epochs", str(epochs), "--actual",
                           str(actual), str(one_epoch)], check=True, capture_output=True, text=True).stdout
    return json.loads(text)["epochs"]


def spread(values):
    if not values:
        return None
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--model", default="distilbert-base-uncased")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--samples", type=int, default=96, help="samples per epoch (batch 8)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dynamic", action="store_true",
                   help="log-normal lengths (mean seq/2) padded to each batch's longest: steps of varying cost")
    p.add_argument("--out", default=str(ROOT / "bench/results/predict-epochs"))
    p.add_argument("--from-steps", type=int, default=0,
                   help="predict from a run stopped after this many steps (train.max_steps), not from 1 epoch")
    p.add_argument("--rescore", action="store_true", help="score the tN-eK.json runs in --out without running")
    args = p.parse_args()
    subprocess.run(["cmake", "--build", str(ROOT / "build"), "--target", "tbench"], check=True,
                   stdout=subprocess.DEVNULL)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = run_trials(args, out) if not args.rescore else {
        (trial, epochs): out / ((source_name(args, trial) if epochs == 1 else f"t{trial + 1}-e{epochs}") + ".json")
        for trial in range(args.trials) for epochs in EPOCHS}
    summary = score(args, files)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for n in (3, 5):
        s = summary["spread"][n]
        m, naive = s["model_same_trial"], s["naive_same_trial"]
        naive_text = f"naive {naive['mean']:+.1f}% ({naive['min']:+.1f}% to {naive['max']:+.1f}%)" if naive else "no naive figure"
        print(f"N={n}: predict error {m['mean']:+.1f}% (min {m['min']:+.1f}%, max {m['max']:+.1f}%) over "
              f"{m['n']} trials; {naive_text}")
        if s["model_cross_trial"]:
            c = s["model_cross_trial"]
            print(f"      across trials: {c['mean']:+.1f}% ({c['min']:+.1f}% to {c['max']:+.1f}%, {c['n']} pairs)")
        if s.get("model_same_run"):
            r = s["model_same_run"]
            print(f"      from the actual run's own first {args.from_steps} steps: {r['mean']:+.1f}% "
                  f"({r['min']:+.1f}% to {r['max']:+.1f}%), interval holds {s['within_ci95']['same_run']}")
        covered = s["within_ci95"]
        print(f"      95% interval holds the actual: {covered['same_trial']} same-trial, "
              f"{covered['cross_trial']} cross-trial; mean half-width {s['ci95_half_width_pct']['mean']:.1f}%")


def run_trials(args, out):
    spec = {"name": "predict", "model": args.model, "data": {"source": "synthetic", "num_samples": args.samples,
                                                            "seq_len": args.seq},
            "train": {"epochs": 1, "batch_size": 8, "seed": 42}, "device": "cpu", "threads": args.threads,
            "timing": {"warmup_steps": 2}}
    if args.dynamic:
        spec["data"].update({"padding": "longest", "lengths": {"distribution": "lognormal", "mean": args.seq // 2,
                                                               "std": args.seq // 4}})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    files = {}
    for trial in range(args.trials):
        order = EPOCHS[trial % 3:] + EPOCHS[:trial % 3]
        for epochs in order:
            if epochs == 1 and args.from_steps:
                files[(trial, epochs)] = run(f.name, out, source_name(args, trial), 1, args.from_steps)
            else:
                files[(trial, epochs)] = run(f.name, out, f"t{trial + 1}-e{epochs}", epochs)
            print(f"trial {trial + 1}: {epochs} epoch(s) done", file=sys.stderr)
    Path(f.name).unlink()
    return files


def truncated(actual, k, folder):
    """The actual run as if train.max_steps had stopped it after its first k steps: the same
    process, so the same machine state, which isolates the prediction from the machine's drift
    between runs. Its partial epoch's wall time is the k-th step's end (steps run back to back
    from the start of training, which epoch 1 starts with)."""
    r = json.loads(actual.read_text())
    r["iterations"] = r["iterations"][:k]
    epoch = {key: value for key, value in r["epochs"][0].items() if key != "eval"}
    epoch.update(seconds=r["iterations"][-1]["ended_at"], complete=False, steps=k, profiler_seconds=0.0)
    r["epochs"] = [epoch]
    path = Path(folder) / f"{actual.stem}-first{k}.json"
    path.write_text(json.dumps(r))
    return path


def same_run_scores(args, files):
    """Each N-epoch run predicted from its own first --from-steps steps."""
    scores = {3: [], 5: []}
    with tempfile.TemporaryDirectory() as folder:
        for n in (3, 5):
            for trial in range(args.trials):
                actual = files[(trial, n)]
                scored = predict(truncated(actual, args.from_steps, folder), actual, n)
                low, high = scored["predicted_seconds_ci95"]
                scores[n].append({"actual": actual.name, "error_pct": scored["error_pct"],
                                  "predicted_s": scored["predicted_seconds"], "actual_s": scored["actual_seconds"],
                                  "within_ci95": scored["actual_within_ci95"],
                                  "ci95_half_width_pct": 100 * (high - scored["predicted_seconds"]) / scored["predicted_seconds"]})
    return scores


def score(args, files):
    same, cross = {3: [], 5: []}, {3: [], 5: []}
    for n in (3, 5):
        for t1, t2 in itertools.product(range(args.trials), repeat=2):
            scored = predict(files[(t1, 1)], files[(t2, n)], n)
            low, high = scored["predicted_seconds_ci95"]
            entry = {"from": files[(t1, 1)].name, "actual": files[(t2, n)].name, "error_pct": scored["error_pct"],
                     "naive_error_pct": scored["naive_error_pct"], "predicted_s": scored["predicted_seconds"],
                     "ci95_s": [low, high], "actual_s": scored["actual_seconds"],
                     "within_ci95": scored["actual_within_ci95"],
                     "ci95_half_width_pct": 100 * (high - scored["predicted_seconds"]) / scored["predicted_seconds"]}
            (same if t1 == t2 else cross)[n].append(entry)
    version = subprocess.run([str(ROOT / "build/tbench"), "--version"], check=True, capture_output=True,
                             text=True).stdout.strip()
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "scored_by": version, "model": args.model,
               "seq_len": args.seq, "dynamic": args.dynamic, "samples": args.samples, "threads": args.threads,
               "trials": args.trials, "from_steps": args.from_steps or None,
               "same_trial": same, "cross_trial": cross, "spread": {}}
    for n in (3, 5):
        held = lambda entries: f"{sum(e['within_ci95'] for e in entries)} of {len(entries)}"
        summary["spread"][n] = {
            "model_same_trial": spread([e["error_pct"] for e in same[n]]),
            "naive_same_trial": spread([e["naive_error_pct"] for e in same[n] if e["naive_error_pct"] is not None]),
            "model_cross_trial": spread([e["error_pct"] for e in cross[n]]) if cross[n] else None,
            "within_ci95": {"same_trial": held(same[n]), "cross_trial": held(cross[n])},
            "ci95_half_width_pct": spread([e["ci95_half_width_pct"] for e in same[n]]),
        }
    if args.from_steps:
        summary["same_run"] = same_run_scores(args, files)
        for n in (3, 5):
            entries = summary["same_run"][n]
            summary["spread"][n]["model_same_run"] = spread([e["error_pct"] for e in entries])
            summary["spread"][n]["within_ci95"]["same_run"] = f"{sum(e['within_ci95'] for e in entries)} of {len(entries)}"
    return summary


if __name__ == "__main__":
    main()
