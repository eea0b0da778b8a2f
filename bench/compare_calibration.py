#!/usr/bin/python3
"""How often `tbench compare` calls two runs of the same setting "significantly" different.

Every committed CPU bench holds repeats: runs of one spec that differ only in their seeds (A/A
pairs). Their throughputs differ by chance and by the machine drifting between and within runs,
so a 95% interval that knew its uncertainty would call about 5% of A/A pairs significant. This
runs `tbench compare --json` on every pair of results in each directory and counts, for A/A
pairs and for A/B pairs (one spec field apart, seeds aside):

  - tbench's verdict (each side's steps counted as their effective number, from their lag-1
    autocorrelation);
  - the verdict with every step taken as independent (what compare did before), recomputed here
    from the same steps with scipy's t at Welch's degrees of freedom.

A single run cannot see how much the next run of the same spec will differ, so then it groups the
repeats: every split of a setting's runs into two halves (A/A) is compared with `--vs`, whose
interval comes from the runs' spread, and so is every pair of settings one field apart that each
have two runs or more (A/B).

    /usr/bin/python3 bench/compare_calibration.py --out bench/results/compare-calibration

Needs numpy and scipy (Debian's python3-scipy) and a built build/tbench. Writes summary.json and
pairs.json to --out; the README there holds the table.
"""
import argparse
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"gpu"}  # GPU results are rows of different models and precisions, not repeats


def is_result(path):
    if path.name.endswith(".iterations.jsonl") or path.name == "summary.json":
        return False
    try:
        with open(path) as f:
            return "schema" in json.load(f)
    except (OSError, ValueError):
        return False


def per_sample_times(path):
    """Seconds per sample of each timed step, as compare reads them (warm-up and profiled out)."""
    with open(path) as f:
        r = json.load(f)
    world = (r.get("dist") or {}).get("world_size", 1)
    return [it["seconds"] / (it["samples"] * world) for it in r["iterations"]
            if not it.get("warmup") and not it.get("profiled")]


def independent_verdict(a, b):
    """The ratio's 95% interval with every step independent: delta method, Welch, exact t."""
    def side(t):
        n = len(t)
        m = sum(t) / n
        var = sum((x - m) ** 2 for x in t) / (n - 1) if n > 1 else 0.0
        return m, var / (n * m * m), n - 1
    ma, va, da = side(a)
    mb, vb, db = side(b)
    ratio = ma / mb
    if va + vb == 0 or da == 0 or db == 0:
        return ratio, None
    df = (va + vb) ** 2 / (va * va / da + vb * vb / db)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    return ratio, (ratio * math.exp(-half), ratio * math.exp(half))


def seed_field(field):
    return field.endswith("seed")


def compare(a, b):
    out = subprocess.run([str(ROOT / "build/tbench"), "compare", "--json", str(a), str(b)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def kind_of(differences):
    settings = [d["field"] for d in differences if not seed_field(d["field"])]
    if not settings:
        return "A/A"
    if len(settings) == 1:
        return "A/B"
    return None  # several things moved: neither a repeat nor one switch


def compare_groups(a, b):
    out = subprocess.run([str(ROOT / "build/tbench"), "compare", "--json", *map(str, a), "--vs", *map(str, b)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def settings_groups(pairs, directory):
    """The directory's runs grouped by setting: A/A pairs join their two runs' groups."""
    parent = {}
    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x
    for p in pairs:
        if p["dir"] != directory:
            continue
        find(p["a"]), find(p["b"])
        if p["kind"] == "A/A":
            parent[find(p["a"])] = find(p["b"])
    groups = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return [sorted(g) for g in groups.values()]


def halves(runs):
    """Every distinct split of `runs` into two equal halves (each split once; an odd run out is left
    out in turn, so every run takes part)."""
    out = []
    outs = [None] if len(runs) % 2 == 0 else runs
    for left_out in outs:
        pool = [r for r in runs if r != left_out]
        for first in itertools.combinations(pool[1:], len(pool) // 2 - 1):
            a = [pool[0], *first]
            out.append((a, [r for r in pool if r not in a]))
    return out


def significant(ci):
    return ci is not None and (ci[0] > 1 or ci[1] < 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=str(ROOT / "bench/results"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--reuse", help="pairs.json of an earlier run: take its single-run pairs from there")
    args = parser.parse_args()
    pairs = []
    if args.reuse:
        with open(args.reuse) as f:
            pairs = [p for p in json.load(f) if p["kind"] in ("A/A", "A/B")]
    for directory in [] if args.reuse else sorted(p for p in Path(args.results).iterdir() if p.is_dir() and p.name not in SKIP):
        results = sorted(p for p in directory.glob("*.json") if is_result(p))
        for a, b in itertools.combinations(results, 2):
            c = compare(a, b)
            kind = kind_of(c["differences"])
            if kind is None:
                continue
            ta, tb = per_sample_times(a), per_sample_times(b)
            ratio, old_ci = independent_verdict(ta, tb)
            if abs(ratio - c["ratio"]) > 1e-9 * c["ratio"]:
                sys.exit(f"{a} vs {b}: this script's steps are not compare's ({ratio} vs {c['ratio']})")
            pairs.append({"dir": directory.name, "a": a.name, "b": b.name, "kind": kind, "ratio": c["ratio"],
                          "field": next((d["field"] for d in c["differences"] if not seed_field(d["field"])), None),
                          "steps": [c["a_steps"], c["b_steps"]],
                          "effective_steps": [c["a_effective_steps"], c["b_effective_steps"]],
                          "ci95": c["ci95"], "significant": c["significant"],
                          "independent_ci95": old_ci, "independent_significant": significant(old_ci)})
    for directory in sorted({p["dir"] for p in pairs}):
        base = Path(args.results) / directory
        groups = settings_groups(pairs, directory)
        for g in groups:
            if len(g) < 4:
                continue
            for a, b in halves(g):
                c = compare_groups([base / x for x in a], [base / x for x in b])
                pairs.append({"dir": directory, "a": a, "b": b, "kind": "A/A repeats", "ratio": c["ratio"],
                              "ci95": c["ci95"], "significant": c["significant"], "independent_ci95": None,
                              "independent_significant": None})
        for g1, g2 in itertools.combinations([g for g in groups if len(g) >= 2], 2):
            one_apart = [p for p in pairs if p["dir"] == directory and p["kind"] == "A/B"
                         and {p["a"], p["b"]} & set(g1) and {p["a"], p["b"]} & set(g2)]
            if not one_apart:
                continue
            c = compare_groups([base / x for x in g1], [base / x for x in g2])
            pairs.append({"dir": directory, "a": g1, "b": g2, "kind": "A/B repeats", "ratio": c["ratio"],
                          "field": one_apart[0]["field"], "ci95": c["ci95"], "significant": c["significant"],
                          "independent_ci95": None, "independent_significant": None})
    summary = {}
    for kind in ("A/A", "A/B", "A/A repeats", "A/B repeats"):
        chosen = [p for p in pairs if p["kind"] == kind]
        if not chosen:
            continue
        def width(ci, ratio):
            return (ci[1] - ci[0]) / 2 / ratio * 100 if ci else None
        new_w = sorted(w for w in (width(p["ci95"], p["ratio"]) for p in chosen) if w is not None)
        old_w = sorted(w for w in (width(p["independent_ci95"], p["ratio"]) for p in chosen) if w is not None)
        summary[kind] = {
            "pairs": len(chosen),
            "significant": sum(p["significant"] for p in chosen),
            "independent_significant": None if "repeats" in kind else sum(p["independent_significant"] for p in chosen),
            "median_half_width_pct": new_w[len(new_w) // 2] if new_w else None,
            "independent_median_half_width_pct": old_w[len(old_w) // 2] if old_w else None,
            "by_dir": {},
        }
        for d in sorted({p["dir"] for p in chosen}):
            mine = [p for p in chosen if p["dir"] == d]
            summary[kind]["by_dir"][d] = [len(mine), sum(p["significant"] for p in mine),
                                          sum(bool(p["independent_significant"]) for p in mine)]  # cut below
            if "repeats" in kind:
                summary[kind]["by_dir"][d] = summary[kind]["by_dir"][d][:2]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pairs.json").write_text(json.dumps(pairs, indent=1) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for kind, s in summary.items():
        if "repeats" in kind:
            print(f"{kind}: {s['pairs']} comparisons; significant {s['significant']}; median half-width "
                  f"{s['median_half_width_pct']:.2f}%")
        else:
            print(f"{kind}: {s['pairs']} pairs; significant {s['significant']} (steps as a series), "
                  f"{s['independent_significant']} (steps independent); median half-width "
                  f"{s['median_half_width_pct']:.2f}% vs {s['independent_median_half_width_pct']:.2f}%")
        for d, (n, new, *old) in s["by_dir"].items():
            print(f"  {d:32s} {n:4d} pairs  {new:4d}" + ("" if "repeats" in kind else f"  {old[0]:4d}"))


if __name__ == "__main__":
    main()
