#include <ctime>
#include <filesystem>

#include "tbench/errors.hpp"
#include "tbench/results/result_files.hpp"

namespace tbench {
namespace fs = std::filesystem;

std::string iterations_path_for(const std::string& result_path) {
  const std::string suffix = ".json";
  const bool has_suffix = result_path.size() > suffix.size() &&
                          result_path.compare(result_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? result_path.substr(0, result_path.size() - suffix.size()) : result_path) +
         ".iterations.jsonl";
}

void ensure_writable(const std::string& result_path, bool force) {
  for (const auto& path : {result_path, iterations_path_for(result_path)}) {
    if (!force && fs::exists(path)) {
      throw Error(ExitCode::result_exists,
                  path + ": a result already exists here; pass --force to overwrite it, or choose another "
                         "output (e.g. --set output=results/{name}-{timestamp}.json)");
    }
  }
  const fs::path parent = fs::path(result_path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw input_error("output: cannot create directory '" + parent.string() + "': " + ec.message());
}

IterationStream::IterationStream(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw Error(ExitCode::bad_input, path + ": cannot open the iteration stream for writing");
}

void IterationStream::on_iteration(const IterationRecord& record) {
  out_ << nlohmann::json(record).dump() << '\n';
  out_.flush();
}

namespace {

std::string format_time(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof text, format, &local);
  return text;
}

}  // namespace

std::string iso8601_now() {
  std::string text = format_time("%Y-%m-%dT%H:%M:%S%z");  // +0100 -> +01:00
  if (text.size() >= 5) text.insert(text.size() - 2, ":");
  return text;
}

std::string file_timestamp_now() { return format_time("%Y%m%d-%H%M%S"); }

}  // namespace tbench
