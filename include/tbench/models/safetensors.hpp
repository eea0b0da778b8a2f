#pragma once
// safetensors, HF's checkpoint format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the raw bytes.
// The reader checks every length, offset and size against the file before reading a byte of
// data, so a truncated or hostile file is an error, never an out-of-bounds read. It reads with
// pread, not a mapping: a file cut short while it is read (another job rewriting a checkpoint)
// then gives a short read and an error, where a mapping would give SIGBUS.
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace tbench {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

class SafetensorsFile {
 public:
  // Opens the file and validates its header; throws a bad-input Error naming the file.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // A copy of the tensor's data (CPU, its stored dtype). Throws naming the file if the file has
  // become shorter than its header says.
  torch::Tensor tensor(const std::string& name) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t data_start_ = 0;  // file offset of the data section
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (made contiguous, moved to CPU) atomically, names sorted, with metadata.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// What loading HF weights into a model did.
struct WeightLoadReport {
  std::vector<std::string> loaded;
  std::vector<std::string> initialised;  // missing from the checkpoint, kept at random init (a new head)
  std::vector<std::string> unexpected;   // in the checkpoint, not in the model (pre-training heads): ignored
  std::vector<std::string> files;        // the safetensors files read
};

// Loads HF weights by name into `model`: `path` is a .safetensors file, a directory holding
// model.safetensors or model.safetensors.index.json (sharded), or that index file itself.
// Mis-shaped tensors and missing non-head parameters are errors; HF's renames (LayerNorm
// gamma/beta) and a checkpoint saved without the base-model prefix are handled as HF does.
WeightLoadReport load_hf_weights(torch::nn::Module& model, const std::string& path);

// Saves the model's parameters (and persistent buffers) under their HF names.
void save_hf_weights(const torch::nn::Module& model, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});

}  // namespace tbench
