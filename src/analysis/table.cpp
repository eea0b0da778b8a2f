// The writers behind every `tbench report` format except HTML: text, markdown, CSV and JSON.
#include "tbench/analysis/table.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "tbench/errors.hpp"
#include "tbench/json_text.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {

Cell::Cell(std::string shown) : text(std::move(shown)), value(text) {}
Cell::Cell(const char* shown) : Cell(std::string(shown)) {}

Cell Cell::number(double value, int digits) {
  Cell cell(format_fixed(value, digits));
  cell.value = value;
  return cell;
}

Cell Cell::integer(int64_t value) {
  Cell cell(std::to_string(value));
  cell.value = value;
  return cell;
}

Cell Cell::boolean(bool value) {
  Cell cell(value ? "true" : "false");
  cell.value = value;
  return cell;
}

Cell Cell::number_or_blank(const std::optional<double>& value, int digits) {
  if (value) return number(*value, digits);
  Cell cell("");
  cell.value = nullptr;
  return cell;
}

Cell Cell::text_or_null(const std::string& shown) {
  Cell cell(shown);
  if (shown.empty()) cell.value = nullptr;
  return cell;
}

namespace {

std::vector<std::string> header_texts(const Table& table) {
  std::vector<std::string> texts;
  for (const auto& column : table.columns) texts.push_back(column.header);
  return texts;
}

std::vector<std::string> cell_texts(const std::vector<Cell>& row) {
  std::vector<std::string> texts;
  for (const auto& cell : row) texts.push_back(cell.text);
  return texts;
}

// Widths count bytes, so a cell holding a multi-byte character such as "±" is padded one short;
// kept as it is so that text output does not change.
std::vector<std::size_t> column_widths(const std::vector<std::vector<std::string>>& lines) {
  std::vector<std::size_t> widths;
  for (const auto& line : lines) {
    widths.resize(std::max(widths.size(), line.size()), 0);
    for (std::size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  }
  return widths;
}

void write_padded_line(std::ostream& out, const std::vector<std::string>& line, const std::vector<std::size_t>& widths) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    out << (i ? "  " : "") << line[i] << std::string(widths[i] - line[i].size(), ' ');
  }
  out << "\n";
}

// A cell's own '|' (a run named "a|b") would start a column, and a line break a row.
std::string markdown_cell(const std::string& text) {
  std::string cell;
  for (char c : text) {
    if (c == '|') cell += '\\';
    cell += c == '\n' || c == '\r' ? ' ' : c;
  }
  return cell;
}

void write_markdown_line(std::ostream& out, const std::vector<std::string>& line) {
  out << "|";
  for (const auto& text : line) out << " " << markdown_cell(text) << " |";
  out << "\n";
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void write_csv_line(std::ostream& out, const std::vector<std::string>& line) {
  for (std::size_t i = 0; i < line.size(); ++i) out << (i ? "," : "") << csv_field(line[i]);
  out << "\n";
}

}  // namespace

std::string to_text(const Table& table) {
  std::vector<std::vector<std::string>> lines = {header_texts(table)};
  for (const auto& row : table.rows) lines.push_back(cell_texts(row));
  const std::vector<std::size_t> widths = column_widths(lines);

  std::ostringstream out;
  if (!table.caption.empty()) out << table.caption << "\n";
  write_padded_line(out, lines.front(), widths);
  for (std::size_t i = 0; i < widths.size(); ++i) out << (i ? "  " : "") << std::string(widths[i], '-');
  out << "\n";
  for (std::size_t k = 1; k < lines.size(); ++k) write_padded_line(out, lines[k], widths);
  return out.str();
}

std::string to_markdown(const Table& table) {
  std::ostringstream out;
  if (!table.caption.empty()) out << "_" << table.caption << "_\n\n";
  write_markdown_line(out, header_texts(table));
  out << "|";
  for (const auto& column : table.columns) out << (column.align == Align::right ? "---:|" : "---|");
  out << "\n";
  for (const auto& row : table.rows) write_markdown_line(out, cell_texts(row));
  return out.str();
}

std::string to_csv(const Table& table) {
  std::ostringstream out;
  write_csv_line(out, header_texts(table));
  for (const auto& row : table.rows) write_csv_line(out, cell_texts(row));
  return out.str();
}

nlohmann::json to_json(const Table& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : table.rows) {
    nlohmann::json object = nlohmann::json::object();
    for (std::size_t i = 0; i < row.size() && i < table.columns.size(); ++i) {
      object[table.columns[i].header] = row[i].value;
    }
    rows.push_back(std::move(object));
  }
  return rows;
}

std::string render_overview_or_records(const Table& overview, const Table& records, const std::string& format,
                                       const std::string& flag) {
  if (format == "json") return json_text(nlohmann::json{{"rows", to_json(records)}}, 2) + "\n";
  if (format == "csv") return to_csv(records);
  if (format == "markdown" || format == "md") return to_markdown(overview);
  if (format == "table") return to_text(overview);
  throw input_error("--format: '" + format + "' is not one of table, markdown, csv, json (with " + flag + ")");
}

}  // namespace tbench
