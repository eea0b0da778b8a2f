#!/usr/bin/env python3
"""Makes the HF parity fixtures tbench's C++ tests compare against.

Run wherever torch and transformers are installed (not needed for building or testing tbench):

    python3 scripts/hf_reference.py --out tests/data/parity

For each tiny config in models/ (tiny-bert, tiny-distilbert, tiny-roberta, tiny-xlnet) it builds
HF's AutoModelForSequenceClassification with random weights, saves them as model.safetensors,
and records, in reference.json: the inputs (right padding for the BERT family, left padding for
XLNet as its tokenizer does, two segments), the logits in eval mode, the cross-entropy loss for
fixed labels, and after one backward pass the gradients of a few named parameters.

For the masked-LM heads (tiny-bert, tiny-distilbert, tiny-roberta) it does the same with
AutoModelForMaskedLM into <out>/<model>-mlm/: the logits at the labelled positions (every fourth
real token), the masked-LM loss and the gradients of the tied word embeddings and the head.

For XLNet's permutation LM (tiny-xlnet) it builds XLNetLMHeadModel into <out>/tiny-xlnet-plm/ and
records two cases: a batch exactly as HF's DataCollatorForPermutationLanguageModeling makes it
(corrupted ids, perm_mask, an identity target_mapping, labels; no attention mask or token types),
and the general two-stream input (left padding, two segments, four targets picked by a one-hot
target_mapping). For each: the logits at the labelled targets, their norm, the loss and gradients.
"""
import argparse
import json
import os
import sys

import torch
from transformers import (AutoConfig, AutoModelForMaskedLM, AutoModelForSequenceClassification,
                          DataCollatorForPermutationLanguageModeling, XLNetLMHeadModel)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_fixtures import (GRADIENTS, MLM_GRADIENTS, MLM_MODELS, MODELS, PLM_GRADIENTS,  # noqa: E402
                             make_inputs, make_mlm_labels)  # (shared with bench/eager_reference.py)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tests/data/parity")
    parser.add_argument("--models-dir", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    for name in MODELS:
        fixture(args, name, AutoModelForSequenceClassification, seed=1234, out_name=name, gradients=GRADIENTS[name],
                labels_for=lambda ids, mask: torch.tensor([0, 1, 1]),
                outputs=lambda logits, labels: {"logits": logits.tolist()})
    for name in MLM_MODELS:
        fixture(args, name, AutoModelForMaskedLM, seed=4321, out_name=name + "-mlm", gradients=MLM_GRADIENTS[name],
                labels_for=make_mlm_labels,
                outputs=lambda logits, labels: {"task": "mlm", "logits_at_labels": logits[labels != -100].tolist(),
                                                "logits_norm": logits.norm().item()})
    plm_fixture(args, "tiny-xlnet")


class SpecialTokens:
    """What the permutation collator asks of a tokenizer: the mask and pad tokens, and which ids are
    special (XLNet's: <unk> 0, <s> 1, </s> 2, <cls> 3, <sep> 4, <pad> 5, <mask> 6)."""
    mask_token, mask_token_id, pad_token, pad_token_id, padding_side = "<mask>", 6, "<pad>", 5, "left"

    def get_special_tokens_mask(self, ids, already_has_special_tokens=True):
        return [1 if i <= 6 else 0 for i in ids]


def plm_fixture(args, name):
    """XLNetLMHeadModel on the collator's own batch, then on the general two-stream input."""
    config = AutoConfig.from_pretrained(os.path.join(args.models_dir, name + ".json"))
    torch.manual_seed(2468)
    model = XLNetLMHeadModel(config).float().eval()
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight, f"{name}: lm_loss not tied"
    out = os.path.join(args.out, name + "-plm")
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    check_saved_keys(out, model, name + "-plm")
    ids, mask, types = make_inputs("xlnet", config.pad_token_id, config.vocab_size, 2, left_padding=True)
    ids[:, -2:] = torch.tensor([4, 3])  # <sep> <cls> end every row, as XLNet's tokenizer writes them
    torch.manual_seed(7)
    collator = DataCollatorForPermutationLanguageModeling(tokenizer=SpecialTokens(), plm_probability=1 / 6,
                                                          max_span_length=5, return_tensors="pt")
    batch = collator([row for row in ids])
    # Every real, non-special token is a target in the general case's row 0; rows 1 and 2 pick
    # their first real token, <cls> and a middle one, so padding, special tokens and targets mix.
    picks = [[0, 3, 6, 9], [3, 5, 10, 11], [7, 8, 9, 11]]
    target_mapping = torch.zeros(3, 4, ids.shape[1])
    for row, positions in enumerate(picks):
        for m, p in enumerate(positions):
            target_mapping[row, m, p] = 1.0
    general_labels = torch.stack([ids[row, positions] for row, positions in enumerate(picks)])
    cases = [
        ("collator", dict(input_ids=batch["input_ids"], perm_mask=batch["perm_mask"],
                          target_mapping=batch["target_mapping"], labels=batch["labels"])),
        ("general", dict(input_ids=ids, attention_mask=mask, token_type_ids=types, perm_mask=batch["perm_mask"],
                         target_mapping=target_mapping, labels=general_labels)),
    ]
    reference = {"model": name, "task": "plm", "transformers": __import__("transformers").__version__,
                 "torch": torch.__version__, "cases": []}
    params = dict(model.named_parameters())
    for case, kwargs in cases:
        model.zero_grad()
        result = model(**kwargs)
        result.loss.backward()
        labels = kwargs["labels"]
        logits = result.logits.detach()
        recorded = {"case": case, "logits_at_labels": logits[labels != -100].tolist(),
                    "logits_norm": logits.norm().item(), "loss": result.loss.item(),
                    "gradients": {g: params[g].grad.flatten()[:64].tolist() for g in PLM_GRADIENTS},
                    "gradient_norms": {g: params[g].grad.norm().item() for g in PLM_GRADIENTS}}
        recorded.update({k: v.tolist() for k, v in kwargs.items()})
        reference["cases"].append(recorded)
        print(f"{name}-plm {case}: loss {result.loss.item():.6f}", file=sys.stderr)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)


def fixture(args, name, auto_class, seed, out_name, gradients, labels_for, outputs):
    """Builds `name` with HF's `auto_class` and random weights, saves them, and records the inputs,
    `outputs(logits, labels)`, the loss and, after one backward pass, the listed gradients."""
    extra = {"num_labels": 2} if auto_class is AutoModelForSequenceClassification else {}
    config = AutoConfig.from_pretrained(os.path.join(args.models_dir, name + ".json"), **extra)
    torch.manual_seed(seed)
    model = auto_class.from_config(config).float().eval()
    out = os.path.join(args.out, out_name)
    os.makedirs(out, exist_ok=True)
    if auto_class is AutoModelForMaskedLM:  # tbench ties the decoder to the word embeddings, as HF does
        assert model.get_output_embeddings().weight is model.get_input_embeddings().weight, f"{name}: decoder not tied"
    # Safetensors is the default from transformers 4.35 and the only format in 5.x, where the
    # safe_serialization argument is gone.
    model.save_pretrained(out)
    check_saved_keys(out, model, out_name)
    # XLNet pads on the left (its tokenizer does); only the classifiers include it.
    ids, mask, types = make_inputs(config.model_type, config.pad_token_id, config.vocab_size,
                                   getattr(config, "type_vocab_size", 2), left_padding=config.model_type == "xlnet")
    labels = labels_for(ids, mask)
    kwargs = dict(input_ids=ids, attention_mask=mask, labels=labels)
    if config.model_type != "distilbert":
        kwargs["token_type_ids"] = types
    result = model(**kwargs)
    result.loss.backward()
    params = dict(model.named_parameters())
    missing = [g for g in gradients if g not in params]
    if missing:
        sys.exit(f"{out_name}: no parameter named {missing}; the model has {sorted(params)[:40]} ...")
    reference = {
        "model": name,
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "token_type_ids": types.tolist(),
        "labels": labels.tolist(),
        **outputs(result.logits.detach(), labels),
        "loss": result.loss.item(),
        "gradients": {g: params[g].grad.flatten()[:64].tolist() for g in gradients},
        "gradient_norms": {g: params[g].grad.norm().item() for g in gradients},
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    print(f"{out_name}: loss {result.loss.item():.6f} -> {out}", file=sys.stderr)


def check_saved_keys(out, model, out_name):
    """The checkpoint holds HF's parameter names, once each: no legacy gamma/beta names and no
    tied decoder copy (tbench's loader would report them)."""
    from safetensors import safe_open

    with safe_open(os.path.join(out, "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    bad = sorted(k for k in keys if "gamma" in k or "beta" in k
                 or k.endswith(("decoder.weight", "vocab_projector.weight")) or k not in model.state_dict())
    if bad:
        sys.exit(f"{out_name}: model.safetensors holds unexpected keys {bad}")


if __name__ == "__main__":
    main()
