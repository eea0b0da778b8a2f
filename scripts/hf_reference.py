#!/usr/bin/env python3
"""Makes the HF parity fixtures tbench's C++ tests compare against.

Run wherever torch and transformers are installed (not needed for building or testing tbench):

    python3 scripts/hf_reference.py --out tests/data/parity

For each tiny config in models/ (tiny-bert, tiny-distilbert, tiny-roberta, tiny-xlnet) it builds
HF's AutoModelForSequenceClassification with random weights, saves them as model.safetensors,
and records, in reference.json: the inputs (right padding for the BERT family, left padding for
XLNet as its tokenizer does, two segments), the logits in eval mode, the cross-entropy loss for
fixed labels, and after one backward pass the gradients of a few named parameters.
"""
import argparse
import json
import os
import sys

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification

MODELS = ["tiny-bert", "tiny-distilbert", "tiny-roberta", "tiny-xlnet"]
GRADIENTS = {
    "tiny-bert": ["bert.embeddings.word_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
                  "bert.pooler.dense.weight", "classifier.weight"],
    "tiny-distilbert": ["distilbert.embeddings.word_embeddings.weight",
                        "distilbert.transformer.layer.0.attention.q_lin.weight", "pre_classifier.weight",
                        "classifier.weight"],
    "tiny-roberta": ["roberta.embeddings.word_embeddings.weight", "roberta.encoder.layer.1.output.dense.weight",
                     "classifier.dense.weight", "classifier.out_proj.weight"],
    "tiny-xlnet": ["transformer.word_embedding.weight", "transformer.layer.0.rel_attn.q",
                   "transformer.layer.0.rel_attn.r_r_bias", "transformer.layer.1.rel_attn.seg_embed",
                   "sequence_summary.summary.weight", "logits_proj.weight"],
}


def make_inputs(config, left_padding, seed=0):
    g = torch.Generator().manual_seed(seed)
    batch, seq = 3, 12
    ids = torch.randint(config.pad_token_id + 1, config.vocab_size, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1  # a sentence pair
    lengths = [12, 9, 5]
    for row, length in enumerate(lengths):
        pad = seq - length
        if pad == 0:
            continue
        where = slice(0, pad) if left_padding else slice(length, seq)
        ids[row, where] = config.pad_token_id
        mask[row, where] = 0
        types[row, where] = 0
    if getattr(config, "type_vocab_size", 2) < 2 and config.model_type != "xlnet":
        types.zero_()  # RoBERTa has one token type
    return ids, mask, types


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tests/data/parity")
    parser.add_argument("--models-dir", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    for name in MODELS:
        config = AutoConfig.from_pretrained(os.path.join(args.models_dir, name + ".json"), num_labels=2)
        torch.manual_seed(1234)
        model = AutoModelForSequenceClassification.from_config(config).float().eval()
        out = os.path.join(args.out, name)
        os.makedirs(out, exist_ok=True)
        model.save_pretrained(out, safe_serialization=True)
        ids, mask, types = make_inputs(config, left_padding=config.model_type == "xlnet")
        labels = torch.tensor([0, 1, 1])
        kwargs = dict(input_ids=ids, attention_mask=mask, labels=labels)
        if config.model_type != "distilbert":
            kwargs["token_type_ids"] = types
        result = model(**kwargs)
        result.loss.backward()
        params = dict(model.named_parameters())
        reference = {
            "model": name,
            "transformers": __import__("transformers").__version__,
            "torch": torch.__version__,
            "input_ids": ids.tolist(),
            "attention_mask": mask.tolist(),
            "token_type_ids": types.tolist(),
            "labels": labels.tolist(),
            "logits": result.logits.detach().tolist(),
            "loss": result.loss.item(),
            "gradients": {g: params[g].grad.flatten()[:64].tolist() for g in GRADIENTS[name]},
            "gradient_norms": {g: params[g].grad.norm().item() for g in GRADIENTS[name]},
        }
        with open(os.path.join(out, "reference.json"), "w") as f:
            json.dump(reference, f, indent=1)
        print(f"{name}: loss {result.loss.item():.6f} -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
