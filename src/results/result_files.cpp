#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace fs = std::filesystem;

namespace {

// "x/run.json" -> "x/run" + ending; a path without .json keeps all of it.
std::string beside_result(const std::string& result_path, const std::string& ending) {
  const std::string suffix = ".json";
  const bool has_suffix = result_path.size() > suffix.size() &&
                          result_path.compare(result_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? result_path.substr(0, result_path.size() - suffix.size()) : result_path) + ending;
}

}  // namespace

std::string iterations_path_for(const std::string& result_path) { return beside_result(result_path, ".iterations.jsonl"); }

std::string trace_path_for(const std::string& result_path) { return beside_result(result_path, ".trace.json"); }

std::string mllog_path_for(const std::string& result_path) { return beside_result(result_path, ".mllog"); }

void ensure_writable(const std::string& result_path, bool force, ResultSideFiles side) {
  std::vector<std::string> paths = {result_path, iterations_path_for(result_path)};
  if (side.trace) paths.push_back(trace_path_for(result_path));
  if (side.mllog) paths.push_back(mllog_path_for(result_path));
  for (const auto& path : paths) {
    if (!force && fs::exists(path)) {
      throw Error(ExitCode::result_exists,
                  path + ": a result already exists here; pass --force to overwrite it, or choose another "
                         "output (e.g. --set output=results/{name}-{timestamp}.json)");
    }
  }
  ensure_folder_takes_new_files(result_path, "output");
}

WholeLineFile::WholeLineFile(const std::string& path, const std::string& what)
    : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw Error(ExitCode::bad_input, path + ": cannot open " + what + " for writing: " + std::strerror(errno));
}

WholeLineFile::~WholeLineFile() { ::close(fd_); }

std::string WholeLineFile::append(const std::string& line) {
  const std::string failure = write_all(fd_, line.data(), line.size());
  if (failure.empty()) {
    whole_bytes_ += static_cast<long long>(line.size());
  } else if (::ftruncate(fd_, static_cast<off_t>(whole_bytes_)) == 0) {
    ::lseek(fd_, static_cast<off_t>(whole_bytes_), SEEK_SET);
  }
  return failure;
}

IterationStream::IterationStream(const std::string& path) : file_(path, "the iteration stream") {}

void IterationStream::on_iteration(const IterationRecord& record) {
  const std::string failure = file_.append(json_text(nlohmann::json(record)) + '\n');
  if (!failure.empty()) {
    throw Error(ExitCode::run_failed, file_.path() + ": cannot write the iteration stream (epoch " +
                                          std::to_string(record.epoch) + ", step " + std::to_string(record.step) +
                                          "): " + failure);
  }
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
