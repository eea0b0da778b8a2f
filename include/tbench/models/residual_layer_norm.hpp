#pragma once
// LayerNorm(residual + Dropout_p(x)): the post-norm "add & norm" that closes every attention and
// feed-forward block of BERT, DistilBERT and RoBERTa. LibTorch runs it as three ops (dropout, add,
// layer_norm), each a pass over the activations. model.fused_layer_norm runs it as one pass that
// reads x and the residual once and writes the sum (kept for the backward), the keep mask and the
// normalised output: a CUDA kernel (src/cuda/residual_layer_norm.cu) on the GPU, a row loop here
// on the CPU. The arithmetic is the three ops': the dropped value is rounded to x's dtype as
// native_dropout rounds it, the sum to the dtype the add would give, and the statistics are taken
// in float over the rounded sum. The backward is LibTorch's (layer_norm's, then dropout's).
#include <torch/torch.h>

namespace tbench::layers {

// What the fused pass writes. `keep_mask` (bool, x's shape) is undefined when nothing was dropped.
struct ResidualNormPass {
  torch::Tensor output;  // LayerNorm(sum) · weight + bias
  torch::Tensor sum;     // residual + Dropout_p(x): the layer norm's input, kept for the backward
  torch::Tensor mean, rstd;  // float, one per row, shaped [..., 1] as native_layer_norm's
  torch::Tensor keep_mask;
};

// Whether the fused pass takes these tensors: float/half/bf16 x and residual of one shape on the
// same device (a CPU, or a CUDA device in a build with tbench's kernels), a float weight and bias
// over the last dimension, and no autocast upcast it would have to make on its own (the output's
// dtype is the sum's). Where it does not, residual_layer_norm runs the three ops instead.
bool fused_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                                 const torch::Tensor& bias);

// The pass alone, without autograd (the tests compare it with the three ops on its own mask).
ResidualNormPass residual_layer_norm_pass(const torch::Tensor& x, const torch::Tensor& residual,
                                          const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                                          double dropout_p);

// LayerNorm(residual + Dropout_p(x)) with autograd; dropout only while `training`. `fused` picks
// the one pass where it applies, LibTorch's three ops otherwise.
torch::Tensor residual_layer_norm(const torch::Tensor& x, const torch::Tensor& residual, torch::nn::LayerNorm& norm,
                                  double dropout_p, bool training, bool fused);

}  // namespace tbench::layers
