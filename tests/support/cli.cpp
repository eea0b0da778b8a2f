#include "support/cli.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tbench::testing {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

std::vector<nlohmann::json> read_mllog(const std::string& path) {
  const std::string prefix = ":::MLLOG ";
  std::vector<nlohmann::json> events;
  std::istringstream text(read_text(path));
  std::string line;
  while (std::getline(text, line)) {
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << path << ": " << line;
    if (line.rfind(prefix, 0) == 0) events.push_back(nlohmann::json::parse(line.substr(prefix.size())));
  }
  return events;
}

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
          {"timing", {{"warmup_steps", 1}, {"cpu_peak_probe", false}}},
          {"output", output}};
}

namespace {

bool is_launcher_variable(const std::string& name) {
  static const std::vector<std::string> exact = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                 "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME"};
  if (std::find(exact.begin(), exact.end(), name) != exact.end()) return true;
  return name.rfind("SLURM_", 0) == 0 || name.rfind("OMPI_", 0) == 0 || name.rfind("TORCHELASTIC_", 0) == 0;
}

}  // namespace

pid_t spawn_tbench(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                   const std::string& out_path, const std::string& err_path, const std::vector<std::string>& wrapper) {
  // Everything is prepared before fork(): the child only opens, dups and execs.
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (!is_launcher_variable(entry.substr(0, entry.find('=')))) environment.push_back(entry);
  }
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  std::vector<std::string> argv_text = wrapper;
  argv_text.push_back(TBENCH_BINARY);
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) dup2(out, STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    execvpe(argv[0], argv.data(), envp.data());  // a wrapper is found on PATH
    _exit(127);
  }
  return pid;
}

int wait_for_exit(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int free_tcp_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  if (s >= 0) close(s);
  return port;
}

}  // namespace tbench::testing
