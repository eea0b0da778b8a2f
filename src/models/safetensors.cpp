#include "tbench/models/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "tbench/errors.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  std::size_t bytes;
};

const std::vector<DtypeInfo>& dtypes() {
  static const std::vector<DtypeInfo> d = {
      {"F64", torch::kDouble, 8}, {"F32", torch::kFloat, 4},  {"F16", torch::kHalf, 2}, {"BF16", torch::kBFloat16, 2},
      {"I64", torch::kLong, 8},   {"I32", torch::kInt, 4},    {"I16", torch::kShort, 2}, {"I8", torch::kChar, 1},
      {"U8", torch::kByte, 1},    {"BOOL", torch::kBool, 1},
  };
  return d;
}

const DtypeInfo* dtype_named(const std::string& name) {
  for (const auto& d : dtypes()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo& dtype_of(torch::ScalarType type) {
  for (const auto& d : dtypes()) {
    if (d.type == type) return d;
  }
  throw Error(ExitCode::internal, std::string("safetensors: unsupported dtype ") + c10::toString(type));
}

// The number of elements of `shape`, or false when a dimension is negative or the product
// overflows (a hostile header must not make us compute a small size from a huge shape).
bool element_count(const std::vector<int64_t>& shape, uint64_t& count) {
  count = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return false;
    count *= static_cast<uint64_t>(d);
  }
  return true;
}

// safetensors' own limit on the JSON header: a hostile length must not make us allocate gigabytes.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Reads exactly `size` bytes at `offset`; false when the file ends first.
bool read_exactly(int fd, void* out, uint64_t size, uint64_t offset) {
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, bytes, static_cast<std::size_t>(std::min<uint64_t>(size, 1ULL << 30)), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const auto fail = [&](const std::string& message) { return input_error(path + ": " + message); };
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw fail("cannot open the safetensors file: " + std::string(std::strerror(errno)));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) throw fail("not a regular file");
    const auto file_size = static_cast<uint64_t>(st.st_size);
    if (file_size < 8) {
      throw fail("truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
    }
    unsigned char length[8];
    if (!read_exactly(fd_, length, 8, 0)) throw fail("the file became shorter while it was read");
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length[i];  // little-endian
    if (header_size > kMaxSafetensorsHeaderBytes) {
      throw fail("corrupt: the header claims " + std::to_string(header_size) + " bytes, over safetensors' 100 MB limit");
    }
    if (header_size > file_size - 8) {
      throw fail("truncated or corrupt: the header claims " + std::to_string(header_size) + " bytes, the file has " +
                 std::to_string(file_size - 8) + " after the length");
    }
    std::string header_text(static_cast<std::size_t>(header_size), '\0');
    if (!read_exactly(fd_, header_text.data(), header_size, 8)) throw fail("the file became shorter while it was read");
    const uint64_t data_size = file_size - 8 - header_size;
    data_start_ = 8 + header_size;
    json header;
    try {
      header = json::parse(header_text);
    } catch (const json::exception& e) {
      throw fail(std::string("header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) throw fail("header is not a JSON object");
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& item : header.items()) {
      const std::string& name = item.key();
      const json& v = item.value();
      if (name == "__metadata__") {
        if (!v.is_object()) throw fail("__metadata__ is not an object");
        for (const auto& m : v.items()) {
          if (!m.value().is_string()) throw fail("__metadata__." + m.key() + " is not a string");
          metadata_[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      const auto bad = [&](const std::string& what) { return fail("tensor '" + name + "': " + what); };
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
        throw bad("needs dtype, shape and data_offsets");
      }
      SafetensorsEntry e;
      if (!v["dtype"].is_string()) throw bad("dtype is not a string");
      e.dtype = v["dtype"].get<std::string>();
      const DtypeInfo* info = dtype_named(e.dtype);
      if (!info) throw bad("unsupported dtype '" + e.dtype + "'");
      if (!v["shape"].is_array()) throw bad("shape is not a list");
      for (const auto& d : v["shape"]) {
        if (!d.is_number_integer()) throw bad("shape has a non-integer dimension");
        e.shape.push_back(d.get<int64_t>());
      }
      const json& offsets = v["data_offsets"];
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
        throw bad("data_offsets must be two non-negative integers");
      }
      e.begin = offsets[0].get<uint64_t>();
      e.end = offsets[1].get<uint64_t>();
      if (e.begin > e.end || e.end > data_size) {
        throw bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                  "] fall outside the data section (" + std::to_string(data_size) + " bytes): truncated or corrupt");
      }
      uint64_t count = 0;
      if (!element_count(e.shape, count) || count > std::numeric_limits<uint64_t>::max() / info->bytes) {
        throw bad("shape is negative or too large");
      }
      if (count * info->bytes != e.end - e.begin) {
        throw bad("holds " + std::to_string(e.end - e.begin) + " bytes, but its shape and dtype need " +
                  std::to_string(count * info->bytes));
      }
      ranges.emplace_back(e.begin, e.end);
      entries_[name] = e;
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].first < ranges[i - 1].second) throw fail("two tensors overlap in the data section");
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() { ::close(fd_); }

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw input_error(path_ + ": no tensor named '" + name + "'");
  const SafetensorsEntry& e = it->second;
  const DtypeInfo* info = dtype_named(e.dtype);
  auto out = torch::empty(e.shape, torch::TensorOptions().dtype(info->type));
  // Offsets were checked against the file's size when it was opened; a short read now means the
  // file shrank since.
  if (e.end > e.begin && !read_exactly(fd_, out.data_ptr(), e.end - e.begin, data_start_ + e.begin)) {
    throw input_error(path_ + ": tensor '" + name + "': the file became shorter while it was read (is another job rewriting it?)");
  }
  return out;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, torch::Tensor>> sorted;
  for (const auto& [name, t] : tensors) sorted.emplace_back(name, t.detach().to(torch::kCPU).contiguous());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : sorted) {
    const uint64_t size = static_cast<uint64_t>(t.numel()) * dtype_of(t.scalar_type()).bytes;
    header[name] = {{"dtype", dtype_of(t.scalar_type()).name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = json_text(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data section is 8-byte aligned, as HF does
  std::string file(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  file += text;
  file.reserve(file.size() + offset);
  for (const auto& [name, t] : sorted) {
    file.append(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()) * dtype_of(t.scalar_type()).bytes);
  }
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw Error(ExitCode::run_failed, path + ": cannot create its directory: " + ec.message());
  write_file_atomically(path, file);
}

namespace {

const std::vector<std::string>& base_prefixes() {
  static const std::vector<std::string> p = {"bert", "roberta", "distilbert", "transformer"};
  return p;
}

std::string base_prefix_of(const torch::nn::Module& model) {
  for (const auto& item : model.named_parameters()) {
    const std::string first = item.key().substr(0, item.key().find('.'));
    if (std::find(base_prefixes().begin(), base_prefixes().end(), first) != base_prefixes().end()) return first;
  }
  return "";
}

// The checkpoint files behind `path`: one file, or the shards an index names.
std::vector<std::string> checkpoint_files(const std::string& path) {
  fs::path p(path);
  if (fs::is_directory(p)) {
    if (fs::exists(p / "model.safetensors")) return {(p / "model.safetensors").string()};
    if (fs::exists(p / "model.safetensors.index.json")) p = p / "model.safetensors.index.json";
    else throw input_error(path + ": holds neither model.safetensors nor model.safetensors.index.json");
  }
  if (p.extension() != ".json") return {p.string()};
  std::ifstream in(p);
  if (!in) throw input_error(p.string() + ": cannot open the checkpoint index");
  json index;
  try {
    in >> index;
  } catch (const json::exception& e) {
    throw input_error(p.string() + ": not valid JSON: " + e.what());
  }
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw input_error(p.string() + ": weight_map: missing (not a safetensors index)");
  }
  std::vector<std::string> files;
  for (const auto& item : index["weight_map"].items()) {
    if (!item.value().is_string()) throw input_error(p.string() + ": weight_map." + item.key() + ": not a file name");
    const std::string shard = (p.parent_path() / item.value().get<std::string>()).string();
    if (std::find(files.begin(), files.end(), shard) == files.end()) files.push_back(shard);
  }
  return files;
}

// HF's renames for checkpoints from the TF era: LayerNorm.gamma/beta are weight/bias.
std::string hf_rename(std::string key) {
  const auto replace_suffix = [&](const std::string& from, const std::string& to) {
    if (key.size() > from.size() && key.compare(key.size() - from.size(), from.size(), from) == 0) {
      key = key.substr(0, key.size() - from.size()) + to;
    }
  };
  replace_suffix(".gamma", ".weight");
  replace_suffix(".beta", ".bias");
  return key;
}

std::string first_few(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

WeightLoadReport load_hf_weights(torch::nn::Module& model, const std::string& path) {
  WeightLoadReport report;
  report.files = checkpoint_files(path);
  const std::string prefix = base_prefix_of(model);
  auto params = model.named_parameters();
  auto buffers = model.named_buffers();

  // Checkpoint key (renamed, prefixed as the model names it) -> (file, stored key).
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, std::pair<const SafetensorsFile*, std::string>> available;
  bool has_prefix = false;
  for (const auto& f : report.files) {
    files.push_back(std::make_unique<SafetensorsFile>(f));
    for (const auto& [key, entry] : files.back()->entries()) {
      available[hf_rename(key)] = {files.back().get(), key};
      has_prefix = has_prefix || key.rfind(prefix + ".", 0) == 0;
    }
  }
  if (!prefix.empty() && !has_prefix) {
    // Saved from the base model itself (BertModel, ...): its keys lack the "bert." prefix.
    decltype(available) prefixed;
    for (auto& [key, where] : available) prefixed[prefix + "." + key] = where;
    available.swap(prefixed);
  }

  torch::NoGradGuard no_grad;
  std::vector<std::string> missing;
  for (auto& item : params) {
    const auto it = available.find(item.key());
    if (it == available.end()) {
      // BERT's pooler feeds only the classifier: a *ForMaskedLM checkpoint (tbench's own mlm runs
      // save one) has none, and HF's from_pretrained starts it fresh, as it does the head.
      const bool pooler = !prefix.empty() && item.key().rfind(prefix + ".pooler.", 0) == 0;
      const bool in_base = !prefix.empty() && item.key().rfind(prefix + ".", 0) == 0 && !pooler;
      (in_base ? missing : report.initialised).push_back(item.key());
      continue;
    }
    const auto& [file, stored] = it->second;
    torch::Tensor value = file->tensor(stored);
    if (value.sizes() != item.value().sizes()) {
      throw input_error(file->path() + ": tensor '" + stored + "' has shape " + c10::str(value.sizes()) + ", but " +
                        item.key() + " needs " + c10::str(item.value().sizes()) +
                        " (a checkpoint of another model size or vocabulary?)");
    }
    // Integers or booleans where a weight belongs are no weights (a damaged or foreign file), and a
    // NaN or infinity would surface steps later as a diverged loss, blamed on the learning rate.
    if (!value.is_floating_point()) {
      throw input_error(file->path() + ": tensor '" + stored + "' holds " + std::string(c10::toString(value.scalar_type())) +
                        " values, but " + item.key() + " is a floating-point weight");
    }
    if (const int64_t bad = value.numel() - torch::isfinite(value).sum().item<int64_t>(); bad > 0) {
      throw input_error(file->path() + ": tensor '" + stored + "' holds " + std::to_string(bad) +
                        " NaN or infinite value(s)");
    }
    item.value().copy_(value.to(item.value().dtype()));
    report.loaded.push_back(item.key());
    available.erase(it);
  }
  if (!missing.empty()) {
    throw input_error(path + ": the checkpoint lacks " + std::to_string(missing.size()) +
                      " parameter(s) of the base model: " + first_few(missing));
  }
  for (const auto& item : buffers) available.erase(item.key());  // e.g. position_ids: nothing to load
  for (const auto& [key, where] : available) report.unexpected.push_back(where.second);
  return report;
}

void save_hf_weights(const torch::nn::Module& model, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace_back(item.key(), item.value());
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  save_safetensors(path, tensors, meta);
}

}  // namespace tbench
