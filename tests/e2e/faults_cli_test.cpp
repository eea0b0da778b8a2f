// Faults a long run meets on a real machine, each run on the built binary: the disk fills while
// iterations stream and while the result is written, the output directory cannot be written,
// the process is killed (SIGKILL) at random moments, and a sweep is killed in the middle of a
// point. Whatever happens: a clear error and its exit code, whole JSON lines, no half-written
// result, and an earlier result left as it was.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "support/cli.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

// tiny-bert, one epoch of 40 steps of 8 samples: a few seconds, ~12 KB of iteration lines and a
// ~24 KB result.
json forty_step_spec(const std::string& output) {
  auto spec = testing::tiny_spec(output);
  spec["data"]["num_samples"] = 320;
  spec["train"]["epochs"] = 1;
  return spec;
}

// A tmpfs of `kib` KiB mounted at <dir>/<name> for the life of the object (root only: the test
// skips elsewhere). tmpfs counts whole 4 KiB pages.
class SmallDisk {
 public:
  SmallDisk(const ScratchDir& dir, const std::string& name, int kib) : path_(dir.file(name)) {
    fs::create_directories(path_);
    const std::string options = "size=" + std::to_string(kib) + "k";
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted_) reason_ = std::string("cannot mount a tmpfs (needs root): ") + std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& reason() const { return reason_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_, reason_;
  bool mounted_ = false;
};

// Every line of an iterations file parses as a whole record, and the steps run 1, 2, 3, ...
// with none missing. Returns how many there are. With `killed`, the file may end in the start of
// one more record without its newline: Linux ends a write(2) early at a page boundary when SIGKILL
// arrives inside it (seen once in 24 kills, on the Debian 13 build), so a kill can cut the record
// being written; a reader drops such an unterminated tail. Without `killed`, every line is whole.
std::size_t expect_whole_consecutive_lines(const std::string& path, bool killed = false) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::size_t last_newline = text.rfind('\n');
  const std::string tail = text.substr(last_newline == std::string::npos ? 0 : last_newline + 1);
  if (!tail.empty()) {
    EXPECT_TRUE(killed) << path << ": the last line is cut:\n" << tail;
    EXPECT_EQ(tail.front(), '{') << path << ": an unterminated tail that is not the start of a record: " << tail;
    text.resize(text.size() - tail.size());
  }
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const json record = json::parse(line, nullptr, false);
    EXPECT_FALSE(record.is_discarded()) << path << ": line " << count + 1 << " is not whole JSON: " << line;
    if (record.is_discarded()) break;
    ++count;
    EXPECT_EQ(record["step"].get<std::size_t>(), count) << path << ": a step is missing before line " << count;
  }
  return count;
}

const std::string kEarlier = "{\"earlier\": \"result\"}\n";

// Runs the forty-step spec with --force onto a small disk that holds an earlier result.
testing::CommandResult run_over_an_earlier_result(const ScratchDir& dir, const SmallDisk& disk) {
  std::ofstream(disk.file("r.json")) << kEarlier;
  const std::string spec = dir.write("spec.json", forty_step_spec(disk.file("r.json")).dump());
  return testing::run_tbench("run -q --force " + spec);
}

// The earlier result is as it was, and no temporary of a half-written one lies beside it.
void expect_the_earlier_result_untouched(const SmallDisk& disk) {
  EXPECT_EQ(testing::read_text(disk.file("r.json")), kEarlier);
  for (const auto& f : fs::directory_iterator(disk.file(""))) {
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << "a half-written result: " << f.path();
  }
}

TEST(DiskFull, WhileIterationsStreamTheRunFailsAndTheEarlierResultIsUntouched) {
  ScratchDir dir;
  SmallDisk disk(dir, "disk", 12);  // the earlier result's page + ~28 of the 40 lines
  if (!disk.mounted()) GTEST_SKIP() << disk.reason();
  const auto r = run_over_an_earlier_result(dir, disk);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("cannot write the iteration stream"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  expect_the_earlier_result_untouched(disk);
  const std::size_t lines = expect_whole_consecutive_lines(disk.file("r.iterations.jsonl"));
  EXPECT_GT(lines, 5u);
  EXPECT_LT(lines, 40u);
}

TEST(DiskFull, WhileTheResultIsWrittenNothingHalfWrittenIsLeft) {
  ScratchDir dir;
  SmallDisk disk(dir, "disk", 24);  // the earlier result and the whole stream fit; the ~24 KB result does not
  if (!disk.mounted()) GTEST_SKIP() << disk.reason();
  const auto r = run_over_an_earlier_result(dir, disk);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no result was written"), std::string::npos) << r.err;
  expect_the_earlier_result_untouched(disk);
  EXPECT_EQ(expect_whole_consecutive_lines(disk.file("r.iterations.jsonl")), 40u);
}

TEST(DiskFull, AFileSizeLimitEndsTheRunWithAnErrorNotASignal) {
  ScratchDir dir;
  const std::string spec = dir.write("spec.json", forty_step_spec(dir.file("r.json")).dump());
  // An 8 KiB file-size limit, as `ulimit -f` sets one: the stream stops after ~25 of its 40 lines.
  // stderr goes to a pipe, which the limit does not cover, so the message cannot be cut by it.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const std::string binary = TBENCH_BINARY;
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit limit{8192, 8192};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    execl(binary.c_str(), binary.c_str(), "run", "-q", spec.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) err.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  const int code = testing::wait_for_exit(pid, 120);
  EXPECT_EQ(code, 4) << "killed by a signal instead? " << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  expect_whole_consecutive_lines(dir.file("r.iterations.jsonl"));
  EXPECT_FALSE(fs::exists(dir.file("r.json")));
}

TEST(UnwritableOutput, ExitsTwoBeforeTrainingNamingTheDirectory) {
  ScratchDir dir;
  const std::string locked = dir.file("locked");
  fs::create_directories(locked);
  // Root ignores permission bits, so for root the directory is a read-only mount instead.
  bool read_only_mount = false;
  if (::geteuid() == 0) {
    read_only_mount = ::mount("tmpfs", locked.c_str(), "tmpfs", MS_RDONLY, "size=16k") == 0;
    if (!read_only_mount) GTEST_SKIP() << "root, and cannot mount a read-only tmpfs: " << std::strerror(errno);
  } else {
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const std::string spec = dir.write("spec.json", testing::tiny_spec(locked + "/r.json").dump());
  const auto r = testing::run_tbench("run -q " + spec);
  if (read_only_mount) ::umount2(locked.c_str(), MNT_DETACH);
  else fs::permissions(locked, fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("output: cannot write in directory '" + locked + "'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("epoch"), std::string::npos) << "it trained before finding out:\n" << r.err;
}

// When an undisturbed run's stream got its first line, and when the process ended (seconds from
// its start), polled every millisecond.
struct RunPhases {
  double first_line_s = 0.0;
  double exit_s = 0.0;
};

RunPhases time_undisturbed_run(const std::string& spec, const ScratchDir& dir) {
  const std::string stream = dir.file("r.iterations.jsonl");
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const pid_t pid = testing::spawn_tbench({"run", "-q", spec}, {}, dir.file("out"), dir.file("err"));
  RunPhases phases;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      testing::wait_for_exit(pid, 0);  // kills and reaps it
      break;
    }
    std::error_code error;
    if (phases.first_line_s == 0.0 && fs::file_size(stream, error) > 0 && !error) phases.first_line_s = since_start();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  phases.exit_s = since_start();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::read_text(dir.file("err"));
  if (phases.first_line_s == 0.0) phases.first_line_s = phases.exit_s;  // streamed and finished within one poll
  return phases;
}

// SIGKILL at 24 seeded moments: a third spread over a run's whole life (start-up, steps, the
// result write), the rest over the part that streams iterations, since start-up's share of the run
// differs by machine (loading a CUDA LibTorch on a 16-core box took most of it, 2026-11-27): the
// stream holds whole, consecutive lines and the result is whole or absent.
TEST(Killed, AtRandomMomentsLeavesWholeLinesAndNoPartialResult) {
  ScratchDir dir;
  auto long_run = forty_step_spec(dir.file("r.json"));
  long_run["data"]["num_samples"] = 2400;  // 300 steps: training, not start-up, fills most of the run
  const std::string spec = dir.write("spec.json", long_run.dump());
  const RunPhases phases = time_undisturbed_run(spec, dir);
  std::mt19937 generator(20261124);
  std::uniform_real_distribution<double> any_moment(0.0, phases.exit_s * 1.1);
  std::uniform_real_distribution<double> streaming_moment(phases.first_line_s, phases.exit_s);
  int killed_mid_stream = 0, finished = 0;
  for (int trial = 0; trial < 24; ++trial) {
    fs::remove(dir.file("r.json"));
    fs::remove(dir.file("r.iterations.jsonl"));
    const double delay = trial % 3 == 0 ? any_moment(generator) : streaming_moment(generator);
    const pid_t pid = testing::spawn_tbench({"run", "-q", spec}, {}, dir.file("out"), dir.file("err"));
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    ::kill(pid, SIGKILL);
    const int code = testing::wait_for_exit(pid, 60);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", killed after " + std::to_string(delay) + " s");
    std::size_t lines = 0;
    if (fs::exists(dir.file("r.iterations.jsonl"))) {
      lines = expect_whole_consecutive_lines(dir.file("r.iterations.jsonl"), /*killed=*/code != 0);
    }
    if (fs::exists(dir.file("r.json"))) {
      const json result = json::parse(testing::read_text(dir.file("r.json")), nullptr, false);
      ASSERT_FALSE(result.is_discarded()) << "a partial result";
      EXPECT_EQ(result["iterations"].size(), lines) << "the result and the stream disagree";
    }
    if (code == 0) ++finished;
    else if (lines > 0 && lines < 300) ++killed_mid_stream;
  }
  // The seeded moments must really have hit runs in the middle, or the test proves nothing.
  EXPECT_GE(killed_mid_stream, 4) << finished << " runs finished before their kill; the stream began "
                                  << phases.first_line_s << " s into a " << phases.exit_s << " s run";
}

// Kills and reaps a child if the test ends (an ASSERT failing) while it still runs.
class ReapOnExit {
 public:
  explicit ReapOnExit(pid_t pid) : pid_(pid) {}
  ~ReapOnExit() {
    if (pid_ > 0) testing::wait_for_exit(pid_, 0);  // kills it if it has not exited
  }
  void release() { pid_ = -1; }

 private:
  pid_t pid_;
};

// The processes whose command line mentions `text` (a point of a sweep still running).
int processes_mentioning(const std::string& text) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || name == std::to_string(::getpid())) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    if (cmdline.find(text) != std::string::npos) ++count;
  }
  return count;
}

TEST(Killed, SweepKilledInAPointResumesAndItsPointDiesWithIt) {
  ScratchDir dir;
  auto slow = testing::tiny_spec(dir.file("unused.json"));
  slow["train"]["epochs"] = 1;
  slow["data"]["num_samples"] = 4000;  // ~500 steps a point: long enough to kill inside one
  const std::string base = dir.write("slow.json", slow.dump());
  const std::string out = dir.file("sweep");
  const std::vector<std::string> grid = {"--grid", "train.batch_size=8,16,32", "--out-dir", out};
  std::vector<std::string> args = {"sweep", base};
  args.insert(args.end(), grid.begin(), grid.end());
  const pid_t sweep = testing::spawn_tbench(args, {}, dir.file("sweep.out"), dir.file("sweep.err"));
  ReapOnExit reap(sweep);  // and its point with it (PR_SET_PDEATHSIG)
  // Kill it once the first point is done and the second has streamed some steps.
  const std::string second_stream = out + "/train.batch_size-16.iterations.jsonl";
  for (int i = 0; i < 1200 && !(fs::exists(second_stream) && fs::file_size(second_stream) > 1000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(second_stream)) << testing::read_text(dir.file("sweep.err"));
  ::kill(sweep, SIGKILL);
  EXPECT_EQ(testing::wait_for_exit(sweep, 10), 128 + SIGKILL);
  reap.release();
  // The point's own process must not run on as an orphan, writing into the sweep's folder.
  for (int i = 0; i < 100 && processes_mentioning(out) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(processes_mentioning(out), 0) << "the killed sweep's point is still running";
  expect_whole_consecutive_lines(second_stream);

  const std::string finished = out + "/train.batch_size-8.json";
  ASSERT_TRUE(fs::exists(finished));
  const auto written = fs::last_write_time(finished);
  std::string resume = "sweep " + base + " --grid train.batch_size=8,16,32 --out-dir " + out + " --resume --json";
  const auto resumed = testing::run_tbench(resume);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const json state = json::parse(resumed.out);
  ASSERT_EQ(state["points"].size(), 3u);
  EXPECT_EQ(state["points"][0]["status"], "skipped");
  EXPECT_EQ(state["points"][1]["status"], "completed");
  EXPECT_EQ(state["points"][2]["status"], "completed");
  EXPECT_EQ(fs::last_write_time(finished), written) << "a finished point was redone";
  EXPECT_EQ(testing::read_json(out + "/train.batch_size-16.json")["summary"]["status"], "completed");
}

}  // namespace
}  // namespace tbench
