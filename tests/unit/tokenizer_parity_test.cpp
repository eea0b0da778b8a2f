// Parity with HF's tokenizers: every folder of tests/data/tokenizers/ holds a tokenizer's files and
// expected.json, what HF's Rust tokenizers made of scripts/hf_tokenizer_fixtures/cases.json with
// them (see scripts/hf_tokenizer_fixtures/README.md). tbench must give the same pieces, ids and
// token types for every case.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/tokenize/tokenizer.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fixtures_root() { return fs::path(TBENCH_TEST_DATA) / "tokenizers"; }

std::vector<std::string> fixture_folders() {
  std::vector<std::string> folders;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(fixtures_root(), error)) {
    if (entry.is_directory() && fs::exists(entry.path() / "expected.json")) folders.push_back(entry.path().filename().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return json::parse(in);
}

TokenizerOptions options_of(const json& expected, const fs::path& folder) {
  TokenizerOptions options;
  const std::optional<TokenizerKind> kind = tokenizer_kind_from_string(expected.at("kind").get<std::string>());
  if (!kind) throw std::runtime_error("unknown tokenizer kind in " + folder.string());
  options.kind = *kind;
  const json& files = expected.at("files");
  options.vocab_file = (folder / files.at("vocab").get<std::string>()).string();
  if (!files.at("merges").is_null()) options.merges_file = (folder / files.at("merges").get<std::string>()).string();
  const json& switches = expected.at("options");
  options.lowercase = switches.at("lowercase").get<bool>();
  if (!switches.at("strip_accents").is_null()) options.strip_accents = switches.at("strip_accents").get<bool>();
  options.add_prefix_space = switches.at("add_prefix_space").get<bool>();
  return options;
}

// The case as JSON, so control characters and odd spaces show in a failure message.
std::string describe(const json& test_case) {
  std::string out = "text " + test_case.at("text").dump();
  if (!test_case.at("pair").is_null()) out += ", pair " + test_case.at("pair").dump();
  if (test_case.at("max_length").get<int64_t>() > 0) out += ", max_length " + test_case.at("max_length").dump();
  return out;
}

class TokenizerParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerParity, MatchesHuggingFace) {
  const fs::path folder = fixtures_root() / GetParam();
  const json expected = read_json(folder / "expected.json");
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(options_of(expected, folder));
  ASSERT_FALSE(expected.at("cases").empty());
  for (const json& test_case : expected.at("cases")) {
    const std::string text = test_case.at("text").get<std::string>();
    const std::optional<std::string> pair =
        test_case.at("pair").is_null() ? std::nullopt : std::optional<std::string>(test_case.at("pair").get<std::string>());
    EXPECT_EQ(tokenizer->tokenize(text), test_case.at("tokens").get<std::vector<std::string>>())
        << "tokens of " << describe(test_case);
    const Encoding encoding = tokenizer->encode(text, pair ? &*pair : nullptr, test_case.at("max_length").get<int64_t>());
    EXPECT_EQ(encoding.input_ids, test_case.at("input_ids").get<std::vector<int64_t>>())
        << "input_ids of " << describe(test_case);
    EXPECT_EQ(encoding.token_type_ids, test_case.at("token_type_ids").get<std::vector<int64_t>>())
        << "token_type_ids of " << describe(test_case);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerParity, ::testing::ValuesIn(fixture_folders()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(TokenizerParityFixtures, CoverEveryKind) {
  std::set<std::string> kinds;
  for (const std::string& folder : fixture_folders()) {
    kinds.insert(read_json(fixtures_root() / folder / "expected.json").at("kind").get<std::string>());
  }
  for (const TokenizerKind kind : {TokenizerKind::wordpiece, TokenizerKind::byte_level_bpe, TokenizerKind::sentencepiece}) {
    EXPECT_EQ(kinds.count(to_string(kind)), 1U) << "no fixture folder in " << fixtures_root() << " for " << to_string(kind);
  }
}

}  // namespace
}  // namespace tbench
