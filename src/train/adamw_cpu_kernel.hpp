#pragma once
// tbench's one-pass CPU AdamW (`train.optimizer_impl: onepass`): each element of a parameter, its
// gradient and its two moments is read once and written once, on LibTorch's intra-op threads.
// The multi-tensor _foreach_* form makes about ten passes over that memory (a step of
// xlnet-base-cased spends ~7% of its time there on CPU), and LibTorch 1.13 has no fused CPU
// kernel (ATen's _fused_adamw_ on CPU arrives in torch 2.4).
#include <vector>

#include <torch/torch.h>

#include "tbench/train/optimizer.hpp"

namespace tbench {

// A parameter's bias corrections after its t-th update (adamw.cpp counts t per parameter).
struct BiasCorrections {
  double first = 1;        // 1 - beta1^t
  double second_sqrt = 1;  // sqrt(1 - beta2^t)
};

// The per-parameter scalars of one update.
struct AdamWCoefficients {
  AdamWSettings settings;
  double weight_decay = 0;
  BiasCorrections bias;
};

// One parameter's update, as adamw.cpp's formula, in the parameter's opmath type.
struct AdamWTensors {
  torch::Tensor param, grad, exp_avg, exp_avg_sq;
  AdamWCoefficients coefficients;
};

// Updates every parameter in place. Contiguous CPU tensors of one floating dtype go through the
// one-pass loop, all of them in one parallel region; any other takes ATen's ops, same formula.
void adamw_cpu_update(const std::vector<AdamWTensors>& updates);

}  // namespace tbench
