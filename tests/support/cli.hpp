#pragma once
// Helpers for end-to-end tests: run the built tbench binary, make scratch directories and files.
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

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
// An MLPerf log's events (timing.mllog): each line's JSON after ":::MLLOG "; a line without that
// prefix fails the calling test.
std::vector<nlohmann::json> read_mllog(const std::string& path);

// A tiny, fast training spec (tiny-bert, 2 epochs of 4 steps) as a JSON object. It leaves out
// the CPU peak's probes (timing.cpu_peak_probe false): such a run took 3.7 s with them and 1.1 s
// without on the 2-core test VM. A test of the peak, MFU or `predict --target` turns them on.
nlohmann::json tiny_spec(const std::string& output);

// Starts `tbench <args>` in the background, as a launcher would start one rank: this process's
// environment without any launcher variables (RANK, SLURM_*, OMPI_*, TORCHELASTIC_*, ...), plus `env`. stdout and
// stderr go to the given files. `wrapper` runs first and execs tbench (e.g. {"ip", "netns", "exec",
// "ns0"}: a rank in another network namespace). Returns the child's pid.
pid_t spawn_tbench(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                   const std::string& out_path, const std::string& err_path,
                   const std::vector<std::string>& wrapper = {});

// The child's exit code, or -1 after killing it (SIGKILL) if it has not exited within `timeout_s`,
// or 128 + N if a signal N ended it.
int wait_for_exit(pid_t pid, double timeout_s);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_tcp_port();

}  // namespace tbench::testing
