// `tbench report`: results grouped into a model x label table, rendered as text, markdown, CSV
// or JSON (HTML lives in report_html.cpp).
#include <algorithm>
#include <map>
#include <set>

#include "tbench/analysis/analysis.hpp"
#include "tbench/analysis/table.hpp"
#include "tbench/errors.hpp"
#include "tbench/results/summary.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

template <typename T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// "19:32 ±4.1s" — mm:ss as people quote epochs, the spread over repeats in seconds; one projected
// run's as "~19:32 [18:50, 20:14]", its 95% interval.
std::string epoch_text(const ReportCell& c) {
  std::string text = (c.projected ? "~" : "") + format_duration(c.epoch_mean);
  if (c.runs > 1) text += " ±" + format_significant(c.epoch_stdev, 2) + "s";
  if (c.projected_ci95) {
    text += " [" + format_duration(c.projected_ci95->low) + ", " + format_duration(c.projected_ci95->high) + "]";
  }
  return text;
}

std::string cell_text(const ReportCell& c) {
  std::string text = epoch_text(c) + ", " + format_fixed(c.samples_per_s, 1) + "/s";
  if (c.speedup) text += ", " + format_fixed(*c.speedup, 2) + "x";
  if (c.speedup_ci95) {
    text += " (" + format_fixed(c.speedup_ci95->low, 2) + "-" + format_fixed(c.speedup_ci95->high, 2) + ")";
    if (c.speedup_ci95_basis != "repeats") text += "*";
  }
  if (c.machine_speed_moved()) text += " !";
  if (c.gpu_power_w) text += ", " + format_fixed(*c.gpu_power_w, 0) + " W";
  if (c.gpu_energy_j_per_sample) text += ", " + format_fixed(*c.gpu_energy_j_per_sample, 2) + " J/sample";
  if (c.runs > 1) text += " (n=" + std::to_string(c.runs) + ")";
  return text;
}

std::string header_note(const Report& r) {
  const bool any_gpu_figures = std::any_of(r.results.begin(), r.results.end(), [](const ResultFile* f) {
    return f->gpu_power_w_mean || f->gpu_energy_j_per_sample;
  });
  return "epoch time (mm:ss; ~ = projected from steady steps, [ ] its 95% interval; ± = stdev over repeats), "
         "samples/s, speedup vs '" +
         r.baseline + "' (per trained sample; its 95% interval from the repeats; * from one run's steps, blind to run-to-run drift)" +
         (r.speed_moved.empty() ? "" : "; ! = the machine's speed moved during one of its runs (its CPU peak probes "
                                       "before and after the epochs lay over " +
                                           format_fixed(100 * kPeakProbeSpreadWarning, 0) + "% apart)") +
         (any_gpu_figures ? "; W, J/sample: one GPU's mean power and energy per sample (NVML)" : "");
}

// The warning for a cell one of whose runs ran on a machine whose speed moved.
std::string speed_moved_line(const std::string& model, const std::string& label, const WidestProbeSpread& widest) {
  return model + " / " + label + ": the machine's speed moved during " + widest.run->path +
         ": its CPU peak probes before and after the epochs gave " +
         probes_gflops_text(widest.run->peak_probes_flops_per_s) + " GFLOP/s, " + format_fixed(100 * widest.spread, 0) +
         "% apart, and its rates carry that";
}

// The mean of a figure over the runs that have it; none if no run does.
std::optional<double> mean_where_measured(const std::vector<const ResultFile*>& runs,
                                          std::optional<double> ResultFile::*figure) {
  std::vector<double> values;
  for (const auto* r : runs) {
    if (r->*figure) values.push_back(*(r->*figure));
  }
  if (values.empty()) return std::nullopt;
  return spread(values).mean;
}

// What is known of a cell's mean epoch time, and from what: its repeats where it has two or more
// (independent runs), else its one run's steady step at the work it planned, as its summary
// projects the epoch (the step's relative uncertainty is the epoch's).
struct EpochKnowledge {
  std::optional<LogMean> log_mean;
  std::string basis;  // "repeats" or "steps"
};
EpochKnowledge epoch_knowledge_of(const std::vector<const ResultFile*>& runs, const Spread& epochs) {
  if (runs.size() >= 2) return {log_mean(epochs, static_cast<double>(epochs.count)), "repeats"};
  const ResultFile& r = *runs.front();
  const auto planned = planned_step_flops(r.planned_epoch_step_train_flops,
                                          static_cast<int64_t>(r.planned_epoch_step_train_flops.size()));
  const SteadyStep step = run_steady_step(r, planned.has_value());
  const double flops = planned.value_or(0.0);
  const auto se = step.standard_error_at(flops);
  return {se ? log_mean(step.seconds_at(flops), *se) : std::nullopt, "steps"};
}

// The speedup's interval where both cells' epoch times are known.
void add_speedup_interval(ReportCell& cell, const EpochKnowledge& base, const EpochKnowledge& own) {
  if (!cell.speedup || !base.log_mean || !own.log_mean) return;
  cell.speedup_ci95 = ratio_interval_95(*cell.speedup, *base.log_mean, *own.log_mean);
  cell.speedup_ci95_basis = base.basis == own.basis ? base.basis : "repeats and steps";
}

// The baseline's epoch time over the cell's, each per sample it trained: epoch times alone would
// call 2 processes that train 64 samples an epoch faster than 1 that trains 96 (100 samples,
// batch 32), at a lower throughput. The same as the epoch times' ratio where the counts agree.
double speedup_per_trained_sample(const ReportCell& base, const ReportCell& cell) {
  if (!(base.epoch_samples > 0) || !(cell.epoch_samples > 0)) return base.epoch_mean / cell.epoch_mean;
  return (base.epoch_mean / base.epoch_samples) / (cell.epoch_mean / cell.epoch_samples);
}

// What a model x label grid shows where that model was not run under that label: markdown has
// the typographic en dash, plain text stays ASCII.
std::string missing_mark(bool markdown) { return markdown ? "–" : "-"; }

// The model x label grid people read (text and markdown); markdown bolds the model names.
Table overview_table(const Report& r, bool markdown) {
  Table table;
  table.caption = header_note(r);
  table.columns.push_back({"model"});
  for (const auto& label : r.labels) table.columns.push_back({label, Align::right});
  for (const auto& model : r.models) {
    const auto& cells = r.cells.at(model);
    std::vector<Cell> row = {markdown ? "**" + model + "**" : model};
    for (const auto& label : r.labels) {
      const auto cell = cells.find(label);
      row.push_back(cell != cells.end() ? cell_text(cell->second) : missing_mark(markdown));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

// One row per (model, label) that has runs: the long form CSV and JSON carry. CSV heads the label
// column with the --by key, JSON with "label".
Table records_table(const Report& r, const std::string& label_header) {
  Table table;
  // Columns added later go last, so readers that index columns by position keep working.
  table.columns = {{"model"},      {label_header}, {"runs"},          {"epoch_seconds_mean"}, {"epoch_seconds_stdev"},
                   {"epoch_time"}, {"projected"},  {"samples_per_s"}, {"speedup"},            {"gpu_power_w"},
                   {"gpu_energy_j_per_sample"},    {"projected_ci95_low"},  {"projected_ci95_high"},
                   {"speedup_ci95_low"},           {"speedup_ci95_high"},   {"speedup_ci95_basis"},
                   {"peak_probe_spread"},          {"machine_speed_moved"},  {"epoch_samples"}};
  for (const auto& model : r.models) {
    const auto& cells = r.cells.at(model);
    for (const auto& label : r.labels) {
      const auto found = cells.find(label);
      if (found == cells.end()) continue;
      const ReportCell& c = found->second;
      const auto bound = [](const std::optional<Interval>& interval, double Interval::*end, int digits) {
        return Cell::number_or_blank(interval ? std::optional<double>((*interval).*end) : std::nullopt, digits);
      };
      table.rows.push_back({model, label, Cell::integer(c.runs), Cell::number(c.epoch_mean, 3),
                            Cell::number(c.epoch_stdev, 3), format_duration(c.epoch_mean), Cell::boolean(c.projected),
                            Cell::number(c.samples_per_s, 3), Cell::number_or_blank(c.speedup, 4),
                            Cell::number_or_blank(c.gpu_power_w, 1), Cell::number_or_blank(c.gpu_energy_j_per_sample, 4),
                            bound(c.projected_ci95, &Interval::low, 3), bound(c.projected_ci95, &Interval::high, 3),
                            bound(c.speedup_ci95, &Interval::low, 4), bound(c.speedup_ci95, &Interval::high, 4),
                            Cell::text_or_null(c.speedup_ci95_basis), Cell::number_or_blank(c.peak_probe_spread, 4),
                            Cell::boolean(c.machine_speed_moved()), Cell::number(c.epoch_samples, 1)});
    }
  }
  return table;
}

}  // namespace

bool ReportCell::machine_speed_moved() const {
  return peak_probe_spread && *peak_probe_spread > kPeakProbeSpreadWarning;
}

json report_json(const Report& r) {
  return {{"by", r.by}, {"baseline", r.baseline}, {"models", r.models}, {"labels", r.labels},
          {"rows", to_json(records_table(r, "label"))}};
}

std::string render_html(const Report& r);  // report_html.cpp

namespace {

// The field a report's label is made of, which its cells' runs share and its columns differ in.
// Columns by host leave out the machine (its host and processor) only where the processors are
// alike: a host's H100 and H200 runs are different machines.
bool label_field(const SettingDifference& d, const std::string& by, const ResultFile& a, const ResultFile& b) {
  return d.field == by || (by == "host" && d.field == "machine" && processor_of(a) == processor_of(b));
}

// Besides their label's field, what columns by `by` differ in by design: another machine runs
// its own tbench, torch and BLAS; another device is another machine; each key's spec field.
bool column_field(const SettingDifference& d, const std::string& by, const ResultFile& a, const ResultFile& b) {
  static const std::map<std::string, std::set<std::string>> kFieldsOf = {
      {"machine", {"machine", "tbench.git", "env.torch", "env.cpu.blas"}},
      {"host", {"tbench.git", "env.torch", "env.cpu.blas"}},
      {"device", {"device", "machine"}},
      {"batch_size", {"train.batch_size"}},
      {"seq_len", {"data.seq_len"}},
  };
  if (label_field(d, by, a, b)) return true;
  const auto it = kFieldsOf.find(by);
  return it != kFieldsOf.end() && it->second.count(d.field) > 0;
}

bool repeats_vary(const std::string& field) { return field == "train.seed" || field == "data.seed"; }

// What a column's runs differ in from the baseline column's, beyond the column key and the seeds.
std::vector<std::string> column_differences(const ResultFile& baseline, const ResultFile& other, const std::string& by) {
  std::vector<std::string> fields;
  for (const auto& d : setting_differences(baseline, other)) {
    if (!repeats_vary(d.field) && !column_field(d, by, baseline, other)) {
      fields.push_back(d.field + " " + setting_value_text(d.a, d.a_recorded) + " -> " + setting_value_text(d.b, d.b_recorded));
    }
  }
  return fields;
}

}  // namespace

EpochKinds epoch_kinds(const std::vector<const ResultFile*>& runs) {
  EpochKinds kinds;
  for (const auto* r : runs) (r->epoch_projected ? kinds.projected : kinds.measured) = true;
  return kinds;
}

bool mixes_measured_and_projected(const EpochKinds& a, const EpochKinds& b) {
  return (a.measured || b.measured) && (a.projected || b.projected);
}

// The mean epoch time beside it says the same. The arithmetic mean would weigh a fast run above a
// slow one (runs at 1119/s and 635/s: 877/s, for 810/s done).
double rate_of_their_total_work(const std::vector<double>& rates) {
  double seconds_per_sample = 0;
  for (double rate : rates) seconds_per_sample += 1.0 / rate;
  return static_cast<double>(rates.size()) / seconds_per_sample;
}

std::vector<std::string> mixed_settings(const std::vector<const ResultFile*>& runs, const std::string& by) {
  std::set<std::string> fields;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    for (const auto& d : setting_differences(*runs.front(), *runs[i])) {
      if (!repeats_vary(d.field) && !label_field(d, by, *runs.front(), *runs[i])) fields.insert(d.field);
    }
  }
  return {fields.begin(), fields.end()};
}

Report build_report(const std::vector<ResultFile>& results, const std::string& by, const std::string& baseline) {
  if (results.empty()) throw input_error("report: give at least one result file");
  std::vector<const ResultFile*> all;
  for (const auto& r : results) all.push_back(&r);
  refuse_copies_of_one_run(all, "report");
  Report report;
  report.by = by;
  std::map<std::string, std::map<std::string, std::vector<const ResultFile*>>> groups;
  std::map<std::string, std::map<std::string, EpochKnowledge>> epoch_knowledge;
  for (const auto& r : results) {
    const std::string label = label_of(r, by);
    const std::string row = model_row(r, by);
    add_unique(report.models, row);
    add_unique(report.labels, label);
    groups[row][label].push_back(&r);
    report.results.push_back(&r);
  }
  report.baseline = baseline.empty() ? report.labels.front() : baseline;
  if (std::find(report.labels.begin(), report.labels.end(), report.baseline) == report.labels.end()) {
    std::string known;
    for (const auto& l : report.labels) known += (known.empty() ? "'" : ", '") + l + "'";
    throw input_error("--baseline: '" + report.baseline + "' is not a column; columns are " + known);
  }
  for (const auto& [model, by_label] : groups) {
    for (const auto& [label, runs] : by_label) {
      std::vector<double> epochs, rates, samples;
      ReportCell cell;
      for (const auto* r : runs) {
        epochs.push_back(r->epoch_seconds);
        rates.push_back(r->samples_per_s);
        samples.push_back(r->epoch_samples);
        cell.projected = cell.projected || r->epoch_projected;
      }
      const auto mixed = mixed_settings(runs, by);
      if (!mixed.empty()) {
        report.mixed.push_back(model + " / " + label + ": its " + std::to_string(runs.size()) +
                               " runs differ in " + join(mixed));
      }
      const Spread e = spread(epochs);
      epoch_knowledge[model][label] = epoch_knowledge_of(runs, e);
      cell.runs = static_cast<int>(runs.size());
      cell.epoch_mean = e.mean;
      cell.epoch_stdev = e.stdev;
      cell.samples_per_s = rate_of_their_total_work(rates);
      cell.epoch_samples = spread(samples).mean;
      if (runs.size() == 1 && runs.front()->epoch_projected) cell.projected_ci95 = runs.front()->projected_epoch_ci95;
      cell.gpu_power_w = mean_where_measured(runs, &ResultFile::gpu_power_w_mean);
      cell.gpu_energy_j_per_sample = mean_where_measured(runs, &ResultFile::gpu_energy_j_per_sample);
      if (const auto widest = widest_peak_probe_spread(runs)) {
        cell.peak_probe_spread = widest->spread;
        if (cell.machine_speed_moved()) report.speed_moved.push_back(speed_moved_line(model, label, *widest));
      }
      report.cells[model][label] = cell;
    }
  }
  for (auto& [model, cells] : report.cells) {
    if (!cells.count(report.baseline)) continue;
    const ReportCell& base_cell = cells.at(report.baseline);
    const EpochKinds base_kinds = epoch_kinds(groups[model][report.baseline]);
    for (auto& [label, cell] : cells) {
      if (!(cell.epoch_mean > 0)) continue;
      const EpochKinds kinds = epoch_kinds(groups[model][label]);
      if (label != report.baseline && mixes_measured_and_projected(base_kinds, kinds)) {
        report.unlike_epochs.push_back(model + ": the speedup of '" + label + "' over '" + report.baseline + "' " +
                                       kMeasuredAgainstProjected);
      }
      cell.speedup = speedup_per_trained_sample(base_cell, cell);
      if (label == report.baseline) continue;
      if (cell.epoch_samples != base_cell.epoch_samples) {
        report.unlike_samples.push_back(
            model + ": '" + label + "' trained " + format_fixed(cell.epoch_samples, 0) + " samples an epoch against '" +
            report.baseline + "''s " + format_fixed(base_cell.epoch_samples, 0) +
            ", so its speedup is per trained sample (" + format_fixed(*cell.speedup, 2) + "x), not of epoch times (" +
            format_fixed(base_cell.epoch_mean / cell.epoch_mean, 2) + "x)");
      }
      add_speedup_interval(cell, epoch_knowledge[model][report.baseline], epoch_knowledge[model][label]);
      const auto differ =
          column_differences(*groups[model][report.baseline].front(), *groups[model][label].front(), report.by);
      if (!differ.empty()) {
        report.unlike_columns.push_back(model + ": '" + label + "' against '" + report.baseline + "' is not only a change of " +
                                        report.by + ": " + join(differ));
      }
    }
  }
  return report;
}

std::string render_report(const Report& report, const std::string& format) {
  if (format == "table") return to_text(overview_table(report, /*markdown=*/false));
  if (format == "markdown" || format == "md") return to_markdown(overview_table(report, /*markdown=*/true));
  if (format == "csv") return to_csv(records_table(report, report.by));
  if (format == "json") return json_text(report_json(report), 2) + "\n";
  if (format == "html") return render_html(report);
  throw input_error("--format: '" + format + "' is not one of table, markdown, csv, json, html");
}

}  // namespace tbench
