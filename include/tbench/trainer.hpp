#pragma once
// The training loop: epochs x optimizer steps x accumulation micro-steps, timed per step.
// It knows nothing of files or terminals; observers receive each record as it is made.
#include <atomic>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/data.hpp"
#include "tbench/loss_scaler.hpp"
#include "tbench/models/classifier.hpp"
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
};

// How many steps a spec asks for, from the dataset size.
struct StepPlan {
  int64_t steps_per_epoch = 0;  // optimizer steps (drop_last: partial steps are not taken)
  int64_t total_steps = 0;      // min(epochs x steps_per_epoch, max_steps if set)
  int64_t epochs = 0;           // epochs that will start
};
StepPlan plan_steps(const TrainSpec& train, int64_t dataset_size);

// HF's get_linear_schedule_with_warmup: LR rises linearly over `warmup` steps, then falls
// linearly to 0 at `total`. `step` counts optimizer steps already taken (0-based).
double linear_schedule_lr(double peak_lr, int64_t step, int64_t warmup, int64_t total);

class Trainer {
 public:
  Trainer(const RunSpec& spec, SequenceClassifier& model, const Dataset& data, torch::Device device);
  TrainOutcome run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested);

 private:
  void build_optimizer();
  double run_step(const std::vector<int64_t>& order, int64_t first_sample, IterationRecord& record);
  void synchronize() const;

  const RunSpec& spec_;
  SequenceClassifier& model_;
  const Dataset& data_;
  torch::Device device_;
  StepPlan plan_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::vector<torch::Tensor> trainable_;
  std::unique_ptr<LossScaler> scaler_;
};

}  // namespace tbench
