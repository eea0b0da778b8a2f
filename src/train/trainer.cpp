#include "tbench/trainer.hpp"

#include <chrono>
#include <cmath>

#include "tbench/loss_scaler.hpp"
#include "tbench/precision.hpp"

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

}  // namespace

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::completed: return "completed";
    case RunStatus::interrupted: return "interrupted";
    case RunStatus::failed: return "failed";
  }
  return "?";
}

StepPlan plan_steps(const TrainSpec& train, int64_t dataset_size, int64_t world_size) {
  StepPlan plan;
  plan.steps_per_epoch = dataset_size / (train.batch_size * train.grad_accum_steps * world_size);
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

Trainer::Trainer(const RunSpec& spec, SequenceClassifier& model, const Dataset& data, torch::Device device,
                 GradientSync* sync)
    : spec_(spec),
      model_(model),
      data_(data),
      device_(device),
      plan_(plan_steps(spec.train, data.size(), sync ? sync->world_size() : 1)),
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
  const auto options = [&](double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(spec_.train.lr).betas({0.9, 0.999}).eps(1e-8).weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(spec_.train.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  optimizer_ = std::make_unique<torch::optim::AdamW>(std::move(groups), torch::optim::AdamWOptions(spec_.train.lr));
}

void Trainer::synchronize() const {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
}

double Trainer::run_step(const std::vector<int64_t>& order, int64_t first_sample, IterationRecord& record) {
  const int64_t accum = spec_.train.grad_accum_steps, batch_size = spec_.train.batch_size;
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));

  for (int64_t micro = 0; micro < accum; ++micro) {
    const auto data_start = Clock::now();
    const auto begin = order.begin() + first_sample + micro * batch_size;
    Batch batch = data_.collate(std::vector<int64_t>(begin, begin + batch_size));
    const bool non_blocking = device_.is_cuda();
    ModelInputs inputs{batch.inputs.input_ids.to(device_, non_blocking),
                       batch.inputs.attention_mask.to(device_, non_blocking),
                       batch.inputs.token_type_ids.to(device_, non_blocking)};
    auto labels = batch.labels.to(device_, non_blocking);
    record.data_seconds += seconds_between(data_start, Clock::now());
    record.samples += batch.samples;
    record.tokens += batch.tokens;
    record.real_tokens += batch.real_tokens;

    torch::Tensor logits;
    {
      AutocastGuard autocast(spec_.precision, device_);
      logits = model_.forward(inputs);
    }
    auto loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
    if (sync_) sync_->before_backward(micro == accum - 1, stop_requested_->load());
    scaler_->scale(loss / static_cast<double>(accum)).backward();
    // Data-parallel: the all-reduces started during backward are awaited here, before the
    // optimizer (and the fp16 unscale and clipping) see the gradients.
    if (sync_) record.comm_wait_seconds += sync_->after_backward();
    loss_sum += loss.detach();
  }

  torch::Tensor found_inf;
  if (scaler_->enabled()) {
    record.loss_scale = scaler_->current_scale().item<double>();
    found_inf = scaler_->unscale(trainable_);
    record.skipped = found_inf.item<float>() != 0.0f;
  }
  if (spec_.train.max_grad_norm > 0 && !record.skipped) clip_gradients(trainable_, spec_.train.max_grad_norm);
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(record.lr);
  }
  if (!record.skipped) optimizer_->step();
  model_.zero_grad(/*set_to_none=*/true);
  if (scaler_->enabled()) scaler_->update(found_inf);
  // Reading the loss is this step's one host-device synchronisation point.
  return (loss_sum / static_cast<double>(accum)).item<double>();
}

TrainOutcome Trainer::run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested) {
  TrainOutcome outcome;
  spec_.train.dropout ? model_.train() : model_.eval();
  const int64_t samples_per_step = spec_.train.batch_size * spec_.train.grad_accum_steps;
  const auto run_start = Clock::now();
  int64_t global_step = 0;
  stop_requested_ = &stop_requested;

  for (int64_t epoch = 1; epoch <= plan_.epochs && outcome.status == RunStatus::completed; ++epoch) {
    // Every rank draws the same order (same seed) and takes its own every-world_size-th share.
    const auto order = sync_ ? shard_order(epoch_order(data_.size(), spec_.data.seed, epoch), sync_->rank(),
                                           sync_->world_size())
                             : epoch_order(data_.size(), spec_.data.seed, epoch);
    const int64_t steps = std::min(plan_.steps_per_epoch, plan_.total_steps - global_step);
    for (auto* o : observers) o->on_epoch_start(epoch, plan_.epochs, steps);

    EpochRecord summary;
    summary.epoch = epoch;
    double loss_sum = 0;
    const auto epoch_start = Clock::now();
    for (int64_t step = 1; step <= steps; ++step) {
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
      const auto step_start = Clock::now();
      try {
        record.loss = run_step(order, (step - 1) * samples_per_step, record);
        synchronize();
      } catch (const CommFailure& e) {
        outcome.status = RunStatus::failed;
        outcome.error = "epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": " + e.what();
        break;
      } catch (const c10::Error& e) {
        outcome.status = RunStatus::failed;
        const std::string what = e.what_without_backtrace();
        outcome.error = "epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": " +
                        (is_out_of_memory(what)
                             ? "out of memory at batch_size " + std::to_string(spec_.train.batch_size) +
                                   " (lower train.batch_size, raise train.grad_accum_steps): " + what
                             : what);
        break;
      }
      const auto step_end = Clock::now();
      record.seconds = seconds_between(step_start, step_end);
      record.ended_at = seconds_between(run_start, step_end);
      for (auto* o : observers) o->on_iteration(record);
      summary.steps += 1;
      summary.samples += record.samples;
      summary.tokens += record.tokens;
      loss_sum += record.loss;
      if (!std::isfinite(record.loss) && !record.skipped) {
        outcome.status = RunStatus::failed;
        outcome.error = "training loss became " + std::to_string(record.loss) + " at epoch " +
                        std::to_string(epoch) + " step " + std::to_string(step) +
                        " (try a lower train.lr, or bf16/fp32)";
        break;
      }
    }
    summary.seconds = seconds_between(epoch_start, Clock::now());
    // An epoch cut short by max_steps or a stop is not a whole epoch: its time is not an epoch time.
    summary.complete = summary.steps == plan_.steps_per_epoch && outcome.status == RunStatus::completed;
    if (summary.seconds > 0) {
      summary.samples_per_s = static_cast<double>(summary.samples) / summary.seconds;
      summary.tokens_per_s = static_cast<double>(summary.tokens) / summary.seconds;
      summary.it_per_s = static_cast<double>(summary.steps) / summary.seconds;
    }
    summary.loss = summary.steps > 0 ? loss_sum / static_cast<double>(summary.steps) : 0.0;
    if (summary.steps > 0) {
      for (auto* o : observers) o->on_epoch_end(summary);
    }
  }
  return outcome;
}

}  // namespace tbench
