// `tbench sweep`: the product runs, a failing point does not stop the rest, an interrupted sweep
// resumes without redoing finished points, and --dry-run runs nothing.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "support/cli.hpp"

namespace tbench {
namespace {

using testing::run_tbench;

class SweepCli : public ::testing::Test {
 protected:
  testing::ScratchDir dir;
  std::string spec() {
    auto s = testing::tiny_spec(dir.file("unused.json"));
    s["train"]["epochs"] = 1;
    return dir.write("base.json", s.dump());
  }
  std::string out() { return dir.file("sweep"); }
  nlohmann::json state() { return testing::read_json(out() + "/sweep.json"); }
};

TEST_F(SweepCli, DryRunListsThePointsAndRunsNothing) {
  const auto r = run_tbench("sweep " + spec() + " --grid model=tiny-bert,tiny-distilbert --grid train.batch_size=4,8"
                            " --repeat 2 --dry-run --out-dir " + out());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("8 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model-tiny-distilbert__train.batch_size-8__rep-2.json"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out()));
}

// --point under --dry-run lists (and checks) that point alone, and an index past the last point
// is refused as a run would refuse it.
TEST_F(SweepCli, DryRunWithAPointListsThatPointAlone) {
  const std::string grid = " --grid model=tiny-bert,tiny-distilbert --dry-run --out-dir " + out();
  const auto one = run_tbench("sweep " + spec() + grid + " --point 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("model-tiny-distilbert.json"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("model-tiny-bert.json"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("point 1 of 2"), std::string::npos) << one.out;
  const auto listed = run_tbench("sweep " + spec() + grid + " --point 1 --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto state = nlohmann::json::parse(listed.out);
  ASSERT_EQ(state["points"].size(), 1u);
  EXPECT_EQ(state["points"][0]["index"], 1);
  const auto past = run_tbench("sweep " + spec() + grid + " --point 9");
  EXPECT_EQ(past.exit_code, 2) << past.err;
  EXPECT_NE(past.err.find("--point: 9 is out of range (the sweep has 2 points, 0..1)"), std::string::npos) << past.err;
  EXPECT_FALSE(std::filesystem::exists(out()));
}

TEST_F(SweepCli, RunsTheProductAndPrintsTheTable) {
  const auto r = run_tbench("sweep " + spec() + " --grid model=tiny-bert,tiny-distilbert --grid train.batch_size=4,8"
                            " --out-dir " + out());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = state();
  ASSERT_EQ(s["points"].size(), 4u);
  for (const auto& p : s["points"]) {
    EXPECT_EQ(p["status"], "completed");
    EXPECT_EQ(testing::read_json(p["result"])["summary"]["status"], "completed");
  }
  EXPECT_NE(r.out.find("tiny-distilbert"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train.batch_size=8"), std::string::npos) << r.out;
  // Results exist now: a second sweep refuses without --resume or --force.
  EXPECT_EQ(run_tbench("sweep " + spec() + " --grid model=tiny-bert,tiny-distilbert --grid train.batch_size=4,8"
                       " --out-dir " + out()).exit_code, 3);
}

// A learning rate of 1e30 passes the spec's checks; its loss turns non-finite while it trains.
TEST_F(SweepCli, AFailingPointIsRecordedAndTheSweepGoesOn) {
  const auto r = run_tbench("sweep " + spec() + " --grid train.lr=1e-4,1e30,2e-4 --out-dir " + out() + " --json");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const auto s = nlohmann::json::parse(r.out);
  ASSERT_EQ(s["points"].size(), 3u);
  EXPECT_EQ(s["points"][0]["status"], "completed");
  EXPECT_EQ(s["points"][1]["status"], "failed");
  EXPECT_NE(s["points"][1]["reason"].get<std::string>().find("train.lr"), std::string::npos) << s.dump(2);
  EXPECT_EQ(s["points"][2]["status"], "completed");
  EXPECT_EQ(s["report"]["rows"].size(), 2u);
}

// A typo in a grid key failed every point, each after a process start; a bad value failed its
// point after the ones before it had run. Now the sweep refuses before the first point runs.
TEST_F(SweepCli, PointsTheSpecChecksRefuseStopTheSweepBeforeAnythingRuns) {
  const auto typo = run_tbench("sweep " + spec() + " --grid train.batchsize=4,8 --out-dir " + out());
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("sweep point 0 (train.batchsize-4)"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("did you mean 'batch_size'"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("2 of 2 points are refused"), std::string::npos) << typo.err;
  EXPECT_FALSE(std::filesystem::exists(out()));

  const auto zero = run_tbench("sweep " + spec() + " --grid train.batch_size=8,0 --out-dir " + out());
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_NE(zero.err.find("sweep point 1 (train.batch_size-0)"), std::string::npos) << zero.err;
  EXPECT_FALSE(std::filesystem::exists(out()));
  // --dry-run checks every point; --point checks (and runs, or lists) only its own.
  EXPECT_EQ(run_tbench("sweep " + spec() + " --grid train.batch_size=8,0 --dry-run --out-dir " + out()).exit_code, 2);
  EXPECT_EQ(run_tbench("sweep " + spec() + " --grid train.batch_size=8,0 --dry-run --point 0 --out-dir " + out()).exit_code,
            0);
  const auto first = run_tbench("sweep " + spec() + " --grid train.batch_size=8,0 --point 0 --out-dir " + out());
  EXPECT_EQ(first.exit_code, 0) << first.err;
}

TEST_F(SweepCli, InterruptedSweepResumesWithoutRedoingFinishedPoints) {
  auto slow = testing::tiny_spec(dir.file("unused.json"));
  slow["train"]["epochs"] = 1;
  slow["data"]["num_samples"] = 4000;  // ~500 steps a point: long enough to interrupt
  const std::string base = dir.write("slow.json", slow.dump());
  const std::string grid = " --grid model=tiny-bert,tiny-distilbert --grid train.batch_size=8,16 --out-dir " + out();
  const pid_t child = fork();
  if (child == 0) {
    const std::string command = "'" TBENCH_BINARY "' sweep " + base + grid + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupt once two points have finished.
  for (int i = 0; i < 1200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!std::filesystem::exists(out() + "/sweep.json")) continue;
    int completed = 0;
    const auto now = state();
    for (const auto& p : now["points"]) completed += p["status"] == "completed";
    if (completed >= 2) break;
  }
  kill(child, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::vector<std::string> finished;
  std::map<std::string, std::filesystem::file_time_type> written;
  const auto interrupted = state();
  for (const auto& p : interrupted["points"]) {
    if (p["status"] == "completed") {
      finished.push_back(p["result"]);
      written[p["result"]] = std::filesystem::last_write_time(p["result"].get<std::string>());
    }
  }
  ASSERT_GE(finished.size(), 2u);
  ASSERT_LT(finished.size(), 4u);

  // A finished point ran another spec than the points would now: resuming would mix the two in one
  // table (it did, unseen). Refused, naming the field, before anything runs.
  const auto edited = run_tbench("sweep " + base + grid + " --resume --set data.num_samples=64");
  EXPECT_EQ(edited.exit_code, 3) << edited.err;
  EXPECT_NE(edited.err.find("data.num_samples 4000 -> 64"), std::string::npos) << edited.err;
  for (const auto& path : finished) EXPECT_EQ(std::filesystem::last_write_time(path), written[path]) << path;

  // Finished points are skipped, not redone.
  const auto resumed = run_tbench("sweep " + base + grid + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  int skipped = 0;
  const auto after = state();
  for (const auto& p : after["points"]) {
    EXPECT_TRUE(p["status"] == "completed" || p["status"] == "skipped") << p.dump();
    skipped += p["status"] == "skipped";
  }
  EXPECT_EQ(skipped, static_cast<int>(finished.size()));
  for (const auto& path : finished) EXPECT_EQ(std::filesystem::last_write_time(path), written[path]) << path;
  EXPECT_NE(resumed.out.find("tiny-distilbert"), std::string::npos) << resumed.out;
}

// Ctrl-C after a point's last step (here raised by the point itself as its training ends, through
// the test hook, so no signal from outside races the point's end): the point writes its whole
// result and exits 130, and the sweep counts it (it was left out of the table as interrupted),
// then stops.
TEST_F(SweepCli, APointInterruptedAfterItsTrainingCountsAsCompleted) {
  const pid_t child = testing::spawn_tbench({"sweep", spec(), "--grid", "train.batch_size=8,16", "--out-dir", out()},
                                            {{"TBENCH_TEST_INTERRUPT_AFTER_TRAINING", "1"}}, dir.file("sweep.out"),
                                            dir.file("sweep.err"));
  ASSERT_EQ(testing::wait_for_exit(child, 120), 130) << testing::read_text(dir.file("sweep.err"));
  const auto s = state();
  ASSERT_EQ(s["points"].size(), 2u);
  EXPECT_EQ(s["points"][0]["status"], "completed") << s.dump(2);
  EXPECT_EQ(s["points"][0]["exit_code"], 130);
  EXPECT_EQ(testing::read_json(s["points"][0]["result"])["summary"]["status"], "completed");
  EXPECT_EQ(s["points"][1]["status"], "pending") << "the sweep went on after the Ctrl-C";
  EXPECT_NE(testing::read_text(dir.file("sweep.out")).find("train.batch_size=8"), std::string::npos)
      << "the point is missing from the sweep's table: " << testing::read_text(dir.file("sweep.out"));
}

TEST_F(SweepCli, SingleArrayTaskRunsOnePoint) {
  const auto r = run_tbench("sweep " + spec() + " --grid train.batch_size=4,8 --point 1 --out-dir " + out());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = state();
  EXPECT_EQ(s["points"][0]["status"], "not selected");
  EXPECT_EQ(s["points"][1]["status"], "completed");
  EXPECT_EQ(run_tbench("sweep " + spec() + " --grid train.batch_size=4,8 --point 5 --out-dir " + out()).exit_code, 2);
}

TEST_F(SweepCli, SweepBlockInTheSpec) {
  auto s = testing::tiny_spec(dir.file("unused.json"));
  s["train"]["epochs"] = 1;
  s["sweep"] = {{"grid", {{"precision", {"fp32", "bf16"}}}}, {"out_dir", out()}};
  const auto r = run_tbench("sweep --dry-run " + dir.write("block.json", s.dump()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("precision-bf16.json"), std::string::npos) << r.out;
  s["sweep"]["grid"]["precision"] = "fp32";
  const auto bad = run_tbench("sweep --dry-run " + dir.write("bad.json", s.dump()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("sweep.grid.precision"), std::string::npos) << bad.err;
}

// Found by review: a value repeated on an axis gave two points one result file (the second
// overwrote the first, the table counted it twice); a trailing comma dropped silently; a string
// sweep.repeat was exit 1; and the points' name and output went to --set unquoted, so an out-dir
// with " #" lost its tail (a YAML comment) and a spec named 2024 failed every point.
TEST_F(SweepCli, BadGridsAreRefusedAndPathsAndNamesStayText) {
  const auto twice = run_tbench("sweep " + spec() + " --grid train.seed=1,1 --dry-run --out-dir " + out());
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("would both write"), std::string::npos) << twice.err;
  const auto trailing = run_tbench("sweep " + spec() + " --grid train.seed=1,2, --dry-run --out-dir " + out());
  EXPECT_EQ(trailing.exit_code, 2);
  EXPECT_NE(trailing.err.find("empty value"), std::string::npos) << trailing.err;
  auto block = testing::tiny_spec(dir.file("unused.json"));
  block["sweep"] = {{"repeat", "3"}};
  const auto repeat = run_tbench("sweep --dry-run " + dir.write("repeat.json", block.dump()));
  EXPECT_EQ(repeat.exit_code, 2);
  EXPECT_NE(repeat.err.find("sweep.repeat: expected an integer >= 1"), std::string::npos) << repeat.err;

  auto dated = testing::tiny_spec(dir.file("unused.json"));
  dated.erase("name");
  dated["train"]["epochs"] = 1;
  const auto spec_2024 = dir.write("2024.json", dated.dump());
  const std::string odd_dir = dir.file("sweep #2");
  const auto r = run_tbench("sweep " + spec_2024 + " --grid train.seed=1,2 --out-dir '" + odd_dir + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto result = testing::read_json(odd_dir + "/train.seed-2.json");
  EXPECT_EQ(result["spec"]["name"], "2024[train.seed=2]");
  EXPECT_EQ(result["spec"]["output"], odd_dir + "/train.seed-2.json");
}

}  // namespace
}  // namespace tbench
