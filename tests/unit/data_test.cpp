// The data pipeline: synthetic lengths, text and tokenized files (and their errors), labels,
// collation, the epoch planner (bucketing, drop_last, data-parallel shares), the background
// loader and the token cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "support/expect_error.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/tokenize/tokenizer.hpp"
#include "tbench/errors.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/files.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using testing::expect_input_error;

class DataFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tbench-data-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

// A BERT's limits on pre-tokenized samples: one closing [SEP], every line read.
TokenizedJsonlLimits limits(int64_t seq_len, int64_t vocab_size, int64_t token_types, int64_t num_labels) {
  return {seq_len, /*closing_tokens=*/1, vocab_size, token_types, num_labels, /*max_rows=*/0};
}

// Sample i's ids (or types) out of the samples' concatenated layout.
template <typename T>
std::vector<int64_t> sample_of(const std::vector<T>& values, const TokenizedSamples& s, int64_t i) {
  const auto at = static_cast<std::size_t>(i);
  return {values.begin() + s.offsets[at], values.begin() + s.offsets[at + 1]};
}

TokenizedSamples samples_of_lengths(const std::vector<int64_t>& lengths) {
  TokenizedSamples s;
  int64_t next = 10;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int64_t> ids(static_cast<std::size_t>(lengths[i]));
    std::iota(ids.begin(), ids.end(), next);
    next += lengths[i];
    s.add(ids, {}, static_cast<int64_t>(i % 2));
  }
  return s;
}

// --- synthetic ----------------------------------------------------------------------------------

TEST(SyntheticData, SeededAvoidsPaddingAndLabelsFollowTheSecondToken) {
  const SyntheticOptions o{16, 12, 50, 1, 3, 5, {}};
  const auto a = make_synthetic_samples(o), b = make_synthetic_samples(o);
  SyntheticOptions other = o;
  other.seed = 6;
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(a.ids, make_synthetic_samples(other).ids);
  EXPECT_EQ(a.ids.size(), 16u * 12u);
  for (const int32_t id : a.ids) EXPECT_NE(id, 1);
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.labels[static_cast<std::size_t>(i)], a.ids[static_cast<std::size_t>(i * 12 + 1)] % 3);
}

TEST(SyntheticData, LengthDistributionsStayInBoundsWithTheRequestedShape) {
  LengthDistribution d;
  d.min_length = 8;
  using K = LengthDistributionKind;
  for (const K kind : {K::uniform, K::normal, K::lognormal}) {
    d.kind = kind;
    d.mean = 100;
    d.stddev = 30;
    const auto lengths = sample_lengths(d, 4000, 256, 3);
    EXPECT_EQ(lengths, sample_lengths(d, 4000, 256, 3)) << to_string(kind);
    const double mean = std::accumulate(lengths.begin(), lengths.end(), 0.0) / 4000.0;
    for (const int64_t l : lengths) ASSERT_TRUE(l >= 8 && l <= 256) << to_string(kind) << " " << l;
    const double expected = kind == K::uniform ? (8 + 256) / 2.0 : 100.0;
    EXPECT_NEAR(mean, expected, 0.05 * expected) << to_string(kind);
  }
  d.kind = LengthDistributionKind::lognormal;  // right-skewed: the median sits below the mean
  auto lengths = sample_lengths(d, 4000, 1000, 3);
  std::sort(lengths.begin(), lengths.end());
  EXPECT_LT(lengths[2000], 100);
}

TEST_F(DataFiles, HistogramLengthsComeFromTheFile) {
  LengthDistribution d;
  d.kind = LengthDistributionKind::histogram;
  d.histogram = read_length_histogram(write("h.txt", "# length count\n20 3\n\n40,1\n300 5\n"));
  const auto lengths = sample_lengths(d, 2000, 128, 1);
  const std::set<int64_t> seen(lengths.begin(), lengths.end());
  EXPECT_EQ(seen, (std::set<int64_t>{20, 40, 128}));  // 300 clipped to seq_len
  const auto twenties = std::count(lengths.begin(), lengths.end(), 20);
  EXPECT_NEAR(static_cast<double>(twenties) / 2000.0, 3.0 / 9.0, 0.04);
  expect_input_error([&] { read_length_histogram(write("bad.txt", "20 3\ntwenty 4\n")); }, {"bad.txt:2:", "length count"});
  expect_input_error([&] { read_length_histogram(write("zero.txt", "20 0\n")); }, {"zero.txt", "empty"});
  expect_input_error([&] { read_length_histogram((dir_ / "missing.txt").string()); }, {"missing.txt", "cannot read"});
}

// --- text files ---------------------------------------------------------------------------------

TEST_F(DataFiles, CsvHandlesQuotesCommasNewlinesAndReportsRowLines) {
  const auto path = write("reviews.csv",
                          "review,sentiment\n"
                          "\"Great film, loved it\",positive\n"
                          "\"He said \"\"wow\"\"\nand left\",negative\r\n"
                          "plain,positive\n");
  TextFileOptions o{path, TextFormat::automatic, "review", "", "sentiment", 0};
  const auto rows = read_text_rows(o);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].text, "Great film, loved it");
  EXPECT_EQ(rows[1].text, "He said \"wow\"\nand left");
  EXPECT_EQ(rows[1].label, "negative");
  EXPECT_EQ(rows[2].line, 5);  // the quoted newline moved it down one line
  o.max_rows = 2;
  EXPECT_EQ(read_text_rows(o).size(), 2u);
}

TEST_F(DataFiles, TsvAndJsonlWithPairs) {
  const auto tsv = write("pairs.tsv", "s1\ts2\tlabel\nA cat.\tA dog.\t1\nx\ty\t0\n");
  const auto rows = read_text_rows({tsv, TextFormat::automatic, "s1", "s2", "label", 0});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].pair, "A dog.");
  const auto jsonl = write("d.jsonl", "{\"text\": \"caf\\u00e9\", \"label\": 1}\n\n{\"text\": \"b\", \"label\": \"pos\"}\n");
  const auto j = read_text_rows({jsonl, TextFormat::automatic, "text", "", "label", 0});
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].text, "caf\xC3\xA9");
  EXPECT_EQ(j[0].label, "1");
  EXPECT_EQ(j[1].line, 3);
}

// A configured pair column makes every row a pair, as HF's tokenizer(text, pair) does: an empty pair
// still adds its [SEP] and a type-1 token (HF's own encoding, tests/data/tokenizers/wordpiece-uncased/
// expected.json), and leaves the first text a shorter budget.
TEST_F(DataFiles, AnEmptyPairFieldIsStillAPair) {
  TokenizerOptions options;
  options.kind = TokenizerKind::wordpiece;
  options.vocab_file = std::string(TBENCH_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece-uncased/vocab.txt";
  options.lowercase = true;
  const auto tokenizer = load_wordpiece_tokenizer(options);
  const auto path = write("pairs.csv", "text,pair,label\nonly the first text has words,,0\nonly the first text has words,,1\n");
  auto rows = read_text_rows({path, TextFormat::automatic, "text", "pair", "label", 0});
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].pair.has_value());
  EXPECT_EQ(*rows[0].pair, "");
  rows[1].pair.reset();  // as read without a pair column
  const auto samples = tokenize_rows(rows, {0, 1}, *tokenizer, 7);
  ASSERT_EQ(samples.size(), 2);
  const std::vector<int32_t> first(samples.ids.begin(), samples.ids.begin() + samples.offsets[1]);
  const std::vector<int32_t> second(samples.ids.begin() + samples.offsets[1], samples.ids.end());
  EXPECT_EQ(first, (std::vector<int32_t>{2, 293, 246, 215, 584, 3, 3}));
  EXPECT_EQ(second, (std::vector<int32_t>{2, 293, 246, 215, 584, 59, 3}));
  ASSERT_FALSE(samples.type_ids.empty());
  EXPECT_EQ(samples.type_ids[6], 1);
  EXPECT_EQ(samples.type_ids[13], 0);
}

TEST_F(DataFiles, BadTextFilesNameTheFileAndLine) {
  expect_input_error([&] { read_text_rows({write("a.csv", "text,label\n\"never closed,1\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"a.csv:2:", "never closed"});
  expect_input_error([&] { read_text_rows({write("b.csv", "text,label\nok,1\ntoo,many,fields\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"b.csv:3:", "expected 2 fields"});
  expect_input_error([&] { read_text_rows({write("c.csv", "review,label\nok,1\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"c.csv:1:", "data.text_column", "no column 'text'", "review"});
  expect_input_error([&] { read_text_rows({write("d.jsonl", "{\"text\": \"a\", \"label\": 1}\n{\"text\": \n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"d.jsonl:2:", "not a JSON object"});
  // A Latin-1 export: refused where the bytes are, since each tokenizer would read them differently.
  expect_input_error([&] { read_text_rows({write("l.csv", "text,label\nok,1\ncaf\xe9,1\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"l.csv:3:", "column 'text' is not UTF-8 (byte 0xE9)"});
  expect_input_error([&] { read_text_rows({write("l.jsonl", "{\"text\": \"caf\xe9\", \"label\": 1}\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"l.jsonl:1:", "not UTF-8 (byte 0xE9)"});
  expect_input_error([&] { read_text_rows({write("e.jsonl", "{\"txt\": \"a\", \"label\": 1}\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"e.jsonl:1:", "no key 'text'"});
  expect_input_error([&] { read_text_rows({write("f.csv", "text,label\n"), TextFormat::automatic, "text", "", "label", 0}); }, {"f.csv", "empty"});
  expect_input_error([&] { read_text_rows({write("g.csv", ""), TextFormat::automatic, "text", "", "label", 0}); }, {"g.csv", "empty"});
  expect_input_error([&] { read_text_rows({write("h.txt", "x"), TextFormat::automatic, "text", "", "label", 0}); }, {"h.txt", "data.format"});
  expect_input_error([&] { read_text_rows({(dir_ / "none.csv").string(), TextFormat::automatic, "text", "", "label", 0}); }, {"none.csv", "cannot read"});
}

// Found by an audit: a CSV with old-Mac line ends (a lone \r) read as one header line ("no column
// 'label' in the header (text, labelabc, posdef, neg)"); Python's csv module and pandas read it.
// A folder as data.path read as "the file is empty", and a UTF-16 file's error was cut at its
// first NUL byte.
TEST_F(DataFiles, LoneCarriageReturnsEndLinesAndFoldersAndUtf16AreNamed) {
  const auto cr = read_text_rows({write("cr.csv", "text,label\rabc,pos\r\"two\rlines\",neg\rdef,neg"), TextFormat::automatic,
                                  "text", "", "label", 0});
  ASSERT_EQ(cr.size(), 3u);
  EXPECT_EQ(cr[0].text, "abc");
  EXPECT_EQ(cr[1].text, "two\rlines");  // inside quotes it is text, as in Python
  EXPECT_EQ(cr[2].label, "neg");
  // A lone \r inside quotes is a line too, as Python counts it: the bad row is on line 4.
  expect_input_error([&] { read_text_rows({write("crq.csv", "text,label\r\"a\rb\",pos\rtoo,many,fields\r"), TextFormat::automatic,
                                           "text", "", "label", 0}); },
                     {"crq.csv:4:", "expected 2 fields"});
  const auto tsv = read_text_rows({write("cr.tsv", "text\tlabel\ra\t1\r\nb\t0\r"), TextFormat::automatic, "text", "", "label", 0});
  ASSERT_EQ(tsv.size(), 2u);
  EXPECT_EQ(tsv[1].text, "b");
  EXPECT_EQ(tsv[1].line, 3);
  std::filesystem::create_directories(dir_ / "folder.csv");
  expect_input_error([&] { read_text_rows({(dir_ / "folder.csv").string(), TextFormat::automatic, "text", "", "label", 0}); },
                     {"folder.csv", "is a folder, not a data file"});
  const std::string utf16("\xFF\xFEt\0e\0x\0t\0", 10);
  expect_input_error([&] { read_text_rows({write("u16.csv", utf16), TextFormat::automatic, "text", "", "label", 0}); },
                     {"u16.csv", "UTF-16", "save it as UTF-8"});
}

// Found by review: the byte-order mark was stripped from the first header field only after
// parsing, so a quoted first field ("\xEF\xBB\xBF"text") kept its quotes and matched no column.
TEST_F(DataFiles, AByteOrderMarkBeforeAQuotedHeaderIsSkipped) {
  const TextFileOptions quoted{write("q.csv", "\xEF\xBB\xBF\"text\",\"label\"\r\n\"hello, you\",pos\r\n"), TextFormat::automatic,
                               "text", "", "label", 0};
  const auto rows = read_text_rows(quoted);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].text, "hello, you");
  EXPECT_EQ(rows[0].label, "pos");
  EXPECT_EQ(rows[0].line, 2);
  EXPECT_EQ(read_text_rows({write("plain.csv", "\xEF\xBB\xBFtext,label\na,1\n"), TextFormat::automatic, "text", "", "label", 0})[0].text, "a");
  EXPECT_EQ(read_text_rows({write("t.tsv", "\xEF\xBB\xBFtext\tlabel\na\t1\n"), TextFormat::automatic, "text", "", "label", 0})[0].text, "a");
  // Only a mark at the very start is skipped; on its own it leaves an empty file.
  expect_input_error([&] { read_text_rows({write("bom.csv", "\xEF\xBB\xBF"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"bom.csv", "empty"});
  expect_input_error([&] { read_text_rows({write("late.csv", "x,\xEF\xBB\xBFtext,label\na,b,1\n"), TextFormat::automatic, "text", "", "label", 0}); },
                     {"late.csv:1:", "no column 'text'"});
}

// Found by review: an integer label above INT64_MAX was read as int64 and wrapped (2^64 - 1 became
// label '-1'); one just above 2^63 was taken for a class name.
TEST_F(DataFiles, JsonlIntegerLabelsBeyondAnyClassIndexAreAnError) {
  const auto read = [&](const std::string& name, const std::string& label) {
    return read_text_rows({write(name, "{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\", \"label\": " + label + "}\n"),
                           TextFormat::automatic, "text", "", "label", 0});
  };
  expect_input_error([&] { read("max.jsonl", "18446744073709551615"); }, {"max.jsonl:2:", "label 18446744073709551615", "class index"});
  expect_input_error([&] { read("above.jsonl", "9223372036854775808"); }, {"above.jsonl:2:", "label 9223372036854775808"});
  expect_input_error([&] { read("int64.jsonl", "9223372036854775807"); }, {"int64.jsonl:2:", "label 9223372036854775807"});
  expect_input_error([&] { read("low.jsonl", "-9223372036854775808"); }, {"low.jsonl:2:", "label -9223372036854775808"});
  EXPECT_EQ(read("one.jsonl", "1")[1].label, "1");  // nlohmann holds it unsigned too
  EXPECT_EQ(read("neg.jsonl", "-1")[1].label, "-1");  // resolve_labels refuses it, naming the line
  std::vector<std::string> names;
  expect_input_error([&] { read_tokenized_jsonl(write("t.jsonl", "{\"input_ids\": [1], \"label\": 18446744073709551615}\n"), "label", limits(8, 200, 2, 2), names); },
                     {"t.jsonl:1:", "label 18446744073709551615"});
}

// Bytes >= 0x80 reach <cctype>'s isdigit and tolower, which take an unsigned char's value (a
// negative char is undefined behaviour): a path's extension and a label's digits are read the same.
TEST_F(DataFiles, BytesAbove127InPathsAndLabelsAreReadAsText) {
  EXPECT_EQ(text_file_format({"donn\xC3\xA9" "es.CSV", TextFormat::automatic, "text", "", "label", 0}), TextFormat::csv);
  EXPECT_EQ(text_file_format({"\xFF\xFE.TsV", TextFormat::automatic, "text", "", "label", 0}), TextFormat::tsv);
  std::vector<std::string> names;
  // "1\xB2" (a Latin-1 superscript two) is no integer: beside names, it is a name.
  EXPECT_EQ(resolve_labels({"1\xB2", "a"}, {2, 3}, names, 2, "f.csv"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(names, (std::vector<std::string>{"1\xB2", "a"}));
  names.clear();  // beside an integer, the two kinds are mixed
  expect_input_error([&] { resolve_labels({"1\xB2", "0"}, {2, 3}, names, 2, "f.csv"); }, {"f.csv:2:", "is not a class index"});
}

TEST(Labels, NamesIndicesAndSortedDiscovery) {
  std::vector<std::string> names;
  EXPECT_EQ(resolve_labels({"positive", "negative", "positive"}, {2, 3, 4}, names, 2, "f.csv"),
            (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(names, (std::vector<std::string>{"negative", "positive"}));
  names = {"pos", "neg"};
  EXPECT_EQ(resolve_labels({"neg", "1", "pos"}, {2, 3, 4}, names, 2, "f.csv"), (std::vector<int64_t>{1, 1, 0}));
  names.clear();
  EXPECT_EQ(resolve_labels({"0", "2", "1"}, {2, 3, 4}, names, 3, "f.csv"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_TRUE(names.empty());
  names = {"pos", "neg"};
  expect_input_error([&] { resolve_labels({"pos", "meh"}, {2, 7}, names, 2, "f.csv"); }, {"f.csv:7:", "unknown label 'meh'", "pos, neg"});
  names.clear();
  expect_input_error([&] { resolve_labels({"0", "5"}, {2, 3}, names, 2, "f.csv"); }, {"f.csv:3:", "label '5'"});
  names.clear();
  expect_input_error([&] { resolve_labels({"a", "b", "c"}, {2, 3, 4}, names, 2, "f.csv"); },
                     {"f.csv:4:", "label 'c' makes 3 distinct labels", "num_labels"});
  // Integers beside names (an empty label, a stray word) would renumber every class: refused.
  names.clear();
  expect_input_error([&] { resolve_labels({"0", "1", "", "1"}, {2, 3, 4, 5}, names, 3, "f.csv"); },
                     {"f.csv:4:", "label '' is not a class index", "line 2 is ('0')"});
  names.clear();
  expect_input_error([&] { resolve_labels({"a", "1"}, {2, 3}, names, 3, "f.csv"); }, {"f.csv:2:", "label 'a'", "line 3"});
  // Found by an audit: an empty label among names became a class of its own.
  names.clear();
  expect_input_error([&] { resolve_labels({"neg", "", "pos"}, {2, 3, 4}, names, 3, "f.csv"); }, {"f.csv:3:", "the label is empty"});
}

// Found by an audit: data.labels with a name twice left a class unused, and more names than
// num_labels listed classes the head does not have; both were accepted.
TEST(Labels, TheSpecsLabelNamesAreEachOneClassOfTheHead) {
  const auto refused = [](const std::string& labels, const std::vector<std::string>& words) {
    SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert", "num_labels": 3, "data": {"labels": )" + labels + "}}",
                                       "s.json", false);
    expect_input_error([&] { resolve_spec(doc); }, words);
  };
  refused(R"(["pos", "pos", "neg"])", {"s.json", "data.labels", "'pos' is listed twice", "entries 0 and 1"});
  refused(R"(["a", "b", "c", "d"])", {"data.labels", "names 4 classes, but num_labels is 3"});
  refused(R"(["a", ""])", {"data.labels", "empty name"});
  SpecDocument fine = parse_spec_text(R"({"model": "tiny-bert", "num_labels": 3, "data": {"labels": ["a", "b"]}})", "s.json", false);
  EXPECT_EQ(resolve_spec(fine).data.labels.size(), 2u);
}

TEST_F(DataFiles, TokenizedJsonlIsCheckedAgainstTheVocabulary) {
  std::vector<std::string> names;
  const auto path = write("t.jsonl",
                          "{\"input_ids\": [101, 7, 8, 102], \"label\": 1}\n"
                          "{\"input_ids\": [101, 9, 9, 9, 9, 9, 102], \"token_type_ids\": [0,0,0,0,1,1,1], \"label\": 0}\n");
  const auto s = read_tokenized_jsonl(path, "label", limits(5, 200, 2, 2), names);
  ASSERT_EQ(s.size(), 2);
  EXPECT_EQ(s.length(0), 4);
  EXPECT_EQ(s.length(1), 5);  // cut to seq_len
  EXPECT_EQ(s.truncated, 1);
  EXPECT_EQ(s.type_ids.size(), s.ids.size());
  EXPECT_EQ(s.labels, (std::vector<int64_t>{1, 0}));
  // The text before [SEP] is cut, not [SEP] (and its type).
  EXPECT_EQ(sample_of(s.ids, s, 1), (std::vector<int64_t>{101, 9, 9, 9, 102}));
  EXPECT_EQ(sample_of(s.type_ids, s, 1), (std::vector<int64_t>{0, 0, 0, 0, 1}));
  expect_input_error([&] { read_tokenized_jsonl(write("u.jsonl", "{\"input_ids\": [1, 2], \"label\": 0}\n{\"input_ids\": [1, 999], \"label\": 0}\n"), "label", limits(8, 200, 2, 2), names); },
                     {"u.jsonl:2:", "999", "vocabulary"});
  expect_input_error([&] { read_tokenized_jsonl(write("v.jsonl", "{\"input_ids\": [], \"label\": 0}\n"), "label", limits(8, 200, 2, 2), names); },
                     {"v.jsonl:1:", "empty"});
  expect_input_error([&] { read_tokenized_jsonl(write("w.jsonl", "\n\n"), "label", limits(8, 200, 2, 2), names); }, {"w.jsonl", "empty"});
}

// Found by an audit: rows that `dataset.map(tokenizer, padding="max_length")` wrote kept their pads
// as tokens (attended to, padding efficiency 1.0, a pad kept in place of [SEP] when cut). The
// attention mask says where they are: right (BERT) or left (XLNet), and they go.
TEST_F(DataFiles, TokenizedRowsLoseThePaddingTheirAttentionMaskMarks) {
  std::vector<std::string> names;
  const auto path = write("padded.jsonl",
                          "{\"input_ids\": [101, 7, 8, 102, 0, 0], \"token_type_ids\": [0, 0, 0, 0, 0, 0],"
                          " \"attention_mask\": [1, 1, 1, 1, 0, 0], \"label\": 1}\n"
                          "{\"input_ids\": [5, 5, 20, 21, 4, 3], \"token_type_ids\": [3, 3, 0, 0, 0, 2],"
                          " \"attention_mask\": [0, 0, 1, 1, 1, 1], \"label\": 0}\n"
                          "{\"input_ids\": [101, 9, 9, 9, 102, 0], \"attention_mask\": [1, 1, 1, 1, 1, 0], \"label\": 0}\n");
  const auto s = read_tokenized_jsonl(path, "label", limits(4, 200, 4, 2), names);
  ASSERT_EQ(s.size(), 3);
  EXPECT_EQ(sample_of(s.ids, s, 0), (std::vector<int64_t>{101, 7, 8, 102}));
  EXPECT_EQ(sample_of(s.ids, s, 1), (std::vector<int64_t>{20, 21, 4, 3}));
  EXPECT_EQ(sample_of(s.type_ids, s, 1), (std::vector<int64_t>{0, 0, 0, 2}));
  // Cut to seq_len 4 after the pad went: [SEP] stays at the end, not the pad.
  EXPECT_EQ(sample_of(s.ids, s, 2), (std::vector<int64_t>{101, 9, 9, 102}));
  EXPECT_EQ(s.truncated, 1);

  const auto bad = [&](const std::string& mask, const std::vector<std::string>& words) {
    const auto file = write("bad.jsonl", "{\"input_ids\": [101, 7, 0, 102], \"attention_mask\": " + mask + ", \"label\": 0}\n");
    expect_input_error([&] { read_tokenized_jsonl(file, "label", limits(8, 200, 2, 2), names); }, words);
  };
  bad("[1, 1, 0, 1]", {"bad.jsonl:1:", "attention_mask", "between tokens", "position 2"});
  bad("[0, 0, 0, 0]", {"bad.jsonl:1:", "marks no token"});
  bad("[1, 1, 1]", {"bad.jsonl:1:", "as long as input_ids"});
  bad("[1, 1, 2, 1]", {"bad.jsonl:1:", "holds 2"});
}

TEST_F(DataFiles, TokenizedXlnetSamplesKeepTheirClosingSepAndClsWhenCut) {
  // XLNet's template is `a <sep> <cls>` (ids 4, 3 in its vocabulary) and its classifier reads the
  // last token: a cut that kept the head would hand it a word piece instead of <cls>.
  std::vector<std::string> names;
  const auto path = write("x.jsonl", "{\"input_ids\": [20, 21, 22, 23, 24, 4, 3], \"token_type_ids\": [0,0,0,0,0,0,2], \"label\": 1}\n");
  TokenizedJsonlLimits xlnet{6, closing_special_tokens(TokenizerKind::sentencepiece), 200, 4, 2, 0};
  const auto s = read_tokenized_jsonl(path, "label", xlnet, names);
  EXPECT_EQ(s.truncated, 1);
  EXPECT_EQ(sample_of(s.ids, s, 0), (std::vector<int64_t>{20, 21, 22, 23, 4, 3}));
  EXPECT_EQ(sample_of(s.type_ids, s, 0), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  // At the shortest seq_len the first id stays beside the last one (BERT's [CLS] and [SEP]).
  xlnet.seq_len = 2;
  const auto shortest = read_tokenized_jsonl(path, "label", xlnet, names);
  EXPECT_EQ(sample_of(shortest.ids, shortest, 0), (std::vector<int64_t>{20, 3}));
}

// --- batches ------------------------------------------------------------------------------------

TEST(Collate, PadsToMaxLengthOrTheLongestOnTheRightSide) {
  const auto s = samples_of_lengths({3, 5, 2});
  CollateOptions o{8, Padding::max_length, 0, 0, false, {}, {}};
  const Batch fixed = collate(s, {0, 1, 2}, o);
  EXPECT_EQ(fixed.inputs.input_ids.sizes(), (torch::IntArrayRef{3, 8}));
  EXPECT_EQ(fixed.tokens, 24);
  EXPECT_EQ(fixed.real_tokens, 10);
  o.padding = Padding::longest;
  const Batch dynamic = collate(s, {0, 2}, o);
  EXPECT_EQ(dynamic.inputs.input_ids.sizes(), (torch::IntArrayRef{2, 3}));
  EXPECT_TRUE(torch::equal(dynamic.inputs.attention_mask[1], torch::tensor({1, 1, 0}, torch::kLong)));
  EXPECT_EQ(dynamic.inputs.input_ids[1][2].item<int64_t>(), 0);
  o.pad_left = true;  // XLNet
  o.pad_type_id = 3;
  const Batch left = collate(s, {0, 2}, o);
  EXPECT_EQ(left.inputs.input_ids[1][0].item<int64_t>(), 0);
  EXPECT_EQ(left.inputs.input_ids[1][1].item<int64_t>(), s.ids[8]);  // sample 2 is ids[8..10)
  EXPECT_EQ(left.inputs.input_ids[1][2].item<int64_t>(), s.ids[9]);
  EXPECT_EQ(left.inputs.token_type_ids[1][0].item<int64_t>(), 3);
  EXPECT_EQ(left.inputs.attention_mask[1][0].item<int64_t>(), 0);
}

// The host knows from collation whether a batch holds padding, so the attention can leave the
// mask out without reading it back from the device.
TEST(Collate, MarksBatchesWithoutPadding) {
  const auto s = samples_of_lengths({4, 4, 2});
  CollateOptions o{4, Padding::max_length, 0, 0, false, {}, {}};
  EXPECT_FALSE(collate(s, {0, 1}, o).inputs.has_padding);
  EXPECT_TRUE(collate(s, {0, 2}, o).inputs.has_padding);
  o.padding = Padding::longest;
  EXPECT_FALSE(collate(s, {2}, o).inputs.has_padding);
  EXPECT_TRUE(collate(s, {1, 2}, o).inputs.has_padding);

  // Whether any batch of the data can: max_length pads what is shorter than seq_len, longest
  // pads wherever lengths differ.
  o.padding = Padding::max_length;
  EXPECT_TRUE(batches_can_pad(s, o));
  EXPECT_FALSE(batches_can_pad(samples_of_lengths({4, 4}), o));
  o.seq_len = 6;
  EXPECT_TRUE(batches_can_pad(samples_of_lengths({4, 4}), o));
  o.padding = Padding::longest;
  EXPECT_FALSE(batches_can_pad(samples_of_lengths({4, 4}), o));
  EXPECT_TRUE(batches_can_pad(s, o));
}

// model.unpad: a padded batch lists its real tokens' flat positions (row * width + column), on the
// right or, for XLNet, the left; a batch without padding lists none (the model keeps it padded).
// Each batch has its samples' lengths, and their real tokens are consecutive, so a CPU run's
// layout knows where each sample starts (XLNet's attention by sample needs it).
TEST(Collate, ListsTheRealTokensOfPaddedBatchesForUnpadding) {
  const auto s = samples_of_lengths({4, 4, 2});
  CollateOptions o{4, Padding::max_length, 0, 0, false, {}, {}};
  EXPECT_FALSE(collate(s, {0, 2}, o).inputs.token_positions.defined());  // only where asked
  o.list_token_positions = true;
  const Batch right = collate(s, {0, 2}, o);
  EXPECT_TRUE(torch::equal(right.inputs.token_positions, torch::tensor({0, 1, 2, 3, 4, 5}, torch::kLong)));
  o.pad_left = true;
  const Batch left = collate(s, {2, 0}, o);
  EXPECT_TRUE(torch::equal(left.inputs.token_positions, torch::tensor({2, 3, 4, 5, 6, 7}, torch::kLong)));
  EXPECT_FALSE(collate(s, {0, 1}, o).inputs.token_positions.defined());
  EXPECT_EQ(right.lengths, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(left.lengths, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(layers::TokenLayout::of(right.inputs, true, true).sample_starts(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(layers::TokenLayout::of(left.inputs, true, true).sample_starts(), (std::vector<int64_t>{2, 0}));
}

std::vector<int64_t> all_samples(const std::vector<StepBatches>& plan) {
  std::vector<int64_t> out;
  for (const auto& step : plan) {
    for (const auto& micro : step) out.insert(out.end(), micro.begin(), micro.end());
  }
  return out;
}

TEST(EpochPlan, StepsMicroBatchesAndDropLast) {
  const auto s = samples_of_lengths(std::vector<int64_t>(70, 4));
  SamplerOptions o;
  o.batch_size = 8;
  o.accum_steps = 2;
  const auto plan = plan_epoch(s, o, 1);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].size(), 2u);
  EXPECT_EQ(plan[0][1].size(), 8u);
  EXPECT_EQ(all_samples(plan).size(), 64u);
  o.drop_last = false;
  const auto full = plan_epoch(s, o, 1);
  ASSERT_EQ(full.size(), 5u);
  EXPECT_EQ(full.back().size(), 1u);  // 6 samples: one partial micro-batch
  EXPECT_EQ(full.back()[0].size(), 6u);
  auto every = all_samples(full);
  std::sort(every.begin(), every.end());
  for (int64_t i = 0; i < 70; ++i) EXPECT_EQ(every[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(steps_per_epoch(70, o), 5);
}

TEST(EpochPlan, RanksShareEachGlobalStep) {
  const auto s = samples_of_lengths(std::vector<int64_t>(64, 4));
  SamplerOptions single;
  single.batch_size = 8;
  SamplerOptions r0 = single, r1 = single;
  r0.batch_size = r1.batch_size = 4;
  r0.world_size = r1.world_size = 2;
  r1.rank = 1;
  const auto a = plan_epoch(s, single, 2), b = plan_epoch(s, r0, 2), c = plan_epoch(s, r1, 2);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t step = 0; step < a.size(); ++step) {
    std::multiset<int64_t> global(a[step][0].begin(), a[step][0].end());
    std::multiset<int64_t> shares(b[step][0].begin(), b[step][0].end());
    shares.insert(c[step][0].begin(), c[step][0].end());
    EXPECT_EQ(global, shares) << "step " << step;
  }
}

TEST(EpochPlan, BucketingGroupsLengthsAndPutsTheLongestStepFirst) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 256; ++i) lengths.push_back(4 + (i * 37) % 120);
  const auto s = samples_of_lengths(lengths);
  SamplerOptions o;
  o.batch_size = 8;
  o.seed = 3;
  const auto padded_tokens = [&](const std::vector<StepBatches>& plan) {
    int64_t total = 0;
    for (const auto& step : plan) {
      int64_t longest = 0;
      for (const int64_t i : step[0]) longest = std::max(longest, s.length(i));
      total += longest * static_cast<int64_t>(step[0].size());
    }
    return total;
  };
  const auto random = plan_epoch(s, o, 1);
  o.bucket_by_length = true;
  const auto bucketed = plan_epoch(s, o, 1);
  EXPECT_LT(padded_tokens(bucketed), padded_tokens(random) * 7 / 10);
  auto a = all_samples(bucketed), b = all_samples(random);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);  // the same samples, grouped differently
  const int64_t first_longest = s.length(bucketed[0][0][0]);
  EXPECT_EQ(first_longest, *std::max_element(lengths.begin(), lengths.end()));
  EXPECT_NE(plan_epoch(s, o, 1)[1], plan_epoch(s, o, 2)[1]);  // a new order each epoch
}

// Found by an audit: bucketing sorted chunks of 50 steps and shuffled the steps, which padded far
// less than HF's group_by_length (the README's 300 reviews at batch 8: 0.973, where HF's order
// gives 0.896) while the README called it HF's. It is now HF's get_length_grouped_indices, step for
// step: mega-batches of min(n / (4 x batch x accum), 50) batches in the shuffled order, each sorted
// longest first (stable), the longest sample traded to the front, the mega-batches kept in order.
TEST(EpochPlan, BucketingIsHfsLengthGroupedOrder) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 45; ++i) lengths.push_back(2 + (i * 7) % 13);
  const auto s = samples_of_lengths(lengths);
  SamplerOptions o;
  o.batch_size = 2;
  o.accum_steps = 1;
  o.seed = 5;
  o.bucket_by_length = true;
  o.drop_last = false;
  for (const int64_t epoch : {1, 2}) {
    // HF, as trainer_pt_utils writes it: 45 // (2 * 4) = 5 batches a mega-batch, 10 samples.
    std::vector<int64_t> hf = epoch_order(45, o.seed, epoch);
    std::vector<std::size_t> firsts;
    for (std::size_t first = 0; first < hf.size(); first += 10) {
      std::stable_sort(hf.begin() + static_cast<long>(first), hf.begin() + static_cast<long>(std::min<std::size_t>(first + 10, hf.size())),
                       [&](int64_t a, int64_t b) { return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)]; });
      firsts.push_back(first);
    }
    std::size_t longest = 0;
    for (const std::size_t first : firsts) {
      if (lengths[static_cast<std::size_t>(hf[first])] > lengths[static_cast<std::size_t>(hf[longest])]) longest = first;
    }
    std::swap(hf[0], hf[longest]);
    EXPECT_EQ(all_samples(plan_epoch(s, o, epoch)), hf) << "epoch " << epoch;
  }
  // drop_last drops the partial last step of that order, not samples before grouping.
  o.drop_last = true;
  const auto dropped = all_samples(plan_epoch(s, o, 1));
  const auto kept = all_samples([&] { auto p = o; p.drop_last = false; return plan_epoch(s, p, 1); }());
  EXPECT_EQ(dropped, std::vector<int64_t>(kept.begin(), kept.begin() + 44));
}

TEST(Data, EpochOrderIsAPermutationThatChangesPerEpoch) {
  auto first = epoch_order(20, 1, 1), second = epoch_order(20, 1, 2);
  EXPECT_EQ(first, epoch_order(20, 1, 1));
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(first[static_cast<std::size_t>(i)], i);
}

TEST(BatchLoader, PrefetchedBatchesEqualDirectCollationInOrder) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 40; ++i) lengths.push_back(2 + i % 9);
  const auto s = samples_of_lengths(lengths);
  const CollateOptions c{12, Padding::longest, 0, 0, false, {}, {}};
  SamplerOptions o;
  o.batch_size = 4;
  o.accum_steps = 2;
  for (const int64_t prefetch : {0, 1, 3}) {
    BatchLoader loader(s, c, prefetch, /*pin_memory=*/false);
    for (int64_t epoch = 1; epoch <= 2; ++epoch) {
      const auto plan = plan_epoch(s, o, epoch);
      loader.start_epoch(plan);
      for (const auto& step : plan) {
        for (const auto& micro : step) {
          const Batch got = loader.next(), want = collate(s, micro, c);
          ASSERT_TRUE(torch::equal(got.inputs.input_ids, want.inputs.input_ids)) << "prefetch " << prefetch;
          ASSERT_TRUE(torch::equal(got.labels, want.labels));
        }
      }
      EXPECT_THROW(loader.next(), std::logic_error);
    }
  }
}

TEST(BatchLoader, AStartedEpochReplacesWhatWasQueued) {
  const auto s = samples_of_lengths(std::vector<int64_t>(16, 3));
  SamplerOptions o;
  o.batch_size = 4;
  BatchLoader loader(s, {3, Padding::max_length, 0, 0, false, {}, {}}, 2, false);
  loader.start_epoch(plan_epoch(s, o, 1));
  loader.next();  // the rest of epoch 1 stays queued, then is dropped
  const auto second = plan_epoch(s, o, 2);
  loader.start_epoch(second);
  EXPECT_TRUE(torch::equal(loader.next().labels, collate(s, second[0][0], {3, Padding::max_length, 0, 0, false, {}, {}}).labels));
}

// --- token cache --------------------------------------------------------------------------------

// A cache is named after its data: a corpus folder by the folder, with or without its slash.
TEST(TokenCache, IsNamedAfterItsDataFileOrFolder) {
  const auto name_of = [](const std::string& data) {
    return std::filesystem::path(token_cache_path("/cache", data, "k")).filename().string();
  };
  EXPECT_EQ(name_of("/data/reviews.csv").rfind("reviews-", 0), 0u);
  EXPECT_EQ(name_of("books/").rfind("books-", 0), 0u);
  EXPECT_EQ(name_of("books").rfind("books-", 0), 0u);
  EXPECT_EQ(name_of(".").rfind("data-", 0), 0u);
  EXPECT_EQ(name_of("./").rfind("data-", 0), 0u);
  EXPECT_EQ(name_of("books/"), name_of("books"));
}

TEST_F(DataFiles, TokenCacheRoundTripsAndRejectsOtherKeysAndDamage) {
  CachedSamples cached{samples_of_lengths({3, 1, 4}), {"neg", "pos"}};
  cached.samples.type_ids.assign(cached.samples.ids.size(), 1);
  cached.samples.truncated = 2;
  const auto path = token_cache_path(dir_.string(), "/data/reviews.csv", "key-1");
  EXPECT_NE(path.find("reviews-"), std::string::npos);
  EXPECT_NE(path, token_cache_path(dir_.string(), "/data/reviews.csv", "key-2"));
  save_token_cache(path, "key-1", cached);
  const auto loaded = load_token_cache(path, "key-1");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->samples.ids, cached.samples.ids);
  EXPECT_EQ(loaded->samples.type_ids, cached.samples.type_ids);
  EXPECT_EQ(loaded->samples.offsets, cached.samples.offsets);
  EXPECT_EQ(loaded->samples.labels, cached.samples.labels);
  EXPECT_EQ(loaded->samples.truncated, 2);
  EXPECT_EQ(loaded->label_names, cached.label_names);
  EXPECT_FALSE(load_token_cache(path, "key-2"));
  EXPECT_FALSE(load_token_cache((dir_ / "absent.tokens").string(), "key-1"));
  fs::resize_file(path, fs::file_size(path) - 5);  // a partial file
  EXPECT_FALSE(load_token_cache(path, "key-1"));
  write("junk.tokens", "not a cache");
  EXPECT_FALSE(load_token_cache((dir_ / "junk.tokens").string(), "key-1"));
}

// A cache damaged in the middle keeps its size, so only the checksum can tell: one flipped bit in
// the ids, in the labels, in the header's counts.
TEST_F(DataFiles, TokenCacheDamagedInTheMiddleIsRebuiltNotUsed) {
  CachedSamples cached{samples_of_lengths({3, 1, 4}), {"neg", "pos"}};
  const auto path = (dir_ / "c.tokens").string();
  save_token_cache(path, "key", cached);
  const std::string good = read_file(path, "cache");
  ASSERT_TRUE(load_token_cache(path, "key"));
  const std::size_t payload = good.size() - cached.samples.labels.size() * 8 - cached.samples.ids.size() * 4 -
                              cached.samples.offsets.size() * 8;
  for (const std::size_t at : {payload + 4 * 8 + 5, good.size() - 3, payload + 2}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    write("c.tokens", bad);
    EXPECT_FALSE(load_token_cache(path, "key")) << "a flipped bit at byte " << at << " went unnoticed";
  }
  std::string counts = good;  // "samples":3 -> 4: sizes no longer match
  counts.replace(counts.find("\"samples\":3"), 11, "\"samples\":4");
  write("c.tokens", counts);
  EXPECT_FALSE(load_token_cache(path, "key"));
  write("c.tokens", good.substr(0, good.size() / 2));  // truncated in the middle
  EXPECT_FALSE(load_token_cache(path, "key"));
}

TEST_F(DataFiles, TokenTypesBeyondTheModelsTableAreAnErrorNamingTheLine) {
  std::vector<std::string> names;
  const auto path = write("t.jsonl", "{\"input_ids\": [1, 2], \"label\": 0, \"token_type_ids\": [0, 0]}\n"
                                     "{\"input_ids\": [1, 2], \"label\": 0, \"token_type_ids\": [0, 1]}\n");
  // RoBERTa's table has one type: line 2's type 1 would fail inside LibTorch at step 1.
  expect_input_error([&] { read_tokenized_jsonl(path, "label", limits(8, 200, 1, 2), names); },
                     {"t.jsonl:2", "token_type_ids holds 1", "[0, 1)"});
  EXPECT_EQ(read_tokenized_jsonl(path, "label", limits(8, 200, 2, 2), names).size(), 2);  // BERT has two
  ModelConfig roberta, xlnet;
  roberta.type_vocab_size = 1;
  EXPECT_EQ(token_type_limit(roberta), 1);
  EXPECT_EQ(token_type_limit(xlnet), 4);  // no table: XLNet's segment ids, DistilBERT ignores them
}

TEST_F(DataFiles, SamplesOutsideTheModelsTablesDoNotFit) {
  TokenizedSamples s = samples_of_lengths({2, 2});
  EXPECT_TRUE(samples_fit_model(s, 1000, 2, 2));
  s.ids[1] = 1000;
  EXPECT_FALSE(samples_fit_model(s, 1000, 2, 2));
  s.ids[1] = 5;
  s.type_ids.assign(s.ids.size(), 2);
  EXPECT_FALSE(samples_fit_model(s, 1000, 2, 2));
  s.type_ids.clear();
  s.labels[0] = 2;
  EXPECT_FALSE(samples_fit_model(s, 1000, 2, 2));
}

// --- prepare_data -------------------------------------------------------------------------------

// A spec of `model` on text data, read with the fixture tokenizer `tokenizer` (tests/data/tokenizers/).
RunSpec text_spec(const std::string& model, const std::string& path, const std::string& tokenizer, int64_t seq_len) {
  const nlohmann::json spec = {
      {"model", model},
      {"data", {{"source", "text"}, {"path", path}, {"text_pair_column", "pair"}, {"seq_len", seq_len}, {"cache", false},
                {"tokenizer", {{"path", std::string(TBENCH_SOURCE_DIR) + "/tests/data/tokenizers/" + tokenizer}}}}}};
  return resolve_spec(parse_spec_text(spec.dump(), "test.json", false));
}

// tokenizer_config.json's switches are HF's: tokenize_chinese_chars false keeps a run of CJK
// characters one word, as BertTokenizerFast does (found by review: it was read as true always).
TEST_F(DataFiles, TokenizerConfigSetsTheChineseCharactersSwitch) {
  fs::create_directories(dir_ / "tok");
  fs::copy_file(std::string(TBENCH_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece-uncased/vocab.txt", dir_ / "tok" / "vocab.txt");
  const auto spec_for = [&] {
    const nlohmann::json spec = {{"model", "tiny-bert"},
                                 {"data", {{"source", "text"}, {"path", write("t.csv", "text,label\nhi,0\n")}, {"cache", false},
                                           {"tokenizer", {{"path", (dir_ / "tok").string()}}}}}};
    return resolve_spec(parse_spec_text(spec.dump(), "test.json", false));
  };
  const ModelConfig model = shipped_model_config("tiny-bert");
  EXPECT_TRUE(resolve_tokenizer_options(spec_for(), model).tokenize_chinese_chars);
  write("tok/tokenizer_config.json", "{\"tokenize_chinese_chars\": false}");
  EXPECT_FALSE(resolve_tokenizer_options(spec_for(), model).tokenize_chinese_chars);
}

// Found by review: a seq_len below the special-token template ([CLS] a [SEP] b [SEP] is 3) gave
// samples longer than seq_len: validate passed, and the run failed at step 1 (exit 4) or, with
// padding: longest, trained on over-long samples.
TEST_F(DataFiles, SeqLenShorterThanTheSpecialTokensIsAnErrorNamingIt) {
  const std::string pairs = write("pairs.csv", "text,pair,label\nhello there,general kenobi,0\nhi,you,1\n");
  struct Family {
    std::string model, tokenizer;
    int64_t pair_template;
  };
  for (const Family& f : {Family{"tiny-bert", "wordpiece-uncased", 3}, Family{"tiny-roberta", "bpe", 4},
                          Family{"tiny-xlnet", "sentencepiece", 3}}) {
    const ModelConfig model = shipped_model_config(f.model);
    RunSpec spec = text_spec(f.model, pairs, f.tokenizer, f.pair_template - 1);
    expect_input_error([&] { prepare_data(spec, model); },
                       {"data.seq_len", std::to_string(f.pair_template) + " special tokens", "pair"});
    spec.data.seq_len = f.pair_template;  // the template alone: both texts are cut to nothing
    const PreparedData data = prepare_data(spec, model);
    for (int64_t i = 0; i < data.train.size(); ++i) EXPECT_EQ(data.train.length(i), f.pair_template) << f.model;
  }
  // A masked-LM corpus read a line a sample: "[CLS] line [SEP]" needs 2 (the spec's minimum, so
  // only a RunSpec built in code can ask for less).
  const std::string corpus = write("book.txt", "the ship sailed\nat dawn\n");
  const nlohmann::json lines = {{"model", "tiny-bert"},
                                {"task", "mlm"},
                                {"data", {{"source", "corpus"}, {"path", corpus}, {"line_by_line", true}, {"cache", false},
                                          {"tokenizer", {{"path", std::string(TBENCH_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece-uncased"}}}}}};
  RunSpec spec = resolve_spec(parse_spec_text(lines.dump(), "test.json", false));
  spec.data.seq_len = 1;
  expect_input_error([&] { prepare_data(spec, shipped_model_config("tiny-bert")); }, {"data.seq_len", "2 special tokens"});
}

// Found by review: at least one sample is held out, so one sample with data.eval_fraction 0.1
// (or two with 0.75) left none to train on, and with drop_last false the run exited 0 with nulls.
TEST(PrepareData, AnEvalSplitThatLeavesNoTrainingSampleIsAnErrorNamingIt) {
  const auto spec_of = [](int64_t samples, const std::string& fraction) {
    SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "test.json", false);
    apply_overrides(doc, {"data.num_samples=" + std::to_string(samples), "data.eval_fraction=" + fraction,
                          "data.drop_last=false", "data.seq_len=8"});
    return resolve_spec(doc);
  };
  const ModelConfig model = shipped_model_config("tiny-bert");
  expect_input_error([&] { prepare_data(spec_of(1, "0.1"), model); }, {"data.eval_fraction", "none to train on"});
  expect_input_error([&] { prepare_data(spec_of(2, "0.75"), model); }, {"data.eval_fraction", "none to train on"});
  const PreparedData three = prepare_data(spec_of(3, "0.5"), model);  // 2 held out, 1 left
  EXPECT_EQ(three.train.size(), 1);
  EXPECT_EQ(three.eval.size(), 2);
}

}  // namespace
}  // namespace tbench
