#pragma once
// Whole files in and out: one way to read a file, one way to write one so that readers never
// see half of it.
#include <cstddef>
#include <string>
#include <vector>

namespace tbench {

// The whole file. Throws a bad-input Error "<path>: cannot open <what>: <reason>", so the
// message names the file and what it was meant to be ("the spec file", "the model config").
std::string read_file(const std::string& path, const std::string& what);

// Writes `text` to a temporary file beside `path`, flushes it to disk, then renames it over
// `path`: readers see the old file or the whole new one, never half of it.
void write_file_atomically(const std::string& path, const std::string& text);

// Which file is at a path (its device and inode); `exists` false where there is none. Every
// atomic write puts a new file in place, so whether one happened since is a comparison, whatever
// the clock's resolution on the file system.
struct FileIdentity {
  bool exists = false;
  unsigned long long device = 0, inode = 0;
  bool operator==(const FileIdentity& o) const { return exists == o.exists && device == o.device && inode == o.inode; }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};
FileIdentity file_identity(const std::string& path);

// Creates the folder a file goes in and finds out now, not after the work, that a new file can
// be made there (read-only, no permission, a file system that takes none such as /proc). Throws a
// bad-input Error starting with `option` ("output", "-o", "--histogram").
void ensure_folder_takes_new_files(const std::string& file_path, const std::string& option);

// A command's output file, other than a run's result (report -o, data --histogram), checked
// before the work and with no side effect (a command that then fails on bad input leaves nothing):
// refused (exit 2) where it names a folder (or ends in '/'), one of the files the command reads or
// a file already in a folder it reads (`inputs`: it would be lost), or where no file can be made.
void check_command_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs);
// Writes it once the work is done: its folder made if missing, then atomically.
void write_command_output(const std::string& option, const std::string& path, const std::string& text);

// Writes all `size` bytes to the open descriptor `fd`, going on after short writes and signals.
// Returns "" when every byte is written, else why it stopped (errno's text, or "nothing written"
// when the system wrote none without an error); the caller decides what a partial write means.
std::string write_all(int fd, const char* data, std::size_t size);

}  // namespace tbench
