// `tbench report --scaling`: data-parallel runs against the single-process run of the same spec.
#include <map>
#include <optional>
#include <tuple>

#include "tbench/analysis/analysis.hpp"
#include "tbench/analysis/table.hpp"
#include "tbench/errors.hpp"
#include "tbench/text.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

constexpr double kSuperLinear = 1.05;
constexpr double kCollapsing = 0.5;

std::string device_kind(const ResultFile& r) {
  if (r.device == "cpu") return "cpu";
  return r.gpu.empty() ? "cuda" : r.gpu;
}

constexpr const char* kGraphed = ", CUDA graph";

std::string threads_text(int64_t threads) { return std::to_string(threads) + (threads == 1 ? " thread" : " threads"); }

// What must match for two runs to be "the same spec" at different world sizes, threads aside. A
// step replayed from a CUDA graph is another step than the eager one data-parallel runs take.
std::string shared_config_of(const ResultFile& r) {
  return device_kind(r) + " " + r.precision + ", batch " + std::to_string(r.batch_size * r.grad_accum) +
         "/process, seq " + std::to_string(r.seq_len) + ", " + std::to_string(r.num_samples) + " samples" +
         (r.cuda_graph ? kGraphed : "");
}

// On CPU the threads each process ran set its pace too; a GPU's step does not depend on them.
std::string config_of(const ResultFile& r) {
  return shared_config_of(r) + (r.device == "cpu" ? ", " + threads_text(r.threads) + "/process" : "");
}

std::string optional_text(const std::optional<double>& value, int digits, const std::string& suffix = "") {
  return value ? format_fixed(*value, digits) + suffix : "-";
}

std::optional<double> percent(const std::optional<double>& fraction) {
  return fraction ? std::optional<double>(*fraction * 100) : std::nullopt;
}

std::string flag_and_baseline(const ScalingRow& row) {
  if (row.baseline.empty()) return row.flag;
  return row.flag + (row.flag.empty() ? "" : ", ") + "vs " + row.baseline;
}

std::string note_of(const ScalingRow& row) {
  const std::string flag = flag_and_baseline(row);
  if (row.runs <= 1) return flag;
  return flag + (flag.empty() ? "" : ", ") + "n=" + std::to_string(row.runs);
}

double per_process_samples_per_s(const ScalingRow& row) {
  return row.samples_per_s / static_cast<double>(row.world_size);
}

const char* kNote =
    "speedup = T1/TN of the epoch time per trained sample vs the 1-process run of the same config (on CPU, "
    "else of one using the same cores); efficiency = speedup / N (> 105% super-linear, < 50% collapsing); "
    "~ = projected from steady steps; samples/s is global";


// What people read (text and markdown): figures rounded and with units, the measurements
// right-aligned between the descriptive columns.
Table overview_table(const std::vector<ScalingRow>& rows) {
  Table table;
  table.caption = kNote;
  table.columns = {{"model"},
                   {"config"},
                   {"processes", Align::right},
                   {"epoch", Align::right},
                   {"samples/s", Align::right},
                   {"per process", Align::right},
                   {"speedup", Align::right},
                   {"efficiency", Align::right},
                   {"comm wait", Align::right},
                   {"note"}};
  for (const auto& row : rows) {
    table.rows.push_back({row.model, row.config, std::to_string(row.world_size),
                          (row.epochs.projected ? "~" : "") + format_duration(row.epoch_seconds),
                          format_fixed(row.samples_per_s, 1), format_fixed(per_process_samples_per_s(row), 1),
                          optional_text(row.speedup, 2, "x"), optional_text(percent(row.efficiency), 0, "%"),
                          optional_text(percent(row.comm_share), 1, "%"), note_of(row)});
  }
  return table;
}

// What scripts read (CSV and JSON): plain numbers, one column per figure.
Table records_table(const std::vector<ScalingRow>& rows) {
  Table table;
  table.columns = {{"model"},         {"config"},     {"world_size"},    {"runs"},
                   {"epoch_seconds"}, {"projected"},  {"samples_per_s"}, {"per_process_samples_per_s"},
                   {"speedup"},       {"efficiency"}, {"comm_share"},    {"flag"}};
  for (const auto& row : rows) {
    table.rows.push_back({row.model, row.config, Cell::integer(row.world_size), Cell::integer(row.runs),
                          Cell::number(row.epoch_seconds, 3), Cell::boolean(row.epochs.projected),
                          Cell::number(row.samples_per_s, 3), Cell::number(per_process_samples_per_s(row), 3),
                          Cell::number_or_blank(row.speedup, 4), Cell::number_or_blank(row.efficiency, 4),
                          Cell::number_or_blank(row.comm_share, 4), Cell::text_or_null(flag_and_baseline(row))});
  }
  return table;
}

}  // namespace

namespace {

// What a row is grouped and matched by: a 1-process row of the same model and config is the
// baseline; on CPU, failing that, one of the same shared config that used the same cores.
struct ScalingGroup {
  std::string model, config, shared_config;
  int64_t threads_on_host = 0;  // CPU: threads x processes on rank 0's host
};

double seconds_per_trained_sample(const ScalingRow& row) {
  return row.epoch_samples > 0 ? row.epoch_seconds / row.epoch_samples : 0;
}

const ScalingRow* baseline_of(const ScalingGroup& group, const std::vector<ScalingRow>& rows,
                              const std::vector<ScalingGroup>& groups) {
  const ScalingRow* same_cores = nullptr;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].world_size != 1 || groups[i].model != group.model) continue;
    if (groups[i].config == group.config) return &rows[i];
    if (group.threads_on_host > 0 && groups[i].shared_config == group.shared_config &&
        groups[i].threads_on_host == group.threads_on_host) {
      same_cores = &rows[i];
    }
  }
  return same_cores;
}

}  // namespace

std::vector<ScalingRow> build_scaling(const std::vector<ResultFile>& results, std::vector<std::string>* warnings) {
  if (results.empty()) throw input_error("report: give at least one result file");
  using Key = std::tuple<std::string, std::string, int64_t>;  // model, config, world size
  std::map<Key, std::vector<const ResultFile*>> by_key;
  for (const auto& r : results) by_key[{model_row(r), config_of(r), r.world_size}].push_back(&r);

  std::vector<ScalingRow> rows;
  std::vector<ScalingGroup> groups;
  for (const auto& [key, runs] : by_key) {
    ScalingRow row;
    std::tie(row.model, row.config, row.world_size) = key;
    row.runs = static_cast<int>(runs.size());
    std::vector<double> epochs, rates, shares, samples;
    for (const auto* r : runs) {
      epochs.push_back(r->epoch_seconds);
      rates.push_back(r->samples_per_s);
      samples.push_back(r->epoch_samples);
      if (r->comm_share) shares.push_back(*r->comm_share);
    }
    row.epochs = epoch_kinds(runs);
    const auto mixed = mixed_settings(runs, "");
    if (warnings && !mixed.empty()) {
      warnings->push_back(row.model + " / " + row.config + " x " + std::to_string(row.world_size) + ": its " +
                          std::to_string(runs.size()) + " runs differ in " + join(mixed));
    }
    const ResultFile& first = *runs.front();
    row.epoch_samples = spread(samples).mean;
    row.epoch_seconds = spread(epochs).mean;
    row.samples_per_s = rate_of_their_total_work(rates);
    if (!shares.empty()) row.comm_share = spread(shares).mean;
    rows.push_back(row);
    groups.push_back({row.model, row.config, shared_config_of(first),
                      first.device == "cpu" ? first.threads * first.processes_on_host : 0});
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ScalingRow& row = rows[i];
    const ScalingRow* base = baseline_of(groups[i], rows, groups);
    if (!base) {
      bool only_graphed = false;
      for (std::size_t j = 0; j < rows.size(); ++j) {
        only_graphed = only_graphed || (rows[j].world_size == 1 && groups[j].model == groups[i].model &&
                                        groups[j].shared_config == groups[i].shared_config + kGraphed);
      }
      row.flag = only_graphed ? "no eager 1-process baseline (rerun it with train.cuda_graph=false)"
                              : "no 1-process baseline";
      continue;
    }
    if (base->config != row.config) row.baseline = "1 process, " + base->config.substr(groups[i].shared_config.size() + 2);
    const double per_sample = seconds_per_trained_sample(row);
    if (per_sample <= 0 || seconds_per_trained_sample(*base) <= 0) continue;
    row.speedup = seconds_per_trained_sample(*base) / per_sample;
    if (warnings && &row != base && mixes_measured_and_projected(row.epochs, base->epochs)) {
      warnings->push_back(row.model + " / " + row.config + " x " + std::to_string(row.world_size) + ": its speedup " +
                          kMeasuredAgainstProjected);
    }
    row.efficiency = *row.speedup / static_cast<double>(row.world_size);
    if (row.world_size > 1 && *row.efficiency > kSuperLinear) row.flag = "super-linear";
    if (row.world_size > 1 && *row.efficiency < kCollapsing) row.flag = "collapsing";
  }
  return rows;
}

std::string render_scaling(const std::vector<ScalingRow>& rows, const std::string& format) {
  return render_overview_or_records(overview_table(rows), records_table(rows), format, "--scaling");
}

}  // namespace tbench
