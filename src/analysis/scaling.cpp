// `tbench report --scaling`: data-parallel runs against the single-process run of the same spec.
#include <map>
#include <optional>
#include <tuple>

#include "tbench/analysis/analysis.hpp"
#include "tbench/analysis/table.hpp"
#include "tbench/errors.hpp"
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

// What must match for two runs to be "the same spec" at different world sizes. A step replayed
// from a CUDA graph is another step than the eager one data-parallel runs take.
std::string config_of(const ResultFile& r) {
  return device_kind(r) + " " + r.precision + ", batch " + std::to_string(r.batch_size * r.grad_accum) +
         "/process, seq " + std::to_string(r.seq_len) + ", " + std::to_string(r.threads) +
         (r.threads == 1 ? " thread" : " threads") + ", " + std::to_string(r.num_samples) + " samples" +
         (r.cuda_graph ? kGraphed : "");
}

std::string optional_text(const std::optional<double>& value, int digits, const std::string& suffix = "") {
  return value ? format_fixed(*value, digits) + suffix : "-";
}

std::optional<double> percent(const std::optional<double>& fraction) {
  return fraction ? std::optional<double>(*fraction * 100) : std::nullopt;
}

std::string note_of(const ScalingRow& row) {
  if (row.runs <= 1) return row.flag;
  return row.flag + (row.flag.empty() ? "" : ", ") + "n=" + std::to_string(row.runs);
}

double per_process_samples_per_s(const ScalingRow& row) {
  return row.samples_per_s / static_cast<double>(row.world_size);
}

const char* kNote =
    "speedup = T1/TN of the epoch time vs the 1-process run of the same config; efficiency = speedup / N "
    "(> 105% super-linear, < 50% collapsing); ~ = projected from steady steps; samples/s is global";

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
                          (row.projected ? "~" : "") + format_duration(row.epoch_seconds),
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
                          Cell::number(row.epoch_seconds, 3), Cell::boolean(row.projected),
                          Cell::number(row.samples_per_s, 3), Cell::number(per_process_samples_per_s(row), 3),
                          Cell::number_or_blank(row.speedup, 4), Cell::number_or_blank(row.efficiency, 4),
                          Cell::number_or_blank(row.comm_share, 4), Cell::text_or_null(row.flag)});
  }
  return table;
}

}  // namespace

std::vector<ScalingRow> build_scaling(const std::vector<ResultFile>& results) {
  if (results.empty()) throw input_error("report: give at least one result file");
  using Key = std::tuple<std::string, std::string, int64_t>;  // model, config, world size
  std::map<Key, std::vector<const ResultFile*>> groups;
  for (const auto& r : results) groups[{model_row(r), config_of(r), r.world_size}].push_back(&r);

  std::vector<ScalingRow> rows;
  std::map<std::pair<std::string, std::string>, double> baseline;  // (model, config) -> T1
  for (const auto& [key, runs] : groups) {
    ScalingRow row;
    std::tie(row.model, row.config, row.world_size) = key;
    row.runs = static_cast<int>(runs.size());
    std::vector<double> epochs, rates, shares;
    for (const auto* r : runs) {
      epochs.push_back(r->epoch_seconds);
      rates.push_back(r->samples_per_s);
      if (r->comm_share) shares.push_back(*r->comm_share);
      row.projected = row.projected || r->epoch_projected;
    }
    row.epoch_seconds = spread(epochs).mean;
    row.samples_per_s = spread(rates).mean;
    if (!shares.empty()) row.comm_share = spread(shares).mean;
    if (row.world_size == 1) baseline[{row.model, row.config}] = row.epoch_seconds;
    rows.push_back(row);
  }
  for (auto& row : rows) {
    const auto base = baseline.find({row.model, row.config});
    if (base == baseline.end()) {
      const bool only_graphed = baseline.count({row.model, row.config + kGraphed}) > 0;
      row.flag = only_graphed ? "no eager 1-process baseline (rerun it with train.cuda_graph=false)"
                              : "no 1-process baseline";
      continue;
    }
    if (row.epoch_seconds <= 0) continue;
    row.speedup = base->second / row.epoch_seconds;
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
