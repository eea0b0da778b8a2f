#include "tbench/timing/profile.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

namespace tbench {
namespace {

std::string lowercase_name(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return text.find(w) != std::string::npos; });
}

// Host events: each event's duration less its direct children's (per thread, by nesting).
std::vector<double> self_times(const std::vector<ProfiledEvent>& events, const std::vector<std::size_t>& host) {
  std::vector<double> self(events.size(), 0.0);
  std::map<uint64_t, std::vector<std::size_t>> by_thread;
  for (const std::size_t i : host) {
    self[i] = events[i].duration_us;
    by_thread[events[i].thread].push_back(i);
  }
  for (auto& thread_events : by_thread) {
    auto& order = thread_events.second;
    // Parents before their children: earlier start first, and at the same start the longer one.
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (events[a].start_us != events[b].start_us) return events[a].start_us < events[b].start_us;
      return events[a].duration_us > events[b].duration_us;
    });
    std::vector<std::size_t> open;  // the chain of enclosing events
    for (const std::size_t i : order) {
      while (!open.empty() && events[open.back()].start_us + events[open.back()].duration_us <= events[i].start_us) {
        open.pop_back();
      }
      if (!open.empty()) self[open.back()] -= events[i].duration_us;
      open.push_back(i);
    }
  }
  for (auto& s : self) s = std::max(0.0, s);
  return self;
}

std::vector<ProfileEntry> sorted_entries(const std::map<std::string, ProfileEntry>& sums, double total) {
  std::vector<ProfileEntry> out;
  for (const auto& named : sums) {
    out.push_back(named.second);
    out.back().share = total > 0 ? named.second.ms / total : 0.0;
  }
  std::sort(out.begin(), out.end(), [](const ProfileEntry& a, const ProfileEntry& b) {
    return a.ms != b.ms ? a.ms > b.ms : a.name < b.name;
  });
  return out;
}

}  // namespace

std::string op_category(const std::string& name) {
  const std::string n = lowercase_name(name);
  // The loss first: its log-softmax kernels would otherwise pass for attention's softmax.
  if (contains_any(n, {"log_softmax", "logsoftmax", "nll_loss", "cross_entropy"})) return "loss";
  if (contains_any(n, {"nccl", "allreduce", "all_reduce", "c10d"})) return "communication";
  // cudnn::fusion: cuDNN's SDPA backward helpers (rowsum(dO * O), dQ's conversion), memory-bound.
  if (contains_any(n, {"flash", "fmha", "attention", "softmax", "sdpa", "cudnn::fusion"})) return "attention";
  // nvjet: cuBLAS's own GEMM kernels on Hopper (CUDA 12.8+), named neither gemm nor cutlass.
  if (contains_any(n, {"gemm", "cutlass", "xmma", "cublas", "nvjet", "addmm", "addmv", "addbmm", "aten::mm", "aten::bmm",
                       "matmul", "aten::linear"})) {
    return "gemm";
  }
  if (contains_any(n, {"layer_norm", "layernorm", "gammabeta", "rowwisemoments"})) return "normalization";
  // addcmul_ and addcdiv_: the loop AdamW's moment and update ops, on the CPU's host profile.
  if (contains_any(n, {"adam", "multi_tensor", "foreach", "addcmul", "addcdiv"})) return "optimizer";
  // Copies, and the dtype casts autocast adds around each matmul (CUDA's copy_kernel family).
  if (n == "aten::to" || contains_any(n, {"memcpy", "memset", "aten::copy_", "aten::_to_copy", "copy_kernel"})) {
    return "copy";
  }
  // The rest of a step is memory-bound passes; named apart, they say which fusion would pay:
  // dropout's masks, activations (bias + GELU), reductions (a linear's bias gradient sums rows),
  // and other elementwise arithmetic (residual adds, scaling). Each before `elementwise`, whose
  // kernel templates name the functor they run (vectorized_elementwise_kernel<8, GeluCUDAKernelImpl>).
  // masked_scale: dropout's backward on CUDA; threshold: ReLU's.
  if (contains_any(n, {"dropout", "bernoulli", "masked_scale"})) return "dropout";
  if (contains_any(n, {"gelu", "tanh", "relu", "silu", "sigmoid", "threshold"})) return "activation";
  if (contains_any(n, {"reduce_kernel", "aten::sum"})) return "reduction";
  // Host operators by their whole name: a prefix would take aten::addmv, aten::multinomial, ...
  static const std::set<std::string> arithmetic = {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::rsub",
                                                   "aten::mul", "aten::mul_", "aten::div", "aten::div_"};
  if (arithmetic.count(n) > 0 || contains_any(n, {"elementwise_kernel"})) return "elementwise";
  return "other";
}

std::string kernel_bound(const std::string& name) {
  const std::string category = op_category(name);
  if (category == "gemm") return "compute";
  if (category == "communication") return "communication";
  // Eager attention's softmax is its own elementwise pass; the fused kernels are matmuls.
  if (category == "attention" && contains_any(lowercase_name(name), {"flash", "fmha", "attention", "sdpa"})) {
    return "compute";
  }
  return "memory";
}

ProfileSummary summarize_profile(const std::vector<ProfiledEvent>& events, bool on_device, std::size_t top_n) {
  ProfileSummary p;
  p.measures = on_device ? "device kernels" : "host operators, self time";
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].on_device == on_device) chosen.push_back(i);
  }
  const std::vector<double> self = on_device ? std::vector<double>() : self_times(events, chosen);
  std::map<std::string, ProfileEntry> by_name, by_category, by_bound;
  const auto add = [](std::map<std::string, ProfileEntry>& sums, const std::string& key, double ms) {
    ProfileEntry& entry = sums[key];
    entry.name = key;
    entry.calls += 1;
    entry.ms += ms;
  };
  for (const std::size_t i : chosen) {
    const std::string& name = events[i].name;
    const double ms = (on_device ? events[i].duration_us : self[i]) / 1e3;
    add(by_name, name, ms);
    add(by_category, op_category(name), ms);
    if (on_device) add(by_bound, kernel_bound(name), ms);
    p.measured_ms += ms;
  }
  p.categories = sorted_entries(by_category, p.measured_ms);
  p.bounds = sorted_entries(by_bound, p.measured_ms);
  p.top = sorted_entries(by_name, p.measured_ms);
  if (p.top.size() > top_n) p.top.resize(top_n);
  return p;
}

nlohmann::json to_json(const ProfileSummary& p) {
  const auto entries = [](const std::vector<ProfileEntry>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : list) out.push_back({{"name", e.name}, {"calls", e.calls}, {"ms", e.ms}, {"share", e.share}});
    return out;
  };
  nlohmann::json j = {{"steps", {p.first_step, p.last_step}},
                      {"measures", p.measures},
                      {"measured_ms", p.measured_ms},
                      {"wall_ms", p.wall_ms},
                      {"overhead_ms", p.overhead_ms},
                      {"categories", entries(p.categories)},
                      {"top", entries(p.top)}};
  // Device time over wall time: well under 1 means the GPU waited for the host (launch-bound);
  // over 1, kernels overlapped (communication beside compute).
  if (p.measures == "device kernels" && p.wall_ms > 0) j["device_busy_fraction"] = p.measured_ms / p.wall_ms;
  if (p.measures == "device kernels") j["bounds"] = entries(p.bounds);
  j["trace"] = p.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.trace);
  if (!p.trace_error.empty()) j["trace_error"] = p.trace_error;
  return j;
}

}  // namespace tbench
