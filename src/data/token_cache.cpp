// The token cache: a tokenized dataset saved as one binary file, keyed by everything the tokens
// depend on (the file's path, size and modification time, the tokenizer's files and switches,
// columns, seq_len), so the next run with the same data skips tokenization.
//
// Layout: "TBENCH-TOKENS\n" | uint64 header length | header JSON | offsets (int64 x n+1) |
//         ids (int32) | type ids (int8, possibly none) | labels (int64 x n). Native endianness.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tbench/data/data_sources.hpp"
#include "tbench/results/result_files.hpp"

namespace tbench {
namespace {

using nlohmann::json;
constexpr char kMagic[] = "TBENCH-TOKENS\n";

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ULL;
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

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
  std::ostringstream name;
  name << std::filesystem::path(data_path).stem().string() << '-' << std::hex << fnv1a(key) << ".tokens";
  return (std::filesystem::path(dir) / name.str()).string();
}

std::optional<CachedSamples> load_token_cache(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const auto damaged = [&](const std::string& why) -> std::optional<CachedSamples> {
    spdlog::warn("token cache {}: {}; tokenizing again", path, why);
    return std::nullopt;
  };
  std::string magic(sizeof kMagic - 1, '\0');
  uint64_t header_size = 0;
  if (!in.read(magic.data(), static_cast<std::streamsize>(magic.size())) || magic != kMagic ||
      !in.read(reinterpret_cast<char*>(&header_size), sizeof header_size) || header_size > (1u << 26)) {
    return damaged("not a token cache file");
  }
  std::string header_text(header_size, '\0');
  if (!in.read(header_text.data(), static_cast<std::streamsize>(header_size))) return damaged("truncated header");
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception&) {
    return damaged("unreadable header");
  }
  if (header.value("key", "") != key) return std::nullopt;  // a hash collision: another dataset's tokens
  CachedSamples cached;
  auto& s = cached.samples;
  const uint64_t n = header.value("samples", 0ULL), tokens = header.value("tokens", 0ULL);
  const bool typed = header.value("typed", false);
  if (!take(in, s.offsets, n + 1) || !take(in, s.ids, tokens) || (typed && !take(in, s.type_ids, tokens)) ||
      !take(in, s.labels, n) || in.peek() != EOF || !consistent(s)) {
    return damaged("sizes do not match its header (a partial or damaged file)");
  }
  s.truncated = header.value("truncated", 0LL);
  cached.label_names = header.value("label_names", std::vector<std::string>{});
  return cached;
}

void save_token_cache(const std::string& path, const std::string& key, const CachedSamples& cached) {
  const auto& s = cached.samples;
  const json header = {{"key", key},
                       {"samples", s.size()},
                       {"tokens", s.ids.size()},
                       {"typed", !s.type_ids.empty()},
                       {"truncated", s.truncated},
                       {"label_names", cached.label_names}};
  const std::string header_text = header.dump();
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
