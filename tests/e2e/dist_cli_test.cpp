// End-to-end data parallelism: the built binary started twice on loopback, the way torchrun
// starts it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), on CPU with Gloo.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "tbench/dist/tcp_store.hpp"

#include "support/cli.hpp"
#include "support/json_schema.hpp"
#include "support/ranks.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/embedded.hpp"
#include "tbench/env/torch_features.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::have_gloo;
using testing::max_abs_diff;
using testing::read_floats;
using testing::ScratchDir;

#define REQUIRE_GLOO() \
  if (!have_gloo()) GTEST_SKIP() << "this build has no Gloo backend (install libgloo-dev and reconfigure)"

struct RankRun {
  int exit_code = -1;
  std::string out, err;
};

std::map<std::string, std::string> torchrun_env(int rank, int world, int port) {
  return {{"RANK", std::to_string(rank)},     {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(port)}};
}

// Starts `world` ranks of `tbench <args>` and waits for all of them (killing any still running
// after `timeout_s`, which then reads exit code -1).
std::vector<RankRun> run_ranks(const ScratchDir& dir, const std::vector<std::string>& args, int world,
                               double timeout_s = 60) {
  const int port = testing::free_tcp_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    pids.push_back(testing::spawn_tbench(args, torchrun_env(r, world, port), dir.file("rank" + std::to_string(r) + ".out"),
                                         dir.file("rank" + std::to_string(r) + ".err")));
  }
  std::vector<RankRun> runs(world);
  for (int r = 0; r < world; ++r) {
    runs[r].exit_code = testing::wait_for_exit(pids[r], timeout_s);
    runs[r].out = testing::read_text(dir.file("rank" + std::to_string(r) + ".out"));
    runs[r].err = testing::read_text(dir.file("rank" + std::to_string(r) + ".err"));
  }
  return runs;
}

RankRun run_single(const ScratchDir& dir, const std::vector<std::string>& args) {
  const pid_t pid = testing::spawn_tbench(args, {}, dir.file("single.out"), dir.file("single.err"));
  RankRun run;
  run.exit_code = testing::wait_for_exit(pid, 60);
  run.out = testing::read_text(dir.file("single.out"));
  run.err = testing::read_text(dir.file("single.err"));
  return run;
}

// Two ranks of the spec at `path` with `--set <field>=<value>`: the result goes to <value>.json
// in `dir`, each rank's parameters to <value>.rank<r>. Fails the test unless both ranks exit 0.
void run_ranks_with(const ScratchDir& dir, const std::string& path, const std::string& field, const std::string& value,
                    json& result) {
  const auto runs = run_ranks(dir, {"run", "-q", path, "--set", field + "=" + value, "--set",
                                    "output=" + dir.file(value + ".json"), "--dump-params", dir.file(value)},
                              2);
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].err;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].err;
  result = testing::read_json(dir.file(value + ".json"));
}

// tiny-bert without dropout: 32 samples, a global batch of 8 (4 steps per epoch), 2 epochs.
json dp_spec(const std::string& output, int64_t per_device_batch, int64_t accum = 1) {
  auto spec = testing::tiny_spec(output);
  spec["train"]["batch_size"] = per_device_batch;
  spec["train"]["grad_accum_steps"] = accum;
  spec["train"]["dropout"] = false;
  spec["dist"] = {{"bucket_mb", 0.02}, {"timeout_s", 30}};  // several buckets for tiny-bert's 0.2 MiB
  return spec;
}

// One single-process run and one 2-rank run of the same global batch, shared by the tests below.
class DistCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    single_ = new RankRun();
    ranks_ = new std::vector<RankRun>(2);
    if (!have_gloo()) return;  // every test skips
    const auto one = dir_->write("one.json", dp_spec(dir_->file("one/result.json"), 8).dump());
    *single_ = run_single(*dir_, {"run", "-q", one, "--dump-params", dir_->file("one/params")});
    auto two_ranks = dp_spec(dir_->file("two/result.json"), 4);
    two_ranks["timing"]["mllog"] = true;  // rank 0's, with the global counts
    const auto two = dir_->write("two.json", two_ranks.dump());
    *ranks_ = run_ranks(*dir_, {"run", two, "--dump-params", dir_->file("two/params")}, 2);
  }
  static void TearDownTestSuite() {
    delete single_;
    delete ranks_;
    delete dir_;
  }
  void SetUp() override { REQUIRE_GLOO(); }
  static ScratchDir* dir_;
  static RankRun* single_;
  static std::vector<RankRun>* ranks_;
};

ScratchDir* DistCli::dir_ = nullptr;
RankRun* DistCli::single_ = nullptr;
std::vector<RankRun>* DistCli::ranks_ = nullptr;

TEST_F(DistCli, RanksEndWithIdenticalParametersAndRankZeroWritesOneResult) {
  ASSERT_EQ((*ranks_)[0].exit_code, 0) << (*ranks_)[0].err;
  ASSERT_EQ((*ranks_)[1].exit_code, 0) << (*ranks_)[1].err;
  const auto rank0 = read_floats(dir_->file("two/params.rank0"));
  const auto rank1 = read_floats(dir_->file("two/params.rank1"));
  ASSERT_GT(rank0.size(), 50000u);
  EXPECT_EQ(rank0, rank1) << "ranks diverged: max |diff| " << max_abs_diff(rank0, rank1);

  // Only rank 0 prints the result path and writes files.
  EXPECT_EQ((*ranks_)[0].out, dir_->file("two/result.json") + "\n");
  EXPECT_EQ((*ranks_)[1].out, "");
  std::set<std::string> files;
  for (const auto& f : fs::directory_iterator(dir_->file("two"))) files.insert(f.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"result.json", "result.iterations.jsonl", "result.mllog", "params.rank0",
                                          "params.rank1"}));
  // The MLPerf log counts both ranks' samples: 32 an epoch, in global batches of 8.
  std::map<std::string, json> logged;
  for (const auto& event : testing::read_mllog(dir_->file("two/result.mllog"))) logged[event["key"]] = event;
  EXPECT_EQ(logged["global_batch_size"]["value"], 8);
  EXPECT_EQ(logged["tbench_world_size"]["value"], 2);
  EXPECT_EQ(logged["trained_samples"]["value"], 64);
  EXPECT_EQ(logged["tracked_stats"]["metadata"]["samples_count"], 64);  // the second epoch's
  EXPECT_EQ(logged["run_stop"]["metadata"]["status"], "success");

  const auto result = testing::read_json(dir_->file("two/result.json"));
  const auto violations = testing::schema_violations(json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  const json& dist = result["dist"];
  EXPECT_EQ(dist["world_size"], 2);
  EXPECT_EQ(dist["backend"], "gloo");
  EXPECT_EQ(dist["launcher"], "torchrun");
  EXPECT_EQ(dist["per_device_batch"], 4);
  EXPECT_EQ(dist["global_batch"], 8);
  EXPECT_GT(dist["buckets"].get<int>(), 1);
  EXPECT_EQ(dist["allreduces"], 8 * dist["buckets"].get<int>());  // one per bucket per step: 8 steps
  ASSERT_EQ(dist["ranks"].size(), 2u);
  EXPECT_EQ(dist["ranks"][1]["rank"], 1);
  EXPECT_EQ(dist["ranks"][1]["status"], "completed");
  EXPECT_EQ(dist["ranks"][1]["steps"], 8);
  EXPECT_TRUE(dist["missing_ranks"].empty());

  const json& summary = result["summary"];
  EXPECT_EQ(summary["scope"], "global");
  EXPECT_EQ(summary["steps_per_epoch"], 4);
  EXPECT_EQ(result["iterations"].size(), 8u);
  EXPECT_EQ(result["iterations"][0]["samples"], 4);  // rank 0's own records: per-device samples
  EXPECT_NEAR(summary["samples_per_s"].get<double>(), 2 * summary["per_device_samples_per_s"].get<double>(), 1e-6);
  EXPECT_GE(summary["comm_share"].get<double>(), 0);
  EXPECT_LT(summary["comm_share"].get<double>(), 1);
  for (const auto& it : result["iterations"]) {
    EXPECT_GE(it["comm_wait_seconds"].get<double>(), 0);
    EXPECT_LE(it["comm_wait_seconds"].get<double>(), it["seconds"].get<double>());
  }
}

TEST_F(DistCli, MatchesOneProcessOnTheSameGlobalBatch) {
  ASSERT_EQ(single_->exit_code, 0) << single_->err;
  ASSERT_EQ((*ranks_)[0].exit_code, 0) << (*ranks_)[0].err;
  const auto one = read_floats(dir_->file("one/params"));
  const auto two = read_floats(dir_->file("two/params.rank0"));
  ASSERT_EQ(one.size(), two.size());
  // The same 8 samples per step, averaged as a mean of two means: equal up to float rounding.
  EXPECT_LT(max_abs_diff(one, two), 2e-5);

  const auto single = testing::read_json(dir_->file("one/result.json"));
  EXPECT_FALSE(single.contains("dist"));
  EXPECT_EQ(single["summary"]["scope"], "per-device");
  for (const auto& it : single["iterations"]) EXPECT_EQ(it["comm_wait_seconds"], 0.0);
}

// One process under torchrun joins a group of one where the spec asks: it all-reduces through Gloo
// and trains exactly as the single process does (the mean over one rank is the rank's gradient).
// Without the field the same launch runs the single-process path and writes no dist section.
TEST_F(DistCli, WorldSizeOneJoinsAGroupOfOneWhereTheSpecAsks) {
  ScratchDir dir;
  const std::string path = dir.write("spec.json", dp_spec(dir.file("x.json"), 8).dump());
  for (const std::string asks : {"true", "false"}) {
    const auto runs = run_ranks(dir, {"run", "-q", path, "--set", "dist.group_at_world_size_1=" + asks, "--set",
                                      "output=" + dir.file(asks + ".json"), "--dump-params", dir.file(asks)},
                                1);
    ASSERT_EQ(runs[0].exit_code, 0) << runs[0].err;
  }
  const json group = testing::read_json(dir.file("true.json")), alone = testing::read_json(dir.file("false.json"));
  ASSERT_TRUE(group.contains("dist")) << group.dump();
  const auto violations = testing::schema_violations(json::parse(embedded::result_schema()), group);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(group["dist"]["world_size"], 1);
  EXPECT_EQ(group["dist"]["backend"], "gloo");
  EXPECT_EQ(group["dist"]["allreduces"], 8 * group["dist"]["buckets"].get<int>());
  EXPECT_FALSE(alone.contains("dist"));
  const auto one = read_floats(dir_->file("one/params"));
  EXPECT_LT(max_abs_diff(read_floats(dir.file("true.rank0")), one), 2e-5);
  EXPECT_EQ(read_floats(dir.file("false")), one) << "the single-process path, bit for bit";
}

TEST_F(DistCli, DelayedSyncEqualsSyncEveryMicroStep) {
  ScratchDir dir;
  const auto spec = dp_spec(dir.file("x.json"), 2, /*accum=*/2);
  const std::string path = dir.write("spec.json", spec.dump());
  std::map<std::string, json> results;
  for (const std::string every : {"false", "true"}) {
    ASSERT_NO_FATAL_FAILURE(run_ranks_with(dir, path, "dist.sync_every_micro_step", every, results[every]));
  }
  const auto delayed = read_floats(dir.file("false.rank0")), every = read_floats(dir.file("true.rank0"));
  ASSERT_EQ(delayed.size(), every.size());
  EXPECT_LT(max_abs_diff(delayed, every), 2e-5);
  EXPECT_EQ(read_floats(dir.file("true.rank0")), read_floats(dir.file("true.rank1")));
  // The delayed sync reduces once per optimizer step, the other once per micro-step.
  const int buckets = results["false"]["dist"]["buckets"];
  EXPECT_EQ(results["false"]["dist"]["allreduces"], 8 * buckets);
  EXPECT_EQ(results["true"]["dist"]["allreduces"], 8 * 2 * buckets);
  // And both equal one process on the same global batch of 8 (micro-batches of 2 x 2 x 2 ranks).
  EXPECT_LT(max_abs_diff(delayed, read_floats(dir_->file("one/params"))), 2e-5);
}

// dist.gradient_as_bucket_view only moves where the gradients live: with accumulation (the second
// micro-step adds into the bucket) and weight decay, the parameters end bit for bit where copied
// gradients take them. XLNet's classifier never uses mask_emb: its gradient must stay undefined,
// not become zeros in the bucket, or AdamW's decay would move it. The one-pass AdamW reads the
// gradients where they live (on torch >= 2.4 `auto` would be ATen's fused kernel instead).
TEST_F(DistCli, GradientsKeptInTheBucketsTrainAsCopiedGradients) {
  ScratchDir dir;
  auto spec = dp_spec(dir.file("x.json"), 2, /*accum=*/2);
  spec["model"] = "tiny-xlnet";
  spec["train"]["weight_decay"] = 0.1;
  spec["train"]["optimizer_impl"] = "onepass";
  const std::string path = dir.write("spec.json", spec.dump());
  std::map<std::string, json> results;
  for (const std::string in_buckets : {"false", "true"}) {
    ASSERT_NO_FATAL_FAILURE(run_ranks_with(dir, path, "dist.gradient_as_bucket_view", in_buckets, results[in_buckets]));
    EXPECT_EQ(results[in_buckets]["dist"]["gradient_as_bucket_view"], in_buckets == "true");
  }
  const auto copied = read_floats(dir.file("false.rank0")), in_buckets = read_floats(dir.file("true.rank0"));
  ASSERT_GT(copied.size(), 10000u);
  EXPECT_EQ(copied, in_buckets) << "max |diff| " << max_abs_diff(copied, in_buckets);
  EXPECT_EQ(in_buckets, read_floats(dir.file("true.rank1")));
  ASSERT_EQ(results["true"]["iterations"].size(), results["false"]["iterations"].size());
  for (std::size_t i = 0; i < results["true"]["iterations"].size(); ++i) {
    EXPECT_EQ(results["true"]["iterations"][i]["loss"], results["false"]["iterations"][i]["loss"]) << "step " << i + 1;
  }
}

// Distillation data-parallel: masks are drawn per sample, not per rank, and only the student
// trains, so 2 ranks of batch 4 end where 1 process of batch 8 does. The test trains on the cosine
// term alone: its mean is over real tokens, the same number on every rank. The KL and masked-LM
// terms average over each rank's masked tokens, whose counts differ between ranks, and the mean of
// two ranks' means is not the mean over both (as with DDP in PyTorch: HF's runs do the same).
TEST_F(DistCli, DistillationMatchesOneProcessOnTheSameGlobalBatch) {
  ScratchDir dir;
  const auto distil = [&](int64_t batch) {
    auto spec = dp_spec(dir.file("unused.json"), batch);
    spec["task"] = "distillation";
    spec["model"] = "tiny-distilbert";
    spec["distillation"] = {{"teacher", "tiny-bert"}, {"alpha_ce", 0.0}, {"alpha_mlm", 0.0}, {"alpha_cos", 1.0}};
    return spec;
  };
  const auto one = dir.write("one.json", distil(8).dump());
  const auto single = run_single(dir, {"run", "-q", one, "--set", "output=" + dir.file("one-result.json"),
                                       "--dump-params", dir.file("one-params")});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const auto two = dir.write("two.json", distil(4).dump());
  const auto runs = run_ranks(dir, {"run", "-q", two, "--set", "output=" + dir.file("two-result.json"),
                                    "--dump-params", dir.file("two-params")}, 2);
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].err;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].err;
  const auto rank0 = read_floats(dir.file("two-params.rank0")), rank1 = read_floats(dir.file("two-params.rank1"));
  EXPECT_EQ(rank0, rank1);
  const auto single_params = read_floats(dir.file("one-params"));
  ASSERT_EQ(single_params.size(), rank0.size());  // the student's parameters only
  EXPECT_LT(max_abs_diff(single_params, rank0), 2e-5);
  const json result = testing::read_json(dir.file("two-result.json"));
  EXPECT_EQ(result["model"]["task"], "distillation");
  EXPECT_EQ(result["dist"]["world_size"], 2);
}

TEST_F(DistCli, ReportShowsScalingAgainstTheSingleProcessRun) {
  ScratchDir dir;
  const std::string one = dir.write("one.json", dp_spec(dir.file("one-b4.json"), 4).dump());
  ASSERT_EQ(run_single(dir, {"run", "-q", one}).exit_code, 0);
  const std::string both = dir.file("one-b4.json") + " " + dir_->file("two/result.json");
  const auto table = testing::run_tbench("report --scaling " + both);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("efficiency"), std::string::npos) << table.out;
  const auto j = json::parse(testing::run_tbench("report --scaling --format json " + both).out);
  ASSERT_EQ(j["rows"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["rows"][0]["world_size"], 1);
  EXPECT_EQ(j["rows"][1]["world_size"], 2);
  EXPECT_DOUBLE_EQ(j["rows"][0]["speedup"].get<double>(), 1.0);
  EXPECT_NEAR(j["rows"][1]["efficiency"].get<double>(), j["rows"][1]["speedup"].get<double>() / 2, 1e-12);
  const auto by = testing::run_tbench("report --by world_size " + both);
  EXPECT_NE(by.out.find("2 processes"), std::string::npos) << by.out;
}

// torchrun's default (static) rendezvous: its agent hosts the TCPStore at MASTER_ADDR:MASTER_PORT and
// tells the workers so; rank 0 must join it rather than host its own. The test plays the agent.
TEST(DistLaunch, JoinsTheStoreOfTorchrunsAgent) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const int port = testing::free_tcp_port();
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(30);
  // torchrun's agent hosts the store with torch's default server, as tbench opens its own.
  const auto agent = open_tcp_store("127.0.0.1", options);
  auto spec = dp_spec(dir.file("a.json"), 4);
  spec["train"]["epochs"] = 1;
  const std::string path = dir.write("spec.json", spec.dump());
  std::vector<pid_t> pids;
  for (int rank : {0, 1}) {
    auto env = torchrun_env(rank, 2, port);
    env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    env["TORCHELASTIC_RESTART_COUNT"] = "0";
    pids.push_back(testing::spawn_tbench({"run", "-q", path}, env, dir.file(std::to_string(rank) + ".out"),
                                         dir.file(std::to_string(rank) + ".err")));
  }
  for (int rank : {0, 1}) {
    EXPECT_EQ(testing::wait_for_exit(pids[rank], 60), 0) << testing::read_text(dir.file(std::to_string(rank) + ".err"));
  }
  EXPECT_EQ(testing::read_json(dir.file("a.json"))["dist"]["ranks"].size(), 2u);
  EXPECT_TRUE(agent->check({"/worker/attempt_0/tbench/joined"}));  // the ranks used the agent's store
}

// Two ranks of an hours-long run writing `result` under dist.timeout_s = `timeout_s`, started
// and left to train until rank 0's iteration stream holds a few steps (`started`). Whatever the
// test does or fails, neither outlives it, stopped or not. Quiet, but for rank 0 at `rank0_log_level`.
struct LongRunningRanks {
  LongRunningRanks(const ScratchDir& dir, const std::string& result, int timeout_s,
                   const std::string& rank0_log_level = "") {
    auto spec = dp_spec(dir.file(result), 4);
    spec["data"]["num_samples"] = 800000;  // hours of steps
    spec["dist"]["timeout_s"] = timeout_s;
    const std::string path = dir.write("spec.json", spec.dump());
    const int port = testing::free_tcp_port();
    const std::vector<std::string> rank0_args = rank0_log_level.empty()
                                                    ? std::vector<std::string>{"run", "-q", path}
                                                    : std::vector<std::string>{"run", "--log-level", rank0_log_level, path};
    rank0 = testing::spawn_tbench(rank0_args, torchrun_env(0, 2, port), dir.file("0.out"), dir.file("0.err"));
    rank1 = testing::spawn_tbench({"run", "-q", path}, torchrun_env(1, 2, port), dir.file("1.out"), dir.file("1.err"));
    const std::string stream = fs::path(dir.file(result)).replace_extension(".iterations.jsonl").string();
    for (int i = 0; i < 600 && !started; ++i) {
      started = fs::exists(stream) && fs::file_size(stream) >= 600;
      if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~LongRunningRanks() {
    for (const pid_t pid : {rank0, rank1}) testing::wait_for_exit(pid, 0);
  }
  LongRunningRanks(const LongRunningRanks&) = delete;
  LongRunningRanks& operator=(const LongRunningRanks&) = delete;
  pid_t rank0 = -1, rank1 = -1;
  bool started = false;
};

TEST(DistFailure, KilledPeerEndsRankZeroWithAnErrorNotAHang) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const LongRunningRanks ranks(dir, "k.json", 20);
  const pid_t rank0 = ranks.rank0, rank1 = ranks.rank1;
  ASSERT_TRUE(ranks.started) << testing::read_text(dir.file("0.err"));
  kill(rank1, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(testing::wait_for_exit(rank1, 10), 128 + SIGKILL);
  const int code = testing::wait_for_exit(rank0, 40);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const std::string err = testing::read_text(dir.file("0.err"));
  ASSERT_EQ(code, 4) << "rank 0 did not end with run_failed (-1: still running after 40 s)\n" << err;
  EXPECT_LT(took, 30) << "rank 0 took " << took << " s to notice";
  EXPECT_NE(err.find("lost contact"), std::string::npos) << err;
  const auto result = testing::read_json(dir.file("k.json"));
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_NE(result["summary"]["error"].get<std::string>().find("lost contact"), std::string::npos);
  EXPECT_GT(result["iterations"].size(), 0u);
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array({1}));
  // A lost peer is no failure of rank 0's own: nothing was announced.
  EXPECT_FALSE(result["dist"].contains("first_failure")) << result["dist"].dump(2);
}

TEST(DistFailure, KilledRankZeroEndsThePeerWithAnError) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const LongRunningRanks ranks(dir, "k.json", 20);
  const pid_t rank0 = ranks.rank0, rank1 = ranks.rank1;
  kill(rank0, SIGKILL);
  EXPECT_EQ(testing::wait_for_exit(rank0, 10), 128 + SIGKILL);
  const int code = testing::wait_for_exit(rank1, 40);
  const std::string err = testing::read_text(dir.file("1.err"));
  EXPECT_EQ(code, 4) << err;
  EXPECT_NE(err.find("lost contact"), std::string::npos) << err;
}

// Rank 0's result where rank 0, watching rank 1, announced it (`cause`: the start of the run's
// error): a valid failed result naming rank 1 as the first failure, missing its report, and rank
// 0's own error saying that it stopped for that.
json expect_rank_1_given_up_by_its_watcher(const std::string& path, const std::string& cause) {
  const auto result = testing::read_json(path);
  const auto violations = testing::schema_violations(json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_EQ(result["summary"]["error"].get<std::string>().rfind(cause, 0), 0u) << result["summary"]["error"];
  EXPECT_EQ(result["dist"]["first_failure"]["rank"], 1);
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array({1}));
  EXPECT_NE(result["dist"]["ranks"][0]["error"].get<std::string>().find(
                "stopped during a gradient all-reduce because " + cause),
            std::string::npos)
      << result["dist"]["ranks"][0];
  return result;
}

// A peer that stops without a word (SIGSTOP: as a frozen host, or a process hung in the kernel)
// keeps its connections open, so Gloo's all-reduce would wait out dist.timeout_s. Rank 0, which
// watches rank 1's heartbeat while it waits, announces it once the heartbeat has stood still for
// 15 s, and the run ends with that as its error.
TEST(DistFailure, AStoppedPeerIsAnnouncedByTheRankWatchingItsHeartbeat) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const LongRunningRanks ranks(dir, "s.json", 300, "debug");
  const pid_t rank0 = ranks.rank0, rank1 = ranks.rank1;
  ASSERT_TRUE(ranks.started) << testing::read_text(dir.file("0.err"));
  kill(rank1, SIGSTOP);
  const auto stopped_at = std::chrono::steady_clock::now();
  const int code = testing::wait_for_exit(rank0, 90);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  kill(rank1, SIGKILL);
  testing::wait_for_exit(rank1, 10);
  const std::string err = testing::read_text(dir.file("0.err"));
  ASSERT_EQ(code, 4) << "rank 0 did not end with run_failed (-1: still running after 90 s)\n" << err;
  // The watcher's count starts at the read that first saw rank 1's last beat, which may come up to
  // a beat before the stop; rank 0 then waits 3 s for a report rank 1 would send if it came back.
  EXPECT_GT(took, 16.5) << "rank 1 was announced before its heartbeat had stood still for 15 s";
  EXPECT_LT(took, 60) << "rank 0 ended long after rank 1's heartbeat stopped (dist.timeout_s is 300 s)";
  const std::string cause = "rank 1 failed: stopped answering: its heartbeat in the rendezvous store did not move for 15 s "
                            "while rank 0 waited in a collective";
  EXPECT_NE(err.find("run failed: " + cause), std::string::npos) << err;
  const auto result = expect_rank_1_given_up_by_its_watcher(dir.file("s.json"), cause);
  EXPECT_GT(result["iterations"].size(), 0u);
  // Its Gloo group, left with the all-reduce in flight, ends the process without static
  // destructors: what it printed is flushed first.
  EXPECT_NE(err.find("ending without static destructors"), std::string::npos) << err;
  EXPECT_NE(testing::read_text(dir.file("0.out")).find("s.json"), std::string::npos) << testing::read_text(dir.file("0.out"));
}

// Two ranks of an hours-long run, each with its own extra arguments; waits for both.
std::vector<RankRun> run_two_ranks_apart(const ScratchDir& dir, const std::string& spec_path,
                                         const std::vector<std::vector<std::string>>& extra, double timeout_s) {
  const int port = testing::free_tcp_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = {"run", "-q", spec_path};
    args.insert(args.end(), extra[r].begin(), extra[r].end());
    pids.push_back(testing::spawn_tbench(args, torchrun_env(r, 2, port), dir.file(std::to_string(r) + ".out"),
                                         dir.file(std::to_string(r) + ".err")));
  }
  std::vector<RankRun> runs(2);
  for (int r = 0; r < 2; ++r) {
    runs[r].exit_code = testing::wait_for_exit(pids[r], timeout_s);
    runs[r].err = testing::read_text(dir.file(std::to_string(r) + ".err"));
  }
  return runs;
}

json long_dp_spec(const std::string& output) {
  auto spec = dp_spec(output, 4);
  spec["data"]["num_samples"] = 800000;  // hours of steps
  spec["dist"]["timeout_s"] = 60;        // far beyond what any of these tests may take
  return spec;
}

// Rank 0 fails mid-run while rank 1 waits for it in the next all-reduce: rank 1 reads the announced
// failure and stops at once, and its report still reaches rank 0's result.
TEST(DistFailure, RankZeroFailingMidRunStopsThePeerAtOnceAndKeepsItsReport) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const std::string path = dir.write("spec.json", long_dp_spec(dir.file("f.json")).dump());
  const auto start = std::chrono::steady_clock::now();
  const auto runs = run_two_ranks_apart(dir, path, {{"--fail-at-step", "3"}, {}}, 50);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(runs[0].exit_code, 4) << runs[0].err;
  ASSERT_EQ(runs[1].exit_code, 4) << runs[1].err;
  EXPECT_LT(took, 30) << "the peer waited for the timeout";
  EXPECT_NE(runs[1].err.find("because rank 0 failed: epoch 1 step 3: failed on purpose at step 3"), std::string::npos)
      << runs[1].err;
  const auto result = testing::read_json(dir.file("f.json"));
  const auto violations = testing::schema_violations(json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_EQ(result["summary"]["error"], "rank 0 failed: epoch 1 step 3: failed on purpose at step 3 (--fail-at-step)");
  EXPECT_EQ(result["dist"]["first_failure"]["rank"], 0);
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array()) << "rank 1's report was lost";
  ASSERT_EQ(result["dist"]["ranks"].size(), 2u);
  const auto& peer = result["dist"]["ranks"][1];
  EXPECT_EQ(peer["status"], "failed");
  EXPECT_NE(peer["error"].get<std::string>().find("stopped during a gradient all-reduce because rank 0 failed"),
            std::string::npos)
      << peer;
  EXPECT_EQ(peer["steps"], 3) << "rank 1 trained the 3 steps rank 0 took part in";
}

// Rank 1 hangs in its own work with its process alive (a write that never returns), so its
// heartbeat beats on. When rank 0's wait for it in the next all-reduce reaches dist.timeout_s,
// rank 0, which watches it, names it: the run's error says which rank and where, not "lost
// contact", and rank 0 does not wait for the report such a rank cannot send. Rank 1's own watch
// reads that the others gave up on it, and ends its process dist.timeout_s later, its host not
// having moved.
TEST(DistFailure, APeerStuckInItsOwnWorkIsNamedWhenTheWaitTimesOut) {
  REQUIRE_GLOO();
  ScratchDir dir;
  auto spec = long_dp_spec(dir.file("h.json"));
  spec["dist"]["timeout_s"] = 10;
  const std::string path = dir.write("spec.json", spec.dump());
  const int port = testing::free_tcp_port();
  const auto start = std::chrono::steady_clock::now();
  const pid_t rank0 = testing::spawn_tbench({"run", "-q", path}, torchrun_env(0, 2, port), dir.file("0.out"), dir.file("0.err"));
  const pid_t rank1 = testing::spawn_tbench({"run", "-q", path, "--hang-at-step", "3"}, torchrun_env(1, 2, port),
                                            dir.file("1.out"), dir.file("1.err"));
  const int code = testing::wait_for_exit(rank0, 90);
  const auto rank0_ended = std::chrono::steady_clock::now();
  const double took = std::chrono::duration<double>(rank0_ended - start).count();
  const int rank1_code = testing::wait_for_exit(rank1, 40);
  const double rank1_took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank1_code == -1) kill(rank1, SIGKILL);
  testing::wait_for_exit(rank1, 10);
  const std::string err = testing::read_text(dir.file("0.err"));
  const std::string err1 = testing::read_text(dir.file("1.err"));
  ASSERT_EQ(code, 4) << "rank 0 did not end with run_failed (-1: still running after 90 s)\n" << err;
  EXPECT_EQ(rank1_code, 4) << "the stuck rank did not end itself (-1: still running 40 s after rank 0)\n" << err1;
  EXPECT_GT(rank1_took, 20) << "the stuck rank ended before its wait's 10 s and its own 10 s had passed";
  EXPECT_NE(err1.find("rank 1: the other ranks gave up on it (rank 1 failed: stuck in its own work (epoch 1 step 3)"),
            std::string::npos)
      << err1;
  EXPECT_NE(err1.find("and its host has not moved from epoch 1 step 3 in the 10 s since: ending the process"),
            std::string::npos)
      << err1;
  EXPECT_GT(took, 10) << "rank 1 was named before dist.timeout_s";
  const std::string named = "its progress did not move for ";
  const auto at = err.find(named);
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_GE(std::stod(err.substr(at + named.size())), 5.0) << "named before its stillness reached 5 s: " << err;
  EXPECT_LT(took, 60) << "rank 0 ended long after dist.timeout_s (10 s)";
  const std::string cause = "rank 1 failed: stuck in its own work (epoch 1 step 3): it had not started the collective "
                            "rank 0 waited in, and its progress did not move for ";
  const auto result = expect_rank_1_given_up_by_its_watcher(dir.file("h.json"), cause);
  EXPECT_EQ(err.find("lost contact"), std::string::npos) << err;
  EXPECT_NE(err.find("rank(s) 1 were stuck in work of their own"), std::string::npos) << err;
  EXPECT_EQ(result["iterations"].size(), 3u) << "rank 0 took part in the steps rank 1 finished, and no more";
}

// Rank 1 fails mid-run: rank 0's result names rank 1's own error as the run's, not a lost contact.
TEST(DistFailure, APeerFailingMidRunIsTheErrorOfRankZerosResult) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const std::string path = dir.write("spec.json", long_dp_spec(dir.file("f.json")).dump());
  const auto runs = run_two_ranks_apart(dir, path, {{}, {"--fail-at-step", "4"}}, 50);
  ASSERT_EQ(runs[0].exit_code, 4) << runs[0].err;
  ASSERT_EQ(runs[1].exit_code, 4) << runs[1].err;
  EXPECT_EQ(runs[0].err.find("lost contact"), std::string::npos) << runs[0].err;
  const auto result = testing::read_json(dir.file("f.json"));
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_EQ(result["summary"]["error"], "rank 1 failed: epoch 1 step 4: failed on purpose at step 4 (--fail-at-step)");
  EXPECT_EQ(result["dist"]["first_failure"]["rank"], 1);
  ASSERT_EQ(result["dist"]["ranks"].size(), 2u);
  EXPECT_NE(result["dist"]["ranks"][0]["error"].get<std::string>().find("because rank 1 failed"), std::string::npos)
      << result["dist"]["ranks"][0];
  EXPECT_EQ(result["dist"]["ranks"][1]["status"], "failed");
}

// Rank 0 refuses to overwrite an existing result, before training: rank 1, waiting for rank 0's
// weights, is told why instead of only that rank 0 is gone.
TEST(DistFailure, RankZeroStoppingBeforeTrainingTellsThePeerWhy) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const std::string path = dir.write("spec.json", long_dp_spec(dir.file("f.json")).dump());
  dir.write("f.json", "{}");
  const auto runs = run_two_ranks_apart(dir, path, {{}, {}}, 50);
  EXPECT_EQ(runs[0].exit_code, 3) << runs[0].err;
  EXPECT_EQ(runs[1].exit_code, 4) << runs[1].err;
  EXPECT_NE(runs[1].err.find("because rank 0 failed: " + dir.file("f.json") + ": a result already exists here; pass --force"),
            std::string::npos)
      << runs[1].err;
  EXPECT_EQ(testing::read_text(dir.file("f.json")), "{}");
}

// Two ranks of a short run writing `result` (dist.timeout_s far beyond the test's patience), rank 1
// with `peer_args`; `seconds` is how long both took.
std::vector<RankRun> run_short_two_ranks(const ScratchDir& dir, const std::string& result,
                                         const std::vector<std::string>& peer_args, double& seconds) {
  auto spec = dp_spec(dir.file(result), 4);
  spec["dist"]["timeout_s"] = 300;
  spec["timing"]["mllog"] = true;  // rank 0's
  const std::string path = dir.write("spec.json", spec.dump());
  const auto start = std::chrono::steady_clock::now();
  auto runs = run_two_ranks_apart(dir, path, {{}, peer_args}, 120);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return runs;
}

// A peer killed after its last step never reports. Rank 0, which completed, gives up on it once
// its heartbeat stops (about 15 s), not at dist.timeout_s.
TEST(DistFailure, APeerKilledAfterTrainingIsGivenUpOnWhenItsHeartbeatStops) {
  REQUIRE_GLOO();
  ScratchDir dir;
  double took = 0;
  const auto runs = run_short_two_ranks(dir, "k.json", {"--die-after-training"}, took);
  EXPECT_EQ(runs[1].exit_code, 128 + SIGKILL) << runs[1].err;
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].err;
  EXPECT_LT(took, 60) << "rank 0 waited for the dead peer's report";
  EXPECT_NE(runs[0].err.find("rank(s) 1 stopped answering before reporting (no heartbeat"), std::string::npos)
      << runs[0].err;
  const auto result = testing::read_json(dir.file("k.json"));
  EXPECT_EQ(result["summary"]["status"], "completed");
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array({1}));
  EXPECT_EQ(result["dist"]["ranks"].size(), 1u);
}

// A peer that fails after training (here its parameters cannot be written) tells rank 0 why: the
// run's error, in the result rank 0 writes without waiting for the peer's heartbeat to stop.
TEST(DistFailure, APeerFailingAfterTrainingIsTheErrorOfRankZerosResult) {
  REQUIRE_GLOO();
  ScratchDir dir;
  const std::string not_a_folder = dir.write("file", "x");
  double took = 0;
  const auto runs = run_short_two_ranks(dir, "f.json", {"--dump-params", not_a_folder + "/params"}, took);
  EXPECT_NE(runs[1].exit_code, 0) << runs[1].err;
  EXPECT_EQ(runs[0].exit_code, 4) << runs[0].err;
  // Its announcement ends the wait once its heartbeat has stopped for 3 s, not 15 s.
  EXPECT_NE(runs[0].err.find("rank(s) 1 failed before reporting"), std::string::npos) << runs[0].err << took;
  const auto result = testing::read_json(dir.file("f.json"));
  const auto violations = testing::schema_violations(json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(result["summary"]["status"], "failed");
  EXPECT_EQ(result["dist"]["first_failure"]["rank"], 1);
  EXPECT_NE(result["summary"]["error"].get<std::string>().find("rank 1 failed: "), std::string::npos)
      << result["summary"]["error"];
  EXPECT_NE(result["summary"]["error"].get<std::string>().find("params"), std::string::npos)
      << result["summary"]["error"];
  EXPECT_EQ(result["dist"]["missing_ranks"], json::array({1}));
  // Rank 0's own training completed; its MLPerf log ends with the result's status, not that.
  const auto events = testing::read_mllog(dir.file("f.mllog"));
  ASSERT_FALSE(events.empty());
  const json& stop = events.back();
  EXPECT_EQ(stop["key"], "run_stop");
  EXPECT_EQ(stop["metadata"]["status"], "aborted");
  EXPECT_EQ(stop["metadata"]["tbench_error"], result["summary"]["error"]);
}

TEST(DistFailure, InterruptingOneRankStopsAllAfterTheSameStep) {
  REQUIRE_GLOO();
  ScratchDir dir;
  auto spec = dp_spec(dir.file("i.json"), 4);
  spec["data"]["num_samples"] = 800000;
  const std::string path = dir.write("spec.json", spec.dump());
  const int port = testing::free_tcp_port();
  const pid_t rank0 = testing::spawn_tbench({"run", "-q", path}, torchrun_env(0, 2, port), dir.file("0.out"), dir.file("0.err"));
  const pid_t rank1 = testing::spawn_tbench({"run", "-q", path}, torchrun_env(1, 2, port), dir.file("1.out"), dir.file("1.err"));
  const std::string stream = dir.file("i.iterations.jsonl");
  for (int i = 0; i < 600 && (!fs::exists(stream) || fs::file_size(stream) < 600); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(rank1, SIGINT);  // only rank 1 is asked; the request travels with the next gradients
  EXPECT_EQ(testing::wait_for_exit(rank0, 40), 130) << testing::read_text(dir.file("0.err"));
  EXPECT_EQ(testing::wait_for_exit(rank1, 40), 130) << testing::read_text(dir.file("1.err"));
  const auto result = testing::read_json(dir.file("i.json"));
  EXPECT_EQ(result["summary"]["status"], "interrupted");
  ASSERT_EQ(result["dist"]["ranks"].size(), 2u);
  EXPECT_EQ(result["dist"]["ranks"][1]["status"], "interrupted");
  EXPECT_EQ(result["dist"]["ranks"][0]["steps"], result["dist"]["ranks"][1]["steps"]);
}

TEST(DistFailure, PeerThatNeverArrivesTimesOut) {
  REQUIRE_GLOO();
  ScratchDir dir;
  auto spec = dp_spec(dir.file("n.json"), 4);
  spec["dist"]["timeout_s"] = 3;
  const std::string path = dir.write("spec.json", spec.dump());
  for (int rank : {0, 1}) {  // rank 0 waits for rank 1; rank 1 finds no rank 0
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = testing::spawn_tbench({"run", "-q", path}, torchrun_env(rank, 2, testing::free_tcp_port()),
                                            dir.file("n.out"), dir.file("n.err"));
    const int code = testing::wait_for_exit(pid, 30);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string err = testing::read_text(dir.file("n.err"));
    EXPECT_EQ(code, 4) << "rank " << rank << ": " << err;
    EXPECT_NE(err.find("rendezvous at 127.0.0.1:"), std::string::npos) << err;
    if (rank == 0) {
      EXPECT_NE(err.find("only 1 of 2 ranks joined"), std::string::npos) << err;
    }
    EXPECT_LT(took, 20) << "rank " << rank;
  }
  EXPECT_FALSE(fs::exists(dir.file("n.json")));
}

TEST(DistLaunch, HalfSetEnvironmentExitsTwoNamingTheVariable) {
  ScratchDir dir;
  const std::string path = dir.write("spec.json", dp_spec(dir.file("h.json"), 4).dump());
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"RANK", "0"}}, "WORLD_SIZE"},
      {{{"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}}, "RANK=2"},
      {{{"SLURM_PROCID", "1"}, {"SLURM_STEP_ID", "0"}}, "SLURM_NTASKS"},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}}, "OMPI_COMM_WORLD_RANK"},
  };
  for (const auto& [env, expected] : cases) {
    for (const std::string command : {"run", "validate"}) {
      const pid_t pid = testing::spawn_tbench({command, path}, env, dir.file("h.out"), dir.file("h.err"));
      const int code = testing::wait_for_exit(pid, 30);
      const std::string err = testing::read_text(dir.file("h.err"));
      EXPECT_EQ(code, 2) << command << " " << expected << ": " << err;
      EXPECT_NE(err.find(expected), std::string::npos) << err;
    }
  }
  EXPECT_FALSE(fs::exists(dir.file("h.json")));
}

}  // namespace
}  // namespace tbench
