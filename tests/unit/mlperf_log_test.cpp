// timing.mllog: lines as MLPerf's logger writes them, and every interval of a run started and
// stopped in order, however the run ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "support/cli.hpp"
#include "tbench/errors.hpp"
#include "tbench/results/mlperf_log.hpp"

namespace tbench {
namespace {

using nlohmann::json;

using testing::read_mllog;

std::vector<std::string> keys_of(const std::vector<json>& events) {
  std::vector<std::string> keys;
  for (const auto& e : events) keys.push_back(e["key"]);
  return keys;
}

MllogRunFacts facts() {
  MllogRunFacts f;
  f.model = "tiny-bert";
  f.seed = 7;
  f.global_batch_size = 16;
  f.gradient_accumulation_steps = 2;
  f.max_sequence_length = 16;
  f.base_learning_rate = 1e-3;
  f.train_samples = 32;
  f.world_size = 1;
  return f;
}

IterationRecord step(int64_t global_step, int64_t samples) {
  IterationRecord r;
  r.global_step = global_step;
  r.samples = samples;
  return r;
}

// mllog's encoding: its six fields in its order, time_ms in whole milliseconds, and the JSON of
// Python's json.dumps. The expected lines are what
//   ":::MLLOG " + json.dumps({"namespace": "", "time_ms": 5, "event_type": "INTERVAL_END",
//                             "key": "epoch_stop", "value": None, "metadata": {...}})
// prints in Python 3 for the same dicts (spaces after ',' and ':' at every depth, keys in the
// order given, non-ASCII as \uXXXX, NaN and Infinity bare).
TEST(Mllog, ALineIsWhatMlperfsLoggerWrites) {
  EXPECT_EQ(mllog_line(1593745543219, MllogEvent::point_in_time, "submission_benchmark", "bert",
                       nlohmann::ordered_json::object()),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1593745543219, \"event_type\": \"POINT_IN_TIME\", "
            "\"key\": \"submission_benchmark\", \"value\": \"bert\", \"metadata\": {}}");
  EXPECT_EQ(mllog_line(5, MllogEvent::interval_end, "epoch_stop", nullptr,
                       {{"epoch_num", 2}, {"samples_count", 64}, {"complete", false}}),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 5, \"event_type\": \"INTERVAL_END\", \"key\": \"epoch_stop\", "
            "\"value\": null, \"metadata\": {\"epoch_num\": 2, \"samples_count\": 64, \"complete\": false}}");
  EXPECT_EQ(mllog_line(7, MllogEvent::point_in_time, "tracked_stats",
                       {{"throughput", 1.5e-05}, {"train_loss", std::nan("")}, {"list", {1, 2.5, "x"}}},
                       {{"inf", std::numeric_limits<double>::infinity()}, {"neg", -std::numeric_limits<double>::infinity()}}),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 7, \"event_type\": \"POINT_IN_TIME\", \"key\": \"tracked_stats\", "
            "\"value\": {\"throughput\": 1.5e-05, \"train_loss\": NaN, \"list\": [1, 2.5, \"x\"]}, "
            "\"metadata\": {\"inf\": Infinity, \"neg\": -Infinity}}");
  // Floats as Python's repr: positional from 1e-4 to below 1e16, the shortest digits that read back.
  const auto value_text = [](double x) {
    const std::string line = mllog_line(0, MllogEvent::point_in_time, "k", x, nlohmann::ordered_json::object());
    const std::string from = "\"value\": ";
    const std::size_t at = line.find(from) + from.size();
    return line.substr(at, line.find(", \"metadata\"") - at);
  };
  const std::vector<std::pair<double, std::string>> floats = {
      {0.0, "0.0"},         {-0.0, "-0.0"},          {100.0, "100.0"},
      {0.1, "0.1"},         {1.0 / 3, "0.3333333333333333"}, {0.0001, "0.0001"},
      {1e-05, "1e-05"},     {-1.5e-05, "-1.5e-05"},  {1e15, "1000000000000000.0"},
      {1.5e15, "1500000000000000.0"}, {1e16, "1e+16"}, {1.2345e22, "1.2345e+22"},
      {5e-324, "5e-324"},   {1.7976931348623157e308, "1.7976931348623157e+308"}, {2e-7, "2e-07"},
      {123456.789, "123456.789"}};
  for (const auto& [x, python] : floats) EXPECT_EQ(value_text(x), python) << x;
  // Non-ASCII as json.dumps escapes it (ensure_ascii); bytes that are not UTF-8 (an OS error's
  // text, a path) become U+FFFD instead of failing the line, and with it the run's end.
  EXPECT_EQ(mllog_line(9, MllogEvent::interval_end, "run_stop", nullptr,
                       {{"tbench_error", "caf\xc3\xa9 \xff/\x01"}}),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 9, \"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", "
            "\"value\": null, \"metadata\": {\"tbench_error\": \"caf\\u00e9 \\ufffd/\\u0001\"}}");
  EXPECT_NE(mllog_line(5, MllogEvent::interval_start, "run_start", nullptr, json::object()).find("\"INTERVAL_START\""),
            std::string::npos);
}

// Every INTERVAL_START has its INTERVAL_END with the same key base, nested as MLPerf nests them.
void expect_intervals_close(const std::vector<json>& events) {
  std::vector<std::string> open;
  for (const auto& e : events) {
    const std::string key = e["key"];
    if (e["event_type"] == "INTERVAL_START") {
      open.push_back(key.substr(0, key.rfind('_')));
    } else if (e["event_type"] == "INTERVAL_END") {
      ASSERT_FALSE(open.empty()) << key;
      EXPECT_EQ(open.back(), key.substr(0, key.rfind('_'))) << key;
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty()) << ::testing::PrintToString(open);
}

TEST(Mllog, ACompletedRunIsInitThenRunWithABlockPerEpoch) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  const auto started = std::chrono::system_clock::now() - std::chrono::seconds(3);
  {
    MllogStream log(path, started, facts());
    // Written as they happen: init and run_start are on disk before the first epoch.
    EXPECT_EQ(keys_of(read_mllog(path)).back(), "run_start");
    for (int64_t epoch : {1, 2}) {
      log.on_epoch_start(epoch, 2, 2);
      log.on_iteration(step(2 * epoch - 1, 16));
      log.on_iteration(step(2 * epoch, 16));
      EpochRecord record;
      record.epoch = epoch;
      record.samples_per_s = 100;
      record.loss = 0.5;
      if (epoch == 2) {
        record.eval_samples = 8;
        record.eval_accuracy = 0.75;
        record.eval_loss = 0.6;
        record.eval_seconds = 0.001;
      }
      log.on_epoch_end(record);
    }
    log.end_training();
    log.finish(RunStatus::completed, "");
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  const auto keys = keys_of(events);
  ASSERT_GE(keys.size(), 3u);
  EXPECT_EQ(keys.front(), "init_start");
  EXPECT_EQ(events.front()["time_ms"], unix_ms(started));
  const std::vector<std::string> tail = {"run_start",   "block_start",  "epoch_start", "epoch_stop",   "tracked_stats",
                                         "block_stop",  "block_start",  "epoch_start", "epoch_stop",   "tracked_stats",
                                         "eval_start",  "eval_stop",    "eval_accuracy", "block_stop", "trained_samples",
                                         "run_stop"};
  ASSERT_GE(keys.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(keys.end() - static_cast<long>(tail.size()), keys.end()), tail);
  std::map<std::string, json> value;
  for (const auto& e : events) {
    EXPECT_EQ(e["namespace"], "");
    value[e["key"]] = e["value"];
  }
  EXPECT_EQ(value["global_batch_size"], 16);
  EXPECT_EQ(value["gradient_accumulation_steps"], 2);
  EXPECT_EQ(value["opt_name"], "adamw");
  EXPECT_EQ(value["submission_benchmark"], "tiny-bert");
  EXPECT_EQ(value["trained_samples"], 64);
  EXPECT_DOUBLE_EQ(value["eval_accuracy"].get<double>(), 0.75);
  EXPECT_EQ(events.back()["metadata"]["status"], "success");
  // Time runs forward, line by line.
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_GE(events[i]["time_ms"].get<int64_t>(), events[i - 1]["time_ms"].get<int64_t>()) << keys[i];
  }
  const json* last_stats = nullptr;  // the second epoch's
  for (const auto& e : events) {
    if (e["key"] == "tracked_stats") last_stats = &e;
  }
  ASSERT_NE(last_stats, nullptr);
  EXPECT_DOUBLE_EQ((*last_stats)["value"]["throughput"].get<double>(), 100);
  EXPECT_DOUBLE_EQ((*last_stats)["value"]["train_loss"].get<double>(), 0.5);
  EXPECT_EQ((*last_stats)["metadata"]["epoch_num"], 2);
  EXPECT_EQ((*last_stats)["metadata"]["step"], 4);
  EXPECT_EQ((*last_stats)["metadata"]["samples_count"], 64);
}

// A run stopped before its epoch's first step has no epoch record: the epoch and its block
// still end, not complete, and the run is aborted, with tbench's own status and error.
// A masked-LM evaluation that masked no held-out token scored nothing: its interval is logged,
// and no accuracy (its loss and accuracy are null in the result).
TEST(Mllog, AnEvaluationThatScoredNothingLogsNoAccuracy) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  {
    MllogStream log(path, std::chrono::system_clock::now(), facts());
    log.on_epoch_start(1, 2, 2);
    log.on_iteration(step(1, 16));
    EpochRecord record;
    record.epoch = 1;
    record.eval_samples = 8;
    log.on_epoch_end(record);
    log.end_training();
    log.finish(RunStatus::completed, "");
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  const auto keys = keys_of(events);
  EXPECT_NE(std::find(keys.begin(), keys.end(), "eval_stop"), keys.end());
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "eval_accuracy"), keys.end());
}

TEST(Mllog, AStoppedRunClosesItsOpenEpochAndIsAborted) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  MllogRunFacts two_ranks = facts();
  two_ranks.world_size = 2;
  {
    MllogStream log(path, std::chrono::system_clock::now(), two_ranks);
    log.on_epoch_start(1, 3, 2);
    log.on_iteration(step(1, 8));  // rank 0's 8 samples: 16 over both ranks
    log.finish(RunStatus::failed, "epoch 1 step 2: out of memory");
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  const auto keys = keys_of(events);
  const std::vector<std::string> tail = {"epoch_stop", "block_stop", "trained_samples", "run_stop"};
  EXPECT_EQ(std::vector<std::string>(keys.end() - 4, keys.end()), tail);
  EXPECT_EQ(events[keys.size() - 4]["metadata"]["complete"], false);
  EXPECT_EQ(events[keys.size() - 2]["value"], 16);
  const json& stop = events.back()["metadata"];
  EXPECT_EQ(stop["status"], "aborted");
  EXPECT_EQ(stop["tbench_status"], "failed");
  EXPECT_EQ(stop["tbench_error"], "epoch 1 step 2: out of memory");
}

// The status the result ends with, known after the training (a peer's failure, a failed save), is
// run_stop's; its time is the training's end, not the result's.
TEST(Mllog, RunStopCarriesTheResultsFinalStatusAtTheTrainingsEnd) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  int64_t ended_before = 0, ended_after = 0;
  {
    MllogStream log(path, std::chrono::system_clock::now(), facts());
    log.on_epoch_start(1, 1, 1);
    log.on_iteration(step(1, 16));
    ended_before = unix_ms(std::chrono::system_clock::now());
    log.end_training();  // the epoch a stop cut short ends here
    ended_after = unix_ms(std::chrono::system_clock::now());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the ranks' reports, the saving
    log.finish(RunStatus::failed, "saving weights failed: disk full");
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  const auto keys = keys_of(events);
  const std::vector<std::string> tail = {"epoch_stop", "block_stop", "trained_samples", "run_stop"};
  ASSERT_GE(keys.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(keys.end() - 4, keys.end()), tail);
  for (std::size_t i = keys.size() - 4; i < keys.size(); ++i) {
    EXPECT_GE(events[i]["time_ms"].get<int64_t>(), ended_before) << keys[i];
    EXPECT_LE(events[i]["time_ms"].get<int64_t>(), ended_after) << keys[i];
  }
  EXPECT_EQ(events.back()["metadata"]["status"], "aborted");
  EXPECT_EQ(events.back()["metadata"]["tbench_error"], "saving weights failed: disk full");
}

// A log destroyed before finish() (an error escaped between the training and the result) still
// stops what it started, and says the run was aborted.
TEST(Mllog, ALogLeftUnfinishedEndsAborted) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  {
    MllogStream log(path, std::chrono::system_clock::now(), facts());
    log.on_epoch_start(1, 2, 4);
    log.on_iteration(step(1, 16));
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  EXPECT_EQ(events.back()["key"], "run_stop");
  EXPECT_EQ(events.back()["metadata"]["status"], "aborted");
  EXPECT_EQ(events.back()["metadata"]["tbench_status"], "failed");
  EXPECT_NE(events.back()["metadata"]["tbench_error"].get<std::string>().find("before its result was made"),
            std::string::npos);
}

// An error escaping before the result was made ends the log with its own words (abandon), once:
// a finished log is left as it is.
TEST(Mllog, AnAbandonedLogNamesTheErrorThatEndedTheRun) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.mllog");
  {
    MllogStream log(path, std::chrono::system_clock::now(), facts());
    log.on_epoch_start(1, 2, 4);
    log.on_iteration(step(1, 16));
    log.end_training();
    log.abandon("rank 1 stopped answering");
    log.abandon("a second error");
  }
  const auto events = read_mllog(path);
  expect_intervals_close(events);
  ASSERT_EQ(std::count_if(events.begin(), events.end(), [](const json& e) { return e["key"] == "run_stop"; }), 1);
  EXPECT_EQ(events.back()["key"], "run_stop");
  EXPECT_EQ(events.back()["metadata"]["status"], "aborted");
  EXPECT_EQ(events.back()["metadata"]["tbench_error"], "rank 1 stopped answering");

  const std::string finished = dir.file("f.mllog");
  {
    MllogStream log(finished, std::chrono::system_clock::now(), facts());
    log.finish(RunStatus::completed, "");
    log.abandon("too late");
  }
  EXPECT_EQ(read_mllog(finished).back()["metadata"]["status"], "success");
}

TEST(Mllog, AFileThatCannotBeOpenedIsNamed) {
  try {
    MllogStream log("/nonexistent-dir/r.mllog", std::chrono::system_clock::now(), facts());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/r.mllog: cannot open the MLPerf log"), std::string::npos)
        << e.what();
  }
}

// A log that cannot be written (here /dev/full, which refuses every write with ENOSPC) is a run
// failure naming the file, the event and the reason.
TEST(Mllog, AWriteThatFailsIsARunFailureNamingTheLog) {
  try {
    MllogStream log("/dev/full", std::chrono::system_clock::now(), facts());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::run_failed);
    EXPECT_EQ(std::string(e.what()), "/dev/full: cannot write the MLPerf log (init_start): No space left on device");
  }
}

}  // namespace
}  // namespace tbench
