// What LibTorch itself reports about its build and math modes, for `env`: the CUDA architectures
// it carries kernels for and whether TF32 is allowed. Works in every build (the CPU one has no
// architectures, and its TF32 switches exist but do nothing).
#include <algorithm>
#include <regex>
#include <sstream>

#include <ATen/Context.h>

#include "tbench/env/env.hpp"

namespace tbench {

std::vector<std::string> cuda_arch_list(const std::string& show_config) {
  static const std::string kLabel = "NVCC architecture flags:";
  std::istringstream lines(show_config);
  std::string line;
  std::vector<std::string> archs;
  while (std::getline(lines, line)) {
    const auto at = line.find(kLabel);
    if (at == std::string::npos) continue;
    // "-gencode;arch=compute_80,code=sm_80;...;arch=compute_90,code=[sm_90,compute_90]"
    static const std::regex code("code=\\[?([A-Za-z0-9_,]+)\\]?");
    const std::string flags = line.substr(at + kLabel.size());
    for (auto it = std::sregex_iterator(flags.begin(), flags.end(), code); it != std::sregex_iterator(); ++it) {
      std::istringstream targets((*it)[1]);
      std::string target;
      while (std::getline(targets, target, ',')) {
        if (!target.empty() && std::find(archs.begin(), archs.end(), target) == archs.end()) archs.push_back(target);
      }
    }
  }
  return archs;
}

void set_cuda_tf32(bool enabled) {
  at::globalContext().setAllowTF32CuBLAS(enabled);
  at::globalContext().setAllowTF32CuDNN(enabled);
}

nlohmann::json tf32_state() {
  return {{"matmul", at::globalContext().allowTF32CuBLAS()}, {"cudnn", at::globalContext().allowTF32CuDNN()}};
}

}  // namespace tbench
