// AdamW as a per-tensor loop (LibTorch's own), as multi-tensor _foreach_* ops, as tbench's
// one-pass CPU loop (adamw_cpu_kernel.cpp) and as ATen's fused kernel, all with the same arithmetic:
//   p *= 1 - lr * wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// `t` counts each parameter's own updates, so a skipped fp16 step does not advance it.
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "adamw_cpu_kernel.hpp"
#include "tbench/errors.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/env/torch_features.hpp"

namespace tbench {
namespace {

// LibTorch's torch::optim::AdamW: a handful of kernels per parameter per step.
class LoopAdamW : public Optimizer {
 public:
  LoopAdamW(std::vector<AdamWGroup> groups, const AdamWSettings& s) {
    std::vector<torch::optim::OptimizerParamGroup> param_groups;
    for (auto& group : groups) {
      auto options = std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).eps(s.eps).weight_decay(group.weight_decay));
      param_groups.emplace_back(std::move(group.params), std::move(options));
    }
    adamw_ = std::make_unique<torch::optim::AdamW>(std::move(param_groups), torch::optim::AdamWOptions(s.lr));
  }
  OptimizerImpl impl() const override { return OptimizerImpl::loop; }
  void set_lr(double lr) override {
    for (auto& group : adamw_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  void step() override { adamw_->step(); }

 private:
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

// Per-parameter state shared by the multi-tensor implementations, keyed by the parameter itself
// (never by a detached alias: each detach() is a new TensorImpl, so its state would start afresh).
struct MomentState {
  torch::Tensor exp_avg, exp_avg_sq;
  int64_t steps = 0;          // foreach and onepass: the update count, on the host
  torch::Tensor step_count;   // fused: the update count as a 0-dim float tensor on the device
};

// The parameters of a group that have a gradient this step, with their state (created on first use).
struct StepTensors {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  std::vector<MomentState*> states;
};

class MomentStore {
 public:
  StepTensors gather(const AdamWGroup& group) {
    StepTensors t;
    for (const auto& p : group.params) {
      if (!p.grad().defined()) continue;
      MomentState& state = state_for(p);
      t.params.push_back(p.detach());
      t.grads.push_back(p.grad().detach());
      t.exp_avgs.push_back(state.exp_avg);
      t.exp_avg_sqs.push_back(state.exp_avg_sq);
      t.states.push_back(&state);
    }
    return t;
  }

 private:
  MomentState& state_for(const torch::Tensor& p) {
    auto [it, inserted] = states_.try_emplace(p.unsafeGetTensorImpl());
    if (inserted) {
      it->second.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      it->second.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    }
    return it->second;
  }

  std::unordered_map<const c10::TensorImpl*, MomentState> states_;
};

// Counts one more update of a parameter (foreach and onepass: on the host) and returns the bias
// corrections it then takes.
BiasCorrections advance_step(MomentState& state, const AdamWSettings& s) {
  const auto t = static_cast<double>(++state.steps);
  return {1.0 - std::pow(s.beta1, t), std::sqrt(1.0 - std::pow(s.beta2, t))};
}

// One launch per op over all tensors of a group (the kernels PyTorch's foreach=True uses). The
// bias corrections differ per parameter only if some parameter missed a step, so they are passed
// as per-tensor scalar lists.
class ForeachAdamW : public Optimizer {
 public:
  ForeachAdamW(std::vector<AdamWGroup> groups, const AdamWSettings& s) : groups_(std::move(groups)), settings_(s) {}
  OptimizerImpl impl() const override { return OptimizerImpl::foreach; }
  void set_lr(double lr) override { settings_.lr = lr; }

  void step() override {
    torch::NoGradGuard no_grad;
    for (const auto& group : groups_) step_group(group);
  }

 private:
  void step_group(const AdamWGroup& group) {
    StepTensors t = moments_.gather(group);
    if (t.params.empty()) return;
    const AdamWSettings& s = settings_;
    if (group.weight_decay != 0) at::_foreach_mul_(t.params, 1.0 - s.lr * group.weight_decay);

    std::vector<at::Scalar> neg_step_sizes, bias2_sqrts;
    for (MomentState* state : t.states) {
      const BiasCorrections bias = advance_step(*state, s);
      neg_step_sizes.emplace_back(-s.lr / bias.first);
      bias2_sqrts.emplace_back(bias.second_sqrt);
    }
    at::_foreach_mul_(t.exp_avgs, s.beta1);
    at::_foreach_add_(t.exp_avgs, t.grads, 1.0 - s.beta1);
    at::_foreach_mul_(t.exp_avg_sqs, s.beta2);
    at::_foreach_addcmul_(t.exp_avg_sqs, t.grads, t.grads, 1.0 - s.beta2);
    auto denoms = at::_foreach_sqrt(t.exp_avg_sqs);
    at::_foreach_div_(denoms, bias2_sqrts);
    at::_foreach_add_(denoms, s.eps);
    at::_foreach_addcdiv_(t.params, t.exp_avgs, denoms, neg_step_sizes);
  }

  std::vector<AdamWGroup> groups_;
  AdamWSettings settings_;
  MomentStore moments_;
};

// tbench's one-pass CPU kernel over all tensors of a group: one read and one write of each
// element, where the foreach form makes about ten passes. Step counts as in the foreach form.
class OnePassAdamW : public Optimizer {
 public:
  OnePassAdamW(std::vector<AdamWGroup> groups, const AdamWSettings& s) : groups_(std::move(groups)), settings_(s) {
    // Threads update pieces of different parameters at once: a parameter listed twice would race.
    std::unordered_set<const c10::TensorImpl*> seen;
    for (const auto& group : groups_) {
      for (const auto& p : group.params) {
        if (!seen.insert(p.unsafeGetTensorImpl()).second) {
          throw std::invalid_argument("onepass AdamW: a parameter is listed twice in its groups");
        }
      }
    }
  }
  OptimizerImpl impl() const override { return OptimizerImpl::onepass; }
  void set_lr(double lr) override { settings_.lr = lr; }

  void step() override {
    torch::NoGradGuard no_grad;
    std::vector<AdamWTensors> updates;
    for (const auto& group : groups_) add_group(group, updates);
    adamw_cpu_update(updates);
  }

 private:
  void add_group(const AdamWGroup& group, std::vector<AdamWTensors>& updates) {
    StepTensors t = moments_.gather(group);
    for (std::size_t i = 0; i < t.params.size(); ++i) {
      const AdamWCoefficients c{settings_, group.weight_decay, advance_step(*t.states[i], settings_)};
      updates.push_back({t.params[i], t.grads[i], t.exp_avgs[i], t.exp_avg_sqs[i], c});
    }
  }

  std::vector<AdamWGroup> groups_;
  AdamWSettings settings_;
  MomentStore moments_;
};

#if TBENCH_HAS_FUSED_ADAMW_CUDA || TBENCH_HAS_FUSED_ADAMW_CPU
// Compiled with torch >= 2.4 (CPU kernel) or a CUDA torch >= 2.0; LibTorch 1.13 has no _fused_adamw_.
// One kernel for the whole update of a group. Its step counters are float tensors on the
// device, advanced here before the kernel as PyTorch's AdamW(fused=True) does; with found_inf
// the kernel itself skips the update and the counters are moved back by found_inf, so an fp16
// overflow costs no host synchronisation.
class FusedAdamW : public Optimizer {
 public:
  FusedAdamW(std::vector<AdamWGroup> groups, const AdamWSettings& s, const torch::Device& device, bool capturable)
      : groups_(std::move(groups)), settings_(s) {
    if (capturable) lr_on_device_ = torch::full({}, s.lr, torch::TensorOptions().dtype(torch::kFloat).device(device));
  }
  OptimizerImpl impl() const override { return OptimizerImpl::fused; }
  void set_lr(double lr) override {
    settings_.lr = lr;
    if (lr_on_device_.defined()) lr_on_device_.fill_(lr);  // a kernel in stream order, before the step
  }
  void step() override { step_all({}); }
  void step_unless_inf(const torch::Tensor& found_inf) override { step_all(found_inf); }
  bool skips_on_device() const override { return true; }

 private:
  void step_all(const torch::Tensor& found_inf) {
    torch::NoGradGuard no_grad;
    for (const auto& group : groups_) step_group(group, found_inf);
  }

  void step_group(const AdamWGroup& group, const torch::Tensor& found_inf) {
    StepTensors t = moments_.gather(group);
    if (t.params.empty()) return;
    std::vector<torch::Tensor> counters;
    for (std::size_t i = 0; i < t.params.size(); ++i) counters.push_back(counter_for(*t.states[i], t.params[i]));
    at::_foreach_add_(counters, 1.0);
    // The counters are 0-dim, as PyTorch keeps them; the scaler's flag is [1].
    const torch::Tensor inf = found_inf.defined() ? found_inf.reshape({}) : torch::Tensor();
    fused_update(t, counters, group.weight_decay, inf);
    if (inf.defined()) at::_foreach_sub_(counters, std::vector<torch::Tensor>(counters.size(), inf));
  }

  void fused_update(const StepTensors& t, const std::vector<torch::Tensor>& counters, double weight_decay,
                    const torch::Tensor& inf) {
    const AdamWSettings& s = settings_;
#if TBENCH_HAS_CUDA_GRAPH_STEP
    if (lr_on_device_.defined()) {  // the overload that reads the learning rate on the device
      if (inf.defined()) {
        at::_fused_adamw_(t.params, t.grads, t.exp_avgs, t.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counters,
                          lr_on_device_, s.beta1, s.beta2, weight_decay, s.eps, /*amsgrad=*/false,
                          /*maximize=*/false, /*grad_scale=*/{}, inf);
      } else {
        at::_fused_adamw_(t.params, t.grads, t.exp_avgs, t.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counters,
                          lr_on_device_, s.beta1, s.beta2, weight_decay, s.eps, /*amsgrad=*/false,
                          /*maximize=*/false, /*grad_scale=*/{}, /*found_inf=*/{});
      }
      return;
    }
#endif
    if (inf.defined()) {
      at::_fused_adamw_(t.params, t.grads, t.exp_avgs, t.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counters, s.lr, s.beta1,
                        s.beta2, weight_decay, s.eps, /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{}, inf);
    } else {
      at::_fused_adamw_(t.params, t.grads, t.exp_avgs, t.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counters, s.lr, s.beta1,
                        s.beta2, weight_decay, s.eps, /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{},
                        /*found_inf=*/{});
    }
  }

  static torch::Tensor counter_for(MomentState& state, const torch::Tensor& p) {
    if (!state.step_count.defined()) state.step_count = torch::zeros({}, p.options().dtype(torch::kFloat));
    return state.step_count;
  }

  std::vector<AdamWGroup> groups_;
  AdamWSettings settings_;
  torch::Tensor lr_on_device_;  // capturable only
  MomentStore moments_;
};
#endif

}  // namespace

OptimizerImpl resolve_optimizer_impl(OptimizerImpl requested, bool on_cuda) {
  if (requested != OptimizerImpl::automatic) return requested;
  // ATen's fused kernel where this torch has one for the device: on CPU it measured level with
  // tbench's loop (LibTorch 2.14, 0.97-1.03x) and is built for the host's vector units at run
  // time (AVX-512 where there is one), which tbench's loop, built for baseline x86-64, is not.
  if (features::fused_adamw(on_cuda)) return OptimizerImpl::fused;
  return on_cuda ? OptimizerImpl::foreach : OptimizerImpl::onepass;
}

std::string optimizer_unavailable_reason(OptimizerImpl impl, bool on_cuda) {
  if (impl == OptimizerImpl::onepass && on_cuda) {
    return "onepass is tbench's CPU kernel; on a CUDA device use fused, foreach or loop";
  }
  if (impl == OptimizerImpl::fused && !features::fused_adamw(on_cuda)) {
    return std::string("fused AdamW needs torch >= ") + (on_cuda ? "2.0 with CUDA" : "2.4 on CPU") +
           ", but this build has LibTorch " + TORCH_VERSION + (on_cuda ? " (use foreach or loop)" : " (use onepass)");
  }
  return "";
}

void Optimizer::step_unless_inf(const torch::Tensor&) {
  throw std::logic_error(std::string("the ") + to_string(impl()) + " AdamW cannot skip a step on the device");
}

std::unique_ptr<Optimizer> make_adamw(OptimizerImpl impl, std::vector<AdamWGroup> groups, const AdamWSettings& settings,
                                      const torch::Device& device, bool capturable) {
  switch (resolve_optimizer_impl(impl, device.is_cuda())) {
    case OptimizerImpl::loop: return std::make_unique<LoopAdamW>(std::move(groups), settings);
    case OptimizerImpl::foreach: return std::make_unique<ForeachAdamW>(std::move(groups), settings);
    case OptimizerImpl::onepass:
      if (device.is_cuda()) throw input_error("train.optimizer_impl: " + optimizer_unavailable_reason(impl, true));
      return std::make_unique<OnePassAdamW>(std::move(groups), settings);
    case OptimizerImpl::fused:
#if TBENCH_HAS_FUSED_ADAMW_CUDA || TBENCH_HAS_FUSED_ADAMW_CPU
      if (features::fused_adamw(device.is_cuda())) {
        return std::make_unique<FusedAdamW>(std::move(groups), settings, device, capturable && device.is_cuda());
      }
#endif
      throw input_error("train.optimizer_impl: " + optimizer_unavailable_reason(OptimizerImpl::fused, device.is_cuda()));
    case OptimizerImpl::automatic: break;
  }
  throw std::logic_error("unresolved optimizer implementation");
}

}  // namespace tbench
