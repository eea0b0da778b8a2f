#include "tbench/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace tbench {
namespace {

// The autocast API became device-generic in torch 2.4; 1.13 has per-device functions.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
void set_autocast_enabled(bool cuda, bool on) { at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on); }
torch::ScalarType get_autocast_dtype(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }
void set_autocast_dtype(bool cuda, torch::ScalarType t) { at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t); }
#else
void set_autocast_enabled(bool cuda, bool on) {
  if (cuda) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
torch::ScalarType get_autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(bool cuda, torch::ScalarType t) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
}
#endif

}  // namespace

bool autocast_enabled(bool cuda) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

torch::ScalarType current_autocast_dtype(bool cuda) { return get_autocast_dtype(cuda); }

torch::ScalarType autocast_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp16: return torch::kHalf;
    case Precision::bf16: return torch::kBFloat16;
    case Precision::fp32: break;
  }
  return torch::kFloat;
}

AutocastGuard::AutocastGuard(Precision precision, const torch::Device& device) {
  if (precision == Precision::fp32) return;
  active_ = true;
  cuda_ = device.is_cuda();
  was_enabled_ = autocast_enabled(cuda_);
  previous_dtype_ = get_autocast_dtype(cuda_);
  set_autocast_enabled(cuda_, true);
  set_autocast_dtype(cuda_, autocast_dtype(precision));
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, previous_dtype_);
}

}  // namespace tbench
