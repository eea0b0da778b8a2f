// The speed options (train.optimizer_impl, model.attention, cuda.tf32, train.cuda_graph): spec
// checks against what this build has, what `auto` resolves to, numerical agreement of the
// kernels, and that the step timer accounts for a CPU run's epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tbench/data/data_sources.hpp"
#include "tbench/errors.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/results/result.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {
namespace {

RunSpec tiny_spec(const std::vector<std::string>& overrides) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "spec.json", false);
  std::vector<std::string> all = {"data.num_samples=64", "data.seq_len=16", "train.batch_size=8",
                                  "timing.warmup_steps=1"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  apply_overrides(doc, all);
  return resolve_spec(doc);
}

std::string input_error_of(const std::vector<std::string>& overrides) {
  try {
    tiny_spec(overrides);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
    return e.what();
  }
  return "";
}

TEST(SpeedOptions, DefaultsAreAutoAndTf32Off) {
  const RunSpec spec = tiny_spec({});
  EXPECT_EQ(spec.train.optimizer_impl, OptimizerImpl::automatic);
  EXPECT_EQ(spec.model.attention, AttentionChoice::automatic);
  EXPECT_FALSE(spec.cuda.tf32);
}

TEST(SpeedOptions, Tf32OnCpuIsRefused) {
  const auto message = input_error_of({"cuda.tf32=true"});
  EXPECT_NE(message.find("cuda.tf32"), std::string::npos) << message;
  EXPECT_NE(message.find("--set cuda.tf32=true"), std::string::npos) << message;
}

TEST(SpeedOptions, CudaGraphOnCpuIsRefused) {
  const auto message = input_error_of({"train.cuda_graph=true"});
  EXPECT_NE(message.find("train.cuda_graph: CUDA graphs need a CUDA device"), std::string::npos) << message;
  EXPECT_FALSE(tiny_spec({}).train.cuda_graph.has_value()) << "unset by default";
}

// Unset, train.cuda_graph is used wherever the step can be captured: on CUDA, with static shapes,
// the fused AdamW, two untimed steps and one process; each of those alone turns it off.
TEST(SpeedOptions, UnsetCudaGraphIsUsedWhereTheStepCanBeCaptured) {
  const LaunchEnv one_process;
  EXPECT_FALSE(resolve_cuda_graph(tiny_spec({}), one_process).captured) << "on the CPU";
  EXPECT_EQ(resolve_cuda_graph(tiny_spec({}), one_process).why, "") << "graphs are a CUDA feature: nothing to log";
  const std::vector<std::string> cuda = {"device=cuda", "timing.warmup_steps=2"};
  const RunSpec capturable = tiny_spec(cuda);
  EXPECT_EQ(cuda_graph_obstacles(capturable).empty(), features::kCudaGraphStep);
  EXPECT_EQ(resolve_cuda_graph(capturable, one_process).captured, features::kCudaGraphStep);
  EXPECT_EQ(trainer_config(capturable, one_process).cuda_graph, features::kCudaGraphStep) << "the loop takes the choice";
  const std::vector<std::pair<std::string, std::string>> stoppers = {
      {"data.padding=longest", "data.padding"},        {"data.drop_last=false", "data.drop_last"},
      {"train.grad_accum_steps=2", "train.grad_accum_steps"}, {"timing.warmup_steps=1", "timing.warmup_steps"},
      {"model.unpad=true", "model.unpad"},             {"train.optimizer_impl=foreach", "train.optimizer_impl"}};
  for (const auto& [override_, field] : stoppers) {
    auto overrides = cuda;
    overrides.push_back(override_);
    const RunSpec spec = tiny_spec(overrides);
    const CudaGraphChoice choice = resolve_cuda_graph(spec, one_process);
    EXPECT_FALSE(choice.captured) << override_;
    if (features::kCudaGraphStep) {  // else the torch's own obstacle may come first
      EXPECT_NE(choice.why.find("eager steps: train.cuda_graph is unset and " + field), std::string::npos) << choice.why;
    }
    const auto obstacles = cuda_graph_obstacles(spec);
    EXPECT_TRUE(std::any_of(obstacles.begin(), obstacles.end(), [&](const FieldProblem& p) { return p.field == field; }))
        << override_;
  }
  LaunchEnv two_ranks;
  two_ranks.world_size = 2;
  EXPECT_FALSE(resolve_cuda_graph(capturable, two_ranks).captured) << "a data-parallel step syncs from the host";
  EXPECT_FALSE(trainer_config(capturable, two_ranks).cuda_graph);
  if (features::kCudaGraphStep) {
    EXPECT_NE(resolve_cuda_graph(capturable, two_ranks).why.find("data-parallel"), std::string::npos);
  }
  auto eager = cuda;
  eager.push_back("train.cuda_graph=false");
  EXPECT_FALSE(resolve_cuda_graph(tiny_spec(eager), one_process).captured) << "false is eager wherever";
  EXPECT_EQ(resolve_cuda_graph(tiny_spec(eager), one_process).why, "") << "a choice the spec made needs no word";
}

// The tasks whose step has data-dependent shapes never capture it (and refuse a graph asked for).
TEST(SpeedOptions, MaskedAndPermutationTasksAreNotCaptured) {
  for (const Task task : {Task::mlm, Task::distillation, Task::plm}) {
    RunSpec spec = tiny_spec({"device=cuda", "timing.warmup_steps=2"});
    spec.task = task;
    const auto obstacles = cuda_graph_obstacles(spec);
    ASSERT_FALSE(obstacles.empty()) << to_string(task);
    EXPECT_NE(obstacles.back().message.find(std::string("not supported with task ") + to_string(task)),
              std::string::npos)
        << obstacles.back().message;
    EXPECT_FALSE(resolve_cuda_graph(spec, LaunchEnv{}).captured) << to_string(task);
  }
}

TEST(SpeedOptions, UnknownChoicesAreRefusedWithASuggestion) {
  EXPECT_NE(input_error_of({"train.optimizer_impl=foreech"}).find("did you mean 'foreach'"), std::string::npos);
  EXPECT_NE(input_error_of({"model.attention=spda"}).find("did you mean 'sdpa'"), std::string::npos);
}

TEST(SpeedOptions, KernelsThisBuildLacksAreSpecErrors) {
  const auto fused = input_error_of({"train.optimizer_impl=fused"});
  EXPECT_EQ(fused.empty(), features::fused_adamw(false)) << fused;
  if (!fused.empty()) {
    EXPECT_NE(fused.find("train.optimizer_impl: fused AdamW needs torch >= 2.4"), std::string::npos) << fused;
  }
  const auto sdpa = input_error_of({"model.attention=sdpa"});
  EXPECT_EQ(sdpa.empty(), features::kSdpa) << sdpa;
  if (!sdpa.empty()) {
    EXPECT_NE(sdpa.find("model.attention: sdpa"), std::string::npos) << sdpa;
  }
  // tbench's one-pass AdamW is a CPU loop.
  EXPECT_EQ(input_error_of({"train.optimizer_impl=onepass"}), "");
  const auto onepass_on_cuda = input_error_of({"device=cuda", "train.optimizer_impl=onepass"});
  EXPECT_NE(onepass_on_cuda.find("train.optimizer_impl: onepass is tbench's CPU kernel"), std::string::npos)
      << onepass_on_cuda;
  // The fused residual LayerNorm runs anywhere on the CPU; on CUDA only with tbench's kernels.
  EXPECT_EQ(input_error_of({"model.fused_layer_norm=true"}), "");
  const auto fused_norm = input_error_of({"device=cuda", "model.fused_layer_norm=true"});
  EXPECT_EQ(fused_norm.find("model.fused_layer_norm: on a CUDA device needs tbench's CUDA kernels") !=
                std::string::npos,
            !features::kCudaKernels)
      << fused_norm;
}

// `auto` is recorded in the resolved spec as what it became.
TEST(SpeedOptions, PrepareRunRecordsWhatAutoResolvedTo) {
  const RunPlan plan = prepare_run(tiny_spec({}));
  EXPECT_EQ(plan.spec.resolved["train"]["optimizer_impl"], features::fused_adamw(false) ? "fused" : "onepass");
  // Dropout on (HF's default) with the fused CPU kernel: eager attention on CPU.
  EXPECT_EQ(plan.spec.resolved["model"]["attention"], "eager");
  EXPECT_EQ(plan.model.attention, AttentionKernel::eager);
  for (const char* off : {"train.dropout=false", "cpu.dropout=torch"}) {
    const RunPlan other = prepare_run(tiny_spec({off}));
    EXPECT_EQ(other.spec.resolved["model"]["attention"], features::kSdpa ? "sdpa" : "eager") << off;
    EXPECT_EQ(other.model.attention, features::kSdpa ? AttentionKernel::sdpa : AttentionKernel::eager) << off;
  }
}

TEST(SpeedOptions, PaddingMaskAndFusedQkvReachTheModelsAndTheTeacher) {
  const RunPlan defaults = prepare_run(tiny_spec({}));
  EXPECT_EQ(defaults.spec.resolved["model"]["padding_mask"], "auto");
  EXPECT_EQ(defaults.spec.resolved["model"]["fused_qkv"], false);
  EXPECT_FALSE(defaults.model.mask_every_batch);
  EXPECT_FALSE(defaults.model.fused_qkv);
  EXPECT_EQ(defaults.spec.resolved["model"]["fused_layer_norm"], false);
  EXPECT_FALSE(defaults.model.fused_layer_norm);
  const RunPlan set =
      prepare_run(tiny_spec({"model.padding_mask=always", "model.fused_qkv=true", "model.fused_layer_norm=true"}));
  EXPECT_TRUE(set.model.mask_every_batch);
  EXPECT_TRUE(set.model.fused_qkv);
  EXPECT_TRUE(set.model.fused_layer_norm);
  const RunPlan distill = prepare_run(tiny_spec({"task=distillation", "model=tiny-distilbert", "distillation.teacher=tiny-bert",
                                                 "model.padding_mask=always", "model.fused_qkv=true",
                                                 "model.fused_layer_norm=true"}));
  ASSERT_TRUE(distill.teacher.has_value());
  // auto: the frozen teacher never drops out, so it keeps SDPA where the student takes eager.
  EXPECT_EQ(distill.model.attention, AttentionKernel::eager);
  EXPECT_EQ(distill.teacher->attention, features::kSdpa ? AttentionKernel::sdpa : AttentionKernel::eager);
  EXPECT_TRUE(distill.teacher->mask_every_batch);
  EXPECT_TRUE(distill.teacher->fused_qkv);
  EXPECT_TRUE(distill.teacher->fused_layer_norm);
  EXPECT_NE(input_error_of({"model.padding_mask=never"}).find("model.padding_mask"), std::string::npos);
}

// No padding known to the host: no bias at all, unless the spec asks for it on every batch.
TEST(Attention, TheMaskIsLeftOutOnlyWhereTheHostKnowsThereIsNoPadding) {
  ModelInputs in{torch::ones({2, 5}, torch::kLong), torch::ones({2, 5}, torch::kLong), torch::zeros({2, 5}, torch::kLong),
                 /*has_padding=*/false};
  EXPECT_FALSE(layers::attention_bias(in, /*mask_every_batch=*/false, torch::kFloat).defined());
  EXPECT_TRUE(layers::attention_bias(in, /*mask_every_batch=*/true, torch::kFloat).defined());
  in.has_padding = true;
  EXPECT_TRUE(layers::attention_bias(in, /*mask_every_batch=*/false, torch::kFloat).defined());
}

// The same weights give the same logits and gradients with the mask left out (auto) or passed
// (always), with three projections or one fused GEMM, on every kernel this build has.
TEST(Attention, MaskFreeBatchesAndTheFusedProjectionComputeTheSameModel) {
  std::vector<AttentionKernel> kernels = {AttentionKernel::eager};
  if (features::kSdpa) kernels.push_back(AttentionKernel::sdpa);
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    for (const auto kernel : kernels) {
      const auto logits_and_grads = [&](bool mask_every_batch, bool fused) {
        ModelConfig c = shipped_model_config(name);
        c.attention = kernel;
        c.mask_every_batch = mask_every_batch;
        c.fused_qkv = fused;
        torch::manual_seed(1);
        auto model = build_classifier(c, 2);
        model->eval();
        torch::manual_seed(2);
        const ModelInputs in{torch::randint(5, c.vocab_size, {3, 12}), torch::ones({3, 12}, torch::kLong),
                             torch::zeros({3, 12}, torch::kLong), /*has_padding=*/false};
        const auto logits = model->forward(in);
        (logits * torch::arange(1, 7, torch::kFloat).view({3, 2})).sum().backward();
        std::vector<torch::Tensor> out = {logits.detach()};
        for (const auto& p : model->named_parameters()) out.push_back(p.value().grad());
        return out;
      };
      const auto reference = logits_and_grads(/*mask_every_batch=*/true, /*fused=*/false);
      for (const auto& [always, fused] : std::vector<std::pair<bool, bool>>{{false, false}, {true, true}, {false, true}}) {
        const auto other = logits_and_grads(always, fused);
        ASSERT_EQ(reference.size(), other.size());
        for (std::size_t i = 0; i < reference.size(); ++i) {
          EXPECT_TRUE(torch::allclose(reference[i], other[i], 1e-5, 1e-6))
              << name << " " << to_string(kernel) << " always " << always << " fused " << fused << " tensor " << i
              << ": max diff " << (reference[i] - other[i]).abs().max().item<double>();
        }
      }
    }
  }
}

// Which runs auto takes eager for where SDPA exists: CPU, fp32, training with attention dropout
// by the fused kernel. Checked on every build, SDPA or not.
TEST(Attention, AutoPrefersEagerOnlyForFusedCpuDropoutInFp32Training) {
  const RunSpec defaults = tiny_spec({});
  const ModelConfig model = model_config_for(defaults);
  ASSERT_GT(model.attention_dropout, 0);
  EXPECT_TRUE(layers::auto_attention_prefers_eager(attention_use_of(defaults, model)));
  for (const char* other : {"train.dropout=false", "cpu.dropout=torch", "precision=bf16"}) {
    const RunSpec spec = tiny_spec({other});
    EXPECT_FALSE(layers::auto_attention_prefers_eager(attention_use_of(spec, model))) << other;
  }
  layers::AttentionUse on_cuda = attention_use_of(defaults, model);
  on_cuda.on_cuda = true;
  EXPECT_FALSE(layers::auto_attention_prefers_eager(on_cuda));
}

TEST(Attention, AutoIsEagerWithoutSdpaAndForFusedDropoutOnCpu) {
  const AttentionKernel sdpa_if_built = features::kSdpa ? AttentionKernel::sdpa : AttentionKernel::eager;
  EXPECT_EQ(layers::resolve_attention(AttentionChoice::automatic), sdpa_if_built);
  layers::AttentionUse cpu_training;
  cpu_training.fused_cpu_dropout = true;
  EXPECT_EQ(layers::resolve_attention(AttentionChoice::automatic, cpu_training), AttentionKernel::eager);
  layers::AttentionUse cuda_training = cpu_training;
  cuda_training.on_cuda = true;  // SDPA's CUDA kernels fuse their dropout
  EXPECT_EQ(layers::resolve_attention(AttentionChoice::automatic, cuda_training), sdpa_if_built);
  EXPECT_EQ(layers::resolve_attention(AttentionChoice::eager), AttentionKernel::eager);
  if (!features::kSdpa) {
    EXPECT_THROW(layers::resolve_attention(AttentionChoice::sdpa), std::invalid_argument);
  }
}

#if TBENCH_HAS_SDPA
// Compiled with torch >= 2.0 (the Debian 13 suite runs it): the fused kernel and the explicit
// one agree within 1e-5 in fp32, padding included.
TEST(Attention, SdpaEqualsEagerWithPadding) {
  torch::manual_seed(5);
  const auto q = torch::randn({2, 4, 16, 8}), k = torch::randn({2, 4, 16, 8}), v = torch::randn({2, 4, 16, 8});
  auto mask = torch::ones({2, 16}, torch::kLong);
  mask.index_put_({1, torch::indexing::Slice(10)}, 0);
  const auto bias = layers::padding_bias(mask, torch::kFloat);
  const auto eager = layers::attention(q, k, v, bias, 0.1, /*training=*/false, AttentionKernel::eager);
  const auto sdpa = layers::attention(q, k, v, bias, 0.1, /*training=*/false, AttentionKernel::sdpa);
  EXPECT_TRUE(torch::allclose(eager, sdpa, 1e-5, 1e-5)) << (eager - sdpa).abs().max().item<double>();
}

// Training mode (dropout 0): the gradients through the fused kernel agree too, masked keys included.
TEST(Attention, SdpaGradientsEqualEagerWithPadding) {
  torch::manual_seed(6);
  const auto q0 = torch::randn({2, 4, 16, 8}), k0 = torch::randn({2, 4, 16, 8}), v0 = torch::randn({2, 4, 16, 8});
  const auto upstream = torch::randn({2, 4, 16, 8});
  auto mask = torch::ones({2, 16}, torch::kLong);
  mask.index_put_({0, torch::indexing::Slice(5)}, 0);
  const auto bias = layers::padding_bias(mask, torch::kFloat);
  std::vector<torch::Tensor> grads[2];
  for (const auto kernel : {AttentionKernel::eager, AttentionKernel::sdpa}) {
    auto q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    (layers::attention(q, k, v, bias, 0.0, /*training=*/true, kernel) * upstream).sum().backward();
    grads[kernel == AttentionKernel::sdpa] = {q.grad(), k.grad(), v.grad()};
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-5))
        << "qkv"[i] << ": max diff " << (grads[0][i] - grads[1][i]).abs().max().item<double>();
  }
}

TEST(Attention, WholeModelsAgreeAcrossKernels) {
  for (const char* name : {"tiny-bert", "tiny-distilbert", "tiny-roberta"}) {
    ModelConfig c = shipped_model_config(name);
    torch::manual_seed(1);
    auto eager = build_classifier(c, 2);
    c.attention = AttentionKernel::sdpa;
    torch::manual_seed(1);
    auto sdpa = build_classifier(c, 2);
    eager->eval();
    sdpa->eval();
    ModelInputs in{torch::randint(5, c.vocab_size, {3, 12}), torch::ones({3, 12}, torch::kLong),
                   torch::zeros({3, 12}, torch::kLong), /*has_padding=*/true};
    in.attention_mask.index_put_({0, torch::indexing::Slice(7)}, 0);
    EXPECT_TRUE(torch::allclose(eager->forward(in), sdpa->forward(in), 1e-5, 1e-5)) << name;
  }
}
#endif

using OptimizerRun = TrainRun;

OptimizerRun train(const RunSpec& spec) {
  torch::set_num_threads(1);
  torch::manual_seed(static_cast<uint64_t>(spec.train.seed));
  const RunPlan plan = prepare_run(spec);
  auto model = build_classifier(plan.model, spec.num_labels);
  auto objective = classification_objective(*model, plan.trainer.precision, torch::kCPU);
  Trainer trainer(plan.trainer, *objective, *plan.data, torch::kCPU);
  std::atomic<bool> stop{false};
  return trainer.run({}, stop);
}

// Every implementation trains to the same losses as LibTorch's AdamW (to float rounding).
TEST(SpeedOptions, OptimizerImplementationsTrainAlike) {
  const OptimizerRun loop = train(tiny_spec({"train.optimizer_impl=loop", "train.weight_decay=0.01", "train.dropout=false"}));
  const OptimizerRun foreach = train(tiny_spec({"train.optimizer_impl=foreach", "train.weight_decay=0.01", "train.dropout=false"}));
  ASSERT_EQ(loop.outcome.status, RunStatus::completed) << loop.outcome.error;
  ASSERT_EQ(foreach.outcome.status, RunStatus::completed) << foreach.outcome.error;
  ASSERT_EQ(loop.records.iterations.size(), foreach.records.iterations.size());
  for (std::size_t i = 0; i < loop.records.iterations.size(); ++i) {
    EXPECT_NEAR(loop.records.iterations[i].loss, foreach.records.iterations[i].loss, 1e-5) << "step " << i;
  }
  const OptimizerRun onepass = train(tiny_spec({"train.optimizer_impl=onepass", "train.weight_decay=0.01", "train.dropout=false"}));
  ASSERT_EQ(onepass.outcome.status, RunStatus::completed) << onepass.outcome.error;
  ASSERT_EQ(loop.records.iterations.size(), onepass.records.iterations.size());
  for (std::size_t i = 0; i < loop.records.iterations.size(); ++i) {
    EXPECT_NEAR(loop.records.iterations[i].loss, onepass.records.iterations[i].loss, 1e-5) << "onepass, step " << i;
  }
  if (!features::fused_adamw(false)) return;  // the CPU kernel needs torch >= 2.4
  const OptimizerRun fused = train(tiny_spec({"train.optimizer_impl=fused", "train.weight_decay=0.01", "train.dropout=false"}));
  ASSERT_EQ(fused.outcome.status, RunStatus::completed) << fused.outcome.error;
  ASSERT_EQ(loop.records.iterations.size(), fused.records.iterations.size());
  for (std::size_t i = 0; i < loop.records.iterations.size(); ++i) {
    EXPECT_NEAR(loop.records.iterations[i].loss, fused.records.iterations[i].loss, 1e-5) << "fused, step " << i;
  }
}

// A whole run trains alike with any of the switches (dropout off, so the steps are deterministic).
TEST(SpeedOptions, PaddingMaskAndFusedQkvTrainAlike) {
  const OptimizerRun base = train(tiny_spec({"model.padding_mask=always", "train.dropout=false"}));
  const OptimizerRun both =
      train(tiny_spec({"model.fused_qkv=true", "model.fused_layer_norm=true", "train.dropout=false"}));
  ASSERT_EQ(base.outcome.status, RunStatus::completed) << base.outcome.error;
  ASSERT_EQ(both.outcome.status, RunStatus::completed) << both.outcome.error;
  ASSERT_EQ(base.records.iterations.size(), both.records.iterations.size());
  for (std::size_t i = 0; i < base.records.iterations.size(); ++i) {
    EXPECT_NEAR(base.records.iterations[i].loss, both.records.iterations[i].loss, 1e-5) << "step " << i;
  }
}

// Counts the trainer's calls; records nothing. Starting takes 30 ms, as a real profiler's set-up
// takes time that belongs to no step.
class CountingProfiler : public StepProfiler {
 public:
  int starts = 0, stops = 0;
  void start() override {
    ++starts;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  ProfileSummary stop() override {
    ++stops;
    return summarize_profile({}, /*on_device=*/false, 5);
  }
};

// timing.profile_steps: the run's last steps, one profiler session, marked and left out of the
// summary; the profiler's own time is charged to the epoch it ran in.
TEST(SpeedOptions, TheProfilerRecordsTheLastStepsOnceAndTheyLeaveTheSummary) {
  torch::set_num_threads(1);
  const RunSpec spec = tiny_spec({"train.epochs=2", "timing.profile_steps=3"});  // 8 steps per epoch
  const RunPlan plan = prepare_run(spec);
  auto model = build_classifier(plan.model, spec.num_labels);
  auto objective = classification_objective(*model, plan.trainer.precision, torch::kCPU);
  Trainer trainer(plan.trainer, *objective, *plan.data, torch::kCPU);
  CountingProfiler profiler;
  trainer.set_profiler(&profiler);
  std::atomic<bool> stop{false};
  const TrainRun run = trainer.run({}, stop);
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  EXPECT_EQ(profiler.starts, 1);
  EXPECT_EQ(profiler.stops, 1);
  ASSERT_TRUE(run.profile.has_value());
  EXPECT_EQ(run.profile->first_step, 14);
  EXPECT_EQ(run.profile->last_step, 16);
  EXPECT_GT(run.profile->wall_ms, 0.0);
  ASSERT_EQ(run.records.iterations.size(), 16u);
  for (const auto& it : run.records.iterations) EXPECT_EQ(it.profiled, it.global_step >= 14) << it.global_step;
  ASSERT_EQ(run.records.epochs.size(), 2u);
  EXPECT_EQ(run.records.epochs[0].profiler_seconds, 0.0);
  EXPECT_NEAR(run.records.epochs[1].profiler_seconds * 1e3, run.profile->overhead_ms, 1e-9);
  // The epoch's rates leave the profiler's own time out.
  const EpochRecord& last = run.records.epochs[1];
  EXPECT_GE(last.profiler_seconds, 0.03);
  EXPECT_NEAR(last.samples_per_s, static_cast<double>(last.samples) / (last.seconds - last.profiler_seconds),
              1e-9 * last.samples_per_s);
  SummaryInputs in;
  in.outcome = run.outcome;
  const Summary summary = summarize(run.records, in);
  EXPECT_EQ(summary.profiled_steps, 3);
  EXPECT_EQ(summary.step_ms.count, 16 - 1 - 3);
  // The profiled steps, slowed by the profiler, count in their epoch at the timed steps' mean (the
  // summary kept their own time: 15% over on a tiny model, found by an audit).
  double profiled_seconds = 0;
  for (const auto& it : run.records.iterations) profiled_seconds += it.profiled ? it.seconds : 0.0;
  const double timed_mean = summary.step_ms.mean / 1e3;
  const double second = last.seconds - last.profiler_seconds - profiled_seconds + 3 * timed_mean;
  ASSERT_TRUE(summary.epoch_seconds.has_value());
  EXPECT_NEAR(*summary.epoch_seconds, (run.records.epochs[0].seconds + second) / 2, 1e-9);
}

// On CPU the steps are the epoch: what the timer misses (the loop, the observers) is tiny.
TEST(SpeedOptions, CpuStepTimesAccountForTheEpoch) {
  const OptimizerRun run = train(tiny_spec({"train.epochs=2", "data.seq_len=64", "data.num_samples=128"}));
  ASSERT_EQ(run.outcome.status, RunStatus::completed) << run.outcome.error;
  EXPECT_EQ(run.outcome.timing_method, "steady_clock");
  double steps = 0;
  for (const auto& it : run.records.iterations) steps += it.seconds;
  double epoch_steps = 0;
  for (const auto& e : run.records.epochs) {
    epoch_steps += e.step_seconds;
    EXPECT_EQ(e.peak_allocated_bytes, -1);  // no allocator statistics on CPU
    EXPECT_GT(e.peak_rss_bytes, 0);
  }
  EXPECT_NEAR(steps, epoch_steps, 1e-9);
  SummaryInputs in;
  in.outcome = run.outcome;
  const auto check = to_json(summarize(run.records, in))["timing_check"];
  EXPECT_LT(check["gap_fraction"].get<double>(), 0.05) << check.dump();
  EXPECT_GE(check["gap_fraction"].get<double>(), 0.0) << check.dump();
}

}  // namespace
}  // namespace tbench
