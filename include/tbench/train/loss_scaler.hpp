#pragma once
// Dynamic loss scaling for fp16 (C++ has no GradScaler): scale the loss before backward, unscale
// the gradients and check them for inf/NaN before the optimizer step, skip the step when any is
// non-finite, and grow or back off the scale as PyTorch's GradScaler does (x2 every 2000 clean
// steps, x0.5 on overflow). Built on the same fused kernels GradScaler uses.
#include <vector>

#include <torch/torch.h>

namespace tbench {

class LossScaler {
 public:
  LossScaler(bool enabled, const torch::Device& device, double initial_scale = 65536.0);

  bool enabled() const { return enabled_; }
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Unscales gradients in place; returns a device tensor holding 1 if any was non-finite.
  torch::Tensor unscale(const std::vector<torch::Tensor>& params);
  // Updates the scale in place from `found_inf` (halved after an overflow, doubled after 2000
  // clean steps), on the device: nothing is read back. current_scale() is the new scale.
  void update(const torch::Tensor& found_inf);
  torch::Tensor current_scale() const { return scale_; }

 private:
  bool enabled_;
  torch::Tensor scale_;           // [1] float32 on the device
  torch::Tensor growth_tracker_;  // [1] int32 on the device
};

}  // namespace tbench
