#include "tbench/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tbench/errors.hpp"
#include "tbench/stable_hash.hpp"

namespace tbench {

std::string read_file(const std::string& path, const std::string& what) {
  const auto unreadable = [&](const std::string& reason) {
    return input_error(path + ": cannot open " + what + ": " + reason);
  };
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw unreadable("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw unreadable(std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw unreadable("read error");
  return bytes.str();
}

namespace {

namespace fs = std::filesystem;

// Makes and removes a file in `folder`: whether it takes new ones (read-only, no permission, a
// file system that makes none, such as /proc).
void probe_folder_takes_new_files(const fs::path& folder, const std::string& option) {
  const std::string probe = (folder / (".tbench-write-probe." + std::to_string(::getpid()))).string();
  ::unlink(probe.c_str());  // one left by a killed process that had our pid
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    // ENOENT for a folder that exists: a file system that makes no new files.
    const int error = errno;
    std::error_code ec;
    const bool refuses_new_files = error == ENOENT && fs::is_directory(folder, ec);
    throw input_error(option + ": cannot write in directory '" + folder.string() +
                      "': " + (refuses_new_files ? "it takes no new files" : std::strerror(error)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

fs::path folder_of(const std::string& file_path) {
  const fs::path parent = fs::path(file_path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// `path` lies in `folder` or below it (both made absolute, links resolved where they exist).
bool is_inside(const fs::path& path, const fs::path& folder) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec), f = fs::weakly_canonical(fs::absolute(folder), ec);
  auto [in_folder, in_path] = std::mismatch(f.begin(), f.end(), p.begin(), p.end());
  (void)in_path;
  return in_folder == f.end() || (in_folder->empty() && std::next(in_folder) == f.end());  // "f/" ends in ""
}

}  // namespace

void ensure_folder_takes_new_files(const std::string& file_path, const std::string& option) {
  const fs::path folder = folder_of(file_path);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw input_error(option + ": cannot create directory '" + folder.string() + "': " + ec.message());
  probe_folder_takes_new_files(folder, option);
}

void check_command_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
  const std::string named = option + " " + path;
  const fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec) || !file.has_filename() || file.filename() == "." || file.filename() == "..") {
    throw input_error(named + ": is a directory; give a file's path");
  }
  for (const auto& input : inputs) {
    if (input.empty()) continue;
    if (fs::equivalent(file, input, ec)) {
      throw input_error(named + ": is " + (input == path ? "" : "'" + input + "', ") +
                        "a file this command reads; writing there would lose it");
    }
    // A file already in a folder it reads may be one it reads (a tokenizer's vocab.txt); a new
    // one beside them is no loss (a histogram written next to the tokenizer in ".").
    if (fs::exists(file, ec) && fs::is_directory(input, ec) && is_inside(file, input)) {
      throw input_error(named + ": is a file in '" + input + "', a folder this command reads; writing there could lose it");
    }
  }
  // The folder it goes in, or the nearest one above that exists, since the folder is made only
  // once the work is done.
  fs::path folder = folder_of(path);
  while (!fs::exists(folder, ec) && folder.has_relative_path() && folder.has_parent_path()) folder = folder.parent_path();
  if (!fs::exists(folder, ec)) folder = ".";
  if (!fs::is_directory(folder, ec)) throw input_error(named + ": '" + folder.string() + "' is not a directory");
  probe_folder_takes_new_files(folder, named);
}

void write_command_output(const std::string& option, const std::string& path, const std::string& text) {
  ensure_folder_takes_new_files(path, option + " " + path);
  write_file_atomically(path, text);
}

FileIdentity file_identity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return {};
  return {true, static_cast<unsigned long long>(info.st_dev), static_cast<unsigned long long>(info.st_ino)};
}

std::string write_all(int fd, const char* data, std::size_t size) {
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    if (n == 0) return "nothing written";
    written += static_cast<std::size_t>(n);
  }
  return "";
}

namespace {

// 8 hex digits of a hash of the host's name: short, so a long result name stays a legal file name.
std::string host_tag() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(fnv1a(host) & 0xffffffffu));
  return hex;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  // Errors name the file asked for (a user knows it), then the temporary one beside it. A process
  // id alone is no unique name on a shared filesystem (SLURM array tasks on several nodes rewrite
  // one sweep.json) or across containers: the host's is in it too.
  const std::string temp = path + ".tmp." + host_tag() + "-" + std::to_string(getpid());
  const auto fail = [&](const std::string& what, const std::string& reason) {
    ::unlink(temp.c_str());
    throw Error(ExitCode::run_failed, path + ": " + what + " (through " + temp + ", removed): " + reason);
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno == EEXIST) {  // left by a killed process of this host with this id: no one's now
    ::unlink(temp.c_str());
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  }
  if (fd < 0) {
    throw Error(ExitCode::run_failed, path + ": cannot create its temporary file " + temp + ": " + std::strerror(errno));
  }
  const std::string failure = write_all(fd, text.data(), text.size());
  if (!failure.empty()) {
    ::close(fd);
    fail("write failed", failure);
  }
  // The descriptor is closed whatever fsync said; the first error is the one reported.
  const int sync_errno = ::fsync(fd) == 0 ? 0 : errno;
  const int close_errno = ::close(fd) == 0 ? 0 : errno;
  if (sync_errno != 0 || close_errno != 0) fail("cannot flush to disk", std::strerror(sync_errno ? sync_errno : close_errno));
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail("cannot move into place", std::strerror(errno));
}

}  // namespace tbench
