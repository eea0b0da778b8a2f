#pragma once
// Whole files in and out: one way to read a file, one way to write one so that readers never
// see half of it.
#include <cstddef>
#include <string>

namespace tbench {

// The whole file. Throws a bad-input Error "<path>: cannot open <what>: <reason>", so the
// message names the file and what it was meant to be ("the spec file", "the model config").
std::string read_file(const std::string& path, const std::string& what);

// Writes `text` to a temporary file beside `path`, flushes it to disk, then renames it over
// `path`: readers see the old file or the whole new one, never half of it.
void write_file_atomically(const std::string& path, const std::string& text);

// Writes all `size` bytes to the open descriptor `fd`, going on after short writes and signals.
// Returns "" when every byte is written, else why it stopped (errno's text, or "nothing written"
// when the system wrote none without an error); the caller decides what a partial write means.
std::string write_all(int fd, const char* data, std::size_t size);

}  // namespace tbench
