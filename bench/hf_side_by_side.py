#!/usr/bin/env python3
"""The Hugging Face side of bench/gpu_side_by_side.sh: one training benchmark of
AutoModelForSequenceClassification in PyTorch eager mode, set up as tbench runs the same row.

Same model config (models/<name>.json), random init, synthetic batches shaped like tbench's
(random ids that avoid the padding id, label = second token id mod num_labels, every token
attended), AdamW with HF's decay / no-decay groups, linear LR schedule, gradient clipping at 1.0,
dropout on, TF32 off. fp16 uses autocast + GradScaler, bf16 autocast only.

Timing: `--warmup` steps, then `--steps` timed steps between two torch.cuda.synchronize() calls
(the throughput), with CUDA events around each step for the step-time spread. Losses stay on the
device until the end so the loop never waits for the GPU. Writes one JSON object to --out.

Needs torch and transformers; the figures come from the GPU machine. `--device cpu` is a dry run of
the same script (wall-clock step times, no memory figures, no profile) where transformers is
installed without a GPU, e.g. `sudo scripts/hf-fixtures shell python3 bench/hf_side_by_side.py
--model tiny-bert --device cpu --steps 3 --warmup 1 --out /tmp/hf.json`.
"""
import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a shipped model name: models/<name>.json")
    p.add_argument("--models-dir", default=str(Path(__file__).resolve().parent.parent / "models"))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    p.add_argument("--steps", type=int, default=50, help="timed steps (at least 50 for the table)")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--num-labels", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--optimizer", choices=["fused", "foreach", "loop"], default="fused",
                   help="torch.optim.AdamW implementation (tbench's train.optimizer_impl auto is fused on CUDA)")
    p.add_argument("--attn-implementation", default=None,
                   help="HF attn_implementation (eager, sdpa); default: transformers' own choice")
    p.add_argument("--device", default="cuda")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="after the timed steps, run this many more under torch.profiler and add the kernel table")
    p.add_argument("--trace", help="with --profile-steps: also write the Chrome/Perfetto trace here")
    p.add_argument("--out", required=True, help="result JSON path")
    return p.parse_args()


def decay_groups(model, weight_decay):
    """HF Trainer's split: biases and LayerNorm weights get no weight decay (as tbench does)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        exempt = "bias" in name or "LayerNorm" in name or "layer_norm" in name
        (no_decay if exempt else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def synthetic_batches(torch, config, args, count, device):
    """`count` batches like tbench's synthetic data: ids in [pad + 1, vocab), label = ids[:, 1] % labels."""
    generator = torch.Generator().manual_seed(args.seed)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    batches = []
    for _ in range(count):
        ids = torch.randint(pad + 1, config.vocab_size, (args.batch, args.seq), generator=generator)
        batch = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": ids[:, 1] % args.num_labels,
        }
        if config.model_type != "distilbert":
            batch["token_type_ids"] = torch.zeros_like(ids)
        batches.append({k: v.pin_memory() if device.type == "cuda" else v for k, v in batch.items()})
    return batches


def disable_tf32(torch):
    """fp32 matmuls and convolutions in full fp32. torch >= 2.9 has fp32_precision; mixing it with
    the older allow_tf32 switches can raise, so only one of the two is used."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def kernel_category(name):
    """The kind of work a kernel name stands for: tbench's op_category (src/timing/profile.cpp), the
    same keywords in the same order, so the two profiles compare category by category
    (Profile.HfSideBySideSortsKernelsAsTbenchDoes checks that they agree). The result also lists
    every kernel, so categories can be recomputed."""
    n = name.lower()
    has = lambda *words: any(w in n for w in words)
    if has("log_softmax", "logsoftmax", "nll_loss", "cross_entropy"):  # before attention's softmax
        return "loss"
    if has("nccl", "allreduce", "all_reduce", "c10d"):
        return "communication"
    if has("flash", "fmha", "attention", "softmax", "sdpa", "cudnn::fusion"):
        return "attention"
    if has("gemm", "cutlass", "xmma", "cublas", "nvjet", "addmm", "addmv", "addbmm", "aten::mm", "aten::bmm", "matmul",
           "aten::linear"):
        return "gemm"
    if has("layer_norm", "layernorm", "gammabeta", "rowwisemoments"):
        return "normalization"
    if has("adam", "multi_tensor", "foreach", "addcmul", "addcdiv"):
        return "optimizer"
    if n == "aten::to" or has("memcpy", "memset", "aten::copy_", "aten::_to_copy", "copy_kernel"):
        return "copy"
    if has("dropout", "bernoulli", "masked_scale"):
        return "dropout"
    if has("gelu", "tanh", "relu", "silu", "sigmoid", "threshold"):
        return "activation"
    if has("reduce_kernel", "aten::sum"):
        return "reduction"
    if n in ("aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::rsub", "aten::mul", "aten::mul_", "aten::div",
             "aten::div_") or has("elementwise_kernel"):
        return "elementwise"
    return "other"


def profile_steps(torch, train_step, batches, steps, trace):
    """`steps` more steps under torch.profiler: device time per kernel and per category (as tbench's
    result `profile` section), and the device-busy fraction over the steps' wall time."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for batch in batches[:steps]:
            train_step(batch)
        torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - start) * 1e3
    kernels = {}
    for e in prof.events():
        # record_function ranges (Optimizer.step, zero_grad) come back as CUDA-typed annotations
        # spanning the kernels inside them: counting them would count those kernels twice.
        if e.device_type != torch.autograd.DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        ms = e.time_range.elapsed_us() / 1e3  # a kernel event's own interval on the device
        entry = kernels.setdefault(e.name, {"name": e.name, "calls": 0, "ms": 0.0})
        entry["calls"] += 1
        entry["ms"] += ms
    total = sum(k["ms"] for k in kernels.values())
    categories = {}
    for k in kernels.values():
        c = categories.setdefault(kernel_category(k["name"]), {"name": kernel_category(k["name"]), "calls": 0, "ms": 0.0})
        c["calls"] += k["calls"]
        c["ms"] += k["ms"]
    ordered = lambda entries: [dict(e, share=e["ms"] / total if total else 0.0)
                               for e in sorted(entries, key=lambda e: -e["ms"])]
    if trace:
        prof.export_chrome_trace(trace)
    return {"steps": steps, "measures": "device kernels", "measured_ms": total, "wall_ms": wall_ms,
            "device_busy_fraction": total / wall_ms if wall_ms else None,
            "categories": ordered(categories.values()), "top": ordered(kernels.values())[:200],
            "kernels": ordered(kernels.values()), "trace": trace}


def optimizer_for(torch, model, args):
    groups = decay_groups(model, weight_decay=0.0)
    options = {"lr": args.lr, "betas": (0.9, 0.999), "eps": 1e-8}
    if args.optimizer == "fused":
        options["fused"] = True
    elif args.optimizer == "foreach":
        options["foreach"] = True
    else:
        options["foreach"] = False
    return torch.optim.AdamW(groups, **options)


def main():
    args = parse_args()
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForSequenceClassification

    device = torch.device(args.device)
    on_cuda = device.type == "cuda"
    if on_cuda and not torch.cuda.is_available():
        sys.exit("hf_side_by_side.py: no CUDA device")
    if not on_cuda and args.profile_steps > 0:
        sys.exit("hf_side_by_side.py: --profile-steps measures CUDA kernels; it needs --device cuda")
    if on_cuda:
        disable_tf32(torch)  # tbench's cuda.tf32 defaults to false
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    synchronize = torch.cuda.synchronize if on_cuda else (lambda: None)

    config_path = Path(args.models_dir) / f"{args.model}.json"
    config = AutoConfig.from_pretrained(str(config_path), num_labels=args.num_labels)
    extra = {} if args.attn_implementation is None else {"attn_implementation": args.attn_implementation}
    model = AutoModelForSequenceClassification.from_config(config, **extra).to(device)
    model.train()
    optimizer = optimizer_for(torch, model, args)
    total_steps = args.warmup + args.steps
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, (total_steps - step) / total_steps))
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "fp16")
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    batches = synthetic_batches(torch, config, args, total_steps + args.profile_steps, device)

    def train_step(batch):
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        with torch.autocast(device.type, dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
            logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), batch["labels"])
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    losses = []
    for step in range(args.warmup):
        losses.append(train_step(batches[step]))
    synchronize()
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(device)

    # CUDA events time each step on the device without waiting for it; on the CPU a step is done
    # when train_step returns, so the wall clock is the step time.
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(args.steps)] if on_cuda else []
    wall_ms = []
    start = time.perf_counter()
    for step in range(args.steps):
        step_start = time.perf_counter()
        if on_cuda:
            events[step][0].record()
        losses.append(train_step(batches[args.warmup + step]))
        if on_cuda:
            events[step][1].record()
        else:
            wall_ms.append((time.perf_counter() - step_start) * 1e3)
    synchronize()
    seconds = time.perf_counter() - start

    step_ms = [begin.elapsed_time(end) for begin, end in events] if on_cuda else wall_ms
    loss_values = torch.stack(losses).float().cpu().tolist()
    result = {
        "impl": "hf",
        "model": args.model,
        "batch": args.batch,
        "seq": args.seq,
        "precision": args.precision,
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "timed_seconds": seconds,
        "samples_per_s": args.batch * args.steps / seconds,
        "step_ms": {"median": statistics.median(step_ms), "min": min(step_ms), "max": max(step_ms),
                    "mean": statistics.fmean(step_ms)},
        "step_ms_sum_over_wall": sum(step_ms) / 1e3 / seconds,
        "step_seconds": [ms / 1e3 for ms in step_ms],
        "threads": torch.get_num_threads(),
        "device": str(device),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(device) if on_cuda else None,
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(device) if on_cuda else None,
        "losses": loss_values,
        "final_loss": loss_values[-1],
        "final_loss_mean10": statistics.fmean(loss_values[-10:]),
        "finite": all(math.isfinite(v) for v in loss_values),
        "optimizer": args.optimizer,
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "params": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(device) if on_cuda else None,
        "host": platform.node(),
    }
    if args.profile_steps > 0:
        result["profile"] = profile_steps(torch, train_step, batches[total_steps:], args.profile_steps, args.trace)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{args.model} {args.precision} seq {args.seq}: {result['samples_per_s']:.1f} samples/s, "
          f"final loss {result['final_loss']:.4f}", file=sys.stderr)


if __name__ == "__main__":
    main()
