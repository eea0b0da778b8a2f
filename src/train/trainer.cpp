#include "tbench/trainer.hpp"

#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "tbench/device_memory.hpp"
#include "tbench/loss_scaler.hpp"
#include "tbench/pending_steps.hpp"
#include "tbench/precision.hpp"
#include "tbench/step_timer.hpp"
#include "tbench/torch_features.hpp"

namespace tbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// HF's Trainer exempts LayerNorm weights and every parameter with "bias" in its name (XLNet's
// r_w_bias, r_r_bias and r_s_bias included) from weight decay.
bool exempt_from_weight_decay(const std::string& name) {
  return name.find("bias") != std::string::npos || name.find("LayerNorm") != std::string::npos ||
         name.find("layer_norm") != std::string::npos;
}

// Scales gradients so their global L2 norm is at most max_norm, like clip_grad_norm_, but without
// reading the norm back to the host (LibTorch's version returns it as a double: a device sync).
void clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().detach().norm(2).to(torch::kFloat));
  }
  if (norms.empty()) return;
  const auto total = torch::stack(norms).norm(2);
  const auto scale = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().detach().mul_(scale.to(p.grad().scalar_type()));
  }
}

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos;
}

std::string describe_step_error(const std::string& what, int64_t batch_size) {
  if (!is_out_of_memory(what)) return what;
  return "out of memory at batch_size " + std::to_string(batch_size) +
         " (lower train.batch_size, raise train.grad_accum_steps): " + what;
}

// Steps the host may run ahead of the device before it waits for the oldest: enough to keep the
// GPU fed, few enough that a non-finite loss stops the run within a few steps.
constexpr std::size_t kMaxPendingSteps = 4;

#if TBENCH_HAS_CUDA_GRAPH_STEP
// train.cuda_graph: the global step at which the step is captured (after one eager step).
constexpr int64_t kCaptureStep = 2;
#endif

}  // namespace

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::completed: return "completed";
    case RunStatus::interrupted: return "interrupted";
    case RunStatus::failed: return "failed";
  }
  return "?";
}

StepPlan plan_steps(const TrainSpec& train, int64_t dataset_size, int64_t world_size, bool drop_last) {
  StepPlan plan;
  SamplerOptions sampler;
  sampler.batch_size = train.batch_size;
  sampler.accum_steps = train.grad_accum_steps;
  sampler.world_size = static_cast<int>(world_size);
  sampler.drop_last = drop_last;
  plan.steps_per_epoch = steps_per_epoch(dataset_size, sampler);
  plan.total_steps = plan.steps_per_epoch * train.epochs;
  if (train.max_steps > 0) plan.total_steps = std::min(plan.total_steps, train.max_steps);
  plan.epochs = plan.steps_per_epoch == 0 ? 0 : (plan.total_steps + plan.steps_per_epoch - 1) / plan.steps_per_epoch;
  return plan;
}

double linear_schedule_lr(double peak_lr, int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return peak_lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
  const double remaining = static_cast<double>(total - step) / static_cast<double>(std::max<int64_t>(1, total - warmup));
  return peak_lr * std::max(0.0, remaining);
}

Trainer::Trainer(const RunSpec& spec, SequenceClassifier& model, const PreparedData& data, torch::Device device,
                 GradientSync* sync)
    : spec_(spec),
      model_(model),
      data_(data),
      device_(device),
      plan_(plan_steps(spec.train, data.train.size(), sync ? sync->world_size() : 1, spec.data.drop_last)),
      // Batches are pinned for CUDA so their copies can overlap the step before.
      loader_(data.train, data.collate, spec.data.prefetch, device.is_cuda()),
      scaler_(std::make_unique<LossScaler>(spec.precision == Precision::fp16, device)),
      sync_(sync) {
  build_optimizer();
}

void Trainer::build_optimizer() {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& item : model_.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    trainable_.push_back(item.value());
    (exempt_from_weight_decay(item.key()) ? no_decay : decay).push_back(item.value());
  }
  std::vector<AdamWGroup> groups = {{decay, spec_.train.weight_decay}, {no_decay, 0.0}};
  AdamWSettings settings;
  settings.lr = spec_.train.lr;  // β = (0.9, 0.999), ε = 1e-8: HF's AdamW defaults
  optimizer_ = make_adamw(parse_optimizer_impl(spec_.train.optimizer_impl), std::move(groups), settings, device_,
                          /*capturable=*/spec_.train.cuda_graph);
}

void Trainer::synchronize() const {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
}

SamplerOptions Trainer::sampler_options() const {
  SamplerOptions o;
  o.batch_size = spec_.train.batch_size;
  o.accum_steps = spec_.train.grad_accum_steps;
  o.world_size = sync_ ? sync_->world_size() : 1;
  o.rank = sync_ ? sync_->rank() : 0;
  o.bucket_by_length = spec_.data.bucket_by_length;
  o.drop_last = spec_.data.drop_last;
  o.seed = spec_.data.seed;
  return o;
}

StepOutputs Trainer::run_step(const StepBatches& micro_batches, IterationRecord& record) {
  const int64_t micro_steps = static_cast<int64_t>(micro_batches.size());
  int64_t step_samples = 0;
  for (const auto& micro : micro_batches) step_samples += static_cast<int64_t>(micro.size());
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
  optimizer_->set_lr(record.lr);  // before the step's work: a replayed graph reads it on the device

  for (int64_t micro = 0; micro < micro_steps; ++micro) {
    // Data time is what the step waits for its batch: collation runs ahead on the loader's thread.
    const auto data_start = Clock::now();
    Batch batch = loader_.next();
    const bool non_blocking = device_.is_cuda();
    ModelInputs inputs{batch.inputs.input_ids.to(device_, non_blocking),
                       batch.inputs.attention_mask.to(device_, non_blocking),
                       batch.inputs.token_type_ids.to(device_, non_blocking)};
    auto labels = batch.labels.to(device_, non_blocking);
    record.data_seconds += seconds_between(data_start, Clock::now());
    record.samples += batch.samples;
    record.tokens += batch.tokens;
    record.real_tokens += batch.real_tokens;
    if (flops_per_sample_) record.train_flops += static_cast<double>(batch.samples) * flops_per_sample_(batch.inputs.input_ids.size(1));

    if (spec_.train.cuda_graph) return graphed_step(inputs, labels, record);  // one micro-batch per step
    // Each micro-batch weighs by its share of the step's samples (they differ only in a last,
    // partial step), so the step's gradient is the mean over all its samples.
    const double weight = static_cast<double>(batch.samples) / static_cast<double>(step_samples);
    loss_sum += micro_step(inputs, labels, weight, micro == micro_steps - 1, record);
  }
  return finish_step(loss_sum, record);
}

torch::Tensor Trainer::micro_step(const ModelInputs& inputs, const torch::Tensor& labels, double weight,
                                  bool last_micro_step, IterationRecord& record) {
  torch::Tensor logits;
  {
    AutocastGuard autocast(spec_.precision, device_);
    logits = model_.forward(inputs);
  }
  auto loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
  if (sync_) sync_->before_backward(last_micro_step, stop_requested_->load());
  scaler_->scale(loss * weight).backward();
  // Data-parallel: the all-reduces started during backward are awaited here, before the
  // optimizer (and the fp16 unscale and clipping) see the gradients.
  if (sync_) record.comm_wait_seconds += sync_->after_backward();
  return loss.detach() * weight;
}

StepOutputs Trainer::finish_step(const torch::Tensor& loss, IterationRecord& record) {
  StepOutputs outputs;
  outputs.loss = loss;
  torch::Tensor found_inf;
  if (scaler_->enabled()) {
    outputs.loss_scale = scaler_->current_scale().clone();  // update() below changes it in place
    found_inf = scaler_->unscale(trainable_);
    outputs.found_inf = found_inf;
    // Unless the optimizer can skip on the device, the host must know now whether to step.
    if (!optimizer_->skips_on_device()) record.skipped = found_inf.item<float>() != 0.0f;
  }
  if (spec_.train.max_grad_norm > 0 && !record.skipped) clip_gradients(trainable_, spec_.train.max_grad_norm);
  if (found_inf.defined() && optimizer_->skips_on_device()) {
    optimizer_->step_unless_inf(found_inf);
  } else if (!record.skipped) {
    optimizer_->step();
  }
  model_.zero_grad(/*set_to_none=*/true);
  if (scaler_->enabled()) scaler_->update(found_inf);
  // Nothing here waits for the device: the loss and the flags are read once the step has run.
  return outputs;
}

StepOutputs Trainer::graphed_step(const ModelInputs& inputs, const torch::Tensor& labels, IterationRecord& record) {
#if TBENCH_HAS_CUDA_GRAPH_STEP
  if (graph_) return graph_->replay(inputs, labels);
  // Step 1 runs eagerly, on the default stream, so lazy set-up happens before any capture.
  if (record.global_step < kCaptureStep) return finish_step(micro_step(inputs, labels, 1.0, true, record), record);
  StepOutputs outputs;
  graph_ = cuda::capture_step(device_, inputs, labels,
                              [this](const ModelInputs& in, const torch::Tensor& y) {
                                // The captured step touches no host-side field of its record: with
                                // the fused AdamW nothing is read back (the spec requires it).
                                IterationRecord unused;
                                return finish_step(micro_step(in, y, 1.0, true, unused), unused);
                              },
                              outputs);
  return outputs;
#else
  throw std::logic_error("train.cuda_graph in a build without CUDA graph support (the spec should have refused it)");
#endif
}

TrainOutcome Trainer::run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested) {
  TrainOutcome outcome;
  spec_.train.dropout ? model_.train() : model_.eval();
  int64_t global_step = 0;
  stop_requested_ = &stop_requested;
  // Steps are timed where they run; their records leave in order once known (at once on CPU).
  PendingSteps pending(make_step_timer(device_), kMaxPendingSteps);
  outcome.timing_method = pending.timing_method();

  for (int64_t epoch = 1; epoch <= plan_.epochs && outcome.status == RunStatus::completed; ++epoch) {
    // Every rank plans the same steps (same seed) and takes its own share of each.
    auto epoch_steps = plan_epoch(data_.train, sampler_options(), epoch);
    const int64_t steps = std::min(plan_.steps_per_epoch, plan_.total_steps - global_step);
    epoch_steps.resize(static_cast<std::size_t>(steps));
    loader_.start_epoch(epoch_steps);
    for (auto* o : observers) o->on_epoch_start(epoch, plan_.epochs, steps);

    EpochRecord summary;
    summary.epoch = epoch;
    double loss_sum = 0;
    // Finished steps go to the observers and into the epoch's totals, in step order.
    const auto report = [&](const std::vector<IterationRecord>& finished) {
      for (const auto& record : finished) {
        for (auto* o : observers) o->on_iteration(record);
        summary.steps += 1;
        summary.samples += record.samples;
        summary.tokens += record.tokens;
        summary.step_seconds += record.seconds;
        loss_sum += record.loss;
        if (!std::isfinite(record.loss) && !record.skipped && outcome.status == RunStatus::completed) {
          outcome.status = RunStatus::failed;
          outcome.error = "training loss became " + std::to_string(record.loss) + " at epoch " +
                          std::to_string(record.epoch) + " step " + std::to_string(record.step) +
                          " (try a lower train.lr, or bf16/fp32)";
        }
      }
    };
    reset_memory_peaks(device_);
    const auto epoch_start = Clock::now();
    for (int64_t step = 1; step <= steps && outcome.status == RunStatus::completed; ++step) {
      // Data-parallel ranks stop together, after the step in which any of them asked to.
      if (sync_ ? sync_->stop_agreed() : stop_requested.load()) {
        outcome.status = RunStatus::interrupted;
        break;
      }
      IterationRecord record;
      record.epoch = epoch;
      record.step = step;
      record.global_step = ++global_step;
      record.warmup = global_step <= spec_.timing.warmup_steps;
      record.lr = linear_schedule_lr(spec_.train.lr, global_step - 1, spec_.train.warmup_steps, plan_.total_steps);
      try {
        pending.begin_step();
        const StepOutputs outputs = run_step(epoch_steps[static_cast<std::size_t>(step - 1)], record);
        pending.end_step(std::move(record), outputs);
        report(pending.take_finished(/*wait_for_all=*/false));
      } catch (const CommFailure& e) {
        outcome.status = RunStatus::failed;
        outcome.error = "epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": " + e.what();
      } catch (const c10::Error& e) {
        outcome.status = RunStatus::failed;
        outcome.error = "epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": " +
                        describe_step_error(e.what_without_backtrace(), spec_.train.batch_size);
      }
    }
    // The epoch ends when its last step has run on the device: one wait, here.
    try {
      report(pending.take_finished(/*wait_for_all=*/true));
    } catch (const c10::Error& e) {  // a device error surfacing late; the first error is kept
      if (outcome.status != RunStatus::failed) {
        outcome.status = RunStatus::failed;
        outcome.error = "epoch " + std::to_string(epoch) + ": " +
                        describe_step_error(e.what_without_backtrace(), spec_.train.batch_size);
      }
    }
    summary.seconds = seconds_between(epoch_start, Clock::now());
    const MemoryPeaks memory = memory_peaks(device_);
    summary.peak_allocated_bytes = memory.allocated_bytes;
    summary.peak_reserved_bytes = memory.reserved_bytes;
    summary.peak_rss_bytes = memory.rss_bytes;
    // An epoch cut short by max_steps or a stop is not a whole epoch: its time is not an epoch time.
    summary.complete = summary.steps == plan_.steps_per_epoch && outcome.status == RunStatus::completed;
    if (summary.seconds > 0) {
      summary.samples_per_s = static_cast<double>(summary.samples) / summary.seconds;
      summary.tokens_per_s = static_cast<double>(summary.tokens) / summary.seconds;
      summary.it_per_s = static_cast<double>(summary.steps) / summary.seconds;
    }
    summary.loss = summary.steps > 0 ? loss_sum / static_cast<double>(summary.steps) : 0.0;
    if (data_.eval.size() > 0 && summary.steps > 0 && outcome.status == RunStatus::completed) {
      const EvalResult eval = evaluate();
      summary.eval_loss = eval.loss;
      summary.eval_accuracy = eval.accuracy;
      summary.eval_samples = eval.samples;
      summary.eval_seconds = eval.seconds;
    }
    if (summary.steps > 0) {
      for (auto* o : observers) o->on_epoch_end(summary);
    }
  }
  return outcome;
}

EvalResult Trainer::evaluate() {
  const auto start = Clock::now();
  EvalResult result;
  torch::NoGradGuard no_grad;
  model_.eval();
  const auto& samples = data_.eval;
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
  torch::Tensor correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device_));
  for (int64_t first = 0; first < samples.size(); first += spec_.train.batch_size) {
    std::vector<int64_t> indices(static_cast<std::size_t>(std::min(spec_.train.batch_size, samples.size() - first)));
    std::iota(indices.begin(), indices.end(), first);
    const Batch batch = collate(samples, indices, data_.collate);
    const ModelInputs inputs{batch.inputs.input_ids.to(device_), batch.inputs.attention_mask.to(device_),
                             batch.inputs.token_type_ids.to(device_)};
    const auto labels = batch.labels.to(device_);
    torch::Tensor logits;
    {
      AutocastGuard autocast(spec_.precision, device_);
      logits = model_.forward(inputs).to(torch::kFloat);
    }
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .to(torch::kDouble);
    correct += logits.argmax(-1).eq(labels).sum();
  }
  result.samples = samples.size();
  result.loss = loss_sum.item<double>() / static_cast<double>(result.samples);
  result.accuracy = static_cast<double>(correct.item<int64_t>()) / static_cast<double>(result.samples);
  spec_.train.dropout ? model_.train() : model_.eval();
  synchronize();
  result.seconds = seconds_between(start, Clock::now());
  return result;
}

}  // namespace tbench
