#!/usr/bin/env bash
# Makes the SentencePiece (XLNet) parity fixture, tests/data/tokenizers/sentencepiece/:
#   1. a seeded corpus (make_sentencepiece_fixture.js corpus);
#   2. a tiny unigram spiece.model trained on it by spm_train with XLNet's own recipe (its control
#      and user-defined symbols, so the ids of <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop>
#      are XLNet's 0..8), normalizing with a subset of nmt_nfkc so the model stays a few KB;
#   3. every case of cases.json encoded by HF's Rust tokenizers (node binding) configured as
#      transformers' XLNetConverter configures XLNetTokenizerFast -> expected.json.
# Needs: the `sentencepiece` package (spm_train, spm_normalize) and node; run from anywhere:
#   scripts/hf_tokenizer_fixtures/make_sentencepiece_fixture.sh
# Single-threaded training on a fixed corpus: the same spm version gives the same model, byte for byte.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$here/../../tests/data/tokenizers/sentencepiece"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$here" && [ -d node_modules/tokenizers ] || npm install --silent)
mkdir -p "$out"

node "$here/make_sentencepiece_fixture.js" corpus > "$work/corpus.txt"
spm_normalize --normalization_rule_name=nmt_nfkc --decompile --output="$work/nmt_nfkc.tsv" 2>/dev/null
node "$here/make_sentencepiece_fixture.js" rules < "$work/nmt_nfkc.tsv" > "$work/rules.tsv"

# XLNet's recipe (its README): these control symbols, then these user-defined symbols. A file,
# since the flag would read the '"' as CSV quoting. split_by_number=false lets pieces such as
# "5," exist, which XLNetConverter scores down by 100 (check_number_comma).
# Relative paths: the model records its training flags, and a temp dir's name would change it.
printf '%s\n' '<eop>' '.' '(' ')' '"' '-' '–' '£' '€' > "$work/user_symbols.txt"
(cd "$work" && spm_train --input=corpus.txt --model_prefix=spiece --model_type=unigram --vocab_size=800 \
  --control_symbols='<cls>,<sep>,<pad>,<mask>,<eod>' --user_defined_symbols_file=user_symbols.txt \
  --normalization_rule_tsv=rules.tsv --split_by_number=false --character_coverage=0.9995 \
  --num_threads=1 --random_seed=7 --minloglevel=2 > train.log 2>&1) \
  || { cat "$work/train.log" >&2; exit 1; }
cp "$work/spiece.model" "$out/spiece.model"

node "$here/make_sentencepiece_fixture.js" expected "$out"
echo "wrote tests/data/tokenizers/sentencepiece/ ($(du -sk "$out" | cut -f1) KB)"
