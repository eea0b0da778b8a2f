#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "support/cli.hpp"
#include "support/json_schema.hpp"
#include "tbench/embedded.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/json_text.hpp"
#include "tbench/progress/progress.hpp"
#include "tbench/results/result.hpp"
#include "tbench/results/result_files.hpp"

namespace tbench {
namespace {

IterationRecord step(int64_t epoch, int64_t n, double seconds, bool warmup) {
  IterationRecord r;
  r.epoch = epoch;
  r.step = n;
  r.global_step = n;
  r.samples = 8;
  r.tokens = 8 * 16;
  r.real_tokens = 8 * 12;
  r.seconds = seconds;
  r.data_seconds = seconds / 10;
  r.loss = 0.5;
  r.warmup = warmup;
  return r;
}

TEST(Summary, ExcludesWarmupAndReportsSpread) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 5.0, true), step(1, 2, 1.0, false), step(1, 3, 2.0, false), step(1, 4, 3.0, false)};
  EpochRecord e;
  e.epoch = 1;
  e.seconds = 11.5;
  rec.epochs = {e};
  SummaryInputs in;
  in.warmup_steps = 1;
  in.steps_per_epoch = 4;
  in.train_flops_per_sample = 100;
  const auto s = to_json(summarize(rec, in));
  EXPECT_EQ(s["warmup_steps"], 1);
  EXPECT_EQ(s["timed_steps"], 3);
  EXPECT_DOUBLE_EQ(s["step_ms"]["median"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(s["step_ms"]["mean"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(s["samples_per_s"].get<double>(), 24.0 / 6.0);
  EXPECT_DOUBLE_EQ(s["train_flops_per_s"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(s["padding_efficiency"].get<double>(), 0.75);
  EXPECT_EQ(s["epoch_time"], "00:12");
  EXPECT_DOUBLE_EQ(s["projected_epoch_seconds"].get<double>(), 8.0);
  // 4 steps x (2 s +- t(2) 1 s / sqrt(3)), its low end clamped at 0 s.
  EXPECT_DOUBLE_EQ(s["projected_epoch_seconds_ci95"][0].get<double>(), 0.0);
  EXPECT_NEAR(s["projected_epoch_seconds_ci95"][1].get<double>(), 4 * (2 + 4.303 / std::sqrt(3.0)), 1e-3);
  EXPECT_EQ(s["projected_step_model"], "mean");
  EXPECT_EQ(s["scope"], "per-device");
}

// On CUDA each step records the host's time to issue it and whether the GPU had run out of queued
// work before it began; the summary gives the timed steps' spread and share (warm-up left out).
TEST(Summary, SaysHowOftenTheDeviceWaitedForTheHost) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 0.5, true), step(1, 2, 0.01, false), step(1, 3, 0.01, false), step(1, 4, 0.01, false),
                    step(1, 5, 0.01, false)};
  const double host[] = {0.4, 0.009, 0.008, 0.010, 0.002};
  const bool idle[] = {false, true, true, true, false};
  for (std::size_t i = 0; i < rec.iterations.size(); ++i) {
    rec.iterations[i].host_seconds = host[i];
    rec.iterations[i].device_idle_at_start = idle[i];
  }
  // A second epoch's first step follows the first epoch's drain: idle, whoever sets the pace, so
  // left out of the share (not of the host's times).
  rec.iterations.push_back(step(2, 1, 0.01, false));
  rec.iterations.back().host_seconds = 0.009;
  rec.iterations.back().device_idle_at_start = true;
  SummaryInputs in;
  in.steps_per_epoch = 5;
  const auto s = to_json(summarize(rec, in));
  EXPECT_DOUBLE_EQ(s["device_idle_at_start_fraction"].get<double>(), 0.75);
  EXPECT_EQ(s["host_ms"]["count"], 5);
  EXPECT_NEAR(s["host_ms"]["median"].get<double>(), 9.0, 1e-9);
  EXPECT_NEAR(s["host_ms"]["max"].get<double>(), 10.0, 1e-9);
  rec.iterations[2].device_idle_at_start = false;  // steps 2-5 of epoch 1: 2 of 4 idle now
  EXPECT_DOUBLE_EQ(to_json(summarize(rec, in))["device_idle_at_start_fraction"].get<double>(), 0.5);
  // The records carry both through their JSON line (the iterations file) and back.
  const nlohmann::json line = rec.iterations[1];
  EXPECT_DOUBLE_EQ(line["host_seconds"].get<double>(), 0.009);
  EXPECT_TRUE(line["device_idle_at_start"].get<bool>());
  const auto back = line.get<IterationRecord>();
  EXPECT_DOUBLE_EQ(back.host_seconds.value(), 0.009);
  EXPECT_TRUE(back.device_idle_at_start.value());

  // A step without a host time (CPU) leaves no spread; CPU runs have neither figure.
  rec.iterations[3].host_seconds.reset();
  EXPECT_TRUE(to_json(summarize(rec, in))["host_ms"].is_null());
  for (auto& r : rec.iterations) r.device_idle_at_start.reset();
  EXPECT_TRUE(to_json(summarize(rec, in))["device_idle_at_start_fraction"].is_null());
}

// With dynamic padding the timed steps' work varies and the planned epochs do more on average than
// they did: the projected epoch is a line in the steps' FLOPs read at the planned mean (1.8 GFLOP:
// 0.1 s + 0.2 s per GFLOP, 0.46 s a step), not their mean (0.4 s). Without a planned figure, or
// with steps that did not count their FLOPs, the mean.
TEST(Summary, ProjectsTheEpochAtThePlannedWorkWhereTheStepsWorkVaried) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 5.0, true)};
  for (int64_t n = 2; n <= 9; ++n) {
    IterationRecord r = step(1, n, 0.0, false);
    r.train_flops = n % 2 == 0 ? 1e9 : 2e9;
    r.seconds = 0.1 + 2e-10 * r.train_flops + ((n / 2) % 2 == 0 ? 0.01 : -0.01);  // noise, balanced in each work
    rec.iterations.push_back(r);
  }
  rec.iterations[0].train_flops = 1e9;
  SummaryInputs in;
  in.warmup_steps = 1;
  in.steps_per_epoch = 10;
  in.expected_step_train_flops = 1.8e9;
  const auto s = to_json(summarize(rec, in));
  EXPECT_EQ(s["projected_step_model"], "flops line");
  EXPECT_NEAR(s["projected_epoch_seconds"].get<double>(), 10 * 0.46, 1e-9);
  // The interval is the line's mean at 1.8 GFLOP (in ms), times the epoch's 10 steps.
  std::vector<double> flops, ms;
  for (const auto& it : rec.iterations) {
    if (it.warmup) continue;
    flops.push_back(it.train_flops);
    ms.push_back(it.seconds * 1e3);
  }
  const auto line_ci = fit_line(flops, ms)->mean_interval_95_at(1.8e9);
  ASSERT_TRUE(line_ci);
  const auto& ci = s["projected_epoch_seconds_ci95"];
  EXPECT_NEAR(ci[0].get<double>(), 10 * line_ci->low / 1e3, 1e-9);
  EXPECT_NEAR(ci[1].get<double>(), 10 * line_ci->high / 1e3, 1e-9);
  EXPECT_LT(ci[0].get<double>(), 4.6);
  EXPECT_GT(ci[1].get<double>(), 4.6);
  in.expected_step_train_flops.reset();
  const auto unplanned = to_json(summarize(rec, in));
  EXPECT_EQ(unplanned["projected_step_model"], "mean");
  EXPECT_NEAR(unplanned["projected_epoch_seconds"].get<double>(), 10 * 0.4, 1e-9);
  in.expected_step_train_flops = 1.8e9;
  rec.iterations[3].train_flops = 0;  // a step without its own count
  EXPECT_EQ(to_json(summarize(rec, in))["projected_step_model"], "mean");
}

// Steps of one shape leave no line to fit, but the epoch can still plan other work than they did: a
// partial last step under data.drop_last false. Counted as a full step, 4 timed steps of a 5-step
// epoch whose last is half projected 9.4 % long (found by review); the mean now scales to the plan.
TEST(Summary, AMeanOfAlikeStepsScalesToThePlannedWork) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 5.0, true)};
  for (int64_t n = 2; n <= 5; ++n) {
    IterationRecord r = step(1, n, n % 2 == 0 ? 0.9 : 1.1, false);
    r.train_flops = 2e9;
    rec.iterations.push_back(r);
  }
  SummaryInputs in;
  in.warmup_steps = 1;
  in.steps_per_epoch = 5;
  in.expected_step_train_flops = 1.8e9;  // 4.5 steps' work over 5 steps
  const auto s = to_json(summarize(rec, in));
  EXPECT_EQ(s["projected_step_model"], "mean, scaled to the planned work");
  EXPECT_NEAR(s["projected_epoch_seconds"].get<double>(), 5 * 1.0 * 0.9, 1e-9);
  const auto& ci = s["projected_epoch_seconds_ci95"];
  EXPECT_LT(ci[0].get<double>(), 4.5);
  EXPECT_GT(ci[1].get<double>(), 4.5);
  in.expected_step_train_flops = 2e9;  // the plan is the timed steps' work: the plain mean
  const auto same = to_json(summarize(rec, in));
  EXPECT_EQ(same["projected_step_model"], "mean");
  EXPECT_NEAR(same["projected_epoch_seconds"].get<double>(), 5.0, 1e-9);
}

TEST(Summary, NoCompleteEpochMeansNoEpochTime) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 1.0, false)};
  EpochRecord e;
  e.complete = false;
  rec.epochs = {e};
  const auto s = to_json(summarize(rec, {}));
  EXPECT_TRUE(s["epoch_seconds"].is_null());
  EXPECT_TRUE(s["epoch_time"].is_null());
  EXPECT_TRUE(s["projected_epoch_seconds_ci95"].is_null());  // one timed step: no interval
}

// The profiler's own start and stop (timing.profile_steps) is no part of an epoch: the timing
// check, the epoch's samples/s and predict left it out, but the summary's epoch time held it (an
// H200 row's epoch: 0.26 s of 2.13). And a run whose every step was warm-up has no step times: its
// spreads are null, not zeros a reader would take for measurements (both found by review).
TEST(Summary, EpochTimeLeavesOutTheProfilerAndNoTimedStepsMeansNullSpreads) {
  RunRecords rec;
  rec.iterations = {step(1, 1, 5.0, true), step(1, 2, 1.0, false), step(2, 3, 1.0, false)};
  EpochRecord first, second;
  first.epoch = 1;
  first.seconds = 6.5;
  second.epoch = 2;
  second.seconds = 4.0;
  second.profiler_seconds = 2.5;
  rec.epochs = {first, second};
  const auto s = to_json(summarize(rec, {}));
  EXPECT_DOUBLE_EQ(s["epoch_seconds"].get<double>(), (6.5 + 1.5) / 2);
  EXPECT_DOUBLE_EQ(s["timing_check"]["epoch_seconds"].get<double>(), 6.5 + 1.5);

  RunRecords warmup_only;
  warmup_only.iterations = {step(1, 1, 5.0, true)};
  warmup_only.epochs = {first};
  const auto w = to_json(summarize(warmup_only, {}));
  EXPECT_EQ(w["timed_steps"], 0);
  EXPECT_EQ(w["step_ms"]["count"], 0);
  for (const char* figure : {"median", "p10", "p90", "mean", "stdev", "min", "max"}) {
    EXPECT_TRUE(w["step_ms"][figure].is_null()) << figure;
    EXPECT_TRUE(w["data_ms"][figure].is_null()) << figure;
  }
  EXPECT_TRUE(w["samples_per_s"].is_null());
}

// A bert-base-cased fp32 run on 2 cores ran at 117 GFLOP/s against a probe that measured 87:
// an MFU of 1.35 is not a fact. Above the peak there is no MFU, and the result says why.
TEST(Utilisation, ARateAboveThePeakGivesNoMfuButAReason) {
  Summary s;
  s.train_flops_per_s = 117e9;
  set_utilisation(s, {87e9, 0, "measured: 1024^3", {87e9}}, 1);
  EXPECT_FALSE(s.mfu.has_value());
  EXPECT_NE(s.mfu_error.find("117.0 GFLOP/s"), std::string::npos) << s.mfu_error;
  EXPECT_NE(s.mfu_error.find("not an upper bound"), std::string::npos) << s.mfu_error;
  const auto j = to_json(s);
  EXPECT_TRUE(j["mfu"].is_null());
  EXPECT_EQ(j["mfu_error"], s.mfu_error);

  set_utilisation(s, {200e9, 0, "measured", {200e9}}, 1);
  ASSERT_TRUE(s.mfu.has_value());
  EXPECT_DOUBLE_EQ(*s.mfu, 117.0 / 200.0);
  EXPECT_TRUE(s.mfu_error.empty());
  EXPECT_TRUE(to_json(s)["mfu_error"].is_null());
}

// A shared CPU's speed drifts: a run whose steps outran the probe before them gets its MFU from
// the best of that probe and the one after its epochs, and keeps both.
TEST(Utilisation, TheBestOfTheProbesBeforeAndAfterIsThePeak) {
  Summary s;
  s.train_flops_per_s = 45e9;
  DevicePeak before{38e9, 0, "measured: 1024^3", {38e9}};
  EXPECT_FALSE(probe_spread(before.probes_flops_per_s).has_value());
  const DevicePeak both = with_later_probe(before, 60e9);
  EXPECT_DOUBLE_EQ(both.flops_per_s, 60e9);
  EXPECT_EQ(both.probes_flops_per_s, (std::vector<double>{38e9, 60e9}));
  EXPECT_NEAR(*probe_spread(both.probes_flops_per_s), 60.0 / 38.0 - 1.0, 1e-12);
  set_utilisation(s, both, 1);
  ASSERT_TRUE(s.mfu.has_value());
  EXPECT_DOUBLE_EQ(*s.mfu, 0.75);
  EXPECT_EQ(to_json(s)["peak_probes_flops_per_s"], nlohmann::json::array({38e9, 60e9}));

  // A slower probe after the epochs leaves the peak where it was, and the spread is the same.
  const DevicePeak slower_after = with_later_probe({60e9, 0, "measured", {60e9}}, 38e9);
  EXPECT_DOUBLE_EQ(slower_after.flops_per_s, 60e9);
  EXPECT_NEAR(*probe_spread(slower_after.probes_flops_per_s), 60.0 / 38.0 - 1.0, 1e-12);

  // A datasheet's peak is no probe.
  set_utilisation(s, {100e9, 0, "datasheet", {}}, 1);
  EXPECT_TRUE(to_json(s)["peak_probes_flops_per_s"].is_null());
}

// Data-parallel: the global FLOP rate is over every device's peak, not one device's.
TEST(Utilisation, DataParallelMfuIsOverEveryDevicesPeak) {
  Summary s;
  s.samples_per_s = 10.0;
  s.train_flops_per_s = 60e9;  // rank 0's own rate
  DistSection dist;
  dist.world_size = 2;
  RankReport r0, r1;
  r1.rank = 1;
  r0.step_ms.count = r1.step_ms.count = 4;
  r0.step_ms.median = 100;
  r1.step_ms.median = 110;
  dist.ranks = {r0, r1};
  make_global(s, dist);
  set_utilisation(s, {100e9, 0, "datasheet", {}}, dist.world_size);
  EXPECT_EQ(s.scope, "global");
  EXPECT_DOUBLE_EQ(*s.train_flops_per_s, 120e9);
  EXPECT_DOUBLE_EQ(*s.per_device_train_flops_per_s, 60e9);
  EXPECT_DOUBLE_EQ(*s.samples_per_s, 20.0);
  EXPECT_DOUBLE_EQ(*s.mfu, 0.6);  // not 1.2: the peak of two devices is twice one's
  EXPECT_DOUBLE_EQ(*s.rank_step_spread, 0.1);
  const auto j = to_json(s);
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(),
                   j["train_flops_per_s"].get<double>() / (j["peak_flops_per_s"].get<double>() * j["world_size"].get<double>()));
}

// Ranks' batches can differ in tokens and work (bucket_by_length hands rank 0 each step's longest
// sample): the global rates are the ranks' own summed, not rank 0's times the world (found by
// review). Where a rank reported none, rank 0's stands for it.
TEST(Utilisation, GlobalRatesSumTheRanksOwn) {
  Summary s;
  s.samples_per_s = 10.0;
  s.tokens_per_s = 1000.0;
  s.real_tokens_per_s = 800.0;
  s.train_flops_per_s = 60e9;
  DistSection dist;
  dist.world_size = 2;
  RankReport r0, r1;
  r1.rank = 1;
  r0.samples_per_s = 10.0;
  r1.samples_per_s = 9.0;
  r0.tokens_per_s = 1000.0;
  r1.tokens_per_s = 600.0;
  r0.real_tokens_per_s = 800.0;
  r1.real_tokens_per_s = 500.0;
  r0.train_flops_per_s = 60e9;
  r1.train_flops_per_s = 40e9;
  dist.ranks = {r0, r1};
  Summary summed = s;
  make_global(summed, dist);
  EXPECT_DOUBLE_EQ(*summed.samples_per_s, 20.0);  // the global batch over rank 0's step time
  EXPECT_DOUBLE_EQ(*summed.tokens_per_s, 1600.0);
  EXPECT_DOUBLE_EQ(*summed.real_tokens_per_s, 1300.0);
  EXPECT_DOUBLE_EQ(*summed.train_flops_per_s, 100e9);
  EXPECT_DOUBLE_EQ(*summed.per_device_train_flops_per_s, 60e9);
  // Every rank's real tokens over their padded ones: rank 0's own share (0.8) was kept under
  // scope "global" (found by an audit).
  ASSERT_TRUE(summed.padding_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*summed.padding_efficiency, 1300.0 / 1600.0);
  dist.ranks[1].train_flops_per_s.reset();  // a step without its own count on rank 1
  make_global(s, dist);
  EXPECT_DOUBLE_EQ(*s.train_flops_per_s, 120e9);
  EXPECT_DOUBLE_EQ(*s.tokens_per_s, 1600.0);

  // The rates travel in the rank's report; a rank with no timed step sends null spreads.
  RankReport idle;
  idle.rank = 1;
  idle.tokens_per_s = 5.0;
  const auto back = parse_rank_report(to_json(idle).dump());
  ASSERT_TRUE(back.has_value()) << to_json(idle).dump();
  EXPECT_DOUBLE_EQ(*back->tokens_per_s, 5.0);
  EXPECT_FALSE(back->train_flops_per_s.has_value());
  EXPECT_EQ(back->step_ms.count, 0);
}

TEST(Utilisation, AFailedPeerFailsTheGlobalSummary) {
  Summary s;
  DistSection dist;
  dist.world_size = 2;
  RankReport r0, r1;
  r1.rank = 1;
  r1.status = RunStatus::failed;
  r1.error = "out of memory";
  dist.ranks = {r0, r1};
  make_global(s, dist);
  EXPECT_EQ(s.status, RunStatus::failed);
  EXPECT_EQ(s.error, "rank 1: out of memory");
}

// An announced failure is the run's error; the errors that followed from it stay in their ranks'
// reports (and in the JSON, under dist.first_failure).
TEST(Utilisation, TheFirstAnnouncedFailureIsTheRunsError) {
  Summary s;
  s.status = RunStatus::failed;
  s.error = "epoch 1 step 5: rank 0: stopped during a gradient all-reduce because rank 2 failed: disk full";
  DistSection dist;
  dist.world_size = 3;
  RankReport r0, r1, r2;
  r0.status = RunStatus::failed;
  r0.error = s.error;
  r1.rank = 1;
  r1.status = RunStatus::failed;
  r1.error = "epoch 1 step 5: rank 1: stopped during a gradient all-reduce because rank 2 failed: disk full";
  r2.rank = 2;
  r2.status = RunStatus::failed;
  r2.error = "disk full";
  dist.ranks = {r0, r1, r2};
  dist.first_failure = RankFailure{2, "disk full"};
  make_global(s, dist);
  EXPECT_EQ(s.status, RunStatus::failed);
  EXPECT_EQ(s.error, "rank 2 failed: disk full");
  Result result;
  result.dist = dist;
  EXPECT_EQ(to_json(result)["dist"]["first_failure"], nlohmann::json({{"rank", 2}, {"error", "disk full"}}));
  result.dist->first_failure.reset();
  EXPECT_FALSE(to_json(result)["dist"].contains("first_failure"));
}

TEST(RankReports, RoundTripThroughTheStoreText) {
  RankReport r;
  r.rank = 3;
  r.host = "node7";
  r.device = "cuda:1";
  r.status = RunStatus::interrupted;
  r.step_ms.count = 5;
  r.step_ms.median = 12.5;
  r.comm_share = 0.25;
  const auto back = parse_rank_report(to_json(r).dump());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->host, "node7");
  EXPECT_EQ(back->status, RunStatus::interrupted);
  EXPECT_DOUBLE_EQ(back->step_ms.median, 12.5);
  EXPECT_DOUBLE_EQ(*back->comm_share, 0.25);
  EXPECT_FALSE(back->samples_per_s.has_value());
  EXPECT_FALSE(parse_rank_report("{\"rank\": 1").has_value());  // cut off mid-write
  // Found by fuzzing: a double where an integer belongs was converted with undefined behaviour.
  nlohmann::json wide = to_json(r);
  wide["rank"] = 1e21;
  EXPECT_FALSE(parse_rank_report(wide.dump()).has_value());
  wide["rank"] = 3;
  wide["step_ms"]["count"] = 2.5;
  EXPECT_FALSE(parse_rank_report(wide.dump()).has_value());
}

TEST(ResultFiles, IterationsFileSitsBesideTheResult) {
  EXPECT_EQ(iterations_path_for("results/a.json"), "results/a.iterations.jsonl");
  EXPECT_EQ(iterations_path_for("out"), "out.iterations.jsonl");
}

TEST(ResultFiles, AtomicWriteReplacesWholeAndLeavesNoTemporaries) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.json");
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  EXPECT_EQ(testing::read_text(path), "second");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

// A sweep tells a result its point wrote from one an earlier run left by the file's identity: an
// atomic write always puts a new file in place, however fast the writes follow each other.
TEST(ResultFiles, EveryAtomicWritePutsANewFileInPlace) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.json");
  EXPECT_FALSE(file_identity(path).exists);
  write_file_atomically(path, "first");
  const FileIdentity first = file_identity(path);
  EXPECT_TRUE(first.exists);
  EXPECT_EQ(file_identity(path), first) << "untouched";
  write_file_atomically(path, "first");  // the same bytes, at once
  EXPECT_NE(file_identity(path), first);
}

// A file that cannot be written is named as the user asked for it (the temporary file beside it
// second), and no temporary file is left behind.
TEST(ResultFiles, AnAtomicWriteThatFailsNamesTheFileAskedFor) {
  testing::ScratchDir dir;
  const std::string not_a_folder = dir.write("file", "x");
  try {
    write_file_atomically(not_a_folder + "/r.json", "{}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::run_failed);
    EXPECT_EQ(std::string(e.what()).rfind(not_a_folder + "/r.json: cannot create its temporary file", 0), 0u)
        << e.what();
  }
  const std::string folder = dir.file("taken");
  std::filesystem::create_directories(folder + "/inside");  // a folder where the file would go
  try {
    write_file_atomically(folder, "{}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(folder + ": cannot move into place (through " + folder + ".tmp.", 0), 0u)
        << e.what();
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1) << "a temporary file was left";
}

TEST(ResultFiles, ExistingResultIsNotOverwrittenWithoutForce) {
  testing::ScratchDir dir;
  const std::string path = dir.write("r.json", "{}");
  try {
    ensure_writable(path, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::result_exists);
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos);
  }
  EXPECT_NO_THROW(ensure_writable(path, true));
  EXPECT_NO_THROW(ensure_writable(dir.file("deeper/new/r.json"), false));
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("deeper/new")));
}

TEST(ResultFiles, StreamWritesOneJsonLinePerIterationAsItHappens) {
  testing::ScratchDir dir;
  const std::string path = dir.file("r.iterations.jsonl");
  IterationStream stream(path);
  stream.on_iteration(step(1, 1, 0.5, true));
  // Flushed already, before the stream closes.
  const auto text = testing::read_text(path);
  const auto parsed = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(parsed["global_step"], 1);
  EXPECT_EQ(parsed.get<IterationRecord>().seconds, 0.5);
}

// A dataset's label or a spec value with a bad UTF-8 byte reaches the result: writing it must not
// throw (nlohmann's dump() does) after the whole run; the byte becomes U+FFFD.
TEST(ResultFiles, InvalidUtf8InAStringIsReplacedNotAnError) {
  const nlohmann::json labels = {{"label_names", {std::string("ok"), std::string("bad\xff\xfe")}}};
  EXPECT_THROW(labels.dump(), nlohmann::json::type_error);
  const std::string text = json_text(labels);
  EXPECT_EQ(nlohmann::json::parse(text)["label_names"][1], "bad\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(json_text(labels, 2), nlohmann::json::parse(text).dump(2));
}

TEST(ResultSchema, EmbeddedSchemaIsTheRepositoryFile) {
  EXPECT_EQ(nlohmann::json::parse(embedded::result_schema()),
            testing::read_json(TBENCH_SOURCE_DIR "/docs/schema/result.schema.json"));
}

TEST(ResultSchema, CheckerRejectsWhatTheSchemaForbids) {
  const auto schema = nlohmann::json::parse(embedded::result_schema());
  const auto violations = testing::schema_violations(schema, {{"schema", "tbench.result/2"}});
  EXPECT_GE(violations.size(), 2u);  // wrong const and missing required keys
}

TEST(Progress, BarLooksLikeTqdm) {
  const std::string bar = format_progress_bar(1, 3, 1406, 3125, 87, 0.69);
  EXPECT_EQ(bar, "epoch 1/3  45%|████▍     | 1406/3125 [01:27<01:46, 16.2it/s, loss=0.69]");
  EXPECT_NE(format_progress_bar(2, 2, 10, 10, 5, 0.1).find("100%|██████████|"), std::string::npos);
  EXPECT_NE(format_progress_bar(1, 1, 1, 10, 4, 0.1).find("4.00s/it"), std::string::npos);
}

}  // namespace
}  // namespace tbench
