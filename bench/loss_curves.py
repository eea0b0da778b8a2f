#!/usr/bin/env python3
"""Do two runs train alike? Compares the per-step losses of tbench results (e.g. fp16 or bf16
against fp32 on the same spec and seed), step by step:

    bench/loss_curves.py REFERENCE.json OTHER.json [OTHER.json ...]

For each OTHER: the mean and largest |loss difference| over the steps both ran, against the
reference's own step-to-step noise (the standard deviation of its successive differences).
"within noise" means the mean difference is below that noise. Prints a markdown table.
"""
import json
import statistics
import sys
from pathlib import Path


def losses(path):
    result = json.loads(Path(path).read_text())
    return {it["global_step"]: it["loss"] for it in result["iterations"]}, result["spec"].get("precision", "?")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    reference, ref_precision = losses(sys.argv[1])
    steps = sorted(reference)
    noise = statistics.pstdev([reference[b] - reference[a] for a, b in zip(steps, steps[1:])]) if len(steps) > 2 else 0
    print(f"Reference: {Path(sys.argv[1]).name} ({ref_precision}), {len(steps)} steps, step-to-step noise {noise:.4f}\n")
    print("| run | precision | steps | mean abs diff | max abs diff | within noise |")
    print("|---|---|---:|---:|---:|---|")
    for path in sys.argv[2:]:
        other, precision = losses(path)
        common = [s for s in steps if s in other]
        diffs = [abs(reference[s] - other[s]) for s in common]
        if not diffs:
            print(f"| {Path(path).name} | {precision} | 0 | - | - | - |")
            continue
        mean = statistics.fmean(diffs)
        print(f"| {Path(path).name} | {precision} | {len(common)} | {mean:.4f} | {max(diffs):.4f} | "
              f"{'yes' if mean < noise else 'no'} |")


if __name__ == "__main__":
    main()
