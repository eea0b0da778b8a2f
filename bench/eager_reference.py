#!/usr/bin/env python3
"""The PyTorch-eager side of bench/cpu_side_by_side.py: the training loop tbench stands in for,
written in Python on the same LibTorch (Debian's python3-torch 1.13 loads the libtorch_cpu.so that
tbench links), with nothing but torch.

The four sequence classifiers are built from the same models/<name>.json as tbench, with Hugging
Face's module layout (so parameter names are HF's) and HF's eager semantics:
  BERT / RoBERTa  BertForSequenceClassification, RobertaForSequenceClassification
  DistilBERT      DistilBertForSequenceClassification
  XLNet           XLNetForSequenceClassification (content stream, [seq, batch] layout and einsums)
and HF's init (N(0, initializer_range), zero biases, unit LayerNorm, zero padding row).

The loop is HF Trainer's inner step, without the Trainer: forward, cross-entropy, backward,
clip_grad_norm_(1.0), AdamW (torch.optim, decay / no-decay groups, lr 5e-5, betas 0.9/0.999,
eps 1e-8), a linear LR schedule, zero_grad(set_to_none). Dropout is on. The batches are tbench's
synthetic ones: every token real, ids in [0, vocab) with the padding id moved to pad + 1, label =
second id mod num_labels. They are made before the clock starts, so the step time is compute only.

    python3 bench/eager_reference.py --model distilbert-base-uncased --seq 64 --out r.json
    python3 bench/eager_reference.py --fixtures DIR   # parity fixtures for tbench's HfParity test

--fixtures writes, for each tiny model, model.safetensors and reference.json in the layout of
scripts/hf_reference.py, so tbench's C++ parity test can check this reference against tbench (the
two are independent implementations of HF's equations; HF's own fixtures come from the GPU machine).
"""
import argparse
import json
import math
import platform
import statistics
import struct
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
sys.path.insert(0, str(MODELS_DIR.parent / "scripts"))
from parity_fixtures import GRADIENTS, make_inputs  # noqa: E402  (the fixture layout HF's script uses too)


class Config(dict):
    """models/<name>.json with HF's per-family field names read through one set of accessors."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as e:
            raise AttributeError(key) from e


def load_config(name):
    with open(MODELS_DIR / f"{name}.json") as f:
        return Config(json.load(f))


def activation(name):
    if name == "gelu":
        return F.gelu  # exact erf form, as HF's "gelu"
    if name == "gelu_new":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu
    raise ValueError(f"unsupported activation {name}")


# ---------------------------------------------------------------------------------------------
# BERT and RoBERTa: the same encoder; RoBERTa numbers positions from pad + 1 and has its own head.
# ---------------------------------------------------------------------------------------------
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.get("pad_token_id", 0))
        roberta = c.model_type == "roberta"
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size,
                                                padding_idx=c.pad_token_id if roberta else None)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids, position_ids):
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.num_attention_heads
        self.head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, extended_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + extended_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(x.size(0), x.size(1), -1)


class BertResidualOutput(nn.Module):
    """BertSelfOutput and BertOutput: LayerNorm(residual + Dropout(dense(x)))."""

    def __init__(self, c, width):
        super().__init__()
        self.dense = nn.Linear(width, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = nn.Module()
        self.attention.add_module("self", BertSelfAttention(c))
        self.attention.output = BertResidualOutput(c, c.hidden_size)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.output = BertResidualOutput(c, c.intermediate_size)
        self.act = activation(c.hidden_act)

    def forward(self, x, extended_mask):
        attended = self.attention.output(getattr(self.attention, "self")(x, extended_mask), x)
        return self.output(self.act(self.intermediate.dense(attended)), attended)


class BertModel(nn.Module):
    def __init__(self, c, add_pooler):
        super().__init__()
        self.c = c
        self.embeddings = BertEmbeddings(c)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(BertLayer(c) for _ in range(c.num_hidden_layers))
        if add_pooler:
            self.pooler = nn.Module()
            self.pooler.dense = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, input_ids, attention_mask, token_type_ids):
        if self.c.model_type == "roberta":  # positions pad + 1, pad + 2, ...; padding keeps pad
            real = input_ids.ne(self.c.pad_token_id).int()
            position_ids = (torch.cumsum(real, dim=1).type_as(real) * real).long() + self.c.pad_token_id
        else:
            position_ids = torch.arange(input_ids.size(1)).unsqueeze(0).expand_as(input_ids)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        dtype = x.dtype
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        for layer in self.encoder.layer:
            x = layer(x, extended)
        return x


class BertForSequenceClassification(nn.Module):
    def __init__(self, c, num_labels):
        super().__init__()
        self.bert = BertModel(c, add_pooler=True)
        dropout = c.get("classifier_dropout")
        self.dropout = nn.Dropout(c.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(c.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.bert(input_ids, attention_mask, token_type_ids)
        pooled = torch.tanh(self.bert.pooler.dense(x[:, 0]))
        return self.classifier(self.dropout(pooled))


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, c, num_labels):
        super().__init__()
        self.roberta = BertModel(c, add_pooler=False)
        dropout = c.get("classifier_dropout")
        self.classifier = nn.Module()
        self.classifier.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.classifier.dropout = nn.Dropout(c.hidden_dropout_prob if dropout is None else dropout)
        self.classifier.out_proj = nn.Linear(c.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.roberta(input_ids, attention_mask, token_type_ids)[:, 0]
        head = self.classifier
        x = torch.tanh(head.dense(head.dropout(x)))
        return head.out_proj(head.dropout(x))


# ---------------------------------------------------------------------------------------------
# DistilBERT: six BERT layers with their own names, q scaled before the product, no token types.
# ---------------------------------------------------------------------------------------------
class DistilBertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.n_heads
        self.head_size = c.dim // c.n_heads
        self.q_lin = nn.Linear(c.dim, c.dim)
        self.k_lin = nn.Linear(c.dim, c.dim)
        self.v_lin = nn.Linear(c.dim, c.dim)
        self.out_lin = nn.Linear(c.dim, c.dim)
        self.dropout = nn.Dropout(c.attention_dropout)

    def forward(self, x, mask):
        b, s, _ = x.shape
        split = lambda t: t.view(b, s, self.heads, self.head_size).transpose(1, 2)
        q = split(self.q_lin(x)) / math.sqrt(self.head_size)
        k, v = split(self.k_lin(x)), split(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        padding = (mask == 0).view(b, 1, 1, s).expand_as(scores)
        scores = scores.masked_fill(padding, torch.tensor(torch.finfo(scores.dtype).min))
        weights = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(weights, v).transpose(1, 2).contiguous().view(b, s, -1)
        return self.out_lin(context)


class DistilBertBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = DistilBertAttention(c)
        self.sa_layer_norm = nn.LayerNorm(c.dim, eps=1e-12)
        self.ffn = nn.Module()
        self.ffn.lin1 = nn.Linear(c.dim, c.hidden_dim)
        self.ffn.lin2 = nn.Linear(c.hidden_dim, c.dim)
        self.ffn.dropout = nn.Dropout(c.dropout)
        self.output_layer_norm = nn.LayerNorm(c.dim, eps=1e-12)
        self.act = activation(c.activation)

    def forward(self, x, mask):
        attended = self.sa_layer_norm(self.attention(x, mask) + x)
        ffn = self.ffn.dropout(self.ffn.lin2(self.act(self.ffn.lin1(attended))))
        return self.output_layer_norm(ffn + attended)


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, c, num_labels):
        super().__init__()
        if c.get("sinusoidal_pos_embds"):
            raise ValueError("sinusoidal_pos_embds is not in the eager reference")
        self.distilbert = nn.Module()
        emb = self.distilbert.embeddings = nn.Module()
        emb.word_embeddings = nn.Embedding(c.vocab_size, c.dim, padding_idx=c.get("pad_token_id", 0))
        emb.position_embeddings = nn.Embedding(c.max_position_embeddings, c.dim)
        emb.LayerNorm = nn.LayerNorm(c.dim, eps=1e-12)
        emb.dropout = nn.Dropout(c.dropout)
        self.distilbert.transformer = nn.Module()
        self.distilbert.transformer.layer = nn.ModuleList(DistilBertBlock(c) for _ in range(c.n_layers))
        self.pre_classifier = nn.Linear(c.dim, c.dim)
        self.classifier = nn.Linear(c.dim, num_labels)
        self.dropout = nn.Dropout(c.seq_classif_dropout)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        emb = self.distilbert.embeddings
        positions = torch.arange(input_ids.size(1)).unsqueeze(0).expand_as(input_ids)
        x = emb.dropout(emb.LayerNorm(emb.word_embeddings(input_ids) + emb.position_embeddings(positions)))
        for block in self.distilbert.transformer.layer:
            x = block(x, attention_mask)
        pooled = F.relu(self.pre_classifier(x[:, 0]))
        return self.classifier(self.dropout(pooled))


# ---------------------------------------------------------------------------------------------
# XLNet: relative attention in HF's [seq, batch, ...] layout, with its einsums.
# ---------------------------------------------------------------------------------------------
class XLNetRelativeAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        n, d, h = c.n_head, c.d_head, c.d_model
        self.scale = 1 / (d ** 0.5)
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, nn.Parameter(torch.empty(h, n, d)))
        for name in ("r_r_bias", "r_s_bias", "r_w_bias"):
            setattr(self, name, nn.Parameter(torch.empty(n, d)))
        self.seg_embed = nn.Parameter(torch.empty(2, n, d))
        self.layer_norm = nn.LayerNorm(h, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)

    @staticmethod
    def rel_shift_bnij(x, klen):
        b, n, i, j = x.shape
        x = x.reshape(b, n, j, i)[:, :, 1:, :].reshape(b, n, i, j - 1)
        return torch.index_select(x, 3, torch.arange(klen, device=x.device, dtype=torch.long))

    def forward(self, h, attn_mask, r, seg_mat):
        q = torch.einsum("ibh,hnd->ibnd", h, self.q)
        k = torch.einsum("ibh,hnd->ibnd", h, self.k)
        v = torch.einsum("ibh,hnd->ibnd", h, self.v)
        k_r = torch.einsum("ibh,hnd->ibnd", r.type(self.r.dtype), self.r)
        ac = torch.einsum("ibnd,jbnd->bnij", q + self.r_w_bias, k)
        bd = self.rel_shift_bnij(torch.einsum("ibnd,jbnd->bnij", q + self.r_r_bias, k_r), klen=ac.shape[3])
        ef = torch.einsum("ibnd,snd->ibns", q + self.r_s_bias, self.seg_embed)
        ef = torch.einsum("ijbs,ibns->bnij", seg_mat, ef)
        score = (ac + bd + ef) * self.scale
        score = score - 1e30 * torch.einsum("ijbn->bnij", attn_mask)
        prob = self.dropout(F.softmax(score, dim=3))
        vec = torch.einsum("bnij,jbnd->ibnd", prob, v)
        out = self.dropout(torch.einsum("ibnd,hnd->ibh", vec, self.o))
        return self.layer_norm(out + h)


class XLNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.rel_attn = XLNetRelativeAttention(c)
        self.ff = nn.Module()
        self.ff.layer_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.ff.layer_1 = nn.Linear(c.d_model, c.d_inner)
        self.ff.layer_2 = nn.Linear(c.d_inner, c.d_model)
        self.ff.dropout = nn.Dropout(c.dropout)
        self.act = activation(c.ff_activation)

    def forward(self, h, attn_mask, r, seg_mat):
        h = self.rel_attn(h, attn_mask, r, seg_mat)
        ff = self.ff
        y = ff.dropout(ff.layer_2(ff.dropout(self.act(ff.layer_1(h)))))
        return ff.layer_norm(y + h)


class XLNetForSequenceClassification(nn.Module):
    def __init__(self, c, num_labels):
        super().__init__()
        self.c = c
        self.transformer = nn.Module()
        t = self.transformer
        t.word_embedding = nn.Embedding(c.vocab_size, c.d_model)
        t.mask_emb = nn.Parameter(torch.empty(1, 1, c.d_model))
        t.layer = nn.ModuleList(XLNetLayer(c) for _ in range(c.n_layer))
        t.dropout = nn.Dropout(c.dropout)
        self.sequence_summary = nn.Module()
        self.sequence_summary.summary = nn.Linear(c.d_model, c.d_model)
        self.sequence_summary.last_dropout = nn.Dropout(c.get("summary_last_dropout", 0.1))
        self.logits_proj = nn.Linear(c.d_model, num_labels)

    def relative_positions(self, qlen, bsz):
        d = self.c.d_model
        freq = torch.arange(0, d, 2.0, dtype=torch.int64).float()
        inv_freq = 1 / torch.pow(10000, (freq / d))
        pos = torch.arange(qlen, -qlen, -1.0, dtype=torch.int64).float()
        angle = torch.einsum("i,d->id", pos, inv_freq)
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)[:, None, :].expand(-1, bsz, -1)

    def forward(self, input_ids, attention_mask, token_type_ids):
        t = self.transformer
        ids = input_ids.transpose(0, 1).contiguous()                # [qlen, bsz]
        qlen, bsz = ids.shape
        input_mask = (1.0 - attention_mask.float()).transpose(0, 1).contiguous()
        attn_mask = (input_mask[None][:, :, :, None] > 0).float()   # [1, klen, bsz, 1]
        non_tgt = -torch.eye(qlen).to(attn_mask)
        non_tgt_mask = ((attn_mask + non_tgt[:, :, None, None]) > 0).to(attn_mask)
        h = t.dropout(t.word_embedding(ids))
        types = token_type_ids.transpose(0, 1).contiguous()
        seg_mat = F.one_hot((types[:, None] != types[None, :]).long(), num_classes=2).to(h.dtype)
        r = t.dropout(self.relative_positions(qlen, bsz))
        for layer in t.layer:
            h = layer(h, non_tgt_mask, r, seg_mat)
        out = t.dropout(h).permute(1, 0, 2).contiguous()
        summary = self.sequence_summary
        pooled = summary.last_dropout(torch.tanh(summary.summary(out[:, -1])))
        return self.logits_proj(pooled)


CLASSIFIERS = {
    "bert": BertForSequenceClassification,
    "roberta": RobertaForSequenceClassification,
    "distilbert": DistilBertForSequenceClassification,
    "xlnet": XLNetForSequenceClassification,
}


def init_weights(model, std):
    """HF's _init_weights: every weight N(0, std), biases 0, LayerNorm 1/0, the padding row 0."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                module.weight.normal_(0.0, std)
                module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.normal_(0.0, std)
                if module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()
            elif isinstance(module, XLNetRelativeAttention):
                for p in module.parameters(recurse=False):
                    p.normal_(0.0, std)
        for name, p in model.named_parameters():
            if name.endswith("mask_emb"):
                p.normal_(0.0, std)


def build_classifier(config, num_labels):
    model = CLASSIFIERS[config.model_type](config, num_labels)
    init_weights(model, config.initializer_range)
    return model


# ---------------------------------------------------------------------------------------------
# The training step and its timing.
# ---------------------------------------------------------------------------------------------
def synthetic_batches(config, batch, seq, num_labels, count, seed):
    generator = torch.Generator().manual_seed(seed)
    pad = config.get("pad_token_id", 0)
    out = []
    for _ in range(count):
        ids = torch.randint(0, config.vocab_size, (batch, seq), generator=generator)
        ids.masked_fill_(ids.eq(pad), (pad + 1) % config.vocab_size)
        out.append((ids, torch.ones(batch, seq, dtype=torch.long), torch.zeros(batch, seq, dtype=torch.long),
                    ids[:, 1].remainder(num_labels).contiguous()))
    return out


def decay_groups(model, weight_decay):
    decay, exempt = [], []
    for name, p in model.named_parameters():
        (exempt if "bias" in name or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": exempt, "weight_decay": 0.0}]


def percentile(values, q):
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def benchmark(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    config = load_config(args.model)
    model = build_classifier(config, args.num_labels).train()
    total = args.warmup + args.steps
    batches = synthetic_batches(config, args.batch, args.seq, args.num_labels, total, args.seed)
    optimizer = torch.optim.AdamW(decay_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, (total - step) / total))
    step_seconds, losses = [], []
    for ids, mask, types, labels in batches:
        start = time.perf_counter()
        logits = model(ids, mask, types)
        loss = F.cross_entropy(logits.view(-1, args.num_labels), labels.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
        schedule.step()
        model.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        step_seconds.append(time.perf_counter() - start)
    timed = step_seconds[args.warmup:]
    return {
        "implementation": "pytorch-eager",
        "model": args.model,
        "batch_size": args.batch,
        "seq_len": args.seq,
        "precision": "fp32",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "host": platform.node(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "warmup_steps": args.warmup,
        "warmup_step_seconds": step_seconds[:args.warmup],
        "step_seconds": timed,
        "median_step_seconds": statistics.median(timed),
        "p10_step_seconds": percentile(timed, 0.1),
        "p90_step_seconds": percentile(timed, 0.9),
        "losses": [float(l) for l in losses],
    }


# ---------------------------------------------------------------------------------------------
# Parity fixtures (scripts/hf_reference.py's layout) for tbench's HfParity test.
# ---------------------------------------------------------------------------------------------
def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        data = t.detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def write_fixtures(out_dir):
    for name in GRADIENTS:
        config = load_config(name)
        torch.manual_seed(1234)
        model = build_classifier(config, 2).eval()
        ids, mask, types = make_inputs(config.model_type, config.pad_token_id, config.vocab_size,
                                       config.get("type_vocab_size", 2), left_padding=config.model_type == "xlnet")
        labels = torch.tensor([0, 1, 1])
        logits = model(ids, mask, types)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        params = dict(model.named_parameters())
        target = Path(out_dir) / name
        target.mkdir(parents=True, exist_ok=True)
        write_safetensors(target / "model.safetensors", params)
        reference = {
            "model": name, "made_by": "bench/eager_reference.py", "torch": torch.__version__,
            "input_ids": ids.tolist(), "attention_mask": mask.tolist(), "token_type_ids": types.tolist(),
            "labels": labels.tolist(), "logits": logits.detach().tolist(), "loss": loss.item(),
            "gradients": {g: params[g].grad.flatten()[:64].tolist() for g in GRADIENTS[name]},
            "gradient_norms": {g: params[g].grad.norm().item() for g in GRADIENTS[name]},
        }
        (target / "reference.json").write_text(json.dumps(reference, indent=1))
        print(f"{name}: loss {loss.item():.6f} -> {target}", file=sys.stderr)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="a shipped model: models/<name>.json")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--num-labels", type=int, default=2)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", help="result JSON path (default: standard output)")
    p.add_argument("--fixtures", help="write parity fixtures for the tiny models into this directory and exit")
    args = p.parse_args()
    if not args.fixtures and not args.model:
        p.error("--model is required unless --fixtures is given")
    return args


def main():
    args = parse_args()
    if args.fixtures:
        write_fixtures(args.fixtures)
        return
    result = json.dumps(benchmark(args), indent=1)
    if args.out:
        Path(args.out).write_text(result + "\n")
    else:
        print(result)


if __name__ == "__main__":
    main()
