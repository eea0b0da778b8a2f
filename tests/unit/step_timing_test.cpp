// Step timing: the host timer, the in-order queue of pending steps, and the timing check that
// compares the sum of step times with the epochs' wall time.
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "tbench/train/pending_steps.hpp"
#include "tbench/results/result.hpp"
#include "tbench/timing/step_timer.hpp"

namespace tbench {
namespace {

TEST(StepTimer, HostTimerMeasuresEachStepInOrder) {
  auto timer = make_step_timer(torch::kCPU);
  EXPECT_STREQ(timer->method(), "steady_clock");
  for (int ms : {20, 5}) {
    timer->begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    timer->end();
  }
  ASSERT_EQ(timer->pending(), 2u);
  EXPECT_TRUE(timer->oldest_done());  // CPU work is done when end() is called
  const StepTime first = timer->take_oldest(), second = timer->take_oldest();
  EXPECT_GE(first.seconds, 0.019);
  EXPECT_GE(second.seconds, 0.004);
  EXPECT_LT(second.seconds, first.seconds);
  EXPECT_GT(second.ended_at, first.ended_at);
  EXPECT_GE(second.ended_at - first.ended_at, second.seconds);
  EXPECT_EQ(timer->pending(), 0u);
  EXPECT_THROW(timer->take_oldest(), std::logic_error);
}

StepOutputs outputs(float loss, float scale = -1, float inf = 0) {
  StepOutputs out;
  out.loss = torch::full({}, loss);
  if (scale > 0) {
    out.loss_scale = torch::full({1}, scale);
    out.found_inf = torch::full({1}, inf);
  }
  return out;
}

TEST(PendingSteps, CpuRecordsLeaveAtOnceWithTheirLossAndFlags) {
  PendingSteps pending(make_host_step_timer(), 4);
  IterationRecord record;
  record.global_step = 1;
  pending.begin_step();
  pending.end_step(record, outputs(0.75f));
  auto done = pending.take_finished(false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_DOUBLE_EQ(done[0].loss, 0.75);
  EXPECT_DOUBLE_EQ(done[0].loss_scale, 1.0);
  EXPECT_FALSE(done[0].skipped);
  EXPECT_GT(done[0].seconds, 0);

  record.global_step = 2;
  pending.begin_step();
  pending.end_step(record, outputs(2.5f, 32768.0f, 1.0f));  // an fp16 overflow
  done = pending.take_finished(true);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].global_step, 2);
  EXPECT_DOUBLE_EQ(done[0].loss_scale, 32768.0);
  EXPECT_TRUE(done[0].skipped);
  EXPECT_EQ(pending.size(), 0u);
}

// A timer whose steps finish only when told, like a device running behind the host.
class LaggingTimer : public StepTimer {
 public:
  const char* method() const override { return "test"; }
  void begin() override {}
  void end() override { ++ended_; }
  std::size_t pending() const override { return ended_ - taken_; }
  bool oldest_done() const override { return pending() > 0 && taken_ < finished_; }
  StepTime take_oldest() override {
    StepTime t;
    t.seconds = 0.01;
    t.ended_at = static_cast<double>(++taken_);
    return t;
  }
  std::size_t finished_ = 0;

 private:
  std::size_t ended_ = 0, taken_ = 0;
};

TEST(PendingSteps, RecordsWaitForTheirStepAndLeaveInOrder) {
  auto owned = std::make_unique<LaggingTimer>();
  LaggingTimer& timer = *owned;
  PendingSteps pending(std::move(owned), /*max_pending=*/3);
  for (int64_t step = 1; step <= 3; ++step) {
    IterationRecord record;
    record.global_step = step;
    pending.begin_step();
    pending.end_step(record, outputs(1.0f));
    EXPECT_TRUE(pending.take_finished(false).empty()) << "step " << step << " has not run yet";
  }
  timer.finished_ = 1;
  auto done = pending.take_finished(false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].global_step, 1);
  // Past max_pending the oldest is waited for, so the host never runs far ahead.
  for (int64_t step = 4; step <= 5; ++step) {
    IterationRecord record;
    record.global_step = step;
    pending.begin_step();
    pending.end_step(record, outputs(1.0f));
  }
  done = pending.take_finished(false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].global_step, 2);
  done = pending.take_finished(true);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].global_step, 3);
  EXPECT_EQ(done[2].global_step, 5);
}

// An asynchronous timer's host figures (the CUDA timer's, which CPU builds cannot run) reach the
// records; the host timer has none, since on CPU the host's time is the step. Every step has run.
class HostPacedTimer : public LaggingTimer {
 public:
  HostPacedTimer() { finished_ = std::numeric_limits<std::size_t>::max(); }
  StepTime take_oldest() override {
    StepTime t = LaggingTimer::take_oldest();  // ended_at: the step's number
    const auto taken = static_cast<int64_t>(t.ended_at);
    t.host_seconds = 0.004 * static_cast<double>(taken);
    t.device_idle_at_start = taken % 2 == 1;
    return t;
  }
};

TEST(PendingSteps, RecordsCarryTheHostsTimeAndWhetherTheDeviceWaited) {
  PendingSteps pending(std::make_unique<HostPacedTimer>(), 4);
  for (int64_t step = 1; step <= 2; ++step) {
    pending.begin_step();
    pending.end_step(IterationRecord{}, outputs(1.0f));
  }
  const auto done = pending.take_finished(true);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_DOUBLE_EQ(done[0].host_seconds.value(), 0.004);
  EXPECT_DOUBLE_EQ(done[1].host_seconds.value(), 0.008);
  EXPECT_TRUE(done[0].device_idle_at_start.value());
  EXPECT_FALSE(done[1].device_idle_at_start.value());

  PendingSteps on_cpu(make_host_step_timer(), 4);
  on_cpu.begin_step();
  on_cpu.end_step(IterationRecord{}, outputs(1.0f));
  const auto cpu = on_cpu.take_finished(true);
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_FALSE(cpu[0].host_seconds.has_value());
  EXPECT_FALSE(cpu[0].device_idle_at_start.has_value());
  const nlohmann::json line = cpu[0];
  EXPECT_FALSE(line.contains("host_seconds")) << line;
  EXPECT_FALSE(line.contains("device_idle_at_start")) << line;
}

TEST(TimingCheck, ComparesStepTimesWithEpochWallTime) {
  RunRecords recorder;
  EpochRecord e;
  e.seconds = 10.0;
  e.step_seconds = 9.9;
  recorder.epochs = {e, e};
  SummaryInputs in;
  in.outcome.timing_method = "steady_clock";
  const auto check = to_json(summarize(recorder, in))["timing_check"];
  EXPECT_EQ(check["method"], "steady_clock");
  EXPECT_DOUBLE_EQ(check["epoch_seconds"].get<double>(), 20.0);
  EXPECT_NEAR(check["gap_fraction"].get<double>(), 0.01, 1e-12);
  EXPECT_DOUBLE_EQ(check["margin"].get<double>(), kTimingGapMargin);
  EXPECT_TRUE(check["within_margin"].get<bool>());
  recorder.epochs[1].step_seconds = 8.0;
  EXPECT_FALSE(to_json(summarize(recorder, in))["timing_check"]["within_margin"].get<bool>());
}

}  // namespace
}  // namespace tbench
