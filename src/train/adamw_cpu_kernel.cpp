// The one-pass CPU AdamW; see adamw_cpu_kernel.hpp. Built with -fno-math-errno (CMakeLists.txt)
// so GCC vectorises the float loop's sqrt: the second moment is never negative.
#include "adamw_cpu_kernel.hpp"

#include <algorithm>
#include <cmath>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/record_function.h>

#include <torch/csrc/autograd/variable.h>

#include "tbench/cpu_parallel.hpp"

namespace tbench {
namespace {

constexpr int64_t kChunk = 16384;  // elements per unit of parallel work

// The coefficients in the arithmetic type of the loop, each computed once per parameter.
template <typename acc_t>
struct Coefficients {
  acc_t decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps, step_size;

  explicit Coefficients(const AdamWCoefficients& c)
      : decay(static_cast<acc_t>(1.0 - c.settings.lr * c.weight_decay)),
        beta1(static_cast<acc_t>(c.settings.beta1)),
        one_minus_beta1(static_cast<acc_t>(1.0 - c.settings.beta1)),
        beta2(static_cast<acc_t>(c.settings.beta2)),
        one_minus_beta2(static_cast<acc_t>(1.0 - c.settings.beta2)),
        bias_correction2_sqrt(static_cast<acc_t>(c.bias.second_sqrt)),
        eps(static_cast<acc_t>(c.settings.eps)),
        step_size(static_cast<acc_t>(c.settings.lr / c.bias.first)) {}
};

// Elements [begin, end) of one parameter, with the foreach form's formula and order (rounded to the
// storage type once per element, where foreach rounds bf16 and half after every op):
//   p *= 1 - lr·wd;  m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;
//   p -= lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + eps)
template <typename scalar_t>
void update_range(const AdamWTensors& t, int64_t begin, int64_t end) {
  using acc_t = at::opmath_type<scalar_t>;
  const Coefficients<acc_t> c(t.coefficients);
  scalar_t* __restrict p = t.param.data_ptr<scalar_t>();
  const scalar_t* __restrict g = t.grad.data_ptr<scalar_t>();
  scalar_t* __restrict m = t.exp_avg.data_ptr<scalar_t>();
  scalar_t* __restrict v = t.exp_avg_sq.data_ptr<scalar_t>();
  for (int64_t j = begin; j < end; ++j) {
    const acc_t grad = static_cast<acc_t>(g[j]);
    const acc_t exp_avg = static_cast<acc_t>(m[j]) * c.beta1 + c.one_minus_beta1 * grad;
    const acc_t exp_avg_sq = static_cast<acc_t>(v[j]) * c.beta2 + c.one_minus_beta2 * grad * grad;
    const acc_t denom = std::sqrt(exp_avg_sq) / c.bias_correction2_sqrt + c.eps;
    const acc_t decayed = static_cast<acc_t>(p[j]) * c.decay;
    m[j] = static_cast<scalar_t>(exp_avg);
    v[j] = static_cast<scalar_t>(exp_avg_sq);
    p[j] = static_cast<scalar_t>(decayed - c.step_size * exp_avg / denom);
  }
}

void update_piece(const AdamWTensors& t, int64_t begin, int64_t end) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, t.param.scalar_type(), "tbench_adamw_one_pass",
                                  [&] { update_range<scalar_t>(t, begin, end); });
}

bool one_pass_applies(const AdamWTensors& t) {
  const auto dtype = t.param.scalar_type();
  for (const auto* tensor : {&t.param, &t.grad, &t.exp_avg, &t.exp_avg_sq}) {
    if (!tensor->device().is_cpu() || !tensor->is_contiguous() || tensor->scalar_type() != dtype) return false;
  }
  return t.param.is_floating_point() && t.grad.numel() == t.param.numel();
}

// ATen's ops, same formula and order, for the tensors the loop does not take.
void update_with_aten_ops(const AdamWTensors& t) {
  const AdamWSettings& s = t.coefficients.settings;
  const BiasCorrections& bias = t.coefficients.bias;
  const double weight_decay = t.coefficients.weight_decay;
  const auto grad = t.grad.to(t.param.scalar_type());  // ATen's addcmul_ takes no mixed dtypes
  if (weight_decay != 0) t.param.mul_(1.0 - s.lr * weight_decay);
  t.exp_avg.mul_(s.beta1).add_(grad, 1.0 - s.beta1);
  t.exp_avg_sq.mul_(s.beta2).addcmul_(grad, grad, 1.0 - s.beta2);
  const auto denom = t.exp_avg_sq.sqrt().div_(bias.second_sqrt).add_(s.eps);
  t.param.addcdiv_(t.exp_avg, denom, -s.lr / bias.first);
}

// A piece of one parameter: the unit the threads share.
struct Piece {
  const AdamWTensors* tensors;
  int64_t begin, end;
};

}  // namespace

void adamw_cpu_update(const std::vector<AdamWTensors>& updates) {
  RECORD_FUNCTION("tbench::adamw_onepass", std::vector<c10::IValue>());  // the profile's "optimizer" share
  std::vector<const AdamWTensors*> in_loop;
  std::vector<Piece> pieces;
  for (const auto& t : updates) {
    if (!one_pass_applies(t)) {
      update_with_aten_ops(t);
      continue;
    }
    in_loop.push_back(&t);
    const int64_t n = t.param.numel();
    for (int64_t begin = 0; begin < n; begin += kChunk) pieces.push_back({&t, begin, std::min(n, begin + kChunk)});
  }
  // One parallel region for the whole model: small parameters (biases, LayerNorms) share threads
  // with the large ones instead of each paying for a region of its own.
  cpu_parallel_for(static_cast<int64_t>(pieces.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const Piece& piece = pieces[static_cast<std::size_t>(i)];
      update_piece(*piece.tensors, piece.begin, piece.end);
    }
  });
  // Written through raw pointers: tell autograd these tensors changed, as an in-place op would.
  for (const AdamWTensors* t : in_loop) {
    for (const auto* tensor : {&t->param, &t->exp_avg, &t->exp_avg_sq}) torch::autograd::impl::bump_version(*tensor);
  }
}

}  // namespace tbench
