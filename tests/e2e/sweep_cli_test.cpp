// `tbench sweep`: the product runs, a failing point does not stop the rest, an interrupted sweep
// resumes without redoing finished points, and --dry-run runs nothing.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/cli.hpp"

namespace tbench {
namespace {

using testing::run_tbench;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

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
  // The README's collect step: the folder's .json files hold the sweep's state file too.
  const auto collected = run_tbench("report " + out() + "/*.json");
  EXPECT_EQ(collected.exit_code, 0) << collected.err;
  EXPECT_NE(collected.err.find("sweep.json is a sweep's state file, not a result: left out"), std::string::npos)
      << collected.err;
  EXPECT_NE(collected.out.find("tiny-distilbert"), std::string::npos) << collected.out;
  // A profiled point's trace lies there too (timing.profile_steps): left out unread.
  write_text(out() + "/model-tiny-bert__train.batch_size-4.trace.json", "{\"traceEvents\": []}");
  const auto with_trace = run_tbench("report " + out() + "/*.json");
  EXPECT_EQ(with_trace.exit_code, 0) << with_trace.err;
  EXPECT_NE(with_trace.err.find("trace.json is a profiled run's trace (timing.profile_steps), not a result: left out"),
            std::string::npos) << with_trace.err;
  const auto state_only = run_tbench("report " + out() + "/sweep.json");
  EXPECT_EQ(state_only.exit_code, 2);
  EXPECT_NE(state_only.err.find("no results among the files given"), std::string::npos) << state_only.err;
  EXPECT_EQ(run_tbench("compare " + out() + "/sweep.json " + s["points"][0]["result"].get<std::string>()).exit_code, 2);
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
  // It has no cell in the table: it is named beside it.
  EXPECT_NE(r.err.find("sweep: point 1 (train.lr-1e30) failed: "), std::string::npos) << r.err;
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

// Each array task rewrites the state file: with the other points as their result files stand, so
// that the last task's is the whole sweep's (it said "not selected" for every other point).
TEST_F(SweepCli, SingleArrayTaskRunsOnePoint) {
  const std::string sweep = "sweep " + spec() + " --grid train.batch_size=4,8 --resume --out-dir " + out();
  const auto r = run_tbench(sweep + " --point 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(state()["points"][0]["status"], "pending");
  EXPECT_EQ(state()["points"][1]["status"], "completed");
  const auto first = run_tbench(sweep + " --point 0");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(state()["points"][0]["status"], "completed");
  EXPECT_EQ(state()["points"][1]["status"], "completed") << "the other task's point, as its result stands";
  EXPECT_NE(first.out.find("train.batch_size=8"), std::string::npos) << "its table holds both: " << first.out;
  EXPECT_EQ(run_tbench(sweep + " --point 5").exit_code, 2);
  // The base edited before a re-submit: the other point's result ran the old spec, so it is no
  // point of this sweep yet, and stays out of the table.
  const auto edited = run_tbench("sweep " + spec() + " --grid train.batch_size=4,8 --force --set data.seed=99 --out-dir " +
                                 out() + " --point 0");
  ASSERT_EQ(edited.exit_code, 0) << edited.err;
  EXPECT_EQ(state()["points"][1]["status"], "pending");
  EXPECT_EQ(edited.out.find("train.batch_size=8"), std::string::npos) << edited.out;
}

// A point that failed on bad data wrote no result, so every other array task called it pending
// (and --resume's table gave no hint why it stayed empty). The sweep's end line in its log says
// it failed, with the spec it ran: a failure of an earlier spec is no failure of this one.
TEST_F(SweepCli, AnArrayTaskSeesAnotherTasksPointThatFailedWithoutAResult) {
  const std::string good = dir.write("good.jsonl", "{\"input_ids\": [2, 40, 41, 3], \"label\": 0}\n"
                                                   "{\"input_ids\": [2, 42, 3], \"label\": 1}\n");
  const std::string bad = dir.write("bad.jsonl", "{\"input_ids\": [2, 40, 41, 3], \"label\": 0}\nnot json\n");
  const std::string sweep = "sweep " + spec() + " --set data.source=tokenized --set data.num_samples=null --set train.batch_size=2" +
                            " --grid data.path=" + good + "," + bad + " --out-dir " + out();
  const auto failed = run_tbench(sweep + " --resume --point 1");
  ASSERT_EQ(failed.exit_code, 4) << failed.err;
  const std::string log = testing::read_text(out() + "/" + state()["points"][1]["id"].get<std::string>() + ".log");
  EXPECT_NE(log.find("tbench sweep: point ended failed, exit code 2, spec "), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(state()["points"][1]["result"].get<std::string>()));

  const auto other = run_tbench(sweep + " --resume --point 0");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(state()["points"][0]["status"], "completed");
  EXPECT_EQ(state()["points"][1]["status"], "failed") << state().dump(2);
  EXPECT_EQ(state()["points"][1]["exit_code"], 2);
  EXPECT_NE(state()["points"][1]["reason"].get<std::string>().find("bad.jsonl:2"), std::string::npos) << state().dump(2);
  EXPECT_NE(other.err.find("failed: "), std::string::npos) << other.err;

  // Point 0 run again (--force) on data gone bad: it fails before writing, so its earlier result of
  // the same spec stays; its log is newer, and the other task reads the failure, not the result.
  write_text(good, "not json either\n");
  EXPECT_EQ(run_tbench(sweep + " --force --point 0").exit_code, 4);
  EXPECT_EQ(run_tbench(sweep + " --resume --point 1").exit_code, 4);
  EXPECT_EQ(state()["points"][0]["status"], "failed") << state().dump(2);
  EXPECT_NE(state()["points"][0]["reason"].get<std::string>().find("good.jsonl:1"), std::string::npos) << state().dump(2);
  write_text(good, "{\"input_ids\": [2, 40, 41, 3], \"label\": 0}\n{\"input_ids\": [2, 42, 3], \"label\": 1}\n");
  ASSERT_EQ(run_tbench(sweep + " --force --point 0").exit_code, 0);

  // Another spec now (a --set changed before a re-submit): that failure is not this sweep's point.
  const auto edited = run_tbench(sweep + " --set train.seed=99 --force --point 0");
  ASSERT_EQ(edited.exit_code, 0) << edited.err;
  EXPECT_EQ(state()["points"][1]["status"], "pending") << state().dump(2);
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
  EXPECT_NE(repeat.err.find("sweep.repeat: expected an integer from 1 to 100000"), std::string::npos) << repeat.err;

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

// From an audit: values written two ways ran one setting twice (averaged as repeats with no
// spread), a second --grid of a key dropped the first, an axis of a field the sweep sets was
// overridden unseen, an out-dir placeholder split the points' files from the sweep's, and a
// product of a million points ran out of memory (exit 1). Each is exit 2 before anything runs.
TEST_F(SweepCli, AxesThatCannotMeanWhatTheySayAreRefused) {
  const std::string base = "sweep " + spec() + " --dry-run";
  const auto expect_refused = [&](const std::string& args, const std::string& message) {
    const bool own_folder = args.find("--out-dir") != std::string::npos;
    const auto r = run_tbench(base + " " + args + (own_folder ? "" : " --out-dir " + out()));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  };
  expect_refused("--grid model=tiny-bert," TBENCH_SOURCE_DIR "/models/tiny-bert.json", "run one setting");
  expect_refused("--grid train.seed=2,02", "points 0 (train.seed-2) and 1 (train.seed-02) run one setting");
  expect_refused("--grid train.seed=1 --grid train.seed=2", "train.seed is already an axis");
  expect_refused("--grid output=a.json,b.json", "the sweep sets output itself");
  expect_refused("--grid name=a,b", "the sweep sets name itself");
  expect_refused("--grid sweep.repeat=2,3", "the sweep sets sweep.repeat itself");
  expect_refused("--set output=x.json --grid train.seed=1,2", "--set output=x.json: the sweep sets output itself");
  expect_refused("--grid train.seed=1,2 --out-dir '" + dir.file("o/{host}") + "'", "holds a placeholder");
  std::string seeds = "0";
  for (int i = 1; i < 400; ++i) seeds += "," + std::to_string(i);
  expect_refused("--grid train.seed=" + seeds + " --grid data.seed=" + seeds, "more than 100000 points");
  expect_refused("--grid train.seed=1,2 --repeat 50001", "more than 100000 points");
  expect_refused("--repeat 1000001", "--repeat: Value 1000001 not in range");
  const auto both = run_tbench("sweep " + spec() + " --resume --force --out-dir " + out());
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("--resume excludes --force"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(out()));
  // Repeats of one setting are points of one setting, and a --set name names the sweep.
  EXPECT_EQ(run_tbench(base + " --grid train.seed=1,2 --repeat 2 --set name=mine --out-dir " + out()).exit_code, 0);
}

// From an audit: a base spec in the output folder, named as the sweep's state file or as a
// point's result, was overwritten (with no --force); a folder the sweep cannot write in started a
// point and ended exit 4 after it.
TEST_F(SweepCli, ItsFilesNeverOverwriteItsInputsAndAnUnwritableFolderRunsNothing) {
  std::filesystem::create_directories(out());
  const std::string text = testing::read_text(spec());
  const std::string as_state = out() + "/sweep.json";
  write_text(as_state, text);
  const auto state_file = run_tbench("sweep " + as_state + " --grid train.seed=1,2 --out-dir " + out());
  EXPECT_EQ(state_file.exit_code, 2) << state_file.err;
  EXPECT_NE(state_file.err.find("the sweep would overwrite " + as_state + ", a file it reads"), std::string::npos)
      << state_file.err;
  const std::string as_point = out() + "/base.json";  // no axes: the one point's id is "base"
  write_text(as_point, text);
  const auto point = run_tbench("sweep " + as_point + " --force --out-dir " + out());
  EXPECT_EQ(point.exit_code, 2) << point.err;
  EXPECT_EQ(testing::read_text(as_state), text);
  EXPECT_EQ(testing::read_text(as_point), text);

  const auto unwritable = run_tbench("sweep " + spec() + " --grid train.seed=1,2 --out-dir /proc/self");
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.err;
  EXPECT_NE(unwritable.err.find("--out-dir: cannot write the sweep's files in '/proc/self'"), std::string::npos)
      << unwritable.err;
  EXPECT_EQ(unwritable.err.find("sweep point"), std::string::npos) << "no point ran: " << unwritable.err;
}

// A point id past a file name's 255 bytes failed (exit 1, "File name too long") after --dry-run
// had listed it: a long one now ends in a hash of the whole, the same on every call.
TEST_F(SweepCli, ALongValueGivesAShortenedIdThatStaysTheSame) {
  const std::string long_value(300, 'x');
  const std::string sweep = "sweep " + spec() + " --grid data.text_column=" + long_value + ",y --out-dir " + out();
  const auto listed = run_tbench(sweep + " --dry-run --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const std::string id = nlohmann::json::parse(listed.out)["points"][0]["id"];
  EXPECT_EQ(id.size(), 180u) << id;
  EXPECT_EQ(id.rfind("data.text_column-xxx", 0), 0u) << id;
  EXPECT_EQ(id, nlohmann::json::parse(run_tbench(sweep + " --dry-run --json").out)["points"][0]["id"]);
  const auto r = run_tbench(sweep + " --point 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out() + "/" + id + ".json"));
  EXPECT_TRUE(std::filesystem::exists(out() + "/" + id + ".iterations.jsonl"));
}

// A completed result that `report` cannot read (here its iterations cut away) was skipped by
// --resume, and then the table's load failed the whole sweep (exit 2) after the other points ran.
// It runs again now. Results of no point in the folder are warned of.
TEST_F(SweepCli, ResumeRunsAnUnreadableResultAgainAndWarnsOfStrayResults) {
  const std::string sweep = "sweep " + spec() + " --grid train.seed=1,2 --out-dir " + out();
  ASSERT_EQ(run_tbench(sweep).exit_code, 0);
  const std::string first = out() + "/train.seed-1.json";
  auto cut = testing::read_json(first);
  cut.erase("iterations");
  write_text(first, cut.dump());
  write_text(out() + "/old-run.json", "{}");
  const auto r = run_tbench(sweep + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("point train.seed-1: its result cannot be read, so it runs again"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 .json file(s) of no point of this sweep (old-run.json)"), std::string::npos) << r.err;
  EXPECT_EQ(state()["points"][0]["status"], "completed");
  EXPECT_EQ(state()["points"][1]["status"], "skipped");
  EXPECT_TRUE(testing::read_json(first).contains("iterations"));
}

// A run too short to analyse (every step warm-up) is a finished point all the same: --resume keeps
// it (running it again would change nothing), and the table leaves it out, saying why.
TEST_F(SweepCli, APointTooShortToAnalyseIsFinishedAndLeftOutOfTheTable) {
  const std::string sweep = "sweep " + spec() + " --set timing.warmup_steps=2 --grid train.max_steps=2,4 --out-dir " + out();
  const auto r = run_tbench(sweep);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("point 0 (train.max_steps-2) left out of the table"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("train.max_steps=4"), std::string::npos) << r.out;
  const auto resumed = run_tbench(sweep + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(state()["points"][0]["status"], "skipped") << resumed.err;
  EXPECT_EQ(resumed.err.find("runs again"), std::string::npos) << resumed.err;
}

}  // namespace
}  // namespace tbench
