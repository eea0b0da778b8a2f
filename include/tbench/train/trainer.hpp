#pragma once
// The training loop: epochs x optimizer steps x accumulation micro-steps, timed per step.
// It knows nothing of files or terminals; observers receive each record as it is made, and the
// loop hands back every record with how it ended (train_run.hpp).
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/data/data.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/errors.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/timing/clock.hpp"
#include "tbench/timing/step_profiler.hpp"
#include "tbench/timing/step_timer.hpp"
#include "tbench/train/objective.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

class GpuMonitor;
class LossScaler;
class PendingSteps;
struct StepOutputs;
namespace cuda {
class CapturedStep;
}

// What the loop needs to know, and nothing else (the runner builds it from the spec).
struct TrainerConfig {
  int64_t epochs = 1;
  int64_t max_steps = 0;  // 0: no limit; else this many optimizer steps in all
  int64_t batch_size = 1;  // samples per micro-step, per rank
  int64_t grad_accum_steps = 1;
  bool drop_last = true;  // false: a last, partial step takes the remainder
  bool bucket_by_length = false;
  int64_t data_seed = 0;
  int64_t prefetch = 2;  // batches collated ahead on the loader's thread
  double lr = 5e-5;      // peak of the linear warm-up and decay schedule
  int64_t lr_warmup_steps = 0;
  double weight_decay = 0;
  double max_grad_norm = 1.0;  // 0: no clipping
  OptimizerImpl optimizer = OptimizerImpl::automatic;
  bool dropout = true;
  bool cuda_graph = false;  // capture the step at kCudaGraphCaptureStep, replay it after
  Precision precision = Precision::fp32;
  int64_t timed_warmup_steps = 0;  // first steps marked warm-up, left out of the summary
  int64_t profile_steps = 0;       // the last steps run under the StepProfiler, also left out of the summary
  double pseudo_perplexity_fraction = 0;  // masked-LM tasks: share of the eval samples scored one token at a time
};

// The batches rank `rank` of `world_size` trains on, as `config` plans them: the one place the
// trainer, the run's planned FLOPs and `tbench data` take them from.
SamplerOptions sampler_options(const TrainerConfig& config, int world_size, int rank);

// Data-parallel gradient synchronisation, as the trainer sees it (the implementation, on c10d, is
// in src/dist/). A single-process run has none.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Before each micro-step's backward. `last_micro_step`: the optimizer step follows it (the
  // gradients are reduced then, or after every micro-step with dist.sync_every_micro_step).
  // `stop`: this rank was asked to stop; the request travels with the gradients.
  virtual void before_backward(bool last_micro_step, bool stop) = 0;
  // After that backward: waits for the all-reduces it started (the host on CPU, the stream on a
  // GPU) and leaves the mean gradient over all ranks in every parameter's .grad. Returns how long
  // the step waited for them once backward was done, readable once the step has run; empty when
  // this backward reduced nothing. Throws CommFailure.
  virtual DeferredSeconds after_backward() = 0;
  // Some rank asked to stop: every rank stops before the same step. Called once before each step.
  // On CPU that is the step after the request; on a GPU one reduction later, as the request is
  // read without making the host wait for the step it has just queued.
  virtual bool stop_agreed() = 0;
  // At the end of an epoch, before its final wait for the device: reads the requests still in
  // flight, waiting up to dist.timeout_s for their all-reduces. Throws CommFailure.
  virtual void finish_reductions() = 0;
  // The host is about to wait for the device mid-step (the fp16 overflow flag read by an optimizer
  // that cannot skip on the device): waits for the latest all-reduces first, with dist.timeout_s
  // and the peers' failures in view, as a wait on the device alone would see neither. Throws
  // CommFailure. On CPU the host waited for them already.
  virtual void await_reductions() = 0;
  // Where this rank's host is ("epoch 1 step 41"), for the peer that watches it while waiting for
  // it in a collective (Communicator::note_progress).
  virtual void note_progress(const std::string& where) = 0;
  // After the optimizer step: clears the gradients for the next step, as model.zero_grad(true)
  // does, except those kept in the all-reduce buckets (dist.gradient_as_bucket_view): zeroed there.
  virtual void zero_gradients(torch::nn::Module& model) = 0;
};

// A peer rank failed, left or stopped answering: the run cannot go on (exit 4).
class CommFailure : public Error {
 public:
  explicit CommFailure(const std::string& message) : Error(ExitCode::run_failed, message) {}
};

// This rank stopped because another one announced its failure (Communicator::announce_failure).
class PeerFailed : public CommFailure {
 public:
  using CommFailure::CommFailure;
};

// How many steps a run takes, from the dataset size.
struct StepPlan {
  int64_t steps_per_epoch = 0;  // optimizer steps (drop_last: partial steps are not taken)
  int64_t total_steps = 0;      // min(epochs x steps_per_epoch, max_steps if set)
  int64_t epochs = 0;           // epochs that will start
};
// With `world_size` processes, one optimizer step consumes batch x accumulation x world_size samples.
StepPlan plan_steps(const TrainerConfig& config, int64_t dataset_size, int64_t world_size = 1);

// Held-out loss and accuracy, measured after an epoch (not part of its time). Masked-LM tasks
// score the masked tokens: loss and accuracy per masked token, and the perplexity exp(loss).
struct EvalResult {
  // Per scored token (masked-LM) or sample; none where nothing was scored (no token masked in the
  // held-out samples), as HF's NaN says, rather than 0.
  std::optional<double> loss, accuracy;
  int64_t samples = 0;
  std::optional<double> perplexity;
  std::optional<double> pseudo_perplexity;  // exp(-mean log p(token | the rest)), each token masked alone
  int64_t pseudo_perplexity_tokens = 0;     // tokens it scored
  double seconds = 0;
};

// Scales gradients so their global L2 norm is at most max_norm, like clip_grad_norm_, but without
// reading the norm back to the host (LibTorch's version returns it as a double: a device sync).
void clip_gradients(const std::vector<torch::Tensor>& params, double max_norm);

// HF's get_linear_schedule_with_warmup: LR rises linearly over `warmup` steps, then falls
// linearly to 0 at `total`. `step` counts optimizer steps already taken (0-based).
double linear_schedule_lr(double peak_lr, int64_t step, int64_t warmup, int64_t total);

class Trainer {
 public:
  // `sync`: data-parallel gradient synchronisation; null for a single process. With it, this
  // rank reads its share of each step's samples (every world_size-th from its rank on).
  // `objective`: the task's loss around the model that trains (objective.hpp).
  Trainer(const TrainerConfig& config, TrainingObjective& objective, const PreparedData& data, torch::Device device,
          GradientSync* sync = nullptr);
  ~Trainer();
  // Trains until the plan is done, a stop is requested (interrupted) or a step fails (failed):
  // every outcome returns the records made so far, and no exception escapes.
  TrainRun run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested);
  // Loss and accuracy on the held-out samples, in eval mode, without gradients (and for masked-LM
  // tasks, the pseudo-perplexity of a seeded share of them).
  EvalResult evaluate();
  // Training FLOPs of one micro-batch as collated (its samples, padded length and, for sparse
  // masked-LM prediction, scored positions): each step's FLOPs are recorded from it.
  void set_flops_model(std::function<double(const Batch&)> train_flops_of_batch) {
    flops_of_batch_ = std::move(train_flops_of_batch);
  }
  // Records the run's last config.profile_steps steps with `profiler` (kept by the caller);
  // without one those steps are still left out of the summary, so every rank times the same steps.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }
  // Samples the GPU's clocks, power and throttling through each epoch (kept by the caller); each
  // epoch record carries the summary (EpochRecord::gpu).
  void set_gpu_monitor(GpuMonitor* monitor) { gpu_monitor_ = monitor; }

 private:
  struct EpochTotals;
  void build_optimizer();
  SamplerOptions sampler_options() const;
  void set_training_mode();
  // One epoch: its steps, then one wait for the device. Returns its record (steps 0: none ran).
  EpochRecord run_epoch(int64_t epoch, int64_t& global_step, PendingSteps& pending,
                        const std::vector<TrainObserver*>& observers, TrainRun& run);
  IterationRecord start_record(int64_t epoch, int64_t step, int64_t global_step) const;
  bool profiled(int64_t global_step) const;
  // The profiler starts and stops with the device idle, so its window holds whole steps.
  // Their time is added to the epoch's profiler_seconds (it is in no step).
  void start_profile(int64_t global_step, EpochRecord& epoch);
  void stop_profile(TrainRun& run, EpochRecord& epoch);
  // Runs `work`; an exception from it (a device error, the loader's thread, a lost peer) fails
  // the run with its message and `where()` (made only then: this wraps every step), keeping the
  // first error if there was one already.
  template <typename Where, typename Work>
  void fail_on_exception(TrainOutcome& outcome, Where&& where, Work&& work) const;
  // Hands finished steps to the observers, the run and the epoch's totals; fails the run on a
  // non-finite loss.
  void report(const std::vector<IterationRecord>& finished, const std::vector<TrainObserver*>& observers,
              EpochTotals& totals, TrainRun& run) const;
  EpochRecord finish_epoch_record(const EpochTotals& totals, double seconds, const TrainOutcome& outcome) const;
  StepOutputs run_step(const StepBatches& micro_batches, IterationRecord& record);
  ModelInputs on_device(const ModelInputs& host, bool non_blocking) const;
  // One micro-batch's forward and backward; returns its loss terms times `weight` (device scalars).
  // Data-parallel: the all-reduce wait it adds to `comm_waits`.
  LossTerms micro_step(const ModelInputs& inputs, const torch::Tensor& labels, double weight, bool last_micro_step,
                       std::vector<DeferredSeconds>& comm_waits);
  // After the micro-batches: unscale, clip, update, zero the gradients, update the loss scale.
  StepOutputs finish_step(const LossTerms& loss, IterationRecord& record);
  // train.cuda_graph: eager before kCudaGraphCaptureStep, captured at it, replayed after.
  StepOutputs graphed_step(const ModelInputs& inputs, const torch::Tensor& labels, IterationRecord& record);
  void synchronize() const;
  // Salazar et al.'s pseudo-perplexity over a seeded pseudo_perplexity_fraction of the eval
  // samples: each non-special token masked alone, one forward per token (batched per sample).
  void add_pseudo_perplexity(EvalResult& result);

  const TrainerConfig config_;
  TrainingObjective& objective_;
  torch::nn::Module& model_;  // objective_.trained()
  const PreparedData& data_;
  torch::Device device_;
  GradientSync* sync_ = nullptr;
  StepPlan plan_;
  BatchLoader loader_;
  bool batches_can_pad_;  // train.cuda_graph: the captured step keeps the mask unless no batch can pad
  std::function<double(const Batch&)> flops_of_batch_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<torch::Tensor> trainable_;
  std::unique_ptr<LossScaler> scaler_;
  const std::atomic<bool>* stop_requested_ = nullptr;
  std::unique_ptr<cuda::CapturedStep> graph_;  // train.cuda_graph, once captured
  StepProfiler* profiler_ = nullptr;
  GpuMonitor* gpu_monitor_ = nullptr;
  bool profiling_ = false;
  int64_t profile_first_step_ = 0, profile_last_step_ = 0;
  Clock::time_point profile_start_;
  double profile_overhead_seconds_ = 0;
};

}  // namespace tbench
