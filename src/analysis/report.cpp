// `tbench report`: results grouped into a model x label table, rendered as text, markdown, CSV
// or JSON (HTML lives in report_html.cpp).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tbench/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

template <typename T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// "19:32 ±4.1s" — mm:ss as people quote epochs, the spread over repeats in seconds.
std::string epoch_text(const ReportCell& c) {
  std::string text = (c.projected ? "~" : "") + format_duration(c.epoch_mean);
  if (c.runs > 1) text += " ±" + format_fixed(c.epoch_stdev, 1) + "s";
  return text;
}

std::string cell_text(const ReportCell& c) {
  std::string text = epoch_text(c) + ", " + format_fixed(c.samples_per_s, 1) + "/s";
  if (c.speedup) text += ", " + format_fixed(*c.speedup, 2) + "x";
  if (c.runs > 1) text += " (n=" + std::to_string(c.runs) + ")";
  return text;
}

std::string header_note(const Report& r) {
  return "epoch time (mm:ss; ~ = projected from steady steps; ± = stdev over repeats), samples/s, speedup vs '" +
         r.baseline + "'";
}

std::string render_table(const Report& r) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"model"};
  header.insert(header.end(), r.labels.begin(), r.labels.end());
  rows.push_back(header);
  for (const auto& model : r.models) {
    std::vector<std::string> row = {model};
    for (const auto& label : r.labels) {
      const auto& cells = r.cells.at(model);
      row.push_back(cells.count(label) ? cell_text(cells.at(label)) : "-");
    }
    rows.push_back(row);
  }
  return header_note(r) + "\n" + aligned_table(rows);
}

std::string render_markdown(const Report& r) {
  std::ostringstream out;
  out << "_" << header_note(r) << "_\n\n| model |";
  for (const auto& label : r.labels) out << " " << label << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < r.labels.size(); ++i) out << "---:|";
  out << "\n";
  for (const auto& model : r.models) {
    out << "| **" << model << "** |";
    for (const auto& label : r.labels) {
      const auto& cells = r.cells.at(model);
      out << " " << (cells.count(label) ? cell_text(cells.at(label)) : "–") << " |";
    }
    out << "\n";
  }
  return out.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string render_csv(const Report& r) {
  std::ostringstream out;
  out << "model," << r.by << ",runs,epoch_seconds_mean,epoch_seconds_stdev,epoch_time,projected,samples_per_s,speedup\n";
  for (const auto& model : r.models) {
    for (const auto& label : r.labels) {
      const auto& cells = r.cells.at(model);
      if (!cells.count(label)) continue;
      const ReportCell& c = cells.at(label);
      out << csv_field(model) << "," << csv_field(label) << "," << c.runs << "," << format_fixed(c.epoch_mean, 3) << ","
          << format_fixed(c.epoch_stdev, 3) << "," << format_duration(c.epoch_mean) << "," << (c.projected ? "true" : "false")
          << "," << format_fixed(c.samples_per_s, 3) << "," << (c.speedup ? format_fixed(*c.speedup, 4) : "") << "\n";
    }
  }
  return out.str();
}

}  // namespace

std::string aligned_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    for (std::size_t i = 0; i < rows[k].size(); ++i) {
      out << (i ? "  " : "") << rows[k][i] << std::string(width[i] - rows[k][i].size(), ' ');
    }
    out << "\n";
    if (k == 0) {
      for (std::size_t i = 0; i < width.size(); ++i) out << (i ? "  " : "") << std::string(width[i], '-');
      out << "\n";
    }
  }
  return out.str();
}

json report_json(const Report& r) {
  json rows = json::array();
  for (const auto& model : r.models) {
    for (const auto& label : r.labels) {
      const auto& cells = r.cells.at(model);
      if (!cells.count(label)) continue;
      const ReportCell& c = cells.at(label);
      rows.push_back({{"model", model}, {"label", label}, {"runs", c.runs}, {"epoch_seconds_mean", c.epoch_mean},
                      {"epoch_seconds_stdev", c.epoch_stdev}, {"epoch_time", format_duration(c.epoch_mean)},
                      {"projected", c.projected}, {"samples_per_s", c.samples_per_s},
                      {"speedup", c.speedup ? json(*c.speedup) : json(nullptr)}});
    }
  }
  return {{"by", r.by}, {"baseline", r.baseline}, {"models", r.models}, {"labels", r.labels}, {"rows", rows}};
}

std::string render_html(const Report& r);  // report_html.cpp

Report build_report(const std::vector<ResultFile>& results, const std::string& by, const std::string& baseline) {
  if (results.empty()) throw input_error("report: give at least one result file");
  Report report;
  report.by = by;
  std::map<std::string, std::map<std::string, std::vector<const ResultFile*>>> groups;
  for (const auto& r : results) {
    const std::string label = label_of(r, by);
    add_unique(report.models, r.model);
    add_unique(report.labels, label);
    groups[r.model][label].push_back(&r);
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
      std::vector<double> epochs, rates;
      ReportCell cell;
      for (const auto* r : runs) {
        epochs.push_back(r->epoch_seconds);
        rates.push_back(r->samples_per_s);
        cell.projected = cell.projected || r->epoch_projected;
      }
      const Spread e = spread(epochs);
      cell.runs = static_cast<int>(runs.size());
      cell.epoch_mean = e.mean;
      cell.epoch_stdev = e.stdev;
      cell.samples_per_s = spread(rates).mean;
      report.cells[model][label] = cell;
    }
  }
  for (auto& [model, cells] : report.cells) {
    if (!cells.count(report.baseline)) continue;
    const double base = cells.at(report.baseline).epoch_mean;
    for (auto& [label, cell] : cells) {
      if (cell.epoch_mean > 0) cell.speedup = base / cell.epoch_mean;
    }
  }
  return report;
}

std::string render_report(const Report& report, const std::string& format) {
  if (format == "table") return render_table(report);
  if (format == "markdown" || format == "md") return render_markdown(report);
  if (format == "csv") return render_csv(report);
  if (format == "json") return report_json(report).dump(2) + "\n";
  if (format == "html") return render_html(report);
  throw input_error("--format: '" + format + "' is not one of table, markdown, csv, json, html");
}

}  // namespace tbench
