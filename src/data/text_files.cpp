// CSV, TSV and JSONL text datasets: rows of text, optional pair and label, with the line each
// row starts on so every error can point at it.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tbench/data/data_sources.hpp"
#include "tbench/errors.hpp"
#include "../tokenize/tokenizer_support.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

[[noreturn]] void fail_at(const std::string& path, int64_t line, const std::string& message) {
  throw input_error(path + ":" + std::to_string(line) + ": " + message);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One CSV record (RFC 4180) from `in`; a quoted field may span lines. False at end of file.
bool read_csv_record(std::istream& in, std::vector<std::string>& fields, int64_t& line, const std::string& path) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false, after_quote = false;
  const int64_t start = line;
  for (int c; (c = in.get()) != EOF;) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          field += '"';
          in.get();
        } else {
          quoted = false;
          after_quote = true;
        }
      } else {
        if (c == '\n' || (c == '\r' && in.peek() != '\n')) ++line;  // a lone \r is a line, as Python counts it
        field += static_cast<char>(c);
      }
      continue;
    }
    if (c == '\r' && in.peek() != '\n') {
      // A lone \r ends a record too (old Mac exports), as Python's csv module and pandas read it.
      ++line;
      fields.push_back(std::move(field));
      return true;
    }
    if (c == '"' && field.empty() && !after_quote) {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      after_quote = false;
    } else if (c == '\n') {
      ++line;
      if (!field.empty() && field.back() == '\r') field.pop_back();
      fields.push_back(std::move(field));
      return true;
    } else if (after_quote && c != '\r') {
      fail_at(path, line, "unexpected character after a closing quote (a quote inside a field is written \"\")");
    } else {
      field += static_cast<char>(c);
    }
  }
  if (quoted) fail_at(path, start, "a quoted field opened here is never closed");
  if (!any) return false;
  if (!field.empty() && field.back() == '\r') field.pop_back();
  fields.push_back(std::move(field));
  ++line;
  return true;
}

// One line of `in` without its break: \n, \r\n or a lone \r, as Python reads text. False at end of file.
bool read_line(std::istream& in, std::string& text) {
  text.clear();
  int c = in.get();
  if (c == EOF) return false;
  for (; c != EOF && c != '\n' && c != '\r'; c = in.get()) text += static_cast<char>(c);
  if (c == '\r' && in.peek() == '\n') in.get();
  return true;
}

bool read_tsv_record(std::istream& in, std::vector<std::string>& fields, int64_t& line) {
  std::string text;
  if (!read_line(in, text)) return false;
  ++line;
  fields.clear();
  std::size_t start = 0;
  for (std::size_t tab; (tab = text.find('\t', start)) != std::string::npos; start = tab + 1) {
    fields.push_back(text.substr(start, tab - start));
  }
  fields.push_back(text.substr(start));
  return true;
}

// The data file, refused with what it is where it is no UTF-8 text file: a folder (which reads as
// empty), a pipe, or UTF-16 (Excel's "Unicode text"), whose NUL bytes would cut the error at the first one.
std::ifstream open_data_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw input_error(path + ": is a folder, not a data file");
  // A pipe or a device reads once: tbench reads the file twice (its token cache key hashes it).
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw input_error(path + ": is not a regular file (a pipe or a device): write the data to a file first");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path + ": cannot read the data file");
  char start[2] = {};
  in.read(start, 2);
  const bool utf16 = in.gcount() == 2 && ((start[0] == '\xFF' && start[1] == '\xFE') ||
                                          (start[0] == '\xFE' && start[1] == '\xFF') || start[0] == '\0' || start[1] == '\0');
  if (utf16) throw input_error(path + ": looks like UTF-16 (a byte-order mark or NUL bytes at its start): save it as UTF-8");
  in.clear();
  in.seekg(0);
  return in;
}

// Excel and Notepad start UTF-8 files with a byte-order mark. It goes before the header is parsed:
// left in, it would make a quoted first field's opening quote read as text.
void skip_utf8_bom(std::istream& in) {
  char bom[3] = {};
  if (in.read(bom, 3) && std::memcmp(bom, "\xEF\xBB\xBF", 3) == 0) return;
  in.clear();
  in.seekg(0);
}

std::size_t column_index(const std::vector<std::string>& header, const std::string& column, const std::string& field,
                         const std::string& path) {
  const auto it = std::find(header.begin(), header.end(), column);
  if (it != header.end()) return static_cast<std::size_t>(it - header.begin());
  throw input_error(path + ":1: " + field + ": no column '" + column + "' in the header (" + join(header) + ")");
}

std::vector<TextRow> read_delimited(const TextFileOptions& o, bool csv) {
  std::ifstream in = open_data_file(o.path);
  std::vector<std::string> header, fields;
  int64_t line = 1, next_line = 1;
  const auto read = [&](std::vector<std::string>& out) {
    line = next_line;
    return csv ? read_csv_record(in, out, next_line, o.path) : read_tsv_record(in, out, next_line);
  };
  skip_utf8_bom(in);
  if (!read(header)) throw input_error(o.path + ": the file is empty (expected a header row, then data)");
  const std::size_t text = column_index(header, o.text_column, "data.text_column", o.path);
  const std::size_t label = column_index(header, o.label_column, "data.label_column", o.path);
  const bool has_pair = !o.text_pair_column.empty();
  const std::size_t pair = has_pair ? column_index(header, o.text_pair_column, "data.text_pair_column", o.path) : 0;

  std::vector<TextRow> rows;
  while ((o.max_rows == 0 || static_cast<int64_t>(rows.size()) < o.max_rows) && read(fields)) {
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != header.size()) {
      fail_at(o.path, line, "expected " + std::to_string(header.size()) + " fields as in the header, found " +
                                std::to_string(fields.size()) + (csv ? " (quote fields that hold commas)" : ""));
    }
    const std::pair<const std::string*, std::size_t> columns[] = {
        {&o.text_column, text}, {&o.label_column, label}, {&o.text_pair_column, pair}};
    for (const auto& [column, index] : columns) {
      if (column->empty()) continue;  // no pair column
      const std::size_t bad = tokenize::invalid_utf8_at(fields[index]);
      if (bad != std::string::npos) {
        fail_at(o.path, line, "column '" + *column + "' is " + tokenize::not_utf8_error(fields[index], bad));
      }
    }
    rows.push_back({fields[text], has_pair ? std::optional<std::string>(fields[pair]) : std::nullopt, fields[label], line});
  }
  return rows;
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }  // a negative char is UB

// A label written as an integer: at most 18 characters, so std::stoll cannot overflow.
bool parse_index(const std::string& text, int64_t& value) {
  if (text.empty() || text.size() > 18) return false;
  std::size_t first = text[0] == '-' ? 1 : 0;
  if (first == text.size() || !std::all_of(text.begin() + static_cast<std::ptrdiff_t>(first), text.end(), is_digit)) return false;
  value = std::stoll(text);
  return true;
}

// A JSON integer label is a class index. nlohmann keeps one above INT64_MAX unsigned (read as
// int64 it would wrap: 2^64-1 to -1), and one parse_index cannot hold would be taken for a class
// name: both are refused.
std::string json_integer_label(const json& value, const std::string& path, int64_t line) {
  const std::string text = value.is_number_unsigned() ? std::to_string(value.get<uint64_t>())
                                                      : std::to_string(value.get<int64_t>());
  int64_t ignored = 0;
  if (!parse_index(text, ignored)) fail_at(path, line, "label " + text + " is an integer far outside any class index");
  return text;
}

std::string json_label(const json& value, const std::string& path, int64_t line) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return json_integer_label(value, path, line);
  if (value.is_boolean()) return value.get<bool>() ? "1" : "0";
  fail_at(path, line, "a label must be a string or an integer, got " + json_text(value));
}

std::string string_field(const json& object, const std::string& key, const std::string& field, const std::string& path,
                      int64_t line) {
  if (!object.contains(key)) fail_at(path, line, field + ": no key '" + key + "' in this line's object");
  if (!object[key].is_string()) fail_at(path, line, field + ": '" + key + "' must be a string, got " + json_text(object[key]));
  return object[key].get<std::string>();
}

std::vector<TextRow> read_jsonl(const TextFileOptions& o) {
  std::ifstream in = open_data_file(o.path);
  std::vector<TextRow> rows;
  std::string text;
  for (int64_t line = 1; (o.max_rows == 0 || static_cast<int64_t>(rows.size()) < o.max_rows) && std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (const std::size_t bad = tokenize::invalid_utf8_at(text); bad != std::string::npos) {
      fail_at(o.path, line, tokenize::not_utf8_error(text, bad));
    }
    json object;
    try {
      object = json::parse(text);
    } catch (const json::exception& e) {
      fail_at(o.path, line, std::string("not a JSON object: ") + e.what());
    }
    if (!object.is_object()) fail_at(o.path, line, "expected a JSON object, got " + std::string(object.type_name()));
    TextRow row;
    row.line = line;
    row.text = string_field(object, o.text_column, "data.text_column", o.path, line);
    if (!o.text_pair_column.empty()) row.pair = string_field(object, o.text_pair_column, "data.text_pair_column", o.path, line);
    if (!object.contains(o.label_column)) fail_at(o.path, line, "data.label_column: no key '" + o.label_column + "'");
    row.label = json_label(object[o.label_column], o.path, line);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

TextFormat text_file_format(const TextFileOptions& o) {
  if (o.format != TextFormat::automatic) return o.format;
  std::string lower = o.path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  if (ends_with(lower, ".csv")) return TextFormat::csv;
  if (ends_with(lower, ".tsv") || ends_with(lower, ".tab")) return TextFormat::tsv;
  if (ends_with(lower, ".jsonl") || ends_with(lower, ".json") || ends_with(lower, ".ndjson")) return TextFormat::jsonl;
  throw input_error(o.path + ": data.format: cannot tell the format from the extension; set data.format to csv, tsv or jsonl");
}

std::vector<TextRow> read_text_rows(const TextFileOptions& o) {
  const TextFormat format = text_file_format(o);
  auto rows = format == TextFormat::jsonl ? read_jsonl(o) : read_delimited(o, format == TextFormat::csv);
  if (rows.empty()) throw input_error(o.path + ": the dataset is empty (no data rows)");
  return rows;
}

std::vector<int64_t> resolve_labels(const std::vector<std::string>& labels, const std::vector<int64_t>& lines,
                                    std::vector<std::string>& names, int64_t num_labels, const std::string& path) {
  if (names.empty()) {
    // No names given: integers are indices; otherwise number the names found, in sorted order.
    // Mixed, they are neither: numbering every label as a name would move the integers' classes.
    int64_t ignored = 0;
    const auto is_index = [&](const std::string& l) { return parse_index(l, ignored); };
    const auto first_index = std::find_if(labels.begin(), labels.end(), is_index);
    const auto first_name = std::find_if_not(labels.begin(), labels.end(), is_index);
    if (first_index != labels.end() && first_name != labels.end()) {
      const auto at = [&](std::vector<std::string>::const_iterator it) { return lines[static_cast<std::size_t>(it - labels.begin())]; };
      fail_at(path, at(first_name), "label '" + *first_name + "' is not a class index, but the label at line " +
                                        std::to_string(at(first_index)) + " is ('" + *first_index +
                                        "'): labels are all class indices or all names (list the names in data.labels)");
    }
    if (first_name != labels.end()) {
      std::set<std::string> found;
      for (std::size_t i = 0; i < labels.size(); ++i) {
        // An empty field is a missing label (HF's loader reads None), not a class of its own.
        if (labels[i].empty()) fail_at(path, lines[i], "the label is empty");
        found.insert(labels[i]);
        if (static_cast<int64_t>(found.size()) > num_labels) {
          fail_at(path, lines[i], "label '" + labels[i] + "' makes " + std::to_string(found.size()) +
                                      " distinct labels (" + join(std::vector<std::string>(found.begin(), found.end())) +
                                      ") but num_labels is " + std::to_string(num_labels) +
                                      "; set num_labels, or list the labels in data.labels");
        }
      }
      names.assign(found.begin(), found.end());
    }
  }
  std::vector<int64_t> indices;
  indices.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const auto named = std::find(names.begin(), names.end(), labels[i]);
    int64_t index = 0;
    if (named != names.end()) {
      index = named - names.begin();
    } else if (!parse_index(labels[i], index) || index < 0 ||
               index >= (names.empty() ? num_labels : static_cast<int64_t>(names.size()))) {
      fail_at(path, lines[i], names.empty() ? "label '" + labels[i] + "' is not a class index in [0, " +
                                                  std::to_string(num_labels) + ") (num_labels)"
                                            : "unknown label '" + labels[i] + "' (data.labels: " + join(names) + ")");
    }
    if (index >= num_labels) {
      fail_at(path, lines[i], "label '" + labels[i] + "' is class " + std::to_string(index) + ", but num_labels is " +
                                  std::to_string(num_labels));
    }
    indices.push_back(index);
  }
  return indices;
}

TokenizedSamples tokenize_rows(const std::vector<TextRow>& rows, const std::vector<int64_t>& labels,
                               const Tokenizer& tokenizer, int64_t seq_len) {
  TokenizedSamples samples;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // A configured pair column makes every row a pair, an empty one included, as HF's tokenizer(text, pair) does.
    const Encoding encoding = tokenizer.encode(rows[i].text, rows[i].pair ? &*rows[i].pair : nullptr, seq_len);
    if (encoding.truncated) ++samples.truncated;
    samples.add(encoding.input_ids, encoding.token_type_ids, labels[i]);
  }
  return samples;
}

namespace {

// Cuts `values` to `length` (>= 1), keeping its last `closing` values: the ones before them go, as HF's
// truncation drops text, never the special tokens after it. The first value always stays (BERT's
// [CLS], RoBERTa's <s>), so a length of 1 keeps only it.
void cut_before_closing_tokens(std::vector<int64_t>& values, int64_t length, int64_t closing) {
  const auto kept_tail = static_cast<std::ptrdiff_t>(std::clamp<int64_t>(closing, 0, length - 1));
  const auto head = static_cast<std::ptrdiff_t>(length) - kept_tail;
  values.erase(values.begin() + head, values.end() - kept_tail);
}

// A row that `dataset.map(tokenizer, padding=...)` padded holds its pads in input_ids and says so
// in attention_mask: tbench pads each batch itself (data.padding), so the pads go, or they would
// count as tokens (attended to, padding efficiency 1.0, a pad kept in place of [SEP] when cut).
// Right padding (BERT, RoBERTa) and left padding (XLNet) leave one run of real tokens; a mask with
// holes is no padding tbench could redo.
void drop_masked_padding(const json& mask, std::vector<int64_t>& ids, std::vector<int64_t>& types,
                         const std::string& path, int64_t line) {
  if (!mask.is_array() || mask.size() != ids.size()) fail_at(path, line, "attention_mask must be a list as long as input_ids");
  std::size_t first = ids.size(), end = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i].is_number_integer() || (mask[i] != 0 && mask[i] != 1)) {
      fail_at(path, line, "attention_mask holds " + json_text(mask[i]) + ", not 0 (padding) or 1 (a token)");
    }
    if (mask[i] == 0) continue;
    if (first == ids.size()) first = i;
    if (end != 0 && end != i) {
      fail_at(path, line, "attention_mask has padding (0) between tokens (1) at position " + std::to_string(end) +
                              ": padding goes before or after a row's tokens");
    }
    end = i + 1;
  }
  if (first == ids.size()) fail_at(path, line, "attention_mask marks no token (all 0)");
  ids = std::vector<int64_t>(ids.begin() + static_cast<long>(first), ids.begin() + static_cast<long>(end));
  if (!types.empty()) types = std::vector<int64_t>(types.begin() + static_cast<long>(first), types.begin() + static_cast<long>(end));
}

}  // namespace

TokenizedSamples read_tokenized_jsonl(const std::string& path, const std::string& label_column,
                                      const TokenizedJsonlLimits& limits, std::vector<std::string>& names) {
  const int64_t vocab_size = limits.vocab_size, token_types = limits.token_types, max_rows = limits.max_rows;
  std::ifstream in = open_data_file(path);
  std::vector<std::vector<int64_t>> ids, types;
  std::vector<std::string> labels;
  std::vector<int64_t> lines;
  std::string text;
  for (int64_t line = 1; (max_rows == 0 || static_cast<int64_t>(ids.size()) < max_rows) && std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json object;
    try {
      object = json::parse(text);
    } catch (const json::exception& e) {
      fail_at(path, line, std::string("not a JSON object: ") + e.what());
    }
    if (!object.is_object() || !object.contains("input_ids") || !object["input_ids"].is_array()) {
      fail_at(path, line, "expected an object with an \"input_ids\" list");
    }
    if (object["input_ids"].empty()) fail_at(path, line, "input_ids is empty");
    std::vector<int64_t> sample;
    for (const auto& id : object["input_ids"]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size) {
        fail_at(path, line, "input_ids holds " + json_text(id) + ", not a token id of this model's vocabulary [0, " +
                                std::to_string(vocab_size) + ")");
      }
      sample.push_back(id.get<int64_t>());
    }
    std::vector<int64_t> sample_types;
    if (object.contains("token_type_ids")) {
      if (!object["token_type_ids"].is_array() || object["token_type_ids"].size() != sample.size()) {
        fail_at(path, line, "token_type_ids must be a list as long as input_ids");
      }
      for (const auto& t : object["token_type_ids"]) {
        // A type indexes the model's token-type table: out of range, LibTorch would fail at step 1.
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= token_types) {
          fail_at(path, line, "token_type_ids holds " + json_text(t) + ", not a token type of this model [0, " +
                                  std::to_string(token_types) + ")");
        }
        sample_types.push_back(t.get<int64_t>());
      }
    }
    if (object.contains("attention_mask")) drop_masked_padding(object["attention_mask"], sample, sample_types, path, line);
    if (!object.contains(label_column)) fail_at(path, line, "data.label_column: no key '" + label_column + "'");
    labels.push_back(json_label(object[label_column], path, line));
    ids.push_back(std::move(sample));
    types.push_back(std::move(sample_types));
    lines.push_back(line);
  }
  if (ids.empty()) throw input_error(path + ": the dataset is empty (no data lines)");
  const auto indices = resolve_labels(labels, lines, names, limits.num_labels, path);
  TokenizedSamples samples;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (static_cast<int64_t>(ids[i].size()) > limits.seq_len) {
      ++samples.truncated;
      cut_before_closing_tokens(ids[i], limits.seq_len, limits.closing_tokens);
      if (!types[i].empty()) cut_before_closing_tokens(types[i], limits.seq_len, limits.closing_tokens);
    }
    samples.add(ids[i], types[i], indices[i]);
  }
  return samples;
}

}  // namespace tbench
