// Fuzz targets for what a model folder holds: safetensors checkpoints (header, offsets, data),
// the sharded index (model.safetensors.index.json) and config.json.

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "fuzz_target.hpp"
#include "tbench/files.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/models/safetensors.hpp"

namespace {

using tbench::fuzz::expect_success_or_input_error;

// A model small enough to load a checkpoint into every input: parameters "weight" [3, 4] and
// "bias" [3].
torch::nn::Linear& small_model() {
  static torch::nn::Linear model(4, 3);
  return model;
}

std::string saved(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                  const std::map<std::string, std::string>& metadata = {}) {
  const std::string path = tbench::fuzz::scratch_dir() + "/seed.safetensors";
  tbench::save_safetensors(path, tensors, metadata);
  return tbench::read_file(path, "the seed");
}

// Reads every tensor of a file, then loads it into the small model (shape and name checks).
void read_checkpoint(const std::string& path) {
  tbench::SafetensorsFile file(path);
  for (const auto& [name, entry] : file.entries()) file.tensor(name);
  tbench::load_hf_weights(*small_model(), path);
}

}  // namespace

TBENCH_FUZZ_TARGET(safetensors) {
  const std::string path = tbench::fuzz::write_scratch_file("model.safetensors", bytes);
  expect_success_or_input_error([&] { read_checkpoint(path); });
}
TBENCH_FUZZ_SEEDS(safetensors) {
  torch::manual_seed(0);
  std::vector<std::string> seeds;
  seeds.push_back(saved({{"weight", torch::randn({3, 4})}, {"bias", torch::randn({3})}}, {{"format", "pt"}}));
  std::vector<std::pair<std::string, torch::Tensor>> every_dtype;
  for (const auto dtype : {torch::kDouble, torch::kFloat, torch::kHalf, torch::kBFloat16, torch::kLong, torch::kInt,
                           torch::kShort, torch::kChar, torch::kByte, torch::kBool}) {
    every_dtype.emplace_back(std::string("t_") + c10::toString(dtype), torch::ones({2, 1}).to(dtype));
  }
  seeds.push_back(saved(every_dtype));
  seeds.push_back(saved({{"weight.gamma", torch::randn({3, 4})}, {"scalar", torch::tensor(1.0)}, {"empty", torch::empty({0, 5})}}));
  return seeds;
}

// The input is the index; the folder also holds a valid shard it may name.
TBENCH_FUZZ_TARGET(safetensors_index) {
  static const bool shard_written = [] {
    tbench::save_safetensors(tbench::fuzz::scratch_dir() + "/model-00001-of-00001.safetensors",
                             {{"weight", torch::zeros({3, 4})}, {"bias", torch::zeros({3})}});
    return true;
  }();
  (void)shard_written;
  const std::string path = tbench::fuzz::write_scratch_file("model.safetensors.index.json", bytes);
  expect_success_or_input_error([&] { tbench::load_hf_weights(*small_model(), path); });
}
TBENCH_FUZZ_SEEDS(safetensors_index) {
  const nlohmann::json index = {{"metadata", {{"total_size", 60}}},
                                {"weight_map", {{"weight", "model-00001-of-00001.safetensors"},
                                                {"bias", "model-00001-of-00001.safetensors"}}}};
  return {index.dump(2)};
}

TBENCH_FUZZ_TARGET(model_config) {
  expect_success_or_input_error([&] { tbench::parse_model_config(bytes, "fuzz-model", "fuzz/config.json"); });
}
TBENCH_FUZZ_SEEDS(model_config) {
  std::vector<std::string> seeds;
  for (const auto& path : tbench::fuzz::repo_files("models", ".json")) seeds.push_back(tbench::fuzz::repo_file(path));
  return seeds;
}
