// The token cache: a tokenized dataset saved as one binary file, keyed by everything the tokens
// depend on (the file's path, size and modification time, the tokenizer's files and switches,
// columns, seq_len), so the next run with the same data skips tokenization.
//
// Layout: "TBENCH-TOKENS\n" | uint64 header length | header JSON | offsets (int64 x n+1) |
//         ids (int32) | type ids (int8, possibly none) | labels (int64 x n). Native endianness.
// The header holds the counts and a checksum of everything after it; a file that disagrees with
// either is damaged and rebuilt, never used.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tbench/data/data_sources.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/json_text.hpp"
#include "tbench/stable_hash.hpp"

namespace tbench {
namespace {

using nlohmann::json;
constexpr char kMagic[] = "TBENCH-TOKENS\n";

template <typename T>
void append(std::string& out, const std::vector<T>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <typename T>
bool take(std::istream& in, std::vector<T>& values, uint64_t count) {
  values.resize(count);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(T)));
  return static_cast<uint64_t>(in.gcount()) == count * sizeof(T);
}

constexpr uint64_t kMaxCacheHeaderBytes = 1u << 26;
// Fuzz builds (TBENCH_FUZZING) read on past a checksum mismatch, so the fuzzer reaches the checks
// behind it; every other build rejects the file.
#ifdef TBENCH_FUZZING
constexpr bool kAcceptBadChecksum = true;
#else
constexpr bool kAcceptBadChecksum = false;
#endif

// FNV-1a of the payload (offsets, ids, type ids, labels, in file order), computed over the vectors
// themselves so no second copy of a large dataset is made: a bit flipped in the middle of the ids
// (a bad disk, a bad copy) is caught, where the sizes alone would pass and feed wrong tokens to a run.
std::string checksum_of(const TokenizedSamples& s) {
  uint64_t hash = kFnv1aOffset;
  const auto add = [&](const auto& values) { hash = fnv1a(values.data(), values.size() * sizeof(values[0]), hash); };
  add(s.offsets);
  add(s.ids);
  add(s.type_ids);
  add(s.labels);
  std::ostringstream out;
  out << std::hex << hash;
  return out.str();
}

// The key as the header stores it: json_text turns invalid UTF-8 (a Latin-1 file name) into
// U+FFFD, so the key read back is compared in that form, or such a cache would never hit.
std::string key_as_stored(const std::string& key) {
  return json::parse(json_text(json(key))).get<std::string>();
}

bool consistent(const TokenizedSamples& s) {
  if (s.offsets.empty() || s.offsets.front() != 0 || s.offsets.back() != static_cast<int64_t>(s.ids.size())) return false;
  if (!s.type_ids.empty() && s.type_ids.size() != s.ids.size()) return false;
  for (std::size_t i = 1; i < s.offsets.size(); ++i) {
    if (s.offsets[i] < s.offsets[i - 1]) return false;
  }
  return true;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tbench";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tbench";
  return ".tbench-cache";
}

std::string token_cache_path(const std::string& dir, const std::string& data_path, const std::string& key) {
  // Named after the data (a corpus folder given as "books/" by the folder), so a user can tell
  // the caches apart; never an empty or hidden name.
  std::filesystem::path source(data_path);
  if (!source.has_filename()) source = source.parent_path();
  std::string stem = source.stem().string();
  if (stem.empty() || stem.front() == '.') stem = "data";
  std::ostringstream name;
  name << stem << '-' << std::hex << fnv1a(key.data(), key.size()) << ".tokens";
  return (std::filesystem::path(dir) / name.str()).string();
}

std::optional<CachedSamples> load_token_cache(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const auto damaged = [&](const std::string& why) -> std::optional<CachedSamples> {
    spdlog::warn("token cache {}: {}; tokenizing again", path, why);
    return std::nullopt;
  };
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::string magic(sizeof kMagic - 1, '\0');
  uint64_t header_size = 0;
  if (!in.read(magic.data(), static_cast<std::streamsize>(magic.size())) || magic != kMagic ||
      !in.read(reinterpret_cast<char*>(&header_size), sizeof header_size) || header_size > kMaxCacheHeaderBytes ||
      header_size > file_size - static_cast<uint64_t>(in.tellg())) {
    return damaged("not a token cache file");
  }
  std::string header_text(header_size, '\0');
  if (!in.read(header_text.data(), static_cast<std::streamsize>(header_size))) return damaged("truncated header");
  const json header = json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("key") || !header["key"].is_string()) return damaged("unreadable header");
  if (header["key"].get<std::string>() != key_as_stored(key)) return std::nullopt;  // a hash collision: another dataset's tokens
  const auto field = [&](const char* name) { return header.contains(name) ? header[name] : json(); };
  if (!field("samples").is_number_unsigned() || !field("tokens").is_number_unsigned() || !field("typed").is_boolean() ||
      !field("truncated").is_number_integer() || !field("checksum").is_string() || !field("label_names").is_array() ||
      !std::all_of(header["label_names"].begin(), header["label_names"].end(), [](const json& n) { return n.is_string(); })) {
    return damaged("its header lacks a field (written by an older tbench?)");
  }
  const uint64_t n = header["samples"], tokens = header["tokens"];
  const bool typed = header["typed"];
  // The payload's size from the header, checked against the file before anything is allocated.
  const uint64_t payload = static_cast<uint64_t>(file_size) - static_cast<uint64_t>(in.tellg());
  const uint64_t limit = payload / 4;  // no count can exceed this in a file of this size
  if (n >= limit || tokens > limit ||
      (n + 1) * sizeof(int64_t) + tokens * (sizeof(int32_t) + (typed ? sizeof(int8_t) : 0)) + n * sizeof(int64_t) != payload) {
    return damaged("sizes do not match its header (a partial or damaged file)");
  }
  CachedSamples cached;
  auto& s = cached.samples;
  if (!take(in, s.offsets, n + 1) || !take(in, s.ids, tokens) || (typed && !take(in, s.type_ids, tokens)) ||
      !take(in, s.labels, n)) {
    return damaged("truncated");
  }
  if (header["checksum"].get<std::string>() != checksum_of(s) && !kAcceptBadChecksum) {
    return damaged("its checksum does not match (a damaged file)");
  }
  if (!consistent(s)) return damaged("sizes do not match its header (a partial or damaged file)");
  s.truncated = header["truncated"];
  cached.label_names = header["label_names"].get<std::vector<std::string>>();
  return cached;
}

void save_token_cache(const std::string& path, const std::string& key, const CachedSamples& cached) {
  const auto& s = cached.samples;
  const json header = {{"key", key},
                       {"checksum", checksum_of(s)},
                       {"samples", s.size()},
                       {"tokens", s.ids.size()},
                       {"typed", !s.type_ids.empty()},
                       {"truncated", s.truncated},
                       {"label_names", cached.label_names}};
  const std::string header_text = json_text(header);
  const uint64_t header_size = header_text.size();
  std::string bytes(kMagic);
  bytes.append(reinterpret_cast<const char*>(&header_size), sizeof header_size);
  bytes += header_text;
  append(bytes, s.offsets);
  append(bytes, s.ids);
  append(bytes, s.type_ids);
  append(bytes, s.labels);
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_file_atomically(path, bytes);  // a run killed mid-write leaves no partial cache
  } catch (const std::exception& e) {
    // The cache only saves time: a read-only cache folder must not fail the run.
    spdlog::warn("could not write the token cache {}: {}", path, e.what());
  }
}

}  // namespace tbench
