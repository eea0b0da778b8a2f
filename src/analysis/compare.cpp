#include <cmath>
#include <map>
#include <set>

#include "tbench/analysis/analysis.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {
namespace {

struct PerSampleTimes {
  double mean = 0, variance = 0;
  int64_t n = 0;
  // The steps in order are a series (SteadyStep): their lag-1 autocorrelation from kSerialStepsMin
  // steps on, and what they are worth as independent ones.
  std::optional<double> lag1_autocorrelation;
  double effective = 0;
  // Var(log mean) ~ var / (n_eff mean^2): the delta method, the steps counted as n_eff.
  double log_mean_variance() const { return effective > 0 ? variance / (effective * mean * mean) : 0; }
};

// Seconds per sample of each steady-state step: the throughput's reciprocal, averaged per step.
PerSampleTimes per_sample_times(const ResultFile& r) {
  std::vector<double> t;
  for (std::size_t i = 0; i < r.step_seconds.size(); ++i) {
    t.push_back(r.step_seconds[i] / static_cast<double>(r.step_samples[i]));
  }
  const Spread s = spread(t);
  const SteadyStep series = fit_steady_step(t, {}, false);
  return {s.mean, s.stdev * s.stdev, s.count, series.lag1_autocorrelation, series.effective_steps};
}

// The spec's fields as dotted paths, objects descended into, anything else (arrays too) whole.
void flatten(const nlohmann::json& value, const std::string& path, std::map<std::string, nlohmann::json>& into) {
  if (!value.is_object() || value.empty()) {
    into[path] = value;
    return;
  }
  for (const auto& [key, child] : value.items()) flatten(child, path.empty() ? key : path + "." + key, into);
}

// What a run was, beyond its spec: the code, the torch and the BLAS it ran on.
const char* const kEnvironmentFields[] = {"tbench.git", "env.torch", "env.cpu.blas"};

// Fields every run sets for itself, which tell nothing of how it ran.
bool bookkeeping(const std::string& field) {
  return field == "name" || field == "output" || field.rfind("sweep.", 0) == 0 || field == "sweep";
}

}  // namespace

std::vector<SettingDifference> setting_differences(const ResultFile& a, const ResultFile& b) {
  std::map<std::string, nlohmann::json> fa, fb;
  flatten(a.json.value("spec", nlohmann::json::object()), "", fa);
  flatten(b.json.value("spec", nlohmann::json::object()), "", fb);
  std::vector<SettingDifference> out;
  const auto add = [&](const std::string& field, const nlohmann::json& va, const nlohmann::json& vb) {
    if (va != vb) out.push_back({field, va, vb});
  };
  const auto value_in = [](const std::map<std::string, nlohmann::json>& fields, const std::string& field) {
    const auto it = fields.find(field);
    return it == fields.end() ? nlohmann::json() : it->second;  // null: not recorded
  };
  std::set<std::string> fields;
  for (const auto* side : {&fa, &fb}) {
    for (const auto& entry : *side) fields.insert(entry.first);
  }
  for (const auto& field : fields) {
    if (!bookkeeping(field)) add(field, value_in(fa, field), value_in(fb, field));
  }
  for (const char* field : kEnvironmentFields) {
    const auto recorded = [&](const ResultFile& r) {
      const nlohmann::json* value = find_dotted(r.json, field);
      return value ? *value : nlohmann::json();
    };
    add(field, recorded(a), recorded(b));
  }
  return out;
}

Comparison compare_results(const ResultFile& a, const ResultFile& b) {
  const PerSampleTimes ta = per_sample_times(a), tb = per_sample_times(b);
  Comparison c;
  c.a_steps = ta.n;
  c.b_steps = tb.n;
  c.a_effective_steps = ta.effective;
  c.b_effective_steps = tb.effective;
  c.a_lag1_autocorrelation = ta.lag1_autocorrelation;
  c.b_lag1_autocorrelation = tb.lag1_autocorrelation;
  c.a_samples_per_s = 1.0 / ta.mean;
  c.b_samples_per_s = 1.0 / tb.mean;
  c.ratio = ta.mean / tb.mean;
  // The log ratio's variance is the sides' sum; Welch-Satterthwaite's degrees of freedom for the t
  // quantile, each side's n_eff - 1.
  const double va = ta.log_mean_variance(), vb = tb.log_mean_variance();
  const double se = std::sqrt(va + vb);
  double df = 1;
  const double denom = (ta.effective > 1 ? va * va / (ta.effective - 1) : 0) +
                       (tb.effective > 1 ? vb * vb / (tb.effective - 1) : 0);
  if (denom > 0) df = (va + vb) * (va + vb) / denom;
  const double t = student_t_975(df);
  c.low = c.ratio * std::exp(-t * se);
  c.high = c.ratio * std::exp(t * se);
  c.significant = c.low > 1.0 || c.high < 1.0;
  c.differences = setting_differences(a, b);
  return c;
}

}  // namespace tbench
