// `tbench report --profile`: where each result's profiled steps went, by kind of work (the kernels'
// device time on CUDA, the operators' self time on CPU), one column per result.
#include <algorithm>
#include <map>

#include "tbench/analysis/analysis.hpp"
#include "tbench/analysis/table.hpp"
#include "tbench/errors.hpp"
#include "tbench/timing/profile.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

// The time a result's profile keeps no name for: its entries past `top`, never guessed into a kind.
const char* kUnlisted = "(below the profile's top entries)";

// Kinds sorted again with today's op_category, so a result written before a kind existed reads as
// it would now.
ProfileColumn column_of(const ResultFile& r, const std::string& label) {
  if (!r.step_profile) {
    throw input_error(r.path + ": no profile by name (profile.top): run it with timing.profile_steps (e.g. --set "
                      "timing.profile_steps=3)");
  }
  const ResultFile::StepProfile& p = *r.step_profile;
  ProfileColumn c;
  c.label = label;
  c.path = r.path;
  c.measures = p.measures;
  c.ms_per_step = p.measured_ms_per_step;
  double named = 0;
  for (const auto& [name, ms] : p.top_ms_per_step) {
    c.kinds[op_category(name)] += ms;
    named += ms;
  }
  const double unlisted = p.measured_ms_per_step - named;
  if (unlisted > 1e-9 * std::max(1.0, p.measured_ms_per_step)) c.kinds[kUnlisted] = unlisted;
  c.median_step_ms = spread(r.step_seconds).median * 1e3;
  return c;
}

// Labels as `report --by` gives them; two results with one label are told apart by a number.
std::vector<std::string> unique_labels(const std::vector<ResultFile>& results, const std::string& by) {
  std::vector<std::string> labels;
  std::map<std::string, int> count, seen;
  for (const auto& r : results) ++count[labels.emplace_back(label_of(r, by))];
  for (auto& label : labels) {
    if (count[label] > 1) label += " #" + std::to_string(++seen[label]);
  }
  return labels;
}

// Kinds by their largest time in any column, the unlisted remainder last.
std::vector<std::string> kinds_in_order(const std::vector<ProfileColumn>& columns) {
  std::map<std::string, double> largest;
  for (const auto& c : columns) {
    for (const auto& [kind, ms] : c.kinds) largest[kind] = std::max(largest[kind], ms);
  }
  std::vector<std::string> kinds;
  for (const auto& named : largest) kinds.push_back(named.first);
  std::stable_sort(kinds.begin(), kinds.end(), [&](const std::string& a, const std::string& b) {
    if ((a == kUnlisted) != (b == kUnlisted)) return b == kUnlisted;
    return largest[a] > largest[b];
  });
  return kinds;
}

double share_of(const ProfileColumn& c, double ms) { return c.ms_per_step > 0 ? ms / c.ms_per_step : 0.0; }

// What people read: a row per kind of work, a column per result, "ms (share)".
Table overview_table(const std::vector<ProfileColumn>& columns) {
  Table table;
  const bool mixed = std::any_of(columns.begin(), columns.end(),
                                 [&](const ProfileColumn& c) { return c.measures != columns.front().measures; });
  table.caption = "milliseconds a profiled step (share of the profile's time) by kind of work: " +
                  (mixed ? std::string("device kernels on CUDA, host operators' self time on CPU")
                         : columns.front().measures);
  table.columns.push_back({"kind of work"});
  for (const auto& c : columns) table.columns.push_back({c.label, Align::right});
  const auto with_share = [](double ms, double share) {
    return format_fixed(ms, 2) + " (" + format_fixed(100 * share, 1) + "%)";
  };
  for (const auto& kind : kinds_in_order(columns)) {
    std::vector<Cell> row = {kind};
    for (const auto& c : columns) {
      const auto found = c.kinds.find(kind);
      const double ms = found == c.kinds.end() ? 0.0 : found->second;
      row.emplace_back(with_share(ms, share_of(c, ms)));
    }
    table.rows.push_back(row);
  }
  std::vector<Cell> total = {"profiled time a step"}, step = {"median timed step"};
  for (const auto& c : columns) {
    total.emplace_back(format_fixed(c.ms_per_step, 2));
    step.emplace_back(format_fixed(c.median_step_ms, 2));
  }
  table.rows.push_back(total);
  table.rows.push_back(step);
  return table;
}

// What scripts read: a row per result and kind, plain numbers.
Table records_table(const std::vector<ProfileColumn>& columns) {
  Table table;
  table.columns = {{"label"}, {"result"}, {"measures"}, {"kind"}, {"ms_per_step"}, {"share"}, {"median_step_ms"}};
  for (const auto& c : columns) {
    for (const auto& kind : kinds_in_order({c})) {
      const double ms = c.kinds.at(kind);
      table.rows.push_back({c.label, c.path, c.measures, kind, Cell::number(ms, 4), Cell::number(share_of(c, ms), 4),
                            Cell::number(c.median_step_ms, 3)});
    }
  }
  return table;
}

}  // namespace

std::vector<ProfileColumn> build_profile_report(const std::vector<ResultFile>& results, const std::string& by) {
  if (results.empty()) throw input_error("report: give at least one result file");
  const std::vector<std::string> labels = unique_labels(results, by);
  std::vector<ProfileColumn> columns;
  for (std::size_t i = 0; i < results.size(); ++i) columns.push_back(column_of(results[i], labels[i]));
  return columns;
}

std::string render_profile_report(const std::vector<ProfileColumn>& columns, const std::string& format) {
  if (columns.empty()) throw input_error("report --profile: no profiled result to show");
  return render_overview_or_records(overview_table(columns), records_table(columns), format, "--profile");
}

}  // namespace tbench
