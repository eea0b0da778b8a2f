// The training loop: the loss falls, seeds reproduce, accumulation is exact, the schedule is HF's.
#include <gtest/gtest.h>

#include "tbench/data/data_sources.hpp"
#include "tbench/env/gpu_telemetry.hpp"
#include "tbench/results/summary.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {
namespace {

RunSpec tiny_run(int64_t epochs, int64_t batch, int64_t accum, bool dropout = true) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "test.json", false);
  apply_overrides(doc, {"train.epochs=" + std::to_string(epochs), "train.batch_size=" + std::to_string(batch),
                        "train.grad_accum_steps=" + std::to_string(accum), "train.lr=0.002",
                        "train.dropout=" + std::string(dropout ? "true" : "false"), "data.num_samples=64",
                        "data.seq_len=8", "timing.warmup_steps=1", "train.weight_decay=0.01"});
  return resolve_spec(doc);
}

struct TrainedRun {
  std::shared_ptr<SequenceClassifier> model;
  RunRecords records;
  TrainOutcome outcome;
};

TrainedRun train(const RunSpec& spec, GpuMonitor* monitor = nullptr) {
  torch::set_num_threads(1);
  torch::manual_seed(static_cast<uint64_t>(spec.train.seed));
  TrainedRun run;
  run.model = build_classifier(shipped_model_config(spec.model.name), spec.num_labels);
  const ModelConfig c = shipped_model_config(spec.model.name);
  const PreparedData data = prepare_data(spec, c);
  auto objective = classification_objective(*run.model, spec.precision, torch::kCPU);
  Trainer trainer(trainer_config(spec, LaunchEnv{}), *objective, data, torch::kCPU);
  trainer.set_gpu_monitor(monitor);
  std::atomic<bool> stop{false};
  TrainRun result = trainer.run({}, stop);
  run.records = std::move(result.records);
  run.outcome = result.outcome;
  return run;
}

TEST(Trainer, LossGoesDownOnATinyModel) {
  const TrainedRun run = train(tiny_run(/*epochs=*/12, 8, 1));
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  ASSERT_EQ(run.records.epochs.size(), 12u);
  EXPECT_LT(run.records.epochs.back().loss, 0.7 * run.records.epochs.front().loss)
      << run.records.epochs.front().loss << " -> " << run.records.epochs.back().loss;
}

TEST(Trainer, SameSpecSameLosses) {
  const TrainedRun a = train(tiny_run(2, 8, 1));
  const TrainedRun b = train(tiny_run(2, 8, 1));
  ASSERT_EQ(a.records.iterations.size(), b.records.iterations.size());
  for (std::size_t i = 0; i < a.records.iterations.size(); ++i) {
    EXPECT_EQ(a.records.iterations[i].loss, b.records.iterations[i].loss) << "step " << i;
  }
  RunSpec other_seed = tiny_run(2, 8, 1);
  other_seed.train.seed = 99;
  other_seed.data.seed = 99;
  EXPECT_NE(train(other_seed).records.iterations.front().loss, a.records.iterations.front().loss);
}

// Without dropout, 2 micro-batches of 4 accumulate exactly the gradient of one batch of 8.
TEST(Trainer, GradientAccumulationMatchesTheFullBatch) {
  const TrainedRun full = train(tiny_run(1, 8, 1, /*dropout=*/false));
  const TrainedRun accumulated = train(tiny_run(1, 4, 2, /*dropout=*/false));
  ASSERT_EQ(full.records.iterations.size(), accumulated.records.iterations.size());
  const auto a = full.model->parameters(), b = accumulated.model->parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-4, 1e-5)) << i;
  EXPECT_EQ(accumulated.records.iterations.front().samples, 8);
}

TEST(Trainer, RecordsAreConsistent) {
  const TrainedRun run = train(tiny_run(2, 8, 1));
  ASSERT_EQ(run.records.epochs.size(), 2u);
  for (const auto& epoch : run.records.epochs) {
    double step_seconds = 0;
    int64_t samples = 0, steps = 0;
    for (const auto& it : run.records.iterations) {
      if (it.epoch != epoch.epoch) continue;
      step_seconds += it.seconds;
      samples += it.samples;
      ++steps;
      EXPECT_LE(it.data_seconds, it.seconds);
      EXPECT_EQ(it.tokens, it.samples * 8);
    }
    EXPECT_LE(step_seconds, epoch.seconds);
    EXPECT_EQ(samples, epoch.samples);
    EXPECT_EQ(steps, epoch.steps);
    EXPECT_EQ(epoch.samples, 64);
  }
  EXPECT_TRUE(run.records.iterations.front().warmup);
  EXPECT_FALSE(run.records.iterations.at(1).warmup);
}

TEST(Trainer, StopRequestEndsTheRunAsInterrupted) {
  const RunSpec spec = tiny_run(3, 8, 1);
  const ModelConfig c = shipped_model_config(spec.model.name);
  auto model = build_classifier(c, 2);
  const PreparedData data = prepare_data(spec, c);
  auto objective = classification_objective(*model, spec.precision, torch::kCPU);
  Trainer trainer(trainer_config(spec, LaunchEnv{}), *objective, data, torch::kCPU);
  struct StopAfter : TrainObserver {
    std::atomic<bool> stop{false};
    int seen = 0;
    void on_iteration(const IterationRecord&) override {
      if (++seen == 3) stop = true;
    }
  } observer;
  const auto run = trainer.run({&observer}, observer.stop);
  EXPECT_EQ(run.outcome.status, RunStatus::interrupted);
  EXPECT_EQ(run.records.iterations.size(), 3u);
  EXPECT_EQ(observer.seen, 3);
}

// An observer that cannot record an epoch's start or end (a log on a full disk) fails the run with
// its reason; the steps measured stay in the records, and the epoch that ran is kept.
TEST(Trainer, AnObserverThatFailsAtAnEpochsStartOrEndFailsTheRun) {
  const RunSpec spec = tiny_run(3, 8, 1);
  const ModelConfig c = shipped_model_config(spec.model.name);
  auto model = build_classifier(c, 2);
  const PreparedData data = prepare_data(spec, c);
  auto objective = classification_objective(*model, spec.precision, torch::kCPU);
  struct FailsAt : TrainObserver {
    int64_t start_of = 0, end_of = 0;
    void on_epoch_start(int64_t epoch, int64_t, int64_t) override {
      if (epoch == start_of) throw std::runtime_error("no room for epoch " + std::to_string(epoch) + "'s start");
    }
    void on_epoch_end(const EpochRecord& record) override {
      if (record.epoch == end_of) throw std::runtime_error("no room for epoch " + std::to_string(record.epoch) + "'s end");
    }
  };
  const auto run_failing_at = [&](int64_t start_of, int64_t end_of) {
    Trainer trainer(trainer_config(spec, LaunchEnv{}), *objective, data, torch::kCPU);
    FailsAt observer;
    observer.start_of = start_of;
    observer.end_of = end_of;
    std::atomic<bool> stop{false};
    return trainer.run({&observer}, stop);
  };
  const auto at_end = run_failing_at(0, 1);
  EXPECT_EQ(at_end.outcome.status, RunStatus::failed);
  EXPECT_EQ(at_end.outcome.error, "epoch 1 end: no room for epoch 1's end");
  ASSERT_EQ(at_end.records.epochs.size(), 1u);  // the epoch ran: its record stays
  EXPECT_EQ(at_end.records.iterations.size(), 8u);
  const auto at_start = run_failing_at(2, 0);
  EXPECT_EQ(at_start.outcome.status, RunStatus::failed);
  EXPECT_EQ(at_start.outcome.error, "epoch 2 start: no room for epoch 2's start");
  EXPECT_EQ(at_start.records.iterations.size(), 8u);  // epoch 1's steps; epoch 2 took none
  EXPECT_EQ(at_start.records.epochs.size(), 1u);
}

TEST(Trainer, MaxStepsCapsTheRun) {
  RunSpec spec = tiny_run(5, 8, 1);
  spec.train.max_steps = 11;
  const StepPlan plan = plan_steps(trainer_config(spec, LaunchEnv{}), 64);
  EXPECT_EQ(plan.steps_per_epoch, 8);
  EXPECT_EQ(plan.total_steps, 11);
  EXPECT_EQ(plan.epochs, 2);
  EXPECT_EQ(train(spec).records.iterations.size(), 11u);
}

TEST(Trainer, PlanDropsTheLastPartialStep) {
  TrainerConfig t;
  t.epochs = 2;
  t.batch_size = 8;
  t.grad_accum_steps = 2;
  const StepPlan plan = plan_steps(t, 70);
  EXPECT_EQ(plan.steps_per_epoch, 4);
  EXPECT_EQ(plan.total_steps, 8);
}

// An exception on the loader's thread (here: a batch that cannot be collated) is a failed run
// with its records and a message, not an exception that escapes and loses the result.
TEST(Trainer, LoaderThreadFailureEndsTheRunAsFailed) {
  const RunSpec spec = tiny_run(1, 8, 1);
  const ModelConfig c = shipped_model_config(spec.model.name);
  auto model = build_classifier(c, 2);
  PreparedData data = prepare_data(spec, c);
  data.collate.seq_len = 4;  // shorter than the samples: collate throws std::length_error
  TrainerConfig config = trainer_config(spec, LaunchEnv{});
  config.prefetch = 2;  // collated on the loader's thread
  auto objective = classification_objective(*model, config.precision, torch::kCPU);
  Trainer trainer(config, *objective, data, torch::kCPU);
  std::atomic<bool> stop{false};
  TrainRun run;
  ASSERT_NO_THROW(run = trainer.run({}, stop));
  EXPECT_EQ(run.outcome.status, RunStatus::failed);
  EXPECT_NE(run.outcome.error.find("epoch 1 step 1"), std::string::npos) << run.outcome.error;
  EXPECT_NE(run.outcome.error.find("does not fit the padded length 4"), std::string::npos) << run.outcome.error;
}

// The held-out evaluation after an epoch is part of the run too: its failure is a failed run
// that keeps the epoch's step records.
TEST(Trainer, EvalFailureEndsTheRunAsFailedWithItsRecords) {
  const RunSpec spec = tiny_run(2, 8, 1);
  const ModelConfig c = shipped_model_config(spec.model.name);
  auto model = build_classifier(c, 2);
  PreparedData data = prepare_data(spec, c);
  data.eval.add(std::vector<int64_t>(12, 5), {}, 0);  // longer than seq_len 8: collate throws
  auto objective = classification_objective(*model, spec.precision, torch::kCPU);
  Trainer trainer(trainer_config(spec, LaunchEnv{}), *objective, data, torch::kCPU);
  std::atomic<bool> stop{false};
  TrainRun run;
  ASSERT_NO_THROW(run = trainer.run({}, stop));
  EXPECT_EQ(run.outcome.status, RunStatus::failed);
  EXPECT_NE(run.outcome.error.find("epoch 1 eval"), std::string::npos) << run.outcome.error;
  EXPECT_EQ(run.records.iterations.size(), 8u);  // epoch 1's steps, all kept
}

// A monitor the trainer is given samples each epoch on its own, and each epoch record carries
// what it saw (no monitor: no telemetry, as on CPU runs).
TEST(Trainer, EpochsCarryTheGpuMonitorsReadings) {
  struct SteadyGpu : GpuSampleSource {
    GpuSample read() override {
      GpuSample s;
      s.sm_clock_mhz = 1980;
      s.power_w = 500;
      return s;
    }
  };
  GpuMonitor monitor(std::make_unique<SteadyGpu>(), std::chrono::milliseconds(1));
  const TrainedRun run = train(tiny_run(/*epochs=*/2, 8, 1), &monitor);
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  ASSERT_EQ(run.records.epochs.size(), 2u);
  for (const auto& epoch : run.records.epochs) {
    ASSERT_TRUE(epoch.gpu.has_value());
    EXPECT_GE(epoch.gpu->samples, 2);  // at the epoch's start and end at least
    EXPECT_EQ(epoch.gpu->sm_clock_mhz_median, 1980.0);
    ASSERT_TRUE(epoch.gpu->energy_j.has_value());  // no counter: the power samples integrated
    // 500 W over the epoch, which the monitor's window holds (it starts before and stops after).
    EXPECT_GE(*epoch.gpu->energy_j, 500 * epoch.seconds);
    EXPECT_LE(*epoch.gpu->energy_j, 500 * (epoch.seconds + 0.5));
  }
  EXPECT_FALSE(train(tiny_run(1, 8, 1)).records.epochs.front().gpu.has_value());
  // The summary: one device's power, and its energy per sample over both epochs.
  const Summary s = summarize(run.records, SummaryInputs{});
  EXPECT_DOUBLE_EQ(*s.gpu_power_w_mean, 500.0);
  const double joules = *run.records.epochs[0].gpu->energy_j + *run.records.epochs[1].gpu->energy_j;
  EXPECT_DOUBLE_EQ(*s.gpu_energy_j_per_sample,
                   joules / static_cast<double>(run.records.epochs[0].samples + run.records.epochs[1].samples));
}

// clip_grad_norm_'s arithmetic: one norm over every gradient, all scaled alike, only when above
// the limit; a parameter without a gradient (frozen, or unused this step) is left alone.
TEST(ClipGradients, ScalesEveryGradientByTheGlobalNorm) {
  const auto with_grad = [](std::vector<float> values) {
    auto p = torch::zeros({static_cast<int64_t>(values.size())}, torch::requires_grad());
    p.mutable_grad() = torch::tensor(values);
    return p;
  };
  const auto untouched = torch::zeros({2}, torch::requires_grad());
  std::vector<torch::Tensor> params = {with_grad({3, 0}), untouched, with_grad({0, 4, 0}), with_grad({12})};
  clip_gradients(params, 6.5);  // global norm sqrt(9 + 16 + 144) = 13: halved
  EXPECT_TRUE(torch::allclose(params[0].grad(), torch::tensor({1.5f, 0.f})));
  EXPECT_FALSE(params[1].grad().defined());
  EXPECT_TRUE(torch::allclose(params[2].grad(), torch::tensor({0.f, 2.f, 0.f})));
  EXPECT_TRUE(torch::allclose(params[3].grad(), torch::tensor({6.f})));
  clip_gradients(params, 100.0);  // under the limit: unchanged (up to the 1e-6 in the denominator)
  EXPECT_TRUE(torch::allclose(params[3].grad(), torch::tensor({6.f})));
  // Mixed dtypes, as with a half-precision head beside fp32 weights: one norm still.
  params[0].mutable_grad() = torch::tensor({3.f, 0.f}, torch::kDouble);
  params[2].mutable_grad() = torch::tensor({0.f, 4.f, 0.f});
  params[3].mutable_grad() = torch::tensor({12.f}, torch::kBFloat16);
  clip_gradients(params, 1.3);
  EXPECT_TRUE(torch::allclose(params[0].grad(), torch::tensor({0.3, 0.0}, torch::kDouble), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(params[2].grad(), torch::tensor({0.f, 0.4f, 0.f}), 1e-5, 1e-6));
  EXPECT_EQ(params[3].grad().scalar_type(), torch::kBFloat16);
  EXPECT_NEAR(params[3].grad().item<float>(), 1.2f, 0.01f);
}

TEST(Schedule, LinearWarmupThenLinearDecay) {
  EXPECT_DOUBLE_EQ(linear_schedule_lr(1.0, 0, 4, 10), 0.0);
  EXPECT_DOUBLE_EQ(linear_schedule_lr(1.0, 2, 4, 10), 0.5);
  EXPECT_DOUBLE_EQ(linear_schedule_lr(1.0, 4, 4, 10), 1.0);
  EXPECT_DOUBLE_EQ(linear_schedule_lr(1.0, 7, 4, 10), 0.5);
  EXPECT_DOUBLE_EQ(linear_schedule_lr(1.0, 10, 4, 10), 0.0);
  EXPECT_DOUBLE_EQ(linear_schedule_lr(2.0, 0, 0, 4), 2.0);
}

}  // namespace
}  // namespace tbench
