#pragma once
// Helpers for end-to-end tests: run the built tbench binary, make scratch directories and files.
#include <string>

#include <nlohmann/json.hpp>

namespace tbench::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `tbench <args>` (args are passed to /bin/sh, so quote paths with spaces) in `cwd`.
CommandResult run_tbench(const std::string& args, const std::string& cwd = "");

// A fresh empty directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

nlohmann::json read_json(const std::string& path);
std::string read_text(const std::string& path);

// A tiny, fast training spec (tiny-bert, 2 epochs of 4 steps) as a JSON object.
nlohmann::json tiny_spec(const std::string& output);

}  // namespace tbench::testing
