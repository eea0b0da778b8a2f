#include "tbench/env/hardware.hpp"

#include <algorithm>
#include <fstream>

#include "tbench/errors.hpp"
#include "tbench/json_text.hpp"

namespace tbench {

const std::vector<DeviceSpec>& known_gpus() {
  // Vendor datasheet figures, dense (no structured sparsity).
  static const std::vector<DeviceSpec> gpus = {
      // The PCIe and NVL cards come first: their names also hold "H100" / "H200".
      {"H100 PCIe", {"h100 pcie"}, 51, 378, 756, 756, 2000, "NVIDIA H100 datasheet"},
      {"H100 NVL", {"h100 nvl"}, 60, 417.5, 835, 835, 3900, "NVIDIA H100 NVL datasheet"},
      {"H100 SXM", {"h100"}, 67, 494.7, 989.4, 989.4, 3350, "NVIDIA H100 datasheet"},
      {"H200 NVL", {"h200 nvl"}, 60, 417.5, 835, 835, 4800, "NVIDIA H200 datasheet"},
      {"H200 SXM", {"h200"}, 67, 494.7, 989.4, 989.4, 4800, "NVIDIA H200 datasheet"},
      // The 40 GB cards and the 80 GB PCIe card move fewer bytes a second than the 80 GB SXM one.
      {"A100 40GB", {"a100-sxm4-40gb", "a100-pcie-40gb", "a100 40gb"}, 19.5, 156, 312, 312, 1555, "NVIDIA A100 datasheet"},
      {"A100 PCIe 80GB", {"a100 80gb pcie", "a100-pcie-80gb"}, 19.5, 156, 312, 312, 1935, "NVIDIA A100 datasheet"},
      {"A100 SXM 80GB", {"a100"}, 19.5, 156, 312, 312, 2039, "NVIDIA A100 datasheet"},
      {"V100 SXM2", {"v100"}, 15.7, 0, 125, 0, 900, "NVIDIA V100 datasheet"},
      {"T4", {"t4", "tesla t4"}, 8.1, 0, 65, 0, 320, "NVIDIA T4 datasheet"},
      {"RTX 3090", {"3090"}, 35.6, 35.6, 71, 71, 936, "NVIDIA Ampere GA102 whitepaper"},
      {"Titan RTX", {"titan rtx"}, 16.3, 0, 130, 0, 672, "NVIDIA Turing TU102 whitepaper"},
      {"L4", {"l4"}, 30.3, 60, 121, 121, 300, "NVIDIA L4 datasheet"},
      {"A10", {"a10"}, 31.2, 62.5, 125, 125, 600, "NVIDIA A10 datasheet"},
      {"L40S", {"l40s"}, 91.6, 183, 362, 362, 864, "NVIDIA L40S datasheet"},
  };
  return gpus;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "a10" must not match "a100": an alias matches only as a whole word.
bool contains_word(const std::string& text, const std::string& word) {
  for (auto pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    const bool start_ok = pos == 0 || !std::isalnum(static_cast<unsigned char>(text[pos - 1]));
    const auto end = pos + word.size();
    const bool end_ok = end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (start_ok && end_ok) return true;
  }
  return false;
}

}  // namespace

std::optional<DeviceSpec> find_gpu(const std::string& name) {
  const std::string wanted = lower(name);
  for (const auto& gpu : known_gpus()) {
    if (lower(gpu.name) == wanted) return gpu;
  }
  for (const auto& gpu : known_gpus()) {
    for (const auto& alias : gpu.aliases) {
      if (contains_word(wanted, alias)) return gpu;
    }
  }
  return std::nullopt;
}

DeviceSpec read_device_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw input_error(path + ": cannot open the device spec");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw input_error(path + ": not valid JSON: " + e.what());
  }
  DeviceSpec d;
  // Figures a device could have, with room to spare (a 2026 GPU: ~2,000 dense fp16 TFLOPS, ~8,000
  // GB/s): a slip of units (FLOPS for TFLOPS) would predict steps of nanoseconds or of centuries.
  struct Range {
    double low, high;
    const char* text;
  };
  const auto number = [&](const char* key, bool required, const Range& range) {
    if (!j.contains(key)) {
      if (required) throw input_error(path + ": " + key + ": missing");
      return 0.0;
    }
    // A required figure divides (a step's FLOPs by the peak, its bytes by the bandwidth): 0 is not
    // a figure. An optional one may be 0, meaning the device has no such tensor mode.
    const auto& v = j[key];
    const bool absent_mode = !required && v.is_number() && v.get<double>() == 0;
    if (!v.is_number() || (!absent_mode && !(v.get<double>() >= range.low && v.get<double>() <= range.high))) {
      throw input_error(path + ": " + key + ": expected a number from " + range.text +
                        (required ? "" : " (or 0: no such mode)") + ", got " + json_text(v));
    }
    return v.get<double>();
  };
  if (!j.is_object()) throw input_error(path + ": expected a device spec object {\"name\", \"fp32_tflops\", ...}, got " + json_text(j).substr(0, 40));
  if (j.contains("schema") && j["schema"].is_string() && j["schema"].get<std::string>().rfind("tbench.result", 0) == 0) {
    throw input_error(path + ": a tbench result, not a device spec: --target takes a GPU's name or a JSON file "
                             "{\"name\", \"fp32_tflops\", \"tf32_tflops\", \"fp16_tflops\", \"bf16_tflops\", "
                             "\"memory_gbps\"}");
  }
  if (!j.contains("name") || !j["name"].is_string()) {
    throw input_error(path + ": name: missing (a device spec needs a name)");
  }
  d.name = j["name"];
  const Range tflops{0.001, 100000, "0.001 to 100000 (TFLOPS)"}, gbps{1, 1000000, "1 to 1000000 (GB/s)"};
  d.fp32_tflops = number("fp32_tflops", true, tflops);
  d.tf32_tflops = number("tf32_tflops", false, tflops);
  d.tf32_stated = j.contains("tf32_tflops");
  d.fp16_tflops = number("fp16_tflops", false, tflops);
  d.bf16_tflops = number("bf16_tflops", false, tflops);
  d.memory_gbps = number("memory_gbps", true, gbps);
  d.source = path;
  return d;
}

double peak_tflops(const DeviceSpec& device, const std::string& precision, bool tf32) {
  if (precision == "fp16") return device.fp16_tflops;
  if (precision == "bf16") return device.bf16_tflops;
  return tf32 && device.tf32_tflops > 0 ? device.tf32_tflops : device.fp32_tflops;
}

}  // namespace tbench
