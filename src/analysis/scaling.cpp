// `tbench report --scaling`: data-parallel runs against the single-process run of the same spec.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "tbench/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

constexpr double kSuperLinear = 1.05;
constexpr double kCollapsing = 0.5;

std::string device_kind(const ResultFile& r) {
  if (r.device == "cpu") return "cpu";
  const std::string gpu = r.json.value(json::json_pointer("/env/gpu/name"), std::string());
  return gpu.empty() ? "cuda" : gpu;
}

// What must match for two runs to be "the same spec" at different world sizes.
std::string config_of(const ResultFile& r) {
  return device_kind(r) + " " + r.precision + ", batch " + std::to_string(r.batch_size * r.grad_accum) +
         "/process, seq " + std::to_string(r.seq_len) + ", " + std::to_string(r.threads) +
         (r.threads == 1 ? " thread" : " threads") + ", " + std::to_string(r.num_samples) + " samples";
}

std::string optional_text(const std::optional<double>& value, int digits, const std::string& suffix = "") {
  return value ? format_fixed(*value, digits) + suffix : "-";
}

std::vector<std::string> cells_of(const ScalingRow& row) {
  return {row.model,
          row.config,
          std::to_string(row.world_size),
          (row.projected ? "~" : "") + format_duration(row.epoch_seconds),
          format_fixed(row.samples_per_s, 1),
          format_fixed(row.samples_per_s / static_cast<double>(row.world_size), 1),
          optional_text(row.speedup, 2, "x"),
          optional_text(row.efficiency ? std::optional<double>(*row.efficiency * 100) : std::nullopt, 0, "%"),
          optional_text(row.comm_share ? std::optional<double>(*row.comm_share * 100) : std::nullopt, 1, "%"),
          row.flag + (row.runs > 1 ? (row.flag.empty() ? "" : ", ") + std::string("n=") + std::to_string(row.runs) : "")};
}

const std::vector<std::string>& headers() {
  static const std::vector<std::string> h = {"model",   "config",     "processes",  "epoch",     "samples/s",
                                             "per process", "speedup", "efficiency", "comm wait", "note"};
  return h;
}

const char* kNote =
    "speedup = T1/TN of the epoch time vs the 1-process run of the same config; efficiency = speedup / N "
    "(> 105% super-linear, < 50% collapsing); ~ = projected from steady steps; samples/s is global";

}  // namespace

std::vector<ScalingRow> build_scaling(const std::vector<ResultFile>& results) {
  if (results.empty()) throw input_error("report: give at least one result file");
  using Key = std::tuple<std::string, std::string, int64_t>;  // model, config, world size
  std::map<Key, std::vector<const ResultFile*>> groups;
  for (const auto& r : results) groups[{r.model, config_of(r), r.world_size}].push_back(&r);

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
      row.flag = "no 1-process baseline";
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
  std::ostringstream out;
  if (format == "json") {
    json list = json::array();
    for (const auto& r : rows) {
      const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
      list.push_back({{"model", r.model}, {"config", r.config}, {"world_size", r.world_size}, {"runs", r.runs},
                      {"epoch_seconds", r.epoch_seconds}, {"projected", r.projected},
                      {"samples_per_s", r.samples_per_s},
                      {"per_process_samples_per_s", r.samples_per_s / static_cast<double>(r.world_size)},
                      {"speedup", opt(r.speedup)}, {"efficiency", opt(r.efficiency)},
                      {"comm_share", opt(r.comm_share)}, {"flag", r.flag.empty() ? json(nullptr) : json(r.flag)}});
    }
    return json{{"rows", list}}.dump(2) + "\n";
  }
  if (format == "csv") {
    out << "model,config,world_size,runs,epoch_seconds,projected,samples_per_s,per_process_samples_per_s,speedup,"
           "efficiency,comm_share,flag\n";
    for (const auto& r : rows) {
      out << r.model << ",\"" << r.config << "\"," << r.world_size << "," << r.runs << "," << format_fixed(r.epoch_seconds, 3)
          << "," << (r.projected ? "true" : "false") << "," << format_fixed(r.samples_per_s, 3) << ","
          << format_fixed(r.samples_per_s / static_cast<double>(r.world_size), 3) << ","
          << (r.speedup ? format_fixed(*r.speedup, 4) : "") << "," << (r.efficiency ? format_fixed(*r.efficiency, 4) : "") << ","
          << (r.comm_share ? format_fixed(*r.comm_share, 4) : "") << "," << r.flag << "\n";
    }
    return out.str();
  }
  if (format == "markdown" || format == "md") {
    out << "_" << kNote << "_\n\n|";
    for (const auto& h : headers()) out << " " << h << " |";
    out << "\n|---|---|";
    for (std::size_t i = 2; i < headers().size(); ++i) out << (i + 1 == headers().size() ? "---|" : "---:|");
    out << "\n";
    for (const auto& r : rows) {
      out << "|";
      for (const auto& c : cells_of(r)) out << " " << c << " |";
      out << "\n";
    }
    return out.str();
  }
  if (format != "table") {
    throw input_error("--format: '" + format + "' is not one of table, markdown, csv, json (with --scaling)");
  }
  std::vector<std::vector<std::string>> table = {headers()};
  for (const auto& r : rows) table.push_back(cells_of(r));
  out << kNote << "\n" << aligned_table(table);
  return out.str();
}

}  // namespace tbench
