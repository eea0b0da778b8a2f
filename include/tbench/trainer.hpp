#pragma once
// The training loop: epochs x optimizer steps x accumulation micro-steps, timed per step.
// It knows nothing of files or terminals; observers receive each record as it is made.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/cuda.hpp"
#include "tbench/data.hpp"
#include "tbench/data_sources.hpp"
#include "tbench/errors.hpp"
#include "tbench/loss_scaler.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/optimizer.hpp"
#include "tbench/records.hpp"
#include "tbench/spec.hpp"

namespace tbench {

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_epoch_start(int64_t epoch, int64_t epochs, int64_t steps_in_epoch) {}
  virtual void on_iteration(const IterationRecord& record) {}
  virtual void on_epoch_end(const EpochRecord& record) {}
};

enum class RunStatus { completed, interrupted, failed };
const char* to_string(RunStatus s);

struct TrainOutcome {
  RunStatus status = RunStatus::completed;
  std::string error;  // why it failed
  std::string timing_method;  // how steps were timed: "steady_clock" (CPU) or "cuda_events"
};

// Data-parallel gradient synchronisation, as the trainer sees it (the implementation, on c10d, is
// in src/dist/). A single-process run has none: the trainer then does exactly what it did before.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Before each micro-step's backward. `last_micro_step`: the optimizer step follows it (the
  // gradients are reduced then, or after every micro-step with dist.sync_every_micro_step).
  // `stop`: this rank was asked to stop; the request travels with the gradients.
  virtual void before_backward(bool last_micro_step, bool stop) = 0;
  // After that backward: waits for the all-reduces it started and leaves the mean gradient over
  // all ranks in every parameter's .grad. Returns the seconds spent waiting. Throws CommFailure.
  virtual double after_backward() = 0;
  // Some rank asked to stop in the last reduced step: every rank stops after the same step.
  virtual bool stop_agreed() const = 0;
};

// A peer rank failed, left or stopped answering: the run cannot go on (exit 4).
class CommFailure : public Error {
 public:
  explicit CommFailure(const std::string& message) : Error(ExitCode::run_failed, message) {}
};

// How many steps a spec asks for, from the dataset size.
struct StepPlan {
  int64_t steps_per_epoch = 0;  // optimizer steps (drop_last: partial steps are not taken)
  int64_t total_steps = 0;      // min(epochs x steps_per_epoch, max_steps if set)
  int64_t epochs = 0;           // epochs that will start
};
// With `world_size` processes, one optimizer step consumes batch x accumulation x world_size samples.
// drop_last false: a last, partial step takes the remainder.
StepPlan plan_steps(const TrainSpec& train, int64_t dataset_size, int64_t world_size = 1, bool drop_last = true);

// Held-out loss and accuracy, measured after an epoch (not part of its time).
struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t samples = 0;
  double seconds = 0;
};

// HF's get_linear_schedule_with_warmup: LR rises linearly over `warmup` steps, then falls
// linearly to 0 at `total`. `step` counts optimizer steps already taken (0-based).
double linear_schedule_lr(double peak_lr, int64_t step, int64_t warmup, int64_t total);

class Trainer {
 public:
  // `sync`: data-parallel gradient synchronisation; null for a single process. With it, this
  // rank reads its share of each step's samples (every world_size-th from its rank on).
  Trainer(const RunSpec& spec, SequenceClassifier& model, const PreparedData& data, torch::Device device,
          GradientSync* sync = nullptr);
  TrainOutcome run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested);
  // Loss and accuracy on the held-out samples, in eval mode, without gradients.
  EvalResult evaluate();
  // Training FLOPs of one sample padded to a length: each step's FLOPs are recorded from it.
  void set_flops_model(std::function<double(int64_t padded_length)> train_flops_per_sample) {
    flops_per_sample_ = std::move(train_flops_per_sample);
  }

 private:
  void build_optimizer();
  SamplerOptions sampler_options() const;
  StepOutputs run_step(const StepBatches& micro_batches, IterationRecord& record);
  // One micro-batch's forward and backward; returns its loss times `weight` (a device scalar).
  torch::Tensor micro_step(const ModelInputs& inputs, const torch::Tensor& labels, double weight, bool last_micro_step,
                           IterationRecord& record);
  // After the micro-batches: unscale, clip, update, zero the gradients, update the loss scale.
  StepOutputs finish_step(const torch::Tensor& loss, IterationRecord& record);
  // train.cuda_graph: eager at step 1, captured at step 2 (and run once for real), replayed after.
  StepOutputs graphed_step(const ModelInputs& inputs, const torch::Tensor& labels, IterationRecord& record);
  void synchronize() const;

  const RunSpec& spec_;
  SequenceClassifier& model_;
  const PreparedData& data_;
  torch::Device device_;
  StepPlan plan_;
  BatchLoader loader_;
  std::function<double(int64_t)> flops_per_sample_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<torch::Tensor> trainable_;
  std::unique_ptr<LossScaler> scaler_;
  GradientSync* sync_ = nullptr;
  const std::atomic<bool>* stop_requested_ = nullptr;
  std::unique_ptr<cuda::CapturedStep> graph_;  // train.cuda_graph, once captured
};

}  // namespace tbench
