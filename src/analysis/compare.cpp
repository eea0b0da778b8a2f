#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "tbench/analysis/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/json_text.hpp"
#include "tbench/results/summary.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {
namespace {

// What a run was, beyond its spec: the code, the torch and the BLAS it ran on.
const char* const kEnvironmentFields[] = {"tbench.git", "env.torch", "env.cpu.blas"};

}  // namespace

std::vector<SettingDifference> setting_differences(const ResultFile& a, const ResultFile& b) {
  const auto fa = flatten_fields(a.json.value("spec", nlohmann::json::object()));
  const auto fb = flatten_fields(b.json.value("spec", nlohmann::json::object()));
  std::vector<SettingDifference> out;
  // Absent and null are alike (a field added later, null where unset) but print apart.
  const auto add = [&](const std::string& field, const nlohmann::json& va, const nlohmann::json& vb,
                       bool a_recorded = true, bool b_recorded = true) {
    if (va != vb) out.push_back({field, va, vb, a_recorded, b_recorded});
  };
  const auto value_in = [](const std::map<std::string, nlohmann::json>& fields, const std::string& field) {
    const auto it = fields.find(field);
    return it == fields.end() ? nlohmann::json() : it->second;
  };
  std::set<std::string> fields;
  for (const auto* side : {&fa, &fb}) {
    for (const auto& entry : *side) fields.insert(entry.first);
  }
  for (const auto& field : fields) {
    if (is_bookkeeping_field(field)) continue;
    // spec.device's text is not the device: "cuda" is "cuda:0".
    if (field == "device") {
      add(field, device_used(a), device_used(b));
    } else {
      add(field, value_in(fa, field), value_in(fb, field), fa.count(field) > 0, fb.count(field) > 0);
    }
  }
  for (const char* field : kEnvironmentFields) {
    const nlohmann::json *in_a = find_dotted(a.json, field), *in_b = find_dotted(b.json, field);
    add(field, in_a ? *in_a : nlohmann::json(), in_b ? *in_b : nlohmann::json(), in_a != nullptr, in_b != nullptr);
  }
  // Where and how wide it ran, which no spec field records: the launcher sets the world size.
  add("machine", a.machine, b.machine);
  add("world_size", a.world_size, b.world_size);
  return out;
}

std::string setting_value_text(const nlohmann::json& value, bool recorded) {
  return recorded ? json_text(value) : "(not recorded)";
}

void refuse_copies_of_one_run(const std::vector<const ResultFile*>& runs, const std::string& command) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      if (runs[i]->json != runs[j]->json) continue;
      std::error_code ec;
      const bool same_file = std::filesystem::equivalent(runs[i]->path, runs[j]->path, ec) && !ec;
      throw input_error(command + ": " + runs[j]->path +
                        (same_file ? " is given twice" : " holds the same run as " + runs[i]->path) +
                        "; each run counts once (repeats are separate runs of one setting)");
    }
  }
}

PerSampleStepTimes per_sample_step_times(const ResultFile& r) {
  // A partial step (an epoch's last, under data.drop_last false) pays a whole step's fixed cost for
  // a few samples: counted alike, it reads as a slower run (0.95x "significant" for runs whose
  // summaries agree to 0.5%). The run's full steps alone measure its pace.
  const int64_t full = r.step_samples.empty() ? 0 : *std::max_element(r.step_samples.begin(), r.step_samples.end());
  std::vector<double> t;
  int64_t partial = 0;
  for (std::size_t i = 0; i < r.step_seconds.size(); ++i) {
    if (r.step_samples[i] < full) {
      ++partial;
      continue;
    }
    t.push_back(r.step_seconds[i] / static_cast<double>(r.step_samples[i]));
  }
  const SteadyStep series = fit_steady_step(t, {}, false);
  return {spread(t), series.lag1_autocorrelation, series.effective_steps, partial};
}

namespace {

// A side's throughput and what its mean per-sample step time is known from (ComparedSide).
ComparedSide compared_side(const std::vector<const ResultFile*>& runs, std::optional<LogMean>& known) {
  if (runs.empty()) throw input_error("compare: a side with no results");
  ComparedSide side;
  side.runs = static_cast<int64_t>(runs.size());
  std::vector<double> run_means;
  for (const auto* r : runs) {
    const PerSampleStepTimes t = per_sample_step_times(*r);
    side.steps += t.seconds.count;
    side.partial_steps += t.partial_steps;
    run_means.push_back(t.seconds.mean);
    if (runs.size() == 1) {
      side.basis = "steps";
      side.lag1_autocorrelation = t.lag1_autocorrelation;
      side.effective_steps = t.effective_steps;
      known = t.log_mean();
    }
  }
  if (const auto widest = widest_peak_probe_spread(runs)) {
    side.peak_probe_spread = widest->spread;
    side.peak_probes_flops_per_s = widest->run->peak_probes_flops_per_s;
  }
  const Spread means = spread(run_means);
  side.samples_per_s = 1.0 / means.mean;
  if (runs.size() >= 2) {
    side.basis = "repeats";
    side.runs_cv_pct = 100 * means.stdev / means.mean;
    known = log_mean(means, static_cast<double>(means.count));
  }
  return side;
}

}  // namespace

Comparison compare_results(const std::vector<const ResultFile*>& a, const std::vector<const ResultFile*>& b) {
  Comparison c;
  std::optional<LogMean> known_a, known_b;
  c.a = compared_side(a, known_a);
  c.b = compared_side(b, known_b);
  c.ratio = c.b.samples_per_s / c.a.samples_per_s;
  if (!known_a || !known_b) {
    c.no_interval = "a run with one timed step says nothing of its spread";
  } else if (known_a->variance + known_b->variance < 1e-24) {
    // Identical step times on both sides (timings rounded to a clock's tick, or copied; their
    // mean's rounding leaves a relative error near 1e-16, squared here): no spread to judge a
    // difference by, not a certain one.
    c.no_interval = "every step on both sides took the same time, so their spread is unknown";
  } else {
    c.ci95 = ratio_interval_95(c.ratio, *known_a, *known_b);
    c.significant = c.ci95->low > 1.0 || c.ci95->high < 1.0;
  }
  c.differences = setting_differences(*a.front(), *b.front());
  return c;
}

Comparison compare_results(const ResultFile& a, const ResultFile& b) { return compare_results({&a}, {&b}); }

}  // namespace tbench
