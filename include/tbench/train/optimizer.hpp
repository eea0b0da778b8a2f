#pragma once
// AdamW four ways, chosen by `train.optimizer_impl`, so the optimizer's share of a step can be
// measured: one kernel per parameter and op (LibTorch's torch::optim::AdamW), one launch per op
// over all tensors of a group (_foreach_*), tbench's one pass over each tensor on the CPU
// (onepass), or ATen's fused kernel for the whole update.
// All four compute HF's AdamW (decoupled weight decay, bias correction, eps outside the sqrt).
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/spec/spec.hpp"

namespace tbench {

// What `auto` means on this device in this build: ATen's fused kernel where it exists (CUDA torch
// >= 2.0, CPU torch >= 2.4), else tbench's one-pass loop on CPU and foreach on CUDA. Returns
// `requested` unchanged otherwise (an unavailable fused is the caller's error).
OptimizerImpl resolve_optimizer_impl(OptimizerImpl requested, bool on_cuda);

// Parameters sharing one weight decay (HF's decay / no-decay split).
struct AdamWGroup {
  std::vector<torch::Tensor> params;
  double weight_decay = 0;
};

struct AdamWSettings {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual OptimizerImpl impl() const = 0;
  // Applies to every group from the next step on (the trainer's LR schedule).
  virtual void set_lr(double lr) = 0;
  // One AdamW update from the parameters' .grad; parameters without a gradient are left alone.
  virtual void step() = 0;
  // fp16: the update is skipped on the device where `found_inf` (a [1] float tensor from the
  // loss scaler) is non-zero, so the host never waits to read it. Only where
  // skips_on_device(); the others need the caller to read found_inf and not call step().
  virtual void step_unless_inf(const torch::Tensor& found_inf);
  virtual bool skips_on_device() const { return false; }
};

// Why `impl` cannot run on this device in this build ("" where it can), worded for after
// "train.optimizer_impl: ": the spec's check and make_adamw say the same.
std::string optimizer_unavailable_reason(OptimizerImpl impl, bool on_cuda);

// Throws a bad-input Error for `fused` where this build has no fused kernel for the device.
// `capturable` (train.cuda_graph; fused on CUDA, torch >= 2.2): the learning rate lives in a
// device tensor that set_lr() fills, so a replayed CUDA graph follows the schedule.
std::unique_ptr<Optimizer> make_adamw(OptimizerImpl impl, std::vector<AdamWGroup> groups, const AdamWSettings& settings,
                                      const torch::Device& device, bool capturable = false);

}  // namespace tbench
