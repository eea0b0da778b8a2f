"""What a parity fixture holds, shared by the two scripts that make them: scripts/hf_reference.py
(HF transformers itself) and bench/eager_reference.py (the PyTorch-eager reference). Each tiny
model gets the same inputs and the same parameters' gradients recorded; tests/unit/parity_test.cpp
reads them. Needs only torch.
"""
import torch

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


# Masked-LM heads (AutoModelForMaskedLM): the tied word embeddings and the head's own tensors.
MLM_MODELS = ["tiny-bert", "tiny-distilbert", "tiny-roberta"]
MLM_GRADIENTS = {
    "tiny-bert": ["bert.embeddings.word_embeddings.weight", "cls.predictions.transform.dense.weight",
                  "cls.predictions.transform.LayerNorm.weight", "cls.predictions.bias"],
    "tiny-distilbert": ["distilbert.embeddings.word_embeddings.weight", "vocab_transform.weight",
                        "vocab_layer_norm.weight", "vocab_projector.bias"],
    "tiny-roberta": ["roberta.embeddings.word_embeddings.weight", "lm_head.dense.weight", "lm_head.layer_norm.weight",
                     "lm_head.bias"],
}


# XLNet's permutation LM (XLNetLMHeadModel): the tied word embeddings, the query stream's start
# (mask_emb), attention and feed-forward weights both streams share, and the head's bias.
PLM_GRADIENTS = ["transformer.word_embedding.weight", "transformer.mask_emb", "transformer.layer.0.rel_attn.q",
                 "transformer.layer.1.rel_attn.r_w_bias", "transformer.layer.1.ff.layer_1.weight", "lm_loss.bias"]


def make_mlm_labels(ids, mask):
    """Targets at every fourth real position (from the second), -100 (no loss) elsewhere."""
    labels = torch.full_like(ids, -100)
    picked = (torch.arange(ids.shape[1]) % 4 == 1).unsqueeze(0) & (mask == 1)
    labels[picked] = ids[picked]
    return labels


def make_inputs(model_type, pad_token_id, vocab_size, type_vocab_size, left_padding, seed=0):
    """Three rows of lengths 12, 9 and 5 (right padding, or left for XLNet) and two segments."""
    g = torch.Generator().manual_seed(seed)
    batch, seq = 3, 12
    ids = torch.randint(pad_token_id + 1, vocab_size, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1  # a sentence pair
    for row, length in enumerate([12, 9, 5]):
        pad = seq - length
        if pad == 0:
            continue
        where = slice(0, pad) if left_padding else slice(length, seq)
        ids[row, where] = pad_token_id
        mask[row, where] = 0
        types[row, where] = 0
    if type_vocab_size < 2 and model_type != "xlnet":
        types.zero_()  # RoBERTa has one token type
    return ids, mask, types
