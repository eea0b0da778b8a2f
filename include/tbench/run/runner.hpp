#pragma once
// One benchmark run, end to end, as a chain of values:
//   RunSpec -> RunPlan (the spec's and data's checks, data prepared)
//           -> TrainRun (records and outcome, from the trainer)
//           -> Result (summary, peak, MFU, data-parallel merge) -> the result file.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tbench/dist/dist.hpp"
#include "tbench/errors.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {

struct RunOptions {
  bool force = false;  // overwrite an existing result
  bool quiet = false;  // no progress output
  std::string dump_params;  // tests: write the trained parameters here (data-parallel: <path>.rank<N>)
  int64_t fail_at_step = 0;  // tests: this global step fails (0: none), as a full disk under the stream would
  int64_t hang_at_step = 0;  // tests: the host stays in this global step's record for good (0: never), its process alive
  bool die_after_training = false;  // tests: the process ends right after training, as a killed one would
  // tests: a Ctrl-C as training ends (the environment's TBENCH_TEST_INTERRUPT_AFTER_TRAINING, which
  // reaches a sweep's points too), without racing a signal sent from outside.
  bool interrupt_after_training = false;
};

// Everything decided before any tensor is allocated. Building it performs every check on the spec
// and its data, which is all `tbench validate` does; `run` alone finds an output it may not write
// and a weights file whose contents do not fit the model (both before training).
struct RunPlan {
  RunSpec spec;
  ModelConfig model;
  std::optional<ModelConfig> teacher;  // task distillation
  ModelCost cost;  // of the trained model; train_flops_per_sample includes a teacher's forward
  TrainerConfig trainer;
  StepPlan steps;
  int threads = 1;          // CPU intra-op threads the run will use
  std::string output_path;  // placeholders expanded
  LaunchEnv launch;         // the launcher's environment; world_size 1 without one
  std::shared_ptr<const PreparedData> data;  // read, tokenized (or cached) and checked
};

// The checks of prepare_run that read no data: the model (and teacher) the spec names, that the
// task and seq_len fit them, and the device. A sweep runs them on its points before the first runs.
struct SpecModels {
  ModelConfig model;
  std::optional<ModelConfig> teacher;  // task distillation
};
SpecModels check_models_and_device(const RunSpec& spec);

RunPlan prepare_run(const RunSpec& spec);

// Where a result's recorded spec (its "spec") differs from one that resolves to `asked`, each as
// "field <recorded> -> <asked>". Left out: bookkeeping (name, output and the sweep section:
// is_bookkeeping_field), fields the result does not record (an older tbench), and the choices a
// run makes (threads, model.attention, ...) where `asked` leaves them open. A resumed sweep keeps
// a completed point only when this is empty.
std::vector<std::string> spec_changes(const nlohmann::json& asked, const nlohmann::json& recorded);

// Runs the plan and writes its result. Returns the process exit code: ok, interrupted (the
// result is still written, marked "interrupted") or run_failed (written, marked "failed").
ExitCode execute_run(const RunPlan& plan, const RunOptions& options);

// The model config a spec names (shipped or from a file), with the spec's switches that change
// how much work it does (model.sparse_last_layer, model.unpad, and where unpadded attention runs);
// errors name the spec and the field.
ModelConfig model_config_for(const RunSpec& spec);
// A distillation's teacher config (distillation.teacher), unpadded as the student is.
ModelConfig teacher_config_for(const RunSpec& spec);
// What a run of `spec` computes beside its model's encoder (its task's head, `teacher`'s forward),
// for the FLOPs that model.unpad skips.
TaskWork task_work(const RunSpec& spec, const ModelConfig* teacher);

// What the training loop takes from a spec, launched as `launch` (which decides, with the spec,
// whether the step is captured: resolve_cuda_graph).
TrainerConfig trainer_config(const RunSpec& spec, const LaunchEnv& launch);

// train.cuda_graph as the run uses it: as the spec says, or, unset, wherever the step can be
// captured (cuda_graph_obstacles finds nothing and `launch` is one process). `why` is the run
// log's line on that choice where it was made for an unset field on CUDA, else empty.
struct CudaGraphChoice {
  bool captured = false;
  std::string why;
};
CudaGraphChoice resolve_cuda_graph(const RunSpec& spec, const LaunchEnv& launch);

// What model.attention's `auto` weighs for the model that trains (a distillation teacher, frozen,
// takes it with fused_cpu_dropout false).
layers::AttentionUse attention_use_of(const RunSpec& spec, const ModelConfig& model);

}  // namespace tbench
