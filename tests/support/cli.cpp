#include "support/cli.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tbench::testing {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

CommandResult run_tbench(const std::string& args, const std::string& cwd) {
  const fs::path out = fs::temp_directory_path() / ("tbench-out-" + std::to_string(getpid()) + "-" + std::to_string(rand()));
  const std::string cd = cwd.empty() ? "" : "cd '" + cwd + "' && ";
  const std::string command = cd + "'" TBENCH_BINARY "' " + args + " >'" + out.string() + ".out' 2>'" +
                              out.string() + ".err'";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out.string() + ".out");
  result.err = read_text(out.string() + ".err");
  fs::remove(out.string() + ".out");
  fs::remove(out.string() + ".err");
  return result;
}

ScratchDir::ScratchDir() {
  std::string pattern = (fs::temp_directory_path() / "tbench-test-XXXXXX").string();
  path_ = mkdtemp(pattern.data());
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  const std::string p = file(name);
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

nlohmann::json tiny_spec(const std::string& output) {
  return {{"name", "tiny"},
          {"model", "tiny-bert"},
          {"data", {{"num_samples", 32}, {"seq_len", 16}}},
          {"train", {{"epochs", 2}, {"batch_size", 8}, {"lr", 1e-3}, {"seed", 7}}},
          {"threads", 1},
          {"timing", {{"warmup_steps", 1}}},
          {"output", output}};
}

}  // namespace tbench::testing
