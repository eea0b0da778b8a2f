#include "tbench/models/residual_layer_norm.hpp"

#include <cmath>

#include "tbench/cpu_parallel.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/models/dropout.hpp"
#include "tbench/train/precision.hpp"
#if TBENCH_WITH_CUDA_KERNELS
#include "tbench/cuda/kernels.hpp"
#endif

namespace tbench::layers {
namespace {

bool is_float_type(torch::ScalarType t) { return t == torch::kFloat || t == torch::kHalf || t == torch::kBFloat16; }

// The dtype residual + x has, which is also the output's: under autocast layer_norm runs in float,
// so the fused pass applies there only where the sum is float already (the residual stream is the
// float output of the previous LayerNorm in every BERT-family block).
torch::ScalarType sum_dtype(const torch::Tensor& x, const torch::Tensor& residual) {
  return c10::promoteTypes(x.scalar_type(), residual.scalar_type());
}

// One row of the CPU pass, in the order the three ops round: keep · round_x(x · scale), then the
// sum rounded to its dtype, then the statistics (in double) over the rounded sum.
template <typename In>
void residual_norm_row_cpu(const In* x, const float* residual, const bool* keep, float scale, const float* weight,
                           const float* bias, double eps, int64_t cols, float* sum, float* out, float& mean_out,
                           float& rstd_out) {
  double total = 0;
  for (int64_t j = 0; j < cols; ++j) {
    float dropped = static_cast<float>(x[j]);
    if (keep) dropped = keep[j] ? static_cast<float>(static_cast<In>(dropped * scale)) : 0.0f;
    sum[j] = residual[j] + dropped;
    total += sum[j];
  }
  const double mean = total / static_cast<double>(cols);
  double squares = 0;
  for (int64_t j = 0; j < cols; ++j) squares += (sum[j] - mean) * (sum[j] - mean);
  const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
  for (int64_t j = 0; j < cols; ++j) {
    out[j] = static_cast<float>((sum[j] - mean) * rstd) * weight[j] + bias[j];
  }
  mean_out = static_cast<float>(mean);
  rstd_out = static_cast<float>(rstd);
}

template <typename In>
void residual_norm_cpu(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                       const torch::Tensor& bias, double eps, float scale, const ResidualNormPass& pass) {
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  const In* xs = x.data_ptr<In>();
  const float* rs = residual.data_ptr<float>();
  const bool* keep = pass.keep_mask.defined() ? pass.keep_mask.data_ptr<bool>() : nullptr;
  float* sums = pass.sum.data_ptr<float>();
  float* outs = pass.output.data_ptr<float>();
  float* means = pass.mean.data_ptr<float>();
  float* rstds = pass.rstd.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  const float* b = bias.data_ptr<float>();
  cpu_parallel_for(rows, /*grain=*/16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * cols;
      residual_norm_row_cpu<In>(xs + at, rs + at, keep ? keep + at : nullptr, scale, w, b, eps, cols, sums + at,
                                outs + at, means[r], rstds[r]);
    }
  });
}

void residual_norm_on_cpu(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                          const torch::Tensor& bias, double eps, double dropout_p, ResidualNormPass& pass) {
  // The mask is drawn as native_dropout draws it (uniform < 1 - p), from the CPU generator.
  if (dropout_p > 0) pass.keep_mask = torch::rand(x.sizes(), x.options().dtype(torch::kFloat)) < (1.0 - dropout_p);
  const float scale = dropout_p > 0 ? static_cast<float>(1.0 / (1.0 - dropout_p)) : 1.0f;
  switch (x.scalar_type()) {
    case torch::kHalf: return residual_norm_cpu<c10::Half>(x, residual, weight, bias, eps, scale, pass);
    case torch::kBFloat16: return residual_norm_cpu<c10::BFloat16>(x, residual, weight, bias, eps, scale, pass);
    default: return residual_norm_cpu<float>(x, residual, weight, bias, eps, scale, pass);
  }
}

// LibTorch's backward for the pass: layer_norm's on the saved sum and statistics, which is the
// residual's gradient, then dropout's (mask · scale) for x's.
class FusedResidualLayerNorm : public torch::autograd::Function<FusedResidualLayerNorm> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& residual, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps, double dropout_p) {
    auto pass = residual_layer_norm_pass(x, residual, weight, bias, eps, dropout_p);
    ctx->save_for_backward({pass.sum, pass.mean, pass.rstd, weight, bias, pass.keep_mask});
    ctx->saved_data["dropout_p"] = dropout_p;
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    return pass.output;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &sum = saved[0], &mean = saved[1], &rstd = saved[2], &weight = saved[3], &bias = saved[4],
               &keep_mask = saved[5];
    const auto grad_out = grads[0].contiguous();
    auto [grad_sum, grad_weight, grad_bias] =
        at::native_layer_norm_backward(grad_out, sum, {sum.size(-1)}, mean, rstd, weight, bias,
                                       {true, ctx->needs_input_grad(2), ctx->needs_input_grad(3)});
    // Dropout's backward, as native_dropout_backward: the gradient in x's dtype, times keep · scale.
    const auto x_dtype = static_cast<torch::ScalarType>(ctx->saved_data["x_dtype"].toInt());
    auto grad_x = grad_sum.to(x_dtype);
    if (keep_mask.defined()) grad_x = grad_x.mul(keep_mask).mul_(1.0 / (1.0 - ctx->saved_data["dropout_p"].toDouble()));
    return {grad_x, grad_sum, grad_weight, grad_bias, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool fused_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                                 const torch::Tensor& bias) {
  if (!x.defined() || !residual.defined() || !weight.defined() || !bias.defined()) return false;
  if (x.sizes() != residual.sizes() || x.numel() == 0) return false;
  if (!is_float_type(x.scalar_type()) || !is_float_type(residual.scalar_type())) return false;
  if (weight.scalar_type() != torch::kFloat || bias.scalar_type() != torch::kFloat) return false;
  if (weight.numel() != x.size(-1) || bias.numel() != x.size(-1)) return false;
  const auto device = x.device();
  if (residual.device() != device || weight.device() != device || bias.device() != device) return false;
  const auto dtype = sum_dtype(x, residual);
  if (device.is_cpu()) return dtype == torch::kFloat;  // the CPU loop keeps float sums only
  if (!device.is_cuda() || !features::kCudaKernels) return false;
  return dtype == torch::kFloat || !autocast_enabled(/*cuda=*/true);
}

ResidualNormPass residual_layer_norm_pass(const torch::Tensor& x, const torch::Tensor& residual,
                                          const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                                          double dropout_p) {
  TORCH_CHECK(fused_residual_norm_applies(x, residual, weight, bias),
              "model.fused_layer_norm: the fused pass does not take these tensors");
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, "dropout probability must be in [0, 1), got ", dropout_p);
  const auto dtype = sum_dtype(x, residual);
  const auto input = x.contiguous();
  const auto stream = residual.to(dtype).contiguous();
  auto stat_shape = x.sizes().vec();
  stat_shape.back() = 1;
  ResidualNormPass pass;
  pass.sum = torch::empty(x.sizes(), x.options().dtype(dtype));
  pass.output = torch::empty_like(pass.sum);
  pass.mean = torch::empty(stat_shape, x.options().dtype(torch::kFloat));
  pass.rstd = torch::empty_like(pass.mean);
  if (x.is_cpu()) {
    residual_norm_on_cpu(input, stream, weight.contiguous(), bias.contiguous(), eps, dropout_p, pass);
    return pass;
  }
#if TBENCH_WITH_CUDA_KERNELS
  if (dropout_p > 0) pass.keep_mask = torch::empty(x.sizes(), x.options().dtype(torch::kBool));
  cuda::residual_layer_norm_forward(input, stream, weight.contiguous(), bias.contiguous(), eps, dropout_p, pass.output,
                                    pass.sum, pass.mean, pass.rstd, pass.keep_mask);
#endif
  return pass;
}

torch::Tensor residual_layer_norm(const torch::Tensor& x, const torch::Tensor& residual, torch::nn::LayerNorm& norm,
                                  double dropout_p, bool training, bool fused) {
  const double p = training ? dropout_p : 0.0;
  if (fused && fused_residual_norm_applies(x, residual, norm->weight, norm->bias)) {
    return FusedResidualLayerNorm::apply(x, residual, norm->weight, norm->bias, norm->options.eps(), p);
  }
  return norm(residual + (p > 0 ? layers::dropout(x, p, /*train=*/true) : x));
}

}  // namespace tbench::layers
