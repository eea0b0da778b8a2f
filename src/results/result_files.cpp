#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "tbench/errors.hpp"
#include "tbench/results.hpp"

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

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(ExitCode::run_failed, temp + ": cannot create: " + std::strerror(errno));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw Error(ExitCode::run_failed, temp + ": write failed: " + reason);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    throw Error(ExitCode::run_failed, temp + ": cannot flush to disk: " + std::strerror(errno));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw Error(ExitCode::run_failed, path + ": cannot move the result into place: " + reason);
  }
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
