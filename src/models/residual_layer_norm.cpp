#include "tbench/models/residual_layer_norm.hpp"

#include <algorithm>
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

// Calls f(In(), Copy()) with the C++ types of x's dtype and of the matmul copy's, whose pointer a
// loop takes (Copy = float stands for no copy: the pointer is null then).
template <typename F>
auto with_input_and_copy_types(torch::ScalarType input, const torch::Tensor& copy, F&& f) {
  const auto for_input = [&](auto copy_type) {
    switch (input) {
      case torch::kHalf: return f(c10::Half(), copy_type);
      case torch::kBFloat16: return f(c10::BFloat16(), copy_type);
      default: return f(float(), copy_type);
    }
  };
  if (!copy.defined()) return for_input(float());
  if (copy.scalar_type() == torch::kHalf) return for_input(c10::Half());
  return for_input(c10::BFloat16());
}

// One row of the CPU pass, in the order the three ops round: keep · round_x(x · scale), then the
// sum rounded to its dtype, then the statistics (in double) over the rounded sum. `copy` (null
// where not asked for) gets the output rounded as autocast's cast rounds it.
template <typename In, typename Copy>
void residual_norm_row_cpu(const In* x, const float* residual, const bool* keep, float scale, const float* weight,
                           const float* bias, double eps, int64_t cols, float* sum, float* out, Copy* copy,
                           float& mean_out, float& rstd_out) {
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
    if (copy) copy[j] = static_cast<Copy>(out[j]);
  }
  mean_out = static_cast<float>(mean);
  rstd_out = static_cast<float>(rstd);
}

template <typename In, typename Copy>
void residual_norm_cpu(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                       const torch::Tensor& bias, double eps, float scale, const ResidualNormPass& pass) {
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  const In* xs = x.data_ptr<In>();
  const float* rs = residual.data_ptr<float>();
  const bool* keep = pass.keep_mask.defined() ? pass.keep_mask.data_ptr<bool>() : nullptr;
  float* sums = pass.sum.data_ptr<float>();
  float* outs = pass.output.data_ptr<float>();
  Copy* copies = pass.matmul_copy.defined() ? pass.matmul_copy.data_ptr<Copy>() : nullptr;
  float* means = pass.mean.data_ptr<float>();
  float* rstds = pass.rstd.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  const float* b = bias.data_ptr<float>();
  cpu_parallel_for(rows, /*grain=*/16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * cols;
      residual_norm_row_cpu<In, Copy>(xs + at, rs + at, keep ? keep + at : nullptr, scale, w, b, eps, cols,
                                      sums + at, outs + at, copies ? copies + at : nullptr, means[r], rstds[r]);
    }
  });
}

void residual_norm_on_cpu(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
                          const torch::Tensor& bias, double eps, double dropout_p, ResidualNormPass& pass) {
  // The mask is drawn as native_dropout draws it (uniform < 1 - p), from the CPU generator.
  if (dropout_p > 0) pass.keep_mask = torch::rand(x.sizes(), x.options().dtype(torch::kFloat)) < (1.0 - dropout_p);
  const float scale = static_cast<float>(keep_scale(dropout_p));
  with_input_and_copy_types(x.scalar_type(), pass.matmul_copy, [&](auto in, auto copy) {
    residual_norm_cpu<decltype(in), decltype(copy)>(x, residual, weight, bias, eps, scale, pass);
  });
}

// The backward's CPU rows, in blocks of rows whose column sums (the weight's and bias's gradients)
// are kept apart and added at the end: the blocks are fixed by the row count, not the thread
// count, so the sums come out the same at any thread count.
constexpr int64_t kBackwardRowsPerBlock = 32;

// Reads the gradient reaching the output at one element: the stream's plus the copy's.
template <typename Copy>
float incoming_gradient(const float* grad_output, const Copy* grad_copy, int64_t at) {
  float g = grad_output ? grad_output[at] : 0.0f;
  if (grad_copy) g += static_cast<float>(grad_copy[at]);
  return g;
}

// One row of the backward. With g the incoming gradient and x̂ = (sum − mean) · rstd:
//   d sum = rstd · (g·w − mean(g·w) − x̂ · mean(g·w·x̂))        (layer_norm's backward)
//   d x   = round_x(round_x(d sum) · keep · 1/(1 − p))           (dropout's, as LibTorch rounds it)
// and the row's g·x̂ and g are added to the block's column sums.
template <typename In, typename Copy>
void residual_norm_backward_row_cpu(const float* grad_output, const Copy* grad_copy, const float* sum, float mean,
                                    float rstd, const float* weight, const bool* keep, float scale, int64_t cols,
                                    float* grad_residual, In* grad_x, float* weight_sums, float* bias_sums) {
  float dot = 0, dot_normalised = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const float g = incoming_gradient(grad_output, grad_copy, j);
    const float normalised = (sum[j] - mean) * rstd;
    dot += g * weight[j];
    dot_normalised += g * weight[j] * normalised;
    weight_sums[j] += g * normalised;
    bias_sums[j] += g;
  }
  const float mean_dot = dot / static_cast<float>(cols), mean_dot_normalised = dot_normalised / static_cast<float>(cols);
  for (int64_t j = 0; j < cols; ++j) {
    const float g = incoming_gradient(grad_output, grad_copy, j);
    const float normalised = (sum[j] - mean) * rstd;
    const float d = rstd * (g * weight[j] - mean_dot - normalised * mean_dot_normalised);
    grad_residual[j] = d;
    if (!grad_x) continue;
    auto gx = static_cast<In>(d);
    if (keep) gx = keep[j] ? static_cast<In>(static_cast<float>(gx) * scale) : static_cast<In>(0.0f);
    grad_x[j] = gx;
  }
}

// The CPU backward (float sums only, as the CPU pass). Returns the per-block column sums, float
// [blocks, 2, cols]; the caller adds them up.
template <typename In, typename Copy>
torch::Tensor residual_norm_backward_cpu(const torch::Tensor& grad_output, const torch::Tensor& grad_copy,
                                         const ResidualNormPass& saved, const torch::Tensor& weight, float scale,
                                         const torch::Tensor& grad_residual, const torch::Tensor& grad_x) {
  const int64_t cols = saved.sum.size(-1), rows = saved.sum.numel() / cols;
  const int64_t blocks = (rows + kBackwardRowsPerBlock - 1) / kBackwardRowsPerBlock;
  auto partials = torch::zeros({blocks, 2, cols}, saved.sum.options().dtype(torch::kFloat));
  const float* go = grad_output.defined() ? grad_output.data_ptr<float>() : nullptr;
  const Copy* gc = grad_copy.defined() ? grad_copy.data_ptr<Copy>() : nullptr;
  const float* sums = saved.sum.data_ptr<float>();
  const float* means = saved.mean.data_ptr<float>();
  const float* rstds = saved.rstd.data_ptr<float>();
  const bool* keep = saved.keep_mask.defined() ? saved.keep_mask.data_ptr<bool>() : nullptr;
  const float* w = weight.data_ptr<float>();
  float* gr = grad_residual.data_ptr<float>();
  In* gx = grad_x.defined() ? grad_x.data_ptr<In>() : nullptr;
  float* block_sums = partials.data_ptr<float>();
  cpu_parallel_for(blocks, /*grain=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      float* weight_sums = block_sums + block * 2 * cols;
      const int64_t last = std::min(rows, (block + 1) * kBackwardRowsPerBlock);
      for (int64_t r = block * kBackwardRowsPerBlock; r < last; ++r) {
        const int64_t at = r * cols;
        residual_norm_backward_row_cpu<In, Copy>(go ? go + at : nullptr, gc ? gc + at : nullptr, sums + at, means[r],
                                                 rstds[r], w, keep ? keep + at : nullptr, scale, cols, gr + at,
                                                 gx ? gx + at : nullptr, weight_sums, weight_sums + cols);
      }
    }
  });
  return partials;
}

torch::Tensor residual_norm_backward_on_cpu(const torch::Tensor& grad_output, const torch::Tensor& grad_copy,
                                            const ResidualNormPass& saved, const torch::Tensor& weight, float scale,
                                            const torch::Tensor& grad_residual, const torch::Tensor& grad_x) {
  // Without a grad_x of its own, x is float (the caller takes the residual's gradient for it).
  const auto x_dtype = grad_x.defined() ? grad_x.scalar_type() : torch::kFloat;
  return with_input_and_copy_types(x_dtype, grad_copy, [&](auto in, auto copy) {
    return residual_norm_backward_cpu<decltype(in), decltype(copy)>(grad_output, grad_copy, saved, weight, scale,
                                                                    grad_residual, grad_x);
  });
}

// The pass under autograd. Its outputs: the normalised output, and the matmul's copy where the
// pass wrote one. Either may reach the backward without a gradient (undefined, not zeros).
class FusedResidualLayerNorm : public torch::autograd::Function<FusedResidualLayerNorm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                const torch::Tensor& residual, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps, double dropout_p,
                                                std::optional<torch::ScalarType> copy_dtype) {
    ctx->set_materialize_grads(false);
    auto pass = residual_layer_norm_pass(x, residual, weight, bias, eps, dropout_p, copy_dtype);
    ctx->save_for_backward({pass.sum, pass.mean, pass.rstd, weight, pass.keep_mask});
    ctx->saved_data["dropout_p"] = dropout_p;
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    if (pass.matmul_copy.defined()) return {pass.output, pass.matmul_copy};
    return {pass.output};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    ResidualNormPass pass;
    pass.sum = saved[0];
    pass.mean = saved[1];
    pass.rstd = saved[2];
    pass.keep_mask = saved[4];
    const auto grad_copy = grads.size() > 1 ? grads[1] : torch::Tensor();
    auto g = residual_layer_norm_backward(grads[0], grad_copy, pass, saved[3], ctx->saved_data["dropout_p"].toDouble(),
                                          static_cast<torch::ScalarType>(ctx->saved_data["x_dtype"].toInt()));
    return {g.x, g.residual, g.weight, g.bias, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// LibTorch's ops for the backward, where no one-pass backward takes the tensors (a CUDA row wider
// than the kernel's column sums hold): the gradients' float sum, layer_norm's backward, dropout's.
ResidualNormGradients residual_norm_backward_by_ops(const torch::Tensor& grad_output, const torch::Tensor& grad_copy,
                                                    const ResidualNormPass& saved, const torch::Tensor& weight,
                                                    double dropout_p, torch::ScalarType x_dtype) {
  const auto& sum = saved.sum;
  const int64_t cols = sum.size(-1);
  auto grad = grad_output;
  if (grad_copy.defined()) {
    const auto copy = grad_copy.to(sum.scalar_type());
    grad = grad_output.defined() ? grad_output + copy : copy;
  }
  // The bias's gradient is the incoming gradient summed over rows: LibTorch's CUDA backward would
  // make it only with the bias at hand, which the pass does not keep.
  auto [grad_sum, grad_weight, no_grad_bias] = at::native_layer_norm_backward(
      grad.contiguous(), sum, {cols}, saved.mean, saved.rstd, weight, torch::Tensor(), {true, true, false});
  const auto grad_bias = grad.reshape({-1, cols}).sum(0, /*keepdim=*/false, torch::kFloat);
  auto grad_x = grad_sum.to(x_dtype);
  if (saved.keep_mask.defined()) grad_x = grad_x.mul(saved.keep_mask).mul_(keep_scale(dropout_p));
  return {grad_x, grad_sum, grad_weight, grad_bias};
}

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
                                          double dropout_p, std::optional<torch::ScalarType> copy_dtype) {
  TORCH_CHECK(fused_residual_norm_applies(x, residual, weight, bias),
              "model.fused_layer_norm: the fused pass does not take these tensors");
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, "dropout probability must be in [0, 1), got ", dropout_p);
  const auto dtype = sum_dtype(x, residual);
  TORCH_CHECK(!copy_dtype || ((*copy_dtype == torch::kHalf || *copy_dtype == torch::kBFloat16) && dtype == torch::kFloat),
              "model.fused_layer_norm: the matmul's copy is half or bf16, of a float output");
  const auto input = x.contiguous();
  const auto stream = residual.to(dtype).contiguous();
  auto stat_shape = x.sizes().vec();
  stat_shape.back() = 1;
  ResidualNormPass pass;
  pass.sum = torch::empty(x.sizes(), x.options().dtype(dtype));
  pass.output = torch::empty_like(pass.sum);
  pass.mean = torch::empty(stat_shape, x.options().dtype(torch::kFloat));
  pass.rstd = torch::empty_like(pass.mean);
  if (copy_dtype) pass.matmul_copy = torch::empty(x.sizes(), x.options().dtype(*copy_dtype));
  if (x.is_cpu()) {
    residual_norm_on_cpu(input, stream, weight.contiguous(), bias.contiguous(), eps, dropout_p, pass);
    return pass;
  }
#if TBENCH_WITH_CUDA_KERNELS
  if (dropout_p > 0) pass.keep_mask = torch::empty(x.sizes(), x.options().dtype(torch::kBool));
  cuda::residual_layer_norm_forward(input, stream, weight.contiguous(), bias.contiguous(), eps, dropout_p, pass.output,
                                    pass.sum, pass.mean, pass.rstd, pass.keep_mask, pass.matmul_copy);
#endif
  return pass;
}

ResidualNormGradients residual_layer_norm_backward(const torch::Tensor& grad_output, const torch::Tensor& grad_copy,
                                                   const ResidualNormPass& saved, const torch::Tensor& weight,
                                                   double dropout_p, torch::ScalarType x_dtype) {
  const auto& sum = saved.sum;
  if (!grad_output.defined() && !grad_copy.defined()) return {};  // no gradient reached the output: none flows back
  const bool on_cpu = sum.is_cpu();
  bool one_pass = on_cpu;
#if TBENCH_WITH_CUDA_KERNELS
  one_pass = one_pass || (sum.is_cuda() && sum.size(-1) <= cuda::kResidualNormBackwardMaxCols);
#endif
  if (!one_pass) return residual_norm_backward_by_ops(grad_output, grad_copy, saved, weight, dropout_p, x_dtype);

  // x's gradient is the residual's where nothing was dropped and the dtypes agree: one tensor.
  const bool own_grad_x = saved.keep_mask.defined() || x_dtype != sum.scalar_type();
  ResidualNormGradients g;
  g.residual = torch::empty_like(sum);
  g.x = own_grad_x ? torch::empty(sum.sizes(), sum.options().dtype(x_dtype)) : torch::Tensor();
  const float scale = static_cast<float>(keep_scale(dropout_p));
  const auto grad_out = grad_output.defined() ? grad_output.contiguous() : grad_output;
  const auto grad_cp = grad_copy.defined() ? grad_copy.contiguous() : grad_copy;
  torch::Tensor partials;
  if (on_cpu) {
    partials = residual_norm_backward_on_cpu(grad_out, grad_cp, saved, weight.contiguous(), scale, g.residual, g.x);
  }
#if TBENCH_WITH_CUDA_KERNELS
  if (!on_cpu) {
    const int64_t cols = sum.size(-1), rows = sum.numel() / cols;
    partials = torch::empty({cuda::residual_layer_norm_backward_blocks(rows, sum.device()), 2, cols},
                            sum.options().dtype(torch::kFloat));
    cuda::residual_layer_norm_backward(grad_out, grad_cp, sum, saved.mean, saved.rstd, weight.contiguous(),
                                       saved.keep_mask, scale, g.residual, g.x, partials);
  }
#endif
  const auto column_sums = partials.sum(0);
  g.weight = column_sums[0];
  g.bias = column_sums[1];
  if (!own_grad_x) g.x = g.residual;
  return g;
}

NormedHidden residual_layer_norm(const torch::Tensor& x, const torch::Tensor& residual, torch::nn::LayerNorm& norm,
                                 double dropout_p, bool training, bool fused) {
  const double p = training ? dropout_p : 0.0;
  if (!fused || !fused_residual_norm_applies(x, residual, norm->weight, norm->bias)) {
    return NormedHidden::of(norm(residual + (p > 0 ? layers::dropout(x, p, /*train=*/true) : x)));
  }
  // Under autocast a float output feeds a matmul that would cast it: the pass writes that copy.
  std::optional<torch::ScalarType> copy_dtype;
  if (autocast_enabled(x.is_cuda()) && sum_dtype(x, residual) == torch::kFloat) {
    const auto cast_to = current_autocast_dtype(x.is_cuda());
    if (cast_to == torch::kHalf || cast_to == torch::kBFloat16) copy_dtype = cast_to;
  }
  const auto outputs =
      FusedResidualLayerNorm::apply(x, residual, norm->weight, norm->bias, norm->options.eps(), p, copy_dtype);
  return {outputs[0], outputs.size() > 1 ? outputs[1] : outputs[0]};
}

}  // namespace tbench::layers
