#!/usr/bin/env python3
"""tbench against the PyTorch-eager loop it replaces, on the CPU, on the same LibTorch.

For each row (model, sequence length; batch 8, fp32, dropout on, AdamW, clipping at 1.0) it runs
tbench and a reference in alternation, `--rounds` times each, in one call, so that both sides see
the same machine state. The reference (--reference):
  eager  bench/eager_reference.py on Debian 12's python3-torch, against the host's tbench (both
         LibTorch 1.13.1);
  hf     HF transformers itself (bench/hf_side_by_side.py --device cpu) in scripts/hf-fixtures'
         forky root, against tbench built in scripts/debian14's forky root: both LibTorch 2.14.1
         and OpenBLAS (needs root, like those scripts).
Each side's median step time excludes its warm-up steps. The speed ratio of a round is reference
median / tbench median (above 1: tbench is faster); the row's ratio is the geometric mean over
rounds, with a 95% t-interval on the log ratios.

    python3 bench/cpu_side_by_side.py                        # all rows, 3 rounds
    python3 bench/cpu_side_by_side.py --rows distilbert-64 --rounds 5 --out /tmp/sbs
    python3 bench/cpu_side_by_side.py --variant system:cpu.allocator=system   # a second tbench per round
    sudo python3 bench/cpu_side_by_side.py --reference hf --rows distilbert-128,bert-base-128

With --reference eager it needs Debian's python3-torch (the reference loads the same
libtorch_cpu.so as tbench; this script installs it when missing) and builds tbench through scripts/tbench. It writes, under --out, every
raw result (tbench's result and iteration files, the reference's JSON), summary.json and table.md.
Quote the figures with the machine they name; on a shared machine compare only ratios measured
together.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import mean_with_interval

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"  # Debian's, where python3-torch lives

# label: (model, seq_len, warm-up steps, timed steps). Small models get more steps: their steps are short.
ROWS = {
    "tiny-bert-128": ("tiny-bert", 128, 10, 100),
    "distilbert-64": ("distilbert-base-uncased", 64, 3, 15),
    "distilbert-128": ("distilbert-base-uncased", 128, 3, 12),
    "bert-base-128": ("bert-base-cased", 128, 3, 10),
    "roberta-base-128": ("roberta-base", 128, 3, 10),
    "xlnet-base-128": ("xlnet-base-cased", 128, 3, 10),
}

def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ", ".join(ROWS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps-scale", type=float, default=1.0, help="multiply every row's timed steps")
    p.add_argument("--tbench-set", action="append", default=[], help="extra --set FIELD=VALUE for every tbench run")
    p.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE[,FIELD=VALUE]",
                   help="also run tbench with these --set overrides in every round, e.g. system:cpu.allocator=system")
    p.add_argument("--variant-rows", default="", help="comma-separated rows the variants run on (default: all)")
    p.add_argument("--reference", choices=["eager", "hf"], default="eager",
                   help="eager: bench/eager_reference.py (LibTorch 1.13); hf: HF transformers (LibTorch 2.14)")
    p.add_argument("--out", help="default: bench/results/cpu-<reference>")
    args = p.parse_args()
    args.out = args.out or str(ROOT / f"bench/results/cpu-{args.reference}")
    return args


def ensure_python_torch():
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0:
        return
    print("installing python3-torch (Debian's LibTorch 1.13 for Python)", file=sys.stderr)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "python3-torch"], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def median_of_iterations(path):
    steps = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    timed = [s["seconds"] for s in steps if not s.get("warmup")]
    return statistics.median(timed), timed


def parse_variants(texts):
    variants = {"tbench": []}
    for text in texts:
        name, _, sets = text.partition(":")
        if not name or not sets or name in variants:
            sys.exit(f"--variant {text}: expected a new NAME:FIELD=VALUE[,FIELD=VALUE]")
        variants[name] = sets.split(",")
    return variants


def run_tbench(args, label, model, seq, warmup, steps, round_no, out, variant="tbench", sets=()):
    name = f"{label}-{variant}-r{round_no}"
    spec = {
        "name": name, "model": model, "num_labels": 2,
        "data": {"source": "synthetic", "num_samples": args.batch * (warmup + steps), "seq_len": seq},
        "train": {"epochs": 1, "batch_size": args.batch, "lr": 5e-5, "max_grad_norm": 1.0, "seed": 42},
        "precision": "fp32", "device": "cpu", "threads": args.threads,
        "timing": {"warmup_steps": warmup}, "output": str(out / f"{name}.json"),
    }
    # Beside the results, not in /tmp: with --reference hf tbench runs in a root, which sees the
    # checkout at the same path but has its own /tmp.
    with tempfile.NamedTemporaryFile("w", suffix=".spec.json", dir=out, delete=False) as f:
        json.dump(spec, f)
    try:
        tbench = ([str(ROOT / "scripts/debian14"), "shell", str(ROOT / "build-debian14-cpu/tbench")]
                  if args.reference == "hf" else [str(ROOT / "scripts/tbench")])
        command = tbench + ["run", "-q", "--force", f.name]
        for s in list(args.tbench_set) + list(sets):
            command += ["--set", s]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    finally:
        os.unlink(f.name)
    result = json.loads((out / f"{name}.json").read_text())
    median, timed = median_of_iterations(out / f"{name}.iterations.jsonl")
    return {"file": f"{name}.json", "median": median, "steps": timed,
            "blas": result["env"]["cpu"].get("blas"), "threads": result["env"]["cpu"].get("torch_threads")}


def run_reference(args, label, model, seq, warmup, steps, round_no, out):
    name = f"{label}-{args.reference}-r{round_no}.json"
    common = ["--model", model, "--seq", str(seq), "--batch", str(args.batch), "--warmup", str(warmup),
              "--steps", str(steps), "--threads", str(args.threads), "--out", str(out / name)]
    if args.reference == "hf":
        subprocess.run([str(ROOT / "scripts/hf-fixtures"), "shell", "python3", str(ROOT / "bench/hf_side_by_side.py"),
                        "--device", "cpu", "--precision", "fp32"] + common, check=True, stdout=subprocess.DEVNULL)
        result = json.loads((out / name).read_text())
        return {"file": name, "median": statistics.median(result["step_seconds"]), "steps": result["step_seconds"]}
    subprocess.run([PYTHON, str(ROOT / "bench/eager_reference.py")] + common, check=True)
    result = json.loads((out / name).read_text())
    return {"file": name, "median": result["median_step_seconds"], "steps": result["step_seconds"]}


def ratio_with_interval(ratios):
    """The geometric mean of the ratios, with the interval taken on their logs."""
    centre, low, high = mean_with_interval([math.log(r) for r in ratios])
    if low is None:
        return math.exp(centre), None, None
    return math.exp(centre), math.exp(low), math.exp(high)


def measure_row(args, label, out):
    model, seq, warmup, steps = ROWS[label]
    steps = max(3, round(steps * args.steps_scale))
    variants = parse_variants(args.variant)
    if args.variant_rows and label not in args.variant_rows.split(","):
        variants = {"tbench": []}
    ref = args.reference
    rounds = []
    for r in range(1, args.rounds + 1):
        # Rotate which side goes first, so none always runs on a machine another one warmed.
        sides = [ref] + list(variants)
        sides = sides[(r - 1) % len(sides):] + sides[:(r - 1) % len(sides)]
        got = {}
        for side in sides:
            if side == ref:
                got[side] = run_reference(args, label, model, seq, warmup, steps, r, out)
            else:
                got[side] = run_tbench(args, label, model, seq, warmup, steps, r, out, side, variants[side])
        entry = {"round": r, ref: got[ref]}
        for v in variants:
            entry[v] = got[v]
            entry[f"ratio_{v}"] = got[ref]["median"] / got[v]["median"]
        rounds.append(entry)
        print(f"{label} round {r}: {ref} {got[ref]['median'] * 1e3:.1f} ms; " +
              ", ".join(f"{v} {got[v]['median'] * 1e3:.1f} ms (ratio {entry[f'ratio_{v}']:.3f})" for v in variants),
              file=sys.stderr)
    row = {"row": label, "model": model, "seq_len": seq, "batch_size": args.batch, "warmup_steps": warmup,
           "timed_steps": steps, "variants": variants, "rounds": rounds,
           f"{ref}_median_s": statistics.median(x[ref]["median"] for x in rounds)}
    for v in variants:
        ratio, low, high = ratio_with_interval([x[f"ratio_{v}"] for x in rounds])
        row[f"{v}_ratio"], row[f"{v}_ratio_ci95"] = ratio, [low, high]
        row[f"{v}_median_s"] = statistics.median(x[v]["median"] for x in rounds)
    return row


def cpu_name():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def blas_provider():
    try:
        return os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    except OSError:
        return "unknown"


def write_table(summary, out):
    m, ref = summary["machine"], summary["reference"]
    blas = m["blas"] if isinstance(m["blas"], str) else ", ".join(Path(b).name for b in m["blas"])
    title = {"eager": "PyTorch eager", "hf": f"HF transformers {summary.get('transformers', '')} (eager mode)"}[ref]
    lines = [f"# tbench vs {title}, CPU ({m['cpu']}, {m['cores']} cores, {summary['threads']} threads)", "",
             f"LibTorch {summary['torch']} on both sides; BLAS {blas}; fp32, batch {summary['batch_size']}, "
             f"dropout on, AdamW + clipping at 1.0. {summary['rounds']} alternating rounds per row; ratio = {ref} "
             "median step / tbench median step (above 1: tbench faster), geometric mean over rounds, 95% t-interval.",
             "", f"| row | tbench | median step | {ref} median step | ratio | 95% CI |", "|---|---|---:|---:|---:|---:|"]
    for row in summary["rows"]:
        for v, sets in row["variants"].items():
            low, high = row[f"{v}_ratio_ci95"]
            ci = f"{low:.3f}–{high:.3f}" if low is not None else "n/a"
            label = "default" if not sets else ", ".join(sets)
            lines.append(f"| {row['row']} | {label} | {row[f'{v}_median_s'] * 1e3:.1f} ms | "
                         f"{row[f'{ref}_median_s'] * 1e3:.1f} ms | {row[f'{v}_ratio']:.3f} | {ci} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")


def main():
    args = parse_args()
    labels = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in labels if r not in ROWS]
    if unknown:
        sys.exit(f"--rows: unknown row(s) {', '.join(unknown)}; known: {', '.join(ROWS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.reference == "hf":
        subprocess.run([str(ROOT / "scripts/debian14"), "build"], check=True)
        python = [str(ROOT / "scripts/hf-fixtures"), "shell", "python3"]
    else:
        ensure_python_torch()
        python = [PYTHON]
    versions = subprocess.run(python + ["-c", "import torch; print(torch.__version__)\n"
                                        "try:\n import transformers; print(transformers.__version__)\n"
                                        "except ImportError: print('')"],
                              capture_output=True, text=True, check=True).stdout.split("\n")
    started = time.time()
    rows = [measure_row(args, label, out) for label in labels]
    summary = {
        # With --reference hf both sides run in forky roots: their BLAS is the one tbench's env recorded.
        "machine": {"host": platform.node(), "cpu": cpu_name(), "cores": os.cpu_count(),
                    "blas": rows[0]["rounds"][0]["tbench"]["blas"] if args.reference == "hf" else blas_provider()},
        "reference": args.reference, "torch": versions[0], "transformers": versions[1], "threads": args.threads,
        "batch_size": args.batch, "rounds": args.rounds,
        "tbench_set": args.tbench_set, "variants": args.variant, "wall_seconds": time.time() - started,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rows": rows,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_table(summary, out)
    print((out / "table.md").read_text())


if __name__ == "__main__":
    main()
