// Dropout's fused CPU kernel (see dropout.hpp for why it exists and what it draws).
#include "tbench/models/dropout.hpp"

#include <atomic>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>

#include "tbench/cpu_parallel.hpp"

namespace tbench::layers {
namespace {

std::atomic<CpuDropoutChoice> g_cpu_kernel{CpuDropoutChoice::fused};

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

// SplitMix64 (Steele, Lea and Flood, 2014): its output at position i of the stream that starts at
// `key`. Each output gives two elements their 32-bit draws.
inline uint64_t splitmix64(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Element j is kept when its 32-bit draw is at least p · 2^32: with probability 1 − p.
uint32_t drop_threshold(double p) { return static_cast<uint32_t>(p * 4294967296.0); }

uint64_t draw_key() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

// y = x · keep / (1 − p), keep written to `mask`. A multiplication, as at::dropout's, so a NaN or
// an infinity that is dropped still gives NaN (fp16's loss scaling must see it).
void forward_kernel(const torch::Tensor& x, torch::Tensor& y, torch::Tensor& mask, double p, uint64_t key) {
  const int64_t n = x.numel();
  const uint32_t threshold = drop_threshold(p);
  uint8_t* keep = mask.data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "tbench_dropout", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t scale = static_cast<acc_t>(keep_scale(p));
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* out = y.data_ptr<scalar_t>();
    // Pairs of elements, so a chunk never splits one draw's two halves.
    cpu_parallel_for((n + 1) / 2, kGrain / 2, [&](int64_t begin, int64_t end) {
      for (int64_t pair = begin; pair < end; ++pair) {
        const uint64_t draw = splitmix64(key, static_cast<uint64_t>(pair));
        const int64_t j = 2 * pair;
        const uint32_t halves[2] = {static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32)};
        for (int64_t k = 0; k < 2 && j + k < n; ++k) {
          const bool kept = halves[k] >= threshold;
          keep[j + k] = kept;
          out[j + k] = static_cast<scalar_t>(static_cast<acc_t>(in[j + k]) * (kept ? scale : acc_t(0)));
        }
      }
    });
  });
}

// dx = dy · keep / (1 − p).
torch::Tensor backward_kernel(const torch::Tensor& dy_in, const torch::Tensor& mask, double p) {
  const auto dy = dy_in.contiguous();
  auto dx = torch::empty_like(dy);
  const int64_t n = dy.numel();
  const uint8_t* keep = mask.data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, dy.scalar_type(), "tbench_dropout_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t scale = static_cast<acc_t>(keep_scale(p));
    const scalar_t* in = dy.data_ptr<scalar_t>();
    scalar_t* out = dx.data_ptr<scalar_t>();
    cpu_parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        out[j] = static_cast<scalar_t>(static_cast<acc_t>(in[j]) * (static_cast<acc_t>(keep[j]) * scale));
      }
    });
  });
  return dx;
}

struct FusedDropoutFunction : public torch::autograd::Function<FusedDropoutFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p, int64_t key) {
    const auto input = x.contiguous();
    auto y = torch::empty_like(input);
    auto mask = torch::empty(input.sizes(), input.options().dtype(torch::kUInt8));
    forward_kernel(input, y, mask, p, static_cast<uint64_t>(key));
    ctx->saved_data["p"] = p;
    ctx->save_for_backward({mask});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto mask = ctx->get_saved_variables()[0];
    return {backward_kernel(grads[0], mask, ctx->saved_data["p"].toDouble()), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void set_cpu_dropout_kernel(CpuDropoutChoice kernel) { g_cpu_kernel.store(kernel); }

CpuDropoutChoice cpu_dropout_kernel() { return g_cpu_kernel.load(); }

torch::Tensor fused_dropout(const torch::Tensor& x, double p, uint64_t key) {
  TORCH_CHECK(x.device().is_cpu(), "fused_dropout: a CPU tensor");
  TORCH_CHECK(p >= 0 && p < 1, "fused_dropout: p in [0, 1)");
  return FusedDropoutFunction::apply(x, p, static_cast<int64_t>(key));
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  // As at::dropout: nothing to do outside training or at p = 0, and p = 1 drops everything.
  if (!training || p == 0 || x.numel() == 0) return x;
  if (!x.device().is_cpu() || !x.is_floating_point() || p >= 1 || cpu_dropout_kernel() == CpuDropoutChoice::torch) {
    return torch::dropout(x, p, training);
  }
  return fused_dropout(x, p, draw_key());
}

}  // namespace tbench::layers
