#!/usr/bin/env python3
"""Where a profiled step's device time went, by kind of work, for one or more results.

    bench/profile_categories.py RESULT.json... [--label NAME]...

Takes tbench results with a `profile` section (timing.profile_steps on CUDA) and the side-by-side's
HF results with one (`bench/hf_side_by_side.py --profile-steps`). Each kernel is sorted again with
today's categories (`kernel_category`, the same keywords as tbench's op_category), so results
written before a category existed read as they would now. A tbench result keeps only its 25
largest kernels by name: the rest of its device time is a row of its own, never guessed into a
category. Prints a markdown table: device milliseconds per profiled step and their share.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hf_side_by_side import kernel_category  # noqa: E402

NOT_LISTED = "(kernels below the result's top 25)"


def profiled_steps(profile):
    steps = profile.get("steps")
    if isinstance(steps, list) and len(steps) == 2:  # tbench: [first, last]
        return steps[1] - steps[0] + 1
    if isinstance(steps, int) and steps > 0:  # HF: a count
        return steps
    raise ValueError("profile.steps is neither [first, last] nor a count")


def step_breakdown(path):
    """Device ms per profiled step by category, the total, and the median step's wall ms."""
    result = json.loads(Path(path).read_text())
    profile = result.get("profile")
    if not profile:
        raise ValueError(f"{path}: no profile section (run with timing.profile_steps on CUDA)")
    if profile.get("measures") != "device kernels":
        raise ValueError(f"{path}: the profile measures {profile.get('measures')!r}, not device kernels")
    steps = profiled_steps(profile)
    kernels = profile.get("kernels") or profile["top"]
    by_category = {}
    for kernel in kernels:
        category = kernel_category(kernel["name"])
        by_category[category] = by_category.get(category, 0.0) + kernel["ms"] / steps
    total = profile["measured_ms"] / steps
    unlisted = total - sum(by_category.values())
    if unlisted > 1e-9:
        by_category[NOT_LISTED] = unlisted
    summary = result.get("summary", {})
    wall = summary.get("step_ms", {}).get("median") if summary else result.get("step_ms")
    return by_category, total, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--label", action="append", default=[], help="a column's name, in order (default: file name)")
    args = parser.parse_args()
    labels = args.label + [Path(p).stem for p in args.results[len(args.label):]]
    columns = []
    for path in args.results:
        try:
            columns.append(step_breakdown(path))
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            sys.exit(f"profile_categories: {path}: {e}")
    categories = sorted({c for by, _, _ in columns for c in by},
                        key=lambda c: (c == NOT_LISTED, -max(by.get(c, 0.0) for by, _, _ in columns)))
    print("| kind of work | " + " | ".join(labels[:len(columns)]) + " |")
    print("|---|" + "---:|" * len(columns))
    for category in categories:
        cells = [f"{by.get(category, 0.0):.2f} ms ({100 * by.get(category, 0.0) / total:.1f} %)"
                 for by, total, _ in columns]
        print(f"| {category} | " + " | ".join(cells) + " |")
    print("| **device time a step** | " + " | ".join(f"**{total:.2f} ms**" for _, total, _ in columns) + " |")
    print("| median step (wall) | " + " | ".join(f"{wall:.2f} ms" if wall else "-" for _, _, wall in columns) + " |")


if __name__ == "__main__":
    main()
