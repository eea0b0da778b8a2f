#!/usr/bin/env python3
"""Scores `tbench predict --target` across two GPUs on real runs: every row measured on both
machines is predicted from each side for the other, and compared with what the other measured.

    bench/score_cross_gpu.py bench/results/gpu/<machine A> bench/results/gpu/<machine B> [--tbench PATH]

Each folder holds the raw tbench results of bench/gpu_side_by_side.sh (raw/tbench-<row>.json).
The target GPU is named as the other side's result records it (env.gpu.name), so tbench's
datasheet for it is used. For each direction the table gives the predicted and the actual step
time, the error, the share of the source's step the GPU sat idle waiting for the host (rows where it
is 20% or more are scored apart), beside it the kernel profile's other hypothesis (overlapped: the host's launching
hides slower kernels), the prediction with the target's host (`--target-host`: the pace that host
launched kernels at, timed on the target's rows of the other models that its host held, so a row
never times its own host), the roofline's and the naive peak-TFLOPS ratio's errors, and the mean
absolute error of each. The prediction uses the source's kernel profile where the result has
one (bench/gpu_side_by_side.sh profiles its last 3 steps), else the roofline: the method column says
which. Writes the markdown table to stdout, or to --out. Needs only the tbench binary (no GPU).
"""
import argparse
import functools
import json
import subprocess
import sys
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="one machine's results folder")
    p.add_argument("b", type=Path, help="the other machine's results folder")
    p.add_argument("--tbench", default=str(Path(__file__).resolve().parent.parent / "build" / "tbench"))
    p.add_argument("--as-a", help="the target name (or device spec JSON) for machine A, instead of its env.gpu.name")
    p.add_argument("--as-b", help="the same for machine B")
    p.add_argument("--out", type=Path, help="write the markdown here instead of stdout")
    return p.parse_args()


def rows_of(folder):
    """{row id: result path} for the completed tbench results in folder/raw (or folder itself)."""
    raw = folder / "raw" if (folder / "raw").is_dir() else folder
    rows = {}
    for path in sorted(raw.glob("tbench-*.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if result.get("summary", {}).get("status") == "completed":
            # A step replayed from a CUDA graph pairs only with another such step.
            graphed = (result.get("spec", {}).get("train", {}).get("cuda_graph") is True)
            rows[path.name[len("tbench-"):-len(".json")] + (" (CUDA graph)" if graphed else "")] = path
    return rows


def gpu_name(path):
    """The GPU the run used, where env records it: env.cuda.devices[N].name for spec.device "cuda:N"."""
    result = json.loads(path.read_text())
    device = result.get("spec", {}).get("device", "cuda")
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    devices = result.get("env", {}).get("cuda", {}).get("devices") or []
    return (devices[index].get("name") if index < len(devices) else None) or ""


def predict(tbench, source, actual, target, target_host=()):
    hosts = [arg for path in target_host for arg in ("--target-host", str(path))]
    out = subprocess.run([tbench, "predict", str(source), "--target", target, "--actual", str(actual), "--json", *hosts],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
    return json.loads(out.stdout)["target"], None


# A source step whose GPU sat idle for this share of it or more, waiting for the host to launch
# kernels (the kernel profile's `held` part), is "held by the host": the target's host, which no GPU
# datasheet describes, sets that part. The predictor is scored on those rows and on the rest apart.
HOST_HELD_SHARE = 0.2


def held_share(prediction):
    parts = prediction.get("source_step_parts") or {}  # the measured step = compute + memory + held
    step = sum(parts.get(k, 0.0) for k in ("compute_seconds", "memory_seconds", "held_seconds"))
    return parts.get("held_seconds", 0.0) / step if step else None


@functools.lru_cache(maxsize=None)
def model_of(path):
    """The model a result ran (model.name), read once per file."""
    return json.loads(path.read_text()).get("model", {}).get("name")


def host_held_rows(tbench, rows, other_gpu):
    """The eager single-process rows whose GPU waited for their host for HOST_HELD_SHARE of the step or
    more: the ones that time their host's launching. Their held share comes from their own kernel
    profile (any target)."""
    held = set()
    for row, path in rows.items():
        if row.endswith("(CUDA graph)") or json.loads(path.read_text()).get("dist", {}).get("world_size", 1) > 1:
            continue
        p, _ = predict(tbench, path, path, other_gpu)
        share = held_share(p) if p else None
        if share is not None and share >= HOST_HELD_SHARE:
            held.add(row)
    return held


def direction(tbench, source_rows, target_rows, target, timing_rows):
    lines, errors = [], {"predicted": [], "overlapped": [], "with target host": [], "roofline": [], "naive": []}
    by_held = {"device": [], "host": []}
    host_by_held = {"device": [], "host": []}
    for row in sorted(set(source_rows) & set(target_rows)):
        p, why = predict(tbench, source_rows[row], target_rows[row], target)
        if p is None:
            lines.append(f"| {row} | - | - | - | - | - | - | - | - | - | - | - | - | - | {why} |")
            continue
        # Leave one model out: the target's host timed on its rows of the other models.
        model = model_of(source_rows[row])
        timing = [target_rows[r] for r in sorted(timing_rows) if model_of(target_rows[r]) != model]
        hosted, hosted_why = None, "no run of another model that its host held"
        if row.endswith("(CUDA graph)"):
            hosted_why = "a CUDA graph: no host launches its kernels"
        elif timing:
            hosted, hosted_why = predict(tbench, source_rows[row], target_rows[row], target, timing)
        steps = p["predicted_epoch_seconds"] / p["predicted_step_seconds"]
        actual_step = p["actual_epoch_seconds"] / steps
        errors["predicted"].append(abs(p["error_pct"]))
        share = held_share(p)
        if share is not None:
            by_held["host" if share >= HOST_HELD_SHARE else "device"].append(abs(p["error_pct"]))
        if hosted is not None:
            errors["with target host"].append(abs(hosted["error_pct"]))
            if share is not None:
                host_by_held["host" if share >= HOST_HELD_SHARE else "device"].append(abs(hosted["error_pct"]))
        errors["roofline"].append(abs(p["roofline_error_pct"]))
        errors["naive"].append(abs(p["naive_error_pct"]))
        # The kernel profile's other hypothesis (the host's launching hides slower kernels); "-" for
        # a roofline prediction, which has no kernel split to overlap.
        overlapped = p.get("overlapped_error_pct")
        if overlapped is not None:
            errors["overlapped"].append(abs(overlapped))
        lines.append("| {} | {} | {} | {:.2f} | {:.2f} | {:+.1f}% | {} | {} | {} | {} | {:.2f} | {:+.1f}% | {:.2f} | {:+.1f}% | {} |".format(
            row, p["method"], f"{share:.0%}" if share is not None else "-", p["predicted_step_seconds"] * 1e3,
            actual_step * 1e3, p["error_pct"],
            f"{p['overlapped_step_seconds'] * 1e3:.2f}" if overlapped is not None else "-",
            f"{overlapped:+.1f}%" if overlapped is not None else "-",
            f"{hosted['predicted_step_seconds'] * 1e3:.2f}" if hosted else "-",
            f"{hosted['error_pct']:+.1f}%" if hosted else f"- ({hosted_why})",
            p["roofline_step_seconds"] * 1e3, p["roofline_error_pct"], p["naive_step_seconds"] * 1e3,
            p["naive_error_pct"], p["bound"]))
    mae = {name: sum(e) / len(e) for name, e in errors.items() if e}
    return lines, mae, mean_and_count(by_held), mean_and_count(host_by_held), len(errors["predicted"])


def mean_and_count(errors_by_group):
    """{group: (mean absolute error, rows)} for the groups with any rows."""
    return {name: (sum(e) / len(e), len(e)) for name, e in errors_by_group.items() if e}


def main():
    args = parse_args()
    a_rows, b_rows = rows_of(args.a), rows_of(args.b)
    if not a_rows or not b_rows:
        sys.exit(f"score_cross_gpu.py: no completed tbench-*.json results in {args.a if not a_rows else args.b}")
    a_gpu = args.as_a or gpu_name(next(iter(a_rows.values())))
    b_gpu = args.as_b or gpu_name(next(iter(b_rows.values())))
    out = [f"# tbench predict --target, scored on real runs: {a_gpu or args.a.name} and {b_gpu or args.b.name}", ""]
    a_held, b_held = host_held_rows(args.tbench, a_rows, b_gpu), host_held_rows(args.tbench, b_rows, a_gpu)
    for source_rows, target_rows, source, target, target_held in ((a_rows, b_rows, a_gpu, b_gpu, b_held),
                                                                  (b_rows, a_rows, b_gpu, a_gpu, a_held)):
        lines, mae, mae_by_held, host_mae_by_held, scored = direction(args.tbench, source_rows, target_rows, target,
                                                                      target_held)
        out += [f"## {source} -> {target}", "",
                "| row | method | held by the host | predicted ms/step | actual ms/step | error | overlapped ms/step "
                "| overlapped error | with target host ms/step | with target host error | roofline ms/step "
                "| roofline error | naive ms/step | naive error | bound |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|", *lines, ""]
        if mae:
            overlapped = f"overlapped: {mae['overlapped']:.1f}%, " if "overlapped" in mae else ""
            hosted_rows = sum(n for _, n in host_mae_by_held.values())
            hosted = (f"with the target's host: {mae['with target host']:.1f}% over {hosted_rows} rows, "
                      if "with target host" in mae else "")
            out += [f"Mean absolute error: **{mae['predicted']:.1f}%** ({overlapped}{hosted}roofline: {mae['roofline']:.1f}%, "
                    f"naive peak-TFLOPS ratio: {mae['naive']:.1f}%) over the {scored} of {len(lines)} rows "
                    "predicted.", ""]
            labels = (("device", f"the GPU bounds (held by the host < {HOST_HELD_SHARE:.0%} of the source's step)"),
                      ("host", f"held by the host for {HOST_HELD_SHARE:.0%} or more of the source's step "
                               "(the target's host, which no datasheet describes, sets that part)"))
            split = [f"{mae_by_held[k][0]:.1f}% over the {mae_by_held[k][1]} rows {label}"
                     for k, label in labels if k in mae_by_held]
            if split:
                out += ["By what bounds the source's step: " + "; ".join(split) + ".", ""]
            hosted_split = [f"{host_mae_by_held[k][0]:.1f}% over the {host_mae_by_held[k][1]} rows the "
                            + ("GPU bounds" if k == "device" else "host holds")
                            for k in ("device", "host") if k in host_mae_by_held]
            if hosted_split:
                timed = ", ".join(sorted(target_held)) or "none"
                out += ["With the target's host (`--target-host`, timed on the target's rows of the other models "
                        f"among those its host held: {timed}): " + "; ".join(hosted_split) + ".", ""]
    out += ["Made by `bench/score_cross_gpu.py` from the raw results in each machine's folder."]
    text = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
