#include <cmath>
#include <map>
#include <set>

#include "tbench/analysis/analysis.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {
namespace {

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

PerSampleStepTimes per_sample_step_times(const ResultFile& r) {
  std::vector<double> t;
  for (std::size_t i = 0; i < r.step_seconds.size(); ++i) {
    t.push_back(r.step_seconds[i] / static_cast<double>(r.step_samples[i]));
  }
  const SteadyStep series = fit_steady_step(t, {}, false);
  return {spread(t), series.lag1_autocorrelation, series.effective_steps};
}

Comparison compare_results(const ResultFile& a, const ResultFile& b) {
  const PerSampleStepTimes ta = per_sample_step_times(a), tb = per_sample_step_times(b);
  Comparison c;
  c.a_steps = ta.seconds.count;
  c.b_steps = tb.seconds.count;
  c.a_effective_steps = ta.effective_steps;
  c.b_effective_steps = tb.effective_steps;
  c.a_lag1_autocorrelation = ta.lag1_autocorrelation;
  c.b_lag1_autocorrelation = tb.lag1_autocorrelation;
  c.a_samples_per_s = 1.0 / ta.seconds.mean;
  c.b_samples_per_s = 1.0 / tb.seconds.mean;
  c.ratio = ta.seconds.mean / tb.seconds.mean;
  const auto la = ta.log_mean(), lb = tb.log_mean();
  if (la && lb) {
    c.ci95 = ratio_interval_95(c.ratio, *la, *lb);
    c.significant = c.ci95->low > 1.0 || c.ci95->high < 1.0;
  }
  c.differences = setting_differences(a, b);
  return c;
}

}  // namespace tbench
