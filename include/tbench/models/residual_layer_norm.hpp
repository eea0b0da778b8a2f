#pragma once
// LayerNorm(residual + Dropout_p(x)): the post-norm "add & norm" that closes every attention and
// feed-forward block of BERT, DistilBERT and RoBERTa. LibTorch runs it as three ops (dropout, add,
// layer_norm), each a pass over the activations. model.fused_layer_norm runs it as one pass that
// reads x and the residual once and writes the sum (kept for the backward), the keep mask and the
// normalised output: a CUDA kernel (src/cuda/residual_layer_norm.cu) on the GPU, a row loop here
// on the CPU. The arithmetic is the three ops': the dropped value is rounded to x's dtype as
// native_dropout rounds it, the sum to the dtype the add would give, and the statistics are taken
// in float over the rounded sum.
//
// Under autocast the output is the float residual stream, and the next matmul casts it to
// autocast's dtype: a pass of its own forward, and in the backward a cast and an add to merge the
// matmul's low-precision gradient into the stream's. The fused pass writes that copy itself (the
// same rounding as the cast), and its backward is one pass too: it sums the two gradients, runs
// layer_norm's backward and dropout's, and writes x's and the residual's gradients, with per-block
// column sums for the weight's and bias's.
#include <optional>

#include <torch/torch.h>

namespace tbench::layers {

// What the fused pass writes. `keep_mask` (bool, x's shape) is undefined when nothing was dropped.
struct ResidualNormPass {
  torch::Tensor output;  // LayerNorm(sum) · weight + bias
  torch::Tensor sum;     // residual + Dropout_p(x): the layer norm's input, kept for the backward
  torch::Tensor mean, rstd;  // float, one per row, shaped [..., 1] as native_layer_norm's
  torch::Tensor keep_mask;
  torch::Tensor matmul_copy;  // the output in autocast's dtype, where asked for; else undefined
};

// LayerNorm's output as a block's two readers take it: the residual stream, and the next matmul's
// input. They are one tensor unless the fused pass wrote a low-precision copy for the matmul.
struct NormedHidden {
  torch::Tensor stream;
  torch::Tensor matmul_input;

  static NormedHidden of(const torch::Tensor& hidden) { return {hidden, hidden}; }
};

// The gradients of the pass's inputs.
struct ResidualNormGradients {
  torch::Tensor x, residual, weight, bias;
};

// Whether the fused pass takes these tensors: float/half/bf16 x and residual of one shape on the
// same device (a CPU, or a CUDA device in a build with tbench's kernels), a float weight and bias
// over the last dimension, and no autocast upcast it would have to make on its own (the output's
// dtype is the sum's). Where it does not, residual_layer_norm runs the three ops instead.
bool fused_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                                 const torch::Tensor& bias);

// The pass alone, without autograd (the tests compare it with the three ops on its own mask).
// `copy_dtype` asks for `matmul_copy` (half or bf16, and a float output only).
ResidualNormPass residual_layer_norm_pass(const torch::Tensor& x, const torch::Tensor& residual,
                                          const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                                          double dropout_p,
                                          std::optional<torch::ScalarType> copy_dtype = std::nullopt);

// The pass's backward, without autograd: `grad_output` (the output's dtype) and `grad_copy` (the
// copy's), either of which may be undefined (both: no gradients, all undefined), onto what the
// pass saved. Same arithmetic as layer_norm's backward on their float sum, then dropout's (the
// gradient rounded to x's dtype, then times keep · 1/(1 − p), rounded again). `x_dtype` is x's
// dtype; the residual's gradient is in the sum's.
ResidualNormGradients residual_layer_norm_backward(const torch::Tensor& grad_output, const torch::Tensor& grad_copy,
                                                   const ResidualNormPass& saved, const torch::Tensor& weight,
                                                   double dropout_p, torch::ScalarType x_dtype);

// LayerNorm(residual + Dropout_p(x)) with autograd; dropout only while `training`. `fused` picks
// the one pass where it applies, LibTorch's three ops otherwise. Under autocast the fused pass
// also writes the matmul's copy (NormedHidden::matmul_input); elsewhere both fields are the output.
NormedHidden residual_layer_norm(const torch::Tensor& x, const torch::Tensor& residual, torch::nn::LayerNorm& norm,
                                 double dropout_p, bool training, bool fused);

}  // namespace tbench::layers
