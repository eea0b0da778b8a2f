// The result file's layout, in one place: to_json(Result) writes every section from the Result
// value; nothing patches the JSON afterwards.
#include "tbench/results/result.hpp"

#include "tbench/json_text.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tbench {
namespace {

using nlohmann::json;

json to_json(const TimingCheck& c) {
  return {{"method", or_null(c.method)},
          {"step_seconds", c.step_seconds},
          {"epoch_seconds", c.epoch_seconds},
          {"gap_fraction", or_null(c.gap_fraction)},
          {"margin", kTimingGapMargin},
          {"within_margin", c.gap_fraction ? json(c.within_margin()) : json(nullptr)}};
}

json duration_or_null(const std::optional<double>& seconds) {
  return seconds ? json(format_duration(*seconds)) : json(nullptr);
}

json to_json(const ModelInfo& m) {
  json j = {{"name", m.name},
            {"arch", m.arch},
            {"hidden_size", m.hidden_size},
            {"num_layers", m.num_layers},
            {"num_heads", m.num_heads},
            {"vocab_size", m.vocab_size},
            {"source", m.source},
            {"params", m.params},
            {"base_params", m.base_params},
            {"train_flops_per_sample", m.train_flops_per_sample},
            {"expected_step_train_flops", or_null(m.expected_step_train_flops())},
            {"planned_epoch_step_train_flops",
             m.planned_epoch_step_train_flops.empty() ? json(nullptr) : json(m.planned_epoch_step_train_flops)},
            {"weights", m.weights.empty() ? json("random init") : json(m.weights)},
            {"task", m.task}};
  if (!m.initialised_from.empty()) j["initialised_from"] = m.initialised_from;
  if (m.teacher) {
    const TeacherInfo& t = *m.teacher;
    j["teacher"] = {{"name", t.name},
                    {"arch", t.arch},
                    {"params", t.params},
                    {"precision", t.precision},
                    {"forward_flops_per_sample", t.forward_flops_per_sample},
                    {"weights", t.weights.empty() ? json("random init") : json(t.weights)}};
  }
  return j;
}

json to_json(const DistSection& d) {
  json ranks = json::array();
  for (const auto& r : d.ranks) ranks.push_back(to_json(r));
  json j = {{"world_size", d.world_size},
          {"backend", d.backend},
          {"launcher", d.launcher},
          {"master", d.master},
          {"per_device_batch", d.per_device_batch},
          {"global_batch", d.global_batch},
          {"bucket_mb", d.bucket_mb},
          {"buckets", d.buckets},
          {"sync_every_micro_step", d.sync_every_micro_step},
          {"gradient_as_bucket_view", d.gradient_as_bucket_view},
          {"allreduces", d.allreduces},
          {"timeout_s", d.timeout_s},
          {"ranks", ranks},
          {"missing_ranks", d.missing_ranks}};
  if (d.first_failure) j["first_failure"] = {{"rank", d.first_failure->rank}, {"error", d.first_failure->error}};
  return j;
}

json to_json(const ResultFiles& f) {
  json j = {{"result", f.result}, {"iterations", f.iterations}};
  if (!f.weights.empty()) j["weights"] = f.weights;
  if (!f.mllog.empty()) j["mllog"] = f.mllog;
  return j;
}

// A peer's report is bytes from the network: an integer field must hold an integer (converting
// 1e21 to int64 would be undefined behaviour); anything else makes the report unreadable.
int64_t integer_from_json(const json& j) {
  if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<uint64_t>() > (uint64_t{1} << 62))) {
    throw std::invalid_argument("expected an integer, got " + json_text(j));
  }
  return j.get<int64_t>();
}

Spread spread_from_json(const json& j) {
  Spread s;
  s.count = integer_from_json(j.at("count"));
  for (auto [key, field] : {std::pair{"median", &Spread::median}, {"p10", &Spread::p10}, {"p90", &Spread::p90},
                            {"mean", &Spread::mean}, {"stdev", &Spread::stdev}, {"min", &Spread::min},
                            {"max", &Spread::max}}) {
    const json& figure = j.at(key);
    s.*field = figure.is_null() && s.count == 0 ? 0.0 : figure.get<double>();  // a spread of nothing: null
  }
  return s;
}

std::optional<double> optional_number(const json& j) {
  return j.is_number() ? std::optional<double>(j.get<double>()) : std::nullopt;
}

RunStatus parse_status(const std::string& text) {
  for (RunStatus s : {RunStatus::completed, RunStatus::interrupted, RunStatus::failed}) {
    if (text == to_string(s)) return s;
  }
  return RunStatus::failed;
}

}  // namespace

std::optional<double> ModelInfo::expected_step_train_flops() const {
  if (planned_epoch_step_train_flops.empty()) return std::nullopt;
  return std::accumulate(planned_epoch_step_train_flops.begin(), planned_epoch_step_train_flops.end(), 0.0) /
         static_cast<double>(planned_epoch_step_train_flops.size());
}

json to_json(const Summary& s) {
  json j = {{"scope", s.scope},
            {"warmup_steps", s.warmup_steps},
            {"warmup_steps_requested", s.warmup_steps_requested},
            {"profiled_steps", s.profiled_steps},
            {"timed_steps", s.step_ms.count},
            {"total_steps", s.total_steps},
            {"step_ms", s.step_ms},
            {"data_ms", s.data_ms},
            {"samples_per_s", or_null(s.samples_per_s)},
            {"tokens_per_s", or_null(s.tokens_per_s)},
            {"real_tokens_per_s", or_null(s.real_tokens_per_s)},
            {"it_per_s", or_null(s.it_per_s)},
            {"padding_efficiency", or_null(s.padding_efficiency)},
            {"host_ms", s.host_ms ? json(*s.host_ms) : json(nullptr)},
            {"device_idle_at_start_fraction", or_null(s.device_idle_at_start_fraction)},
            {"skipped_steps", s.skipped_steps},
            {"train_flops_per_s", or_null(s.train_flops_per_s)},
            {"epochs_completed", s.epochs_completed},
            {"epoch_seconds", or_null(s.epoch_seconds)},
            {"epoch_time", duration_or_null(s.epoch_seconds)},
            {"steps_per_epoch", s.steps_per_epoch},
            {"projected_epoch_seconds", or_null(s.projected_epoch_seconds)},
            {"projected_epoch_time", duration_or_null(s.projected_epoch_seconds)},
            {"projected_step_model", or_null(s.projected_step_model)},
            {"step_lag1_autocorrelation", or_null(s.step_lag1_autocorrelation)},
            {"projected_epoch_seconds_ci95", s.projected_epoch_seconds_ci95
                                                 ? json::array({s.projected_epoch_seconds_ci95->low,
                                                                s.projected_epoch_seconds_ci95->high})
                                                 : json(nullptr)},
            {"wall_seconds", s.wall_seconds},
            {"started_at", s.started_at},
            {"ended_at", s.ended_at},
            {"status", to_string(s.status)},
            {"error", or_null(s.error)},
            {"timing_check", to_json(s.timing_check)},
            {"peak_allocated_bytes", or_null(s.peak_allocated_bytes)},
            {"peak_reserved_bytes", or_null(s.peak_reserved_bytes)},
            {"peak_rss_bytes", or_null(s.peak_rss_bytes)},
            {"gpu_power_w_mean", or_null(s.gpu_power_w_mean)},
            {"gpu_energy_j_per_sample", or_null(s.gpu_energy_j_per_sample)},
            {"peak_flops_per_s", s.peak.flops_per_s > 0 ? json(s.peak.flops_per_s) : json(nullptr)},
            {"peak_bytes_per_s", s.peak.bytes_per_s > 0 ? json(s.peak.bytes_per_s) : json(nullptr)},
            {"peak_source", s.peak.source},
            {"peak_probes_flops_per_s",
             s.peak.probes_flops_per_s.empty() ? json(nullptr) : json(s.peak.probes_flops_per_s)},
            {"mfu", or_null(s.mfu)},
            {"mfu_error", or_null(s.mfu_error)}};
  if (s.world_size) {
    j["world_size"] = *s.world_size;
    j["per_device_samples_per_s"] = or_null(s.per_device_samples_per_s);
    j["per_device_train_flops_per_s"] = or_null(s.per_device_train_flops_per_s);
    j["comm_share"] = or_null(s.comm_share);
    j["rank_step_spread"] = or_null(s.rank_step_spread);
  }
  return j;
}

RankReport make_rank_report(const RunRecords& records, const TrainOutcome& outcome) {
  const TimedSteps t = timed_steps(records.iterations, 0.0);
  RankReport report;
  report.status = outcome.status;
  report.error = outcome.error;
  report.steps = static_cast<int64_t>(records.iterations.size());
  report.step_ms = spread(t.step_ms);
  report.comm_wait_ms = spread(t.comm_wait_ms);
  if (t.seconds > 0) {
    report.comm_share = t.comm_wait_seconds / t.seconds;
    report.samples_per_s = static_cast<double>(t.samples) / t.seconds;
    report.tokens_per_s = static_cast<double>(t.tokens) / t.seconds;
    report.real_tokens_per_s = static_cast<double>(t.real_tokens) / t.seconds;
    if (!t.step_flops.empty()) report.train_flops_per_s = t.flops / t.seconds;  // every step counted its own
  }
  return report;
}

json to_json(const RankReport& r) {
  return {{"rank", r.rank},
          {"local_rank", r.local_rank},
          {"host", r.host},
          {"device", r.device},
          {"status", to_string(r.status)},
          {"error", or_null(r.error)},
          {"steps", r.steps},
          {"timed_steps", r.step_ms.count},
          {"step_ms", r.step_ms},
          {"comm_wait_ms", r.comm_wait_ms},
          {"comm_share", or_null(r.comm_share)},
          {"samples_per_s", or_null(r.samples_per_s)},
          {"tokens_per_s", or_null(r.tokens_per_s)},
          {"real_tokens_per_s", or_null(r.real_tokens_per_s)},
          {"train_flops_per_s", or_null(r.train_flops_per_s)},
          {"allreduces", r.allreduces}};
}

std::optional<RankReport> parse_rank_report(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    RankReport r;
    r.rank = integer_from_json(j.at("rank"));
    r.local_rank = integer_from_json(j.at("local_rank"));
    r.host = j.at("host");
    r.device = j.at("device");
    r.status = parse_status(j.at("status"));
    r.error = j.at("error").is_string() ? j["error"].get<std::string>() : "";
    r.steps = integer_from_json(j.at("steps"));
    r.step_ms = spread_from_json(j.at("step_ms"));
    r.comm_wait_ms = spread_from_json(j.at("comm_wait_ms"));
    r.comm_share = optional_number(j.at("comm_share"));
    r.samples_per_s = optional_number(j.at("samples_per_s"));
    for (auto [key, rate] : {std::pair{"tokens_per_s", &RankReport::tokens_per_s},
                             {"real_tokens_per_s", &RankReport::real_tokens_per_s},
                             {"train_flops_per_s", &RankReport::train_flops_per_s}}) {
      if (j.contains(key)) r.*rate = optional_number(j.at(key));
    }
    r.allreduces = integer_from_json(j.at("allreduces"));
    return r;
  } catch (const std::exception&) {  // nlohmann's (a missing or mistyped field) and integer_from_json's
    return std::nullopt;
  }
}

void make_global(Summary& s, const DistSection& dist) {
  const auto world = static_cast<double>(dist.world_size);
  s.scope = "global";
  s.world_size = dist.world_size;
  s.per_device_samples_per_s = s.samples_per_s;
  s.per_device_train_flops_per_s = s.train_flops_per_s;
  // Samples: every rank's step takes the same count, so the global batch over rank 0's step time.
  // Tokens and work: the ranks' own rates summed where every rank reported one, since their batches
  // can differ in both (dynamic padding; bucket_by_length hands rank 0 each step's longest sample);
  // else rank 0's rate for every rank.
  const auto global = [&](std::optional<double>& rate, std::optional<double> RankReport::*own) {
    if (!rate) return;
    double sum = 0;
    int64_t reported = 0;
    for (const auto& r : dist.ranks) {
      if (!(r.*own)) continue;
      sum += *(r.*own);
      ++reported;
    }
    *rate = reported == dist.world_size ? sum : *rate * world;
  };
  if (s.samples_per_s) *s.samples_per_s *= world;
  global(s.tokens_per_s, &RankReport::tokens_per_s);
  global(s.real_tokens_per_s, &RankReport::real_tokens_per_s);
  global(s.train_flops_per_s, &RankReport::train_flops_per_s);
  // The ranks' real tokens over their padded ones, as the global rates now say: rank 0's own share
  // is biased where bucket_by_length hands it each step's longest sample.
  if (s.tokens_per_s && s.real_tokens_per_s && *s.tokens_per_s > 0) {
    s.padding_efficiency = *s.real_tokens_per_s / *s.tokens_per_s;
  }
  std::vector<double> shares, medians;
  for (const auto& r : dist.ranks) {
    if (r.comm_share) shares.push_back(*r.comm_share);
    if (r.step_ms.count > 0) medians.push_back(r.step_ms.median);
    // A peer's own failure explains a lost contact; a peer failing after rank 0 completed (its
    // last step) fails the run too. An announced failure is the cause: the rest follow from it.
    if (r.rank == 0 || r.status != RunStatus::failed || dist.first_failure) continue;
    const std::string peer = "rank " + std::to_string(r.rank) + ": " + (r.error.empty() ? "failed" : r.error);
    s.error += (s.error.empty() ? "" : "; ") + peer;
    s.status = RunStatus::failed;
  }
  if (dist.first_failure) {
    s.status = RunStatus::failed;
    s.error = dist.first_failure->describe();
  }
  s.comm_share.reset();
  if (!shares.empty()) s.comm_share = spread(shares).mean;
  s.rank_step_spread.reset();
  const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
  if (!medians.empty() && *low > 0) s.rank_step_spread = (*high - *low) / *low;
}

json to_json(const Result& r) {
  json j = {{"schema", kResultSchemaId},
            {"tbench", {{"version", r.tbench_version}, {"git", r.git_sha}}},
            {"spec", r.spec},
            {"env", r.env},
            {"model", to_json(r.model)},
            {"data", r.data},
            {"iterations", r.records.iterations},
            {"epochs", r.records.epochs},
            {"summary", to_json(r.summary)},
            {"files", to_json(r.files)}};
  if (r.dist) j["dist"] = to_json(*r.dist);
  if (r.profile) j["profile"] = to_json(*r.profile);
  return j;
}

}  // namespace tbench
