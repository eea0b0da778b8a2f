// Two ranks on two "hosts": each in its own network namespace, joined by a veth pair, reaching each
// other only through the namespaces' own addresses (as two machines on one switch would). The
// run must give the weights a single process gives; cutting the link in the middle must end both
// ranks with exit 4 within the dist timeout, rank 0's result naming the lost peer. Needs root
// (ip netns); elsewhere the tests skip and say why.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/cli.hpp"
#include "support/ranks.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

std::string ip_command() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs a shell command quietly; true when it exits 0.
bool shell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

// Namespaces "tbA<pid>" (10.47.0.1) and "tbB<pid>" (10.47.0.2), a veth pair between them.
class TwoHosts {
 public:
  TwoHosts() : ip_(ip_command()), suffix_(std::to_string(::getpid())) {
    if (ip_.empty()) {
      reason_ = "no `ip` command (Debian's iproute2)";
      return;
    }
    if (::geteuid() != 0) {
      reason_ = "network namespaces need root";
      return;
    }
    const std::string a = ns(0), b = ns(1), va = veth(0), vb = veth(1);
    ready_ = shell(ip_ + " netns add " + a) && shell(ip_ + " netns add " + b) &&
             shell(ip_ + " link add " + va + " type veth peer name " + vb) && shell(ip_ + " link set " + va + " netns " + a) &&
             shell(ip_ + " link set " + vb + " netns " + b) && shell(ip_ + " -n " + a + " addr add 10.47.0.1/24 dev " + va) &&
             shell(ip_ + " -n " + b + " addr add 10.47.0.2/24 dev " + vb) && shell(ip_ + " -n " + a + " link set " + va + " up") &&
             shell(ip_ + " -n " + b + " link set " + vb + " up") && shell(ip_ + " -n " + a + " link set lo up") &&
             shell(ip_ + " -n " + b + " link set lo up");
    if (!ready_) reason_ = "could not make two network namespaces joined by a veth pair (ip netns)";
  }
  ~TwoHosts() {
    if (ip_.empty()) return;
    shell(ip_ + " netns del " + ns(0));  // deleting a namespace deletes its end of the pair, and the pair
    shell(ip_ + " netns del " + ns(1));
    shell(ip_ + " link del " + veth(0));  // a pair made before a failed move is still in this namespace
  }
  bool ready() const { return ready_; }
  const std::string& reason() const { return reason_; }
  std::string ns(int host) const { return std::string(host == 0 ? "tbA" : "tbB") + suffix_; }
  std::string veth(int host) const { return std::string(host == 0 ? "tbva" : "tbvb") + suffix_; }
  // Runs rank `rank` of 2 in namespace `rank`, with rank 0's namespace address as MASTER_ADDR.
  pid_t start_rank(int rank, const std::vector<std::string>& args, const ScratchDir& dir) const {
    const std::map<std::string, std::string> env = {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"},
                                                    {"LOCAL_RANK", "0"},            {"LOCAL_WORLD_SIZE", "1"},
                                                    {"MASTER_ADDR", "10.47.0.1"},   {"MASTER_PORT", "29547"}};
    return testing::spawn_tbench(args, env, dir.file("rank" + std::to_string(rank) + ".out"),
                                 dir.file("rank" + std::to_string(rank) + ".err"), {ip_, "netns", "exec", ns(rank)});
  }
  bool cut_link() const { return shell(ip_ + " -n " + ns(0) + " link set " + veth(0) + " down"); }

 private:
  std::string ip_, suffix_, reason_;
  bool ready_ = false;
};


// tiny-bert without dropout, per-device batch `batch`: with 2 ranks the global batch is twice it.
json spec_for(const std::string& output, int64_t batch) {
  auto spec = testing::tiny_spec(output);
  spec["train"]["batch_size"] = batch;
  spec["train"]["dropout"] = false;
  spec["dist"] = {{"bucket_mb", 0.02}, {"timeout_s", 10}};
  return spec;
}


// Kills and reaps the ranks still running when a test ends (an ASSERT failing); ranks that have
// exited were reaped already, and waitpid on them fails harmlessly.
struct RanksReaper {
  std::vector<pid_t> pids;
  ~RanksReaper() {
    for (const pid_t pid : pids) testing::wait_for_exit(pid, 0);
  }
};

#define REQUIRE_TWO_HOSTS(hosts)                                                              \
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";                          \
  if (!(hosts).ready()) GTEST_SKIP() << (hosts).reason()

TEST(TwoHosts, RanksOnSeparateHostsEndWithTheSingleProcessWeights) {
  TwoHosts hosts;
  REQUIRE_TWO_HOSTS(hosts);
  ScratchDir dir;
  const std::string one = dir.write("one.json", spec_for(dir.file("one.result.json"), 8).dump());
  const auto single = testing::run_tbench("run -q " + one + " --dump-params " + dir.file("one.params"));
  ASSERT_EQ(single.exit_code, 0) << single.err;

  const std::string two = dir.write("two.json", spec_for(dir.file("two.result.json"), 4).dump());
  const std::vector<std::string> args = {"run", "-q", two, "--dump-params", dir.file("two.params")};
  const pid_t rank0 = hosts.start_rank(0, args, dir), rank1 = hosts.start_rank(1, args, dir);
  const RanksReaper reaper{{rank0, rank1}};
  const int code0 = testing::wait_for_exit(rank0, 120), code1 = testing::wait_for_exit(rank1, 120);
  ASSERT_EQ(code0, 0) << testing::read_text(dir.file("rank0.err"));
  ASSERT_EQ(code1, 0) << testing::read_text(dir.file("rank1.err"));

  const auto reference = testing::read_floats(dir.file("one.params"));
  const auto rank0_params = testing::read_floats(dir.file("two.params.rank0"));
  const auto rank1_params = testing::read_floats(dir.file("two.params.rank1"));
  ASSERT_EQ(reference.size(), rank0_params.size());
  EXPECT_EQ(rank0_params, rank1_params) << "the ranks diverged";
  // A mean of two means: float rounding only.
  EXPECT_LT(testing::max_abs_diff(reference, rank0_params), 2e-5) << "two hosts and one process disagree";

  const auto result = testing::read_json(dir.file("two.result.json"));
  EXPECT_EQ(result["dist"]["world_size"], 2);
  ASSERT_EQ(result["dist"]["ranks"].size(), 2u);
  EXPECT_EQ(result["dist"]["ranks"][1]["status"], "completed");
}

TEST(TwoHosts, CuttingTheLinkEndsBothRanksWithinTheTimeoutNamingTheLostPeer) {
  TwoHosts hosts;
  REQUIRE_TWO_HOSTS(hosts);
  ScratchDir dir;
  auto spec = spec_for(dir.file("cut.json"), 4);
  spec["data"]["num_samples"] = 800000;  // hours of steps
  const double timeout_s = spec["dist"]["timeout_s"];
  const std::string path = dir.write("spec.json", spec.dump());
  const pid_t rank0 = hosts.start_rank(0, {"run", "-q", path}, dir), rank1 = hosts.start_rank(1, {"run", "-q", path}, dir);
  const RanksReaper reaper{{rank0, rank1}};  // hours of steps: never left running by a failed ASSERT
  const std::string stream = dir.file("cut.iterations.jsonl");
  for (int i = 0; i < 1200 && (!fs::exists(stream) || fs::file_size(stream) < 600); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(stream)) << testing::read_text(dir.file("rank0.err"));
  ASSERT_TRUE(hosts.cut_link());
  const auto cut_at = std::chrono::steady_clock::now();
  // The collective in flight waits timeout_s; gathering the ranks' reports may wait once more.
  const double allowed = 2 * timeout_s + 15;
  const int code0 = testing::wait_for_exit(rank0, allowed), code1 = testing::wait_for_exit(rank1, allowed);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
  const std::string err0 = testing::read_text(dir.file("rank0.err")), err1 = testing::read_text(dir.file("rank1.err"));
  EXPECT_EQ(code0, 4) << "rank 0 (-1: still running " << allowed << " s after the cut)\n" << err0;
  EXPECT_EQ(code1, 4) << "rank 1 (-1: still running " << allowed << " s after the cut)\n" << err1;
  EXPECT_LT(took, allowed);
  // Rank 0's wait times out at 10 s and then waits 7 s for a verdict, in which its watcher's reads
  // of rank 1's heartbeat, silent since the cut, reach dist.heartbeat_timeout_s (15 s) and name it
  // as a rule; a loaded machine may report the lost contact instead. The result's missing rank
  // names it either way.
  const bool named_silent = err0.find("rank 1 failed: stopped answering") != std::string::npos;
  EXPECT_TRUE(named_silent || err0.find("lost contact") != std::string::npos) << err0;
  const auto result = testing::read_json(dir.file("cut.json"));
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array({1})) << result["dist"].dump(2);
  EXPECT_GT(result["iterations"].size(), 0u);
}

}  // namespace
}  // namespace tbench
