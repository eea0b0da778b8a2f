#pragma once
// What a run measures: one record per optimizer step, one per epoch. Plain data; the trainer
// fills them, observers stream them, and the summary is computed from them.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/env/gpu_telemetry.hpp"

namespace tbench {

struct IterationRecord {
  int64_t epoch = 0;        // 1-based
  int64_t step = 0;         // optimizer step within the epoch, 1-based
  int64_t global_step = 0;  // optimizer step in the run, 1-based
  int64_t samples = 0;      // samples in this step (batch x accumulation)
  int64_t tokens = 0;       // computed tokens (padding included)
  int64_t real_tokens = 0;  // tokens that are not padding
  double train_flops = 0;   // analytic training FLOPs of the step at its padded lengths (0: unknown)
  double seconds = 0;       // wall time of the whole step: data, forward, backward, optimizer
  // Part of `seconds` the step waited for its batches and spent issuing their host-to-device
  // copies; collation itself runs ahead on the loader's thread and is not in it.
  double data_seconds = 0;
  double comm_wait_seconds = 0;  // part of `seconds` spent waiting for gradient all-reduces (0 single-process)
  double loss = 0;          // mean training loss over the step's micro-batches
  double lr = 0;            // learning rate this step used
  double loss_scale = 1;    // fp16 dynamic loss scale (1 otherwise)
  bool skipped = false;     // fp16: step skipped for non-finite gradients
  bool warmup = false;      // excluded from the summary statistics
  bool profiled = false;    // ran under timing.profile_steps' profiler: excluded from the summary too
  // The loss's parts (distillation: ce, mlm, cos), unweighted, averaged over the micro-batches
  // like `loss`; empty when the loss has one part.
  std::vector<std::pair<std::string, double>> loss_terms;
  // When the step finished on its device, in seconds since the training loop began (not since
  // the process or the run started: model building and data preparation come before it).
  double ended_at = 0;
  // CUDA only (StepTime): the host's time to issue the step, and whether the GPU had run all
  // earlier work when the step began (it waited for the host).
  std::optional<double> host_seconds;
  std::optional<bool> device_idle_at_start;
};

struct EpochRecord {
  int64_t epoch = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  int64_t tokens = 0;
  double seconds = 0;  // wall time of the epoch, first step to last
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double it_per_s = 0;
  double loss = 0;     // mean training loss over the epoch's steps
  bool complete = true;  // false if the run stopped inside this epoch
  double step_seconds = 0;  // sum of its steps' `seconds`; `seconds` minus this is time between steps
  // Part of `seconds` spent starting and stopping timing.profile_steps' profiler (with the device
  // drained both times and the trace written), in no step: left out of the timing check.
  double profiler_seconds = 0;
  // Memory high-water marks of the epoch; -1 (null in JSON) where not measured. The allocator's
  // peaks (CUDA) are reset at the epoch's start; peak_rss_bytes is the process's peak so far.
  int64_t peak_allocated_bytes = -1;
  int64_t peak_reserved_bytes = -1;
  int64_t peak_rss_bytes = -1;
  // CUDA runs where NVML answers: the GPU's clocks, power, energy and throttling over the epoch.
  std::optional<GpuTelemetry> gpu;
  // Held-out evaluation after the epoch (data.eval_fraction); eval_samples 0 = none. Its time is
  // not part of `seconds`.
  int64_t eval_samples = 0;
  std::optional<double> eval_loss, eval_accuracy;  // none where nothing was scored (no masked token)
  std::optional<double> eval_perplexity;  // masked-LM tasks: exp(eval_loss per masked token)
  std::optional<double> eval_pseudo_perplexity;  // mlm.pseudo_perplexity_fraction: each token masked alone
  int64_t eval_pseudo_perplexity_tokens = 0;
  double eval_seconds = 0;
};

void to_json(nlohmann::json& j, const IterationRecord& r);
void to_json(nlohmann::json& j, const EpochRecord& r);
void from_json(const nlohmann::json& j, IterationRecord& r);

}  // namespace tbench
