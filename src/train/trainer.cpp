#include "tbench/train/trainer.hpp"

#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "tbench/cuda/cuda.hpp"
#include "tbench/env/device_memory.hpp"
#include "tbench/env/gpu_telemetry.hpp"
#include "tbench/train/loss_scaler.hpp"
#include "tbench/train/pending_steps.hpp"
#include "tbench/train/precision.hpp"
#include "tbench/timing/clock.hpp"
#include "tbench/timing/step_timer.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/torch_error_text.hpp"

namespace tbench {
namespace {

// A step's loss terms, summed over its micro-batches (each already weighted by its share).
void add_terms(LossTerms& sum, const LossTerms& micro) {
  if (!sum.total.defined()) {
    sum = micro;
    return;
  }
  sum.total = sum.total + micro.total;
  for (std::size_t i = 0; i < sum.parts.size(); ++i) sum.parts[i] = sum.parts[i] + micro.parts[i];
}

// HF's Trainer exempts LayerNorm weights and every parameter with "bias" in its name (XLNet's
// r_w_bias, r_r_bias and r_s_bias included) from weight decay.
bool exempt_from_weight_decay(const std::string& name) {
  return name.find("bias") != std::string::npos || name.find("LayerNorm") != std::string::npos ||
         name.find("layer_norm") != std::string::npos;
}

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos;
}

std::string describe_step_error(const std::string& what, int64_t batch_size, bool cuda_graph) {
  if (!is_out_of_memory(what)) return what;
  return "out of memory at batch_size " + std::to_string(batch_size) + " (lower train.batch_size" +
         (cuda_graph ? ", or set train.cuda_graph=false: a captured step keeps a memory pool of its own"
                     : ", raise train.grad_accum_steps") +
         "): " + what;
}

// Steps the host may run ahead of the device before it waits for the oldest: enough to keep the
// GPU fed, few enough that a non-finite loss stops the run within a few steps.
constexpr std::size_t kMaxPendingSteps = 4;

}  // namespace

// torch.nn.utils.clip_grad_norm_ (foreach): the global L2 norm over every gradient, and all of
// them scaled by max_norm / (norm + 1e-6) where that is below 1. The foreach ops take one launch
// per group of same-typed gradients (their fast path needs one dtype, the scale's included)
// instead of two per parameter (~400 a step for BERT-base), and nothing is read on the host, so
// a CUDA graph captures it.
void clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  std::map<torch::ScalarType, std::vector<torch::Tensor>> grads_by_type;
  for (const auto& p : params) {
    if (p.grad().defined()) grads_by_type[p.grad().scalar_type()].push_back(p.grad().detach());
  }
  if (grads_by_type.empty()) return;
  std::vector<torch::Tensor> norms;
  for (const auto& [type, grads] : grads_by_type) {
    for (const auto& norm : at::_foreach_norm(grads, 2)) norms.push_back(norm.to(torch::kFloat));
  }
  const auto total = torch::stack(norms).norm(2);
  const auto scale = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (auto& [type, grads] : grads_by_type) {
#if TBENCH_HAS_FOREACH_MUL_BY_TENSOR
    at::_foreach_mul_(grads, scale.to(type));
#else
    for (auto& grad : grads) grad.mul_(scale.to(type));
#endif
  }
}

StepPlan plan_steps(const TrainerConfig& config, int64_t dataset_size, int64_t world_size) {
  StepPlan plan;
  plan.steps_per_epoch = steps_per_epoch(dataset_size, sampler_options(config, static_cast<int>(world_size), 0));
  plan.total_steps = plan.steps_per_epoch * config.epochs;
  if (config.max_steps > 0) plan.total_steps = std::min(plan.total_steps, config.max_steps);
  plan.epochs = plan.steps_per_epoch == 0 ? 0 : (plan.total_steps + plan.steps_per_epoch - 1) / plan.steps_per_epoch;
  return plan;
}

double linear_schedule_lr(double peak_lr, int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return peak_lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
  const double remaining = static_cast<double>(total - step) / static_cast<double>(std::max<int64_t>(1, total - warmup));
  return peak_lr * std::max(0.0, remaining);
}

Trainer::Trainer(const TrainerConfig& config, TrainingObjective& objective, const PreparedData& data,
                 torch::Device device, GradientSync* sync)
    : config_(config),
      objective_(objective),
      model_(objective.trained()),
      data_(data),
      device_(device),
      sync_(sync),
      plan_(plan_steps(config, data.train.size(), sync ? sync->world_size() : 1)),
      // Batches are pinned for CUDA so their copies can overlap the step before.
      loader_(data.train, data.collate, config.prefetch, device.is_cuda()),
      batches_can_pad_(config.cuda_graph && batches_can_pad(data.train, data.collate)),
      scaler_(std::make_unique<LossScaler>(config.precision == Precision::fp16, device)) {
  build_optimizer();
}

Trainer::~Trainer() = default;

void Trainer::build_optimizer() {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& item : model_.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    trainable_.push_back(item.value());
    (exempt_from_weight_decay(item.key()) ? no_decay : decay).push_back(item.value());
  }
  std::vector<AdamWGroup> groups = {{decay, config_.weight_decay}, {no_decay, 0.0}};
  AdamWSettings settings;
  settings.lr = config_.lr;  // β = (0.9, 0.999), ε = 1e-8: HF's AdamW defaults
  optimizer_ = make_adamw(config_.optimizer, std::move(groups), settings, device_, /*capturable=*/config_.cuda_graph);
}

void Trainer::synchronize() const {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
}

// HF fine-tuning trains with dropout on; train.dropout false measures the loop without it.
void Trainer::set_training_mode() { config_.dropout ? model_.train() : model_.eval(); }

SamplerOptions sampler_options(const TrainerConfig& config, int world_size, int rank) {
  SamplerOptions o;
  o.batch_size = config.batch_size;
  o.accum_steps = config.grad_accum_steps;
  o.world_size = world_size;
  o.rank = rank;
  o.bucket_by_length = config.bucket_by_length;
  o.drop_last = config.drop_last;
  o.seed = config.data_seed;
  return o;
}

SamplerOptions Trainer::sampler_options() const {
  return tbench::sampler_options(config_, sync_ ? sync_->world_size() : 1, sync_ ? sync_->rank() : 0);
}

ModelInputs Trainer::on_device(const ModelInputs& host, bool non_blocking) const {
  // The optional inputs (a task's own, or none at all for permutation LM's mask) stay undefined.
  const auto moved = [&](const torch::Tensor& t) { return t.defined() ? moved_to(t, device_, non_blocking) : t; };
  ModelInputs inputs{moved(host.input_ids), moved(host.attention_mask), moved(host.token_type_ids), host.has_padding};
  inputs.scored_positions = moved(host.scored_positions);
  inputs.token_positions = moved(host.token_positions);
  inputs.perm_mask = moved(host.perm_mask);
  inputs.target_mapping = moved(host.target_mapping);
  return inputs;
}

StepOutputs Trainer::run_step(const StepBatches& micro_batches, IterationRecord& record) {
  const int64_t micro_steps = static_cast<int64_t>(micro_batches.size());
  int64_t step_samples = 0;
  for (const auto& micro : micro_batches) step_samples += static_cast<int64_t>(micro.size());
  LossTerms step_loss;
  std::vector<DeferredSeconds> comm_waits;
  optimizer_->set_lr(record.lr);  // before the step's work: a replayed graph reads it on the device

  for (int64_t micro = 0; micro < micro_steps; ++micro) {
    // Data time is what the step waits for its batch: collation runs ahead on the loader's thread.
    const auto data_start = Clock::now();
    Batch batch = loader_.next();
    ModelInputs inputs = on_device(batch.inputs, /*non_blocking=*/device_.is_cuda());
    auto labels = batch.labels.to(device_, /*non_blocking=*/device_.is_cuda());
    record.data_seconds += seconds_between(data_start, Clock::now());
    record.samples += batch.samples;
    record.tokens += batch.tokens;
    record.real_tokens += batch.real_tokens;
    if (flops_of_batch_) record.train_flops += flops_of_batch_(batch);

    if (config_.cuda_graph) {  // one micro-batch per step
      inputs.has_padding = inputs.has_padding || batches_can_pad_;
      return graphed_step(inputs, labels, record);
    }
    // Each micro-batch weighs by its share of the step's samples (they differ only in a last,
    // partial step), so the step's gradient is the mean over all its samples.
    const double weight = static_cast<double>(batch.samples) / static_cast<double>(step_samples);
    add_terms(step_loss, micro_step(inputs, labels, weight, micro == micro_steps - 1, comm_waits));
  }
  StepOutputs outputs = finish_step(step_loss, record);
  outputs.comm_waits = std::move(comm_waits);
  return outputs;
}

LossTerms Trainer::micro_step(const ModelInputs& inputs, const torch::Tensor& labels, double weight,
                              bool last_micro_step, std::vector<DeferredSeconds>& comm_waits) {
  const LossTerms loss = objective_.loss(inputs, labels);
  if (sync_) sync_->before_backward(last_micro_step, stop_requested_->load());
  scaler_->scale(loss.total * weight).backward();
  // Data-parallel: the all-reduces started during backward are awaited here, before the
  // optimizer (and the fp16 unscale and clipping) see the gradients.
  if (sync_) {
    if (auto waited = sync_->after_backward()) comm_waits.push_back(std::move(waited));
  }
  LossTerms weighted{loss.total.detach() * weight, {}};
  for (const auto& part : loss.parts) weighted.parts.push_back(part * weight);
  return weighted;
}

StepOutputs Trainer::finish_step(const LossTerms& loss, IterationRecord& record) {
  StepOutputs outputs;
  outputs.loss = loss.total;
  if (!loss.parts.empty()) outputs.terms = torch::stack(loss.parts).to(torch::kFloat);
  torch::Tensor found_inf;
  if (scaler_->enabled()) {
    outputs.loss_scale = scaler_->current_scale().clone();  // update() below changes it in place
    found_inf = scaler_->unscale(trainable_);
    outputs.found_inf = found_inf;
    // Unless the optimizer can skip on the device, the host must know now whether to step.
    if (!optimizer_->skips_on_device()) {
      if (sync_) sync_->await_reductions();
      record.skipped = found_inf.item<float>() != 0.0f;
    }
  }
  if (config_.max_grad_norm > 0 && !record.skipped) clip_gradients(trainable_, config_.max_grad_norm);
  if (found_inf.defined() && optimizer_->skips_on_device()) {
    optimizer_->step_unless_inf(found_inf);
  } else if (!record.skipped) {
    optimizer_->step();
  }
  if (sync_) {
    sync_->zero_gradients(model_);  // may keep them in its all-reduce buckets
  } else {
    model_.zero_grad(/*set_to_none=*/true);
  }
  if (scaler_->enabled()) scaler_->update(found_inf);
  // Nothing here waits for the device: the loss and the flags are read once the step has run.
  return outputs;
}

StepOutputs Trainer::graphed_step(const ModelInputs& inputs, const torch::Tensor& labels, IterationRecord& record) {
#if TBENCH_HAS_CUDA_GRAPH_STEP
  if (graph_) return graph_->replay(inputs, labels);
  // Step 1 runs eagerly, on the default stream, so lazy set-up happens before any capture.
  // A graphed step has no gradient sync (check_launch refuses train.cuda_graph data-parallel).
  std::vector<DeferredSeconds> no_comm_waits;
  if (record.global_step < kCudaGraphCaptureStep) {
    return finish_step(micro_step(inputs, labels, 1.0, true, no_comm_waits), record);
  }
  StepOutputs outputs;
  graph_ = cuda::capture_step(device_, inputs, labels,
                              [this, &no_comm_waits](const ModelInputs& in, const torch::Tensor& y) {
                                // The captured step touches no host-side field of its record: with
                                // the fused AdamW nothing is read back (the spec requires it).
                                IterationRecord unused;
                                return finish_step(micro_step(in, y, 1.0, true, no_comm_waits), unused);
                              },
                              outputs);
  return outputs;
#else
  throw std::logic_error("train.cuda_graph in a build without CUDA graph support (the spec should have refused it)");
#endif
}

// An epoch's running totals, in step order.
struct Trainer::EpochTotals {
  EpochRecord record;
  double loss_sum = 0;
};

template <typename Where, typename Work>
void Trainer::fail_on_exception(TrainOutcome& outcome, Where&& where, Work&& work) const {
  std::string error;
  bool lost_peers = false;
  try {
    work();
    return;
  } catch (const CommFailure& e) {
    error = e.what();
    lost_peers = true;
  } catch (const std::exception& e) {  // LibTorch, the loader's thread, the host
    error = error_text(e);
  }
  if (outcome.status == RunStatus::failed) return;  // the first error is the one to fix
  outcome.status = RunStatus::failed;
  outcome.error = where() + ": " + describe_step_error(error, config_.batch_size, config_.cuda_graph);
  outcome.lost_peers = lost_peers;
}

TrainRun Trainer::run(const std::vector<TrainObserver*>& observers, const std::atomic<bool>& stop_requested) {
  TrainRun run;
  stop_requested_ = &stop_requested;
  set_training_mode();
  // Steps are timed where they run; their records leave in order once known (at once on CPU).
  PendingSteps pending(make_step_timer(device_), kMaxPendingSteps);
  run.outcome.timing_method = pending.timing_method();
  int64_t global_step = 0;
  for (int64_t epoch = 1; epoch <= plan_.epochs && run.outcome.status == RunStatus::completed; ++epoch) {
    EpochRecord record = run_epoch(epoch, global_step, pending, observers, run);
    if (record.steps == 0) continue;
    if (data_.eval.size() > 0 && run.outcome.status == RunStatus::completed) {
      const auto where = [&] { return "epoch " + std::to_string(epoch) + " eval"; };
      if (sync_) sync_->note_progress(where());
      fail_on_exception(run.outcome, where, [&] {
        const EvalResult eval = evaluate();
        record.eval_loss = eval.loss;
        record.eval_accuracy = eval.accuracy;
        record.eval_perplexity = eval.perplexity;
        record.eval_pseudo_perplexity = eval.pseudo_perplexity;
        record.eval_pseudo_perplexity_tokens = eval.pseudo_perplexity_tokens;
        record.eval_samples = eval.samples;
        record.eval_seconds = eval.seconds;
      });
    }
    run.records.epochs.push_back(record);
    fail_on_exception(run.outcome, [&] { return "epoch " + std::to_string(epoch) + " end"; }, [&] {
      for (auto* o : observers) o->on_epoch_end(record);
    });
  }
  return run;
}

EpochRecord Trainer::run_epoch(int64_t epoch, int64_t& global_step, PendingSteps& pending,
                               const std::vector<TrainObserver*>& observers, TrainRun& run) {
  reset_memory_peaks(device_);
  if (gpu_monitor_) gpu_monitor_->start();  // its window holds the whole epoch
  // The epoch's clock starts before its plan and the loader's start: an epoch costs those too
  // (predict counts them among the time outside its steps).
  const auto epoch_start = Clock::now();
  // Every rank plans the same steps (same seed) and takes its own share of each.
  auto epoch_steps = plan_epoch(data_.train, sampler_options(), epoch);
  const int64_t steps = std::min(plan_.steps_per_epoch, plan_.total_steps - global_step);
  epoch_steps.resize(static_cast<std::size_t>(steps));
  loader_.start_epoch(epoch_steps, epoch);
  // An observer that cannot record (a full disk) fails the run; what was measured stays.
  fail_on_exception(run.outcome, [&] { return "epoch " + std::to_string(epoch) + " start"; }, [&] {
    for (auto* o : observers) o->on_epoch_start(epoch, plan_.epochs, steps);
  });

  EpochTotals totals;
  totals.record.epoch = epoch;
  for (int64_t step = 1; step <= steps && run.outcome.status == RunStatus::completed; ++step) {
    // Data-parallel ranks stop together, after the same step (GradientSync::stop_agreed). On a
    // GPU that reads a request behind an earlier step's all-reduce, which may fail or time out.
    bool stop = false;
    const auto before = [&] { return "epoch " + std::to_string(epoch) + " before step " + std::to_string(step) +
                                     " (an earlier step's all-reduce)"; };
    fail_on_exception(run.outcome, before, [&] { stop = sync_ ? sync_->stop_agreed() : stop_requested_->load(); });
    if (run.outcome.status != RunStatus::completed) break;
    if (stop) {
      run.outcome.status = RunStatus::interrupted;
      break;
    }
    IterationRecord record = start_record(epoch, step, ++global_step);
    const auto where = [&] { return "epoch " + std::to_string(epoch) + " step " + std::to_string(step); };
    if (sync_) sync_->note_progress(where());
    fail_on_exception(run.outcome, where, [&] {
      if (record.profiled && !profiling_) start_profile(global_step, totals.record);
      pending.begin_step();
      const StepOutputs outputs = run_step(epoch_steps[static_cast<std::size_t>(step - 1)], record);
      pending.end_step(std::move(record), outputs);
      if (profiling_) profile_last_step_ = global_step;
      if (profiling_ && !profiled(global_step + 1)) stop_profile(run, totals.record);
      report(pending.take_finished(/*wait_for_all=*/false), observers, totals, run);
    });
  }
  if (profiling_) {  // a stop or a failure ended the run inside the window
    fail_on_exception(run.outcome, [] { return std::string("profiling"); }, [&] { stop_profile(run, totals.record); });
  }
  // The epoch ends when its last step has run on the device: one wait, here (data-parallel: its
  // all-reduces first, with their timeout). A device error surfacing only now fails the run
  // unless an earlier one already did.
  fail_on_exception(run.outcome, [&] { return "epoch " + std::to_string(epoch); }, [&] {
    if (sync_) sync_->finish_reductions();
    report(pending.take_finished(/*wait_for_all=*/true), observers, totals, run);
  });
  EpochRecord record = finish_epoch_record(totals, seconds_since(epoch_start), run.outcome);
  if (gpu_monitor_) record.gpu = gpu_monitor_->stop();
  return record;
}

IterationRecord Trainer::start_record(int64_t epoch, int64_t step, int64_t global_step) const {
  IterationRecord record;
  record.epoch = epoch;
  record.step = step;
  record.global_step = global_step;
  record.warmup = global_step <= config_.timed_warmup_steps;
  record.profiled = profiled(global_step);
  record.lr = linear_schedule_lr(config_.lr, global_step - 1, config_.lr_warmup_steps, plan_.total_steps);
  for (const auto& name : objective_.term_names()) record.loss_terms.emplace_back(name, 0.0);  // values once run
  return record;
}

void Trainer::report(const std::vector<IterationRecord>& finished, const std::vector<TrainObserver*>& observers,
                     EpochTotals& totals, TrainRun& run) const {
  for (const auto& record : finished) {
    // Kept and counted in its epoch first: an observer that throws (the stream's disk full) loses
    // nothing, and the epoch's record agrees with the iterations.
    run.records.iterations.push_back(record);
    totals.record.steps += 1;
    totals.record.samples += record.samples;
    totals.record.tokens += record.tokens;
    totals.record.step_seconds += record.seconds;
    totals.loss_sum += record.loss;
    for (auto* o : observers) o->on_iteration(record);
    if (!std::isfinite(record.loss) && !record.skipped && run.outcome.status == RunStatus::completed) {
      run.outcome.status = RunStatus::failed;
      run.outcome.error = "training loss became " + std::to_string(record.loss) + " at epoch " +
                          std::to_string(record.epoch) + " step " + std::to_string(record.step) +
                          " (try a lower train.lr, or bf16/fp32)";
    }
  }
}

EpochRecord Trainer::finish_epoch_record(const EpochTotals& totals, double seconds, const TrainOutcome& outcome) const {
  EpochRecord e = totals.record;
  e.seconds = seconds;
  const MemoryPeaks memory = memory_peaks(device_);
  e.peak_allocated_bytes = memory.allocated_bytes;
  e.peak_reserved_bytes = memory.reserved_bytes;
  e.peak_rss_bytes = memory.rss_bytes;
  // An epoch cut short by max_steps or a stop is not a whole epoch: its time is not an epoch time.
  e.complete = e.steps == plan_.steps_per_epoch && outcome.status == RunStatus::completed;
  // The rates leave out the profiler's own start and stop (in no step), as the timing check does.
  const double training_seconds = e.seconds - e.profiler_seconds;
  if (training_seconds > 0) {
    e.samples_per_s = static_cast<double>(e.samples) / training_seconds;
    e.tokens_per_s = static_cast<double>(e.tokens) / training_seconds;
    e.it_per_s = static_cast<double>(e.steps) / training_seconds;
  }
  e.loss = e.steps > 0 ? totals.loss_sum / static_cast<double>(e.steps) : 0.0;
  return e;
}

// The last profile_steps steps: by then the warm-up is long over, and no timed step runs after
// the profiler (CUPTI can leave later kernels slower once it has run).
bool Trainer::profiled(int64_t global_step) const {
  return config_.profile_steps > 0 && global_step > plan_.total_steps - config_.profile_steps;
}

void Trainer::start_profile(int64_t global_step, EpochRecord& epoch) {
  if (!profiler_) return;
  synchronize();  // queued steps finish outside the window
  const auto start = Clock::now();
  profiler_->start();
  profiling_ = true;
  profile_first_step_ = profile_last_step_ = global_step;
  profile_start_ = Clock::now();
  profile_overhead_seconds_ = seconds_between(start, profile_start_);
  epoch.profiler_seconds += profile_overhead_seconds_;
}

void Trainer::stop_profile(TrainRun& run, EpochRecord& epoch) {
  profiling_ = false;
  try {
    synchronize();  // the window's last kernels are recorded before the profiler stops
  } catch (...) {
    try {
      profiler_->stop();  // a device error: leave no profiler running, and report the error
    } catch (...) {
    }
    throw;
  }
  const auto steps_end = Clock::now();
  ProfileSummary summary = profiler_->stop();
  const double stop_seconds = seconds_since(steps_end);
  epoch.profiler_seconds += stop_seconds;
  summary.first_step = profile_first_step_;
  summary.last_step = profile_last_step_;
  summary.wall_ms = seconds_between(profile_start_, steps_end) * 1e3;
  summary.overhead_ms = (profile_overhead_seconds_ + stop_seconds) * 1e3;
  run.profile = std::move(summary);
}

EvalResult Trainer::evaluate() {
  const auto start = Clock::now();
  EvalResult result;
  torch::NoGradGuard no_grad;
  model_.eval();
  const auto& samples = data_.eval;
  EvalSums sums = zero_eval_sums(device_);
  for (int64_t first = 0; first < samples.size(); first += config_.batch_size) {
    std::vector<int64_t> indices(static_cast<std::size_t>(std::min(config_.batch_size, samples.size() - first)));
    std::iota(indices.begin(), indices.end(), first);
    // Epoch 0's masks: every epoch is scored on the same masked tokens.
    const Batch batch = collate(samples, indices, data_.collate, /*epoch=*/0);
    objective_.score(on_device(batch.inputs, /*non_blocking=*/false), batch.labels.to(device_), sums);
  }
  result.samples = samples.size();
  const int64_t count = sums.count.item<int64_t>();
  if (count > 0) {
    const double scored = static_cast<double>(count);
    result.loss = sums.loss_sum.item<double>() / scored;
    result.accuracy = static_cast<double>(sums.correct.item<int64_t>()) / scored;
  }
  // No masked token scored, or a loss too large for exp: no perplexity rather than 1 or inf.
  if (objective_.reports_perplexity() && result.loss && std::isfinite(std::exp(*result.loss))) {
    result.perplexity = std::exp(*result.loss);
  }
  if (config_.pseudo_perplexity_fraction > 0) add_pseudo_perplexity(result);
  set_training_mode();
  synchronize();
  result.seconds = seconds_between(start, Clock::now());
  return result;
}

void Trainer::add_pseudo_perplexity(EvalResult& result) {
  const MaskingOptions& masking = data_.collate.masking;
  const auto& samples = data_.eval;
  if (!masking.enabled || samples.size() == 0) return;
  // A seeded subset, the same every epoch.
  const int64_t n = samples.size();
  const int64_t take = std::max<int64_t>(1, std::llround(config_.pseudo_perplexity_fraction * static_cast<double>(n)));
  auto chosen = epoch_order(n, config_.data_seed, /*epoch=*/-1);
  chosen.resize(static_cast<std::size_t>(std::min(take, n)));
  std::sort(chosen.begin(), chosen.end());
  torch::Tensor log_p_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
  const auto long_on_device = torch::TensorOptions().dtype(torch::kLong).device(device_);
  int64_t tokens = 0;
  for (const int64_t i : chosen) {
    const auto begin = samples.ids.begin() + samples.offsets[static_cast<std::size_t>(i)];
    const std::vector<int64_t> ids(begin, begin + samples.length(i));
    std::vector<int64_t> positions;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      if (!masking.never_masks(ids[t])) positions.push_back(static_cast<int64_t>(t));
    }
    const auto row = torch::tensor(ids, torch::kLong).to(device_);
    const int64_t length = static_cast<int64_t>(ids.size());
    for (std::size_t first = 0; first < positions.size(); first += static_cast<std::size_t>(config_.batch_size)) {
      const std::size_t count = std::min(positions.size() - first, static_cast<std::size_t>(config_.batch_size));
      const auto at = torch::tensor(std::vector<int64_t>(positions.begin() + static_cast<std::ptrdiff_t>(first),
                                                         positions.begin() + static_cast<std::ptrdiff_t>(first + count)),
                                    torch::kLong)
                          .to(device_);
      const auto rows = torch::arange(static_cast<int64_t>(count), long_on_device);
      auto input_ids = row.unsqueeze(0).repeat({static_cast<int64_t>(count), 1});
      input_ids.index_put_({rows, at}, masking.mask_token_id);  // copy j has only position at[j] masked
      const ModelInputs inputs{input_ids, torch::ones({static_cast<int64_t>(count), length}, long_on_device),
                               torch::zeros({static_cast<int64_t>(count), length}, long_on_device), /*has_padding=*/false};
      // Only each copy's masked position is scored: [count, V], on the device, read once at the end.
      const auto scores = objective_.masked_lm_scores(inputs).index({rows, at});
      log_p_sum += torch::log_softmax(scores, -1).gather(1, row.index({at}).unsqueeze(1)).sum().to(torch::kDouble);
      tokens += static_cast<int64_t>(count);
    }
  }
  result.pseudo_perplexity_tokens = tokens;
  const double pseudo_perplexity = std::exp(-log_p_sum.item<double>() / static_cast<double>(std::max<int64_t>(1, tokens)));
  if (tokens > 0 && std::isfinite(pseudo_perplexity)) result.pseudo_perplexity = pseudo_perplexity;
}

}  // namespace tbench
