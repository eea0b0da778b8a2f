#pragma once
// One table, four renderings. `tbench report` and `tbench report --scaling` build a Table and
// print it as aligned text, markdown, CSV or JSON rows, so every format lays out and escapes
// its cells the same way whichever command produced it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

// One cell: the text that text, markdown and CSV print, and the value that JSON carries. They
// differ for measurements: the text is rounded for reading, JSON keeps full precision and says
// null where the text is blank.
struct Cell {
  // A plain string is a cell (implicitly, so rows can be written as lists of labels); JSON
  // carries the same string.
  Cell(std::string shown);
  Cell(const char* shown);

  static Cell number(double value, int digits);                                 // "5.000" / 5.0
  static Cell integer(int64_t value);                                           // "3" / 3
  static Cell boolean(bool value);                                              // "true" / true
  static Cell number_or_blank(const std::optional<double>& value, int digits);  // "" / null when absent
  static Cell text_or_null(const std::string& shown);                           // "" / null when empty

  std::string text;
  nlohmann::json value;
};

enum class Align { left, right };

struct Column {
  std::string header;  // also the key of this column in JSON rows
  // Honoured by markdown only: text output left-aligns every column, as tbench always has.
  Align align = Align::left;
};

struct Table {
  std::string caption;  // a line above text and markdown output; CSV and JSON have no place for it
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  // each with one cell per column
};

// Columns padded to their widest cell and separated by two spaces, the header underlined with dashes.
std::string to_text(const Table& table);
// A GitHub-flavoured pipe table, the caption in italics above it.
std::string to_markdown(const Table& table);
// RFC 4180 fields, "\n" line ends: a field holding a comma, a double quote, CR or LF is quoted,
// its quotes doubled.
std::string to_csv(const Table& table);
// An array with one object per row, keyed by column header.
nlohmann::json to_json(const Table& table);

// A report that people read as one table and scripts as another (`report --scaling`,
// `report --profile`): `overview` as "table" (text) or "markdown"/"md", `records` as "csv" or
// "json" ({"rows": [...]}). Another format is an input error that names `flag`.
std::string render_overview_or_records(const Table& overview, const Table& records, const std::string& format,
                                       const std::string& flag);

}  // namespace tbench
