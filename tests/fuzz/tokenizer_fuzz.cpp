// Fuzz targets for tokenizer files: vocab.txt (WordPiece), vocab.json + merges.txt (byte-level
// BPE), spiece.model (SentencePiece's protobuf) and tokenizer_config.json. A tokenizer that loads
// must also encode: a hostile vocabulary must not break tokenization of ordinary text.
#include <nlohmann/json.hpp>

#include "fuzz_target.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/tokenize/tokenizer.hpp"

namespace {

using tbench::TokenizerKind;
using tbench::fuzz::expect_success_or_input_error;

const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> texts = {
      "Hello, world! unaffable running",  "Ünïcödé naïve café 東京 😀", "  spaces\tand\nnewlines  ",
      "[CLS] <s> </s> <mask> [SEP] <unk>", "\xff\xfe broken utf-8 \xc3", ""};
  return texts;
}

// Everything a loaded tokenizer is asked during a run.
void exercise(const tbench::Tokenizer& tokenizer) {
  const auto& texts = sample_texts();
  for (const auto& text : texts) {
    tokenizer.tokenize(text);
    for (const int64_t id : tokenizer.encode_text(text)) {
      if (id < 0 || id >= tokenizer.vocab_size()) std::abort();  // an id outside the embedding table
    }
  }
  const auto pair = tokenizer.encode(texts[0], &texts[1], 16);
  for (const int64_t id : pair.input_ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
  }
  tokenizer.special_tokens();
  tokenizer.fingerprint();
}

void load_and_exercise(TokenizerKind kind, const std::string& vocab, const std::string& merges = "") {
  tbench::TokenizerOptions options;
  options.kind = kind;
  options.vocab_file = vocab;
  options.merges_file = merges;
  options.lowercase = kind == TokenizerKind::wordpiece;
  expect_success_or_input_error([&] { exercise(*tbench::load_tokenizer(options)); });
}

}  // namespace

TBENCH_FUZZ_TARGET(vocab_txt) {
  load_and_exercise(TokenizerKind::wordpiece, tbench::fuzz::write_scratch_file("vocab.txt", bytes));
}
TBENCH_FUZZ_SEEDS(vocab_txt) {
  return {tbench::fuzz::repo_file("tests/data/tokenizers/wordpiece-cased/vocab.txt"),
          tbench::fuzz::repo_file("tests/data/tokenizers/wordpiece-uncased/vocab.txt")};
}

// Input: vocab.json, the separator line, merges.txt.
TBENCH_FUZZ_TARGET(bpe) {
  const auto files = tbench::fuzz::split_files(bytes, 2);
  load_and_exercise(TokenizerKind::byte_level_bpe, tbench::fuzz::write_scratch_file("vocab.json", files[0]),
                    tbench::fuzz::write_scratch_file("merges.txt", files[1]));
}
TBENCH_FUZZ_SEEDS(bpe) {
  return {tbench::fuzz::join_files({tbench::fuzz::repo_file("tests/data/tokenizers/bpe/vocab.json"),
                                    tbench::fuzz::repo_file("tests/data/tokenizers/bpe/merges.txt")})};
}

TBENCH_FUZZ_TARGET(spiece) {
  load_and_exercise(TokenizerKind::sentencepiece, tbench::fuzz::write_scratch_file("spiece.model", bytes));
}
TBENCH_FUZZ_SEEDS(spiece) { return {tbench::fuzz::repo_file("tests/data/tokenizers/sentencepiece/spiece.model")}; }

// Input: tokenizer_config.json beside a valid vocab.txt, resolved as a text-data run resolves it.
TBENCH_FUZZ_TARGET(tokenizer_config) {
  static const std::string folder = [] {
    tbench::fuzz::write_scratch_file("vocab.txt", tbench::fuzz::repo_file("tests/data/tokenizers/wordpiece-uncased/vocab.txt"));
    return tbench::fuzz::scratch_dir();
  }();
  static const tbench::ModelConfig model = tbench::shipped_model_config("bert-base-uncased");
  tbench::fuzz::write_scratch_file("tokenizer_config.json", bytes);
  expect_success_or_input_error([&] {
    auto doc = tbench::default_spec_document();
    doc.root["data"]["tokenizer"] = {{"path", folder}};
    const auto spec = tbench::resolve_spec(doc);
    const auto options = tbench::resolve_tokenizer_options(spec, model);
    exercise(*tbench::load_tokenizer(options));
  });
}
TBENCH_FUZZ_SEEDS(tokenizer_config) {
  return {R"({"do_lower_case": true, "strip_accents": null, "tokenize_chinese_chars": true, "model_max_length": 512})",
          R"({"do_lower_case": false, "strip_accents": false, "keep_accents": true, "add_prefix_space": true})",
          "{}"};
}
