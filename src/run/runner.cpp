#include "tbench/run/runner.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "tbench/data/data.hpp"
#include "tbench/env/cpu_allocator.hpp"
#include "tbench/env/cpu_peak.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/env/env.hpp"
#include "tbench/env/gpu_telemetry.hpp"
#include "tbench/env/hardware.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/dropout.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/models/masked_lm.hpp"
#include "tbench/models/student_init.hpp"
#include "tbench/train/objective.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/progress/progress.hpp"
#include "tbench/run/batch_flops.hpp"
#include "tbench/results/mlperf_log.hpp"
#include "tbench/results/result.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/models/safetensors.hpp"
#include "tbench/timing/clock.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/version.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"
#include "tbench/torch_error_text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

std::atomic<bool> g_stop_requested{false};

// DistilBERT's recipe starts the student from the teacher's layers; a student given its own
// model.weights starts from those (they are what it loads), and the teacher's are not copied.
bool student_starts_from_teacher(const RunSpec& spec) {
  return spec.task == Task::distillation && spec.distillation.init_from_teacher && spec.model.weights.empty();
}

// First Ctrl-C: finish the step in flight, then write what was measured. Second: default action.
extern "C" void on_interrupt(int) {
  g_stop_requested.store(true);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

class InterruptScope {
 public:
  InterruptScope() {
    g_stop_requested.store(false);
    previous_int_ = std::signal(SIGINT, on_interrupt);
    previous_term_ = std::signal(SIGTERM, on_interrupt);
  }
  ~InterruptScope() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

[[noreturn]] void fail_field(const RunSpec& spec, const std::string& field, const std::string& message) {
  throw input_error(spec.where(field) + message);
}

std::string expand_output(const RunSpec& spec) {
  const std::string device = std::regex_replace(spec.device.text(), std::regex(":"), "");  // cuda:1 -> cuda1
  const std::vector<std::pair<std::string, std::string>> values = {
      {"{name}", spec.name}, {"{model}", spec.model.name}, {"{precision}", to_string(spec.precision)},
      {"{device}", device}, {"{host}", host_name()}, {"{timestamp}", file_timestamp_now()}};
  std::string out = spec.output;
  for (const auto& [key, value] : values) {
    for (auto pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos + value.size())) {
      out.replace(pos, key.size(), value);
    }
  }
  return out;
}

void check_device(const RunSpec& spec) {
  if (!spec.device.is_cuda()) return;
  if (!torch::cuda::is_available()) {
    fail_field(spec, "device", "'" + spec.device.text() + "' requested, but no CUDA device is available to this build "
                               "of LibTorch " TORCH_VERSION " (use device: cpu)");
  }
  const int64_t index = std::max<int64_t>(0, spec.device.index);
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (index >= count) {
    fail_field(spec, "device", "'" + spec.device.text() + "' does not exist; this machine has " + std::to_string(count) +
                                   " CUDA device(s) (cuda:0 .. cuda:" + std::to_string(count - 1) + ")");
  }
}

void check_model_fits(const RunSpec& spec, const ModelConfig& model) {
  if (model.max_position_embeddings > 0) {
    const int64_t usable = model.usable_positions();
    if (spec.data.seq_len > usable) {
      fail_field(spec, "data.seq_len", std::to_string(spec.data.seq_len) + " is longer than " + model.name +
                                           " can take (" + std::to_string(usable) + " positions)");
    }
  }
}

void check_data_fills_a_step(const RunSpec& spec, const PreparedData& data, int64_t world_size) {
  check_samples_fill_a_step(spec, spec.data.source == DataSource::synthetic ? "data.num_samples" : "data.path",
                            data.train.size(), data.eval.size(), world_size);
  if (world_size > 1 && !spec.data.drop_last) {
    // A partial last step would give ranks unequal shares, and some none: the all-reduce would hang.
    fail_field(spec, "data.drop_last", "false is not supported with data-parallel training (every rank must take "
                                       "the same number of steps)");
  }
}

// `whole`: every parameter must come from the checkpoint (a distillation teacher: a head left at
// random init would be distilled into the student, with plausible-looking losses).
void load_weights(const RunSpec& spec, torch::nn::Module& model, const std::string& path, const std::string& field,
                  bool whole = false) {
  WeightLoadReport report;
  try {
    report = load_hf_weights(model, path);
  } catch (const Error& e) {
    throw input_error(spec.where(field) + e.what());
  }
  if (whole && !report.initialised.empty()) {
    throw input_error(spec.where(field) + path + " lacks " + std::to_string(report.initialised.size()) +
                      " tensor(s) of the teacher's masked-LM head, such as " + report.initialised.front() +
                      " (a base or classifier checkpoint? the teacher needs its *ForMaskedLM / pre-training weights)");
  }
  spdlog::info("loaded {} tensors from {}", report.loaded.size(), path);
  if (!report.initialised.empty()) {
    spdlog::info("not in the checkpoint, newly initialised (the task head): {}", join(report.initialised));
  }
  if (!report.unexpected.empty()) {
    spdlog::info("{} checkpoint tensors not used by the model (e.g. another task's head), such as {}",
                 report.unexpected.size(), report.unexpected.front());
  }
}

// Rank 0's planned epochs' mean training FLOPs per step, what predict --epochs reads its measured
// steps at. Planned when the result is assembled: only rank 0's result records them, and only a
// run's result needs them (not `validate`, nor the other ranks). The measurements come first: a
// plan that fails leaves the figure out, never the result.
std::vector<double> planned_epoch_flops(const RunPlan& plan) {
  spdlog::debug("planning the first epochs' FLOPs for the result");
  try {
    return planned_epoch_step_train_flops(plan.spec, plan.model, plan.teacher ? &*plan.teacher : nullptr, *plan.data,
                                          sampler_options(plan.trainer, plan.launch.world_size, 0));
  } catch (const std::exception& e) {
    spdlog::warn("model.planned_epoch_step_train_flops left out: planning the epochs failed: {}", e.what());
    return {};
  }
}

ModelInfo model_info(const RunPlan& plan, int64_t built_params, std::vector<double> planned_epoch_flops) {
  ModelInfo m;
  m.name = plan.model.name;
  m.arch = to_string(plan.model.arch);
  m.source = plan.model.source;
  m.hidden_size = plan.model.hidden_size;
  m.num_layers = plan.model.num_layers;
  m.num_heads = plan.model.num_heads;
  m.vocab_size = plan.model.vocab_size;
  m.params = built_params;
  m.base_params = plan.cost.base_params;
  m.train_flops_per_sample = plan.cost.train_flops_per_sample;
  m.planned_epoch_step_train_flops = std::move(planned_epoch_flops);
  m.weights = plan.spec.model.weights;
  m.task = to_string(plan.spec.task);
  if (plan.teacher) {
    const DistillationSpec& d = plan.spec.distillation;
    TeacherInfo t;
    t.name = plan.teacher->name;
    t.arch = to_string(plan.teacher->arch);
    t.precision = to_string(d.teacher_precision.value_or(plan.spec.precision));
    const ModelCost teacher_cost = model_cost(*plan.teacher, 2, plan.spec.data.seq_len, Task::mlm);
    t.params = teacher_cost.classifier_params;
    t.forward_flops_per_sample = teacher_cost.forward_flops_per_sample;
    t.weights = d.teacher.weights;
    m.teacher = t;
    if (student_starts_from_teacher(plan.spec)) m.initialised_from = "teacher";
  }
  return m;
}

// A measured peak's source begins so; the probe's own words follow.
const std::string kMeasuredPeak = "measured: ";
// A CPU run that was told not to probe: no peak, so no MFU and no calibration for `predict`.
const std::string kUnprobedCpuPeak = "not probed (timing.cpu_peak_probe is false)";

// The CPU peak's probe for this run: its precision and thread count, the model's largest GEMMs.
CpuPeakProbe cpu_peak_probe(const RunPlan& plan) {
  CpuPeakProbe probe;
  probe.threads = plan.threads;
  probe.bf16 = plan.spec.precision == Precision::bf16;
  probe.shapes = transformer_gemm_shapes(plan.spec.train.batch_size * plan.spec.data.seq_len, plan.model.hidden_size,
                                         plan.model.intermediate_size);
  return probe;
}

// The device's best case for this precision, the denominator of MFU: on CPUs measured with the
// model's own largest GEMMs (no vendor table applies), the dense datasheet figure on known GPUs.
DevicePeak device_peak(const RunPlan& plan) {
  const RunSpec& spec = plan.spec;
  DevicePeak peak;
  if (!spec.device.is_cuda()) {
    if (!spec.timing.cpu_peak_probe) {
      peak.source = kUnprobedCpuPeak;
      return peak;
    }
    const CpuPeak measured = measure_cpu_peak(cpu_peak_probe(plan));
    peak.flops_per_s = measured.flops_per_s;
    peak.source = kMeasuredPeak + measured.how;
    peak.probes_flops_per_s = {measured.flops_per_s};
    return peak;
  }
  const std::string name = cuda_device_name(std::max<int64_t>(0, spec.device.index));
  if (const auto gpu = find_gpu(name)) {
    peak.flops_per_s = peak_tflops(*gpu, to_string(spec.precision), spec.cuda.tf32) * 1e12;
    peak.bytes_per_s = gpu->memory_gbps * 1e9;
    peak.source = gpu->name + " datasheet (" + gpu->source + ")" +
                  (spec.cuda.tf32 && spec.precision == Precision::fp32 && gpu->tf32_tflops > 0 ? ", TF32" : "");
  } else {
    peak.source = "unknown GPU '" + name + "': no datasheet entry";
  }
  return peak;
}

// A CPU's peak probed once more after a completed run's timed epochs. A shared machine's speed
// drifts: on the 2-core test VM three runs a minute apart probed 65 and 64, 38 and 31, and 32 and
// 64 GFLOP/s before and after their epochs, and an earlier run's steps did 45 against the 38 its
// one probe had found. The best of probes either side of the epochs bounds the rate they ran at
// more often than one before them, and their spread says whether the machine's speed moved.
// The run is over and measured: Ctrl-C (the run's InterruptScope holds) or a failure here keeps the
// first probe, and the result.
DevicePeak probe_cpu_peak_again(const RunPlan& plan, const Summary& summary, DevicePeak peak) {
  if (plan.spec.device.is_cuda() || summary.status != RunStatus::completed || !(peak.flops_per_s > 0) ||
      !summary.train_flops_per_s) {
    return peak;
  }
  spdlog::info("probing the CPU's peak again, after the timed epochs");
  CpuPeak after;
  try {
    CpuPeakProbe probe = cpu_peak_probe(plan);
    probe.stop = &g_stop_requested;
    after = measure_cpu_peak(probe);
  } catch (const std::exception& e) {
    spdlog::warn("the CPU peak's probe after the epochs failed ({}): the peak is the probe before them", e.what());
    return peak;
  }
  if (!(after.flops_per_s > 0)) {
    spdlog::warn("the CPU peak's probe after the epochs was stopped: the peak is the probe before them");
    return peak;
  }
  const bool after_is_best = after.flops_per_s > peak.flops_per_s;
  peak = with_later_probe(std::move(peak), after.flops_per_s);
  const std::string rates = probes_gflops_text(peak.probes_flops_per_s);
  // The words of the best probe, then every probe's rate.
  if (after_is_best) peak.source = kMeasuredPeak + after.how;
  peak.source += "; probed before and after the timed epochs: " + rates + " GFLOP/s, the best counts";
  if (const auto spread = probe_spread(peak.probes_flops_per_s); spread && *spread > kPeakProbeSpreadWarning) {
    spdlog::warn("the CPU's matmul rate moved during the run: the peak probes before and after the timed epochs gave "
                 "{} GFLOP/s, {:.0f}% apart. Something else shared the machine, so this run's rates and MFU carry "
                 "that noise; compare settings on repeated, interleaved runs (tbench compare A1 A2 ... --vs B1 B2 ...)",
                 rates, 100 * *spread);
  }
  return peak;
}

}  // namespace

namespace {

// Where a batch's padding is skipped: the spec's model.unpad for the trained model and a
// distillation teacher alike (the loss reads both at the same rows).
void apply_unpad(const RunSpec& spec, ModelConfig& model) {
  model.unpad = spec.model.unpad;
  // On the CPU a small GEMM per sample costs no kernel launch.
  model.unpad_attention_by_sample = spec.model.unpad && !spec.device.is_cuda();
}

}  // namespace

TaskWork task_work(const RunSpec& spec, const ModelConfig* teacher) {
  return {spec.task, teacher, (spec.task == Task::mlm || spec.task == Task::distillation) && spec.mlm.sparse_prediction};
}

ModelConfig model_config_for(const RunSpec& spec) {
  ModelConfig model;
  try {
    model = spec.model.config.empty() ? shipped_model_config(spec.model.name) : read_model_config(spec.model.config);
  } catch (const Error& e) {
    throw input_error(locate_field(spec.source, spec.origin, spec.model.config.empty() ? "model.name" : "model.config") +
                      ": " + e.what());
  }
  model.sparse_last_layer = spec.model.sparse_last_layer;
  apply_unpad(spec, model);
  model.dropout_in_training = spec.train.dropout;
  return model;
}

ModelConfig teacher_config_for(const RunSpec& spec) {
  const ModelRef& t = spec.distillation.teacher;
  ModelConfig teacher;
  try {
    teacher = t.config.empty() ? shipped_model_config(t.name) : read_model_config(t.config);
  } catch (const Error& e) {
    throw input_error(locate_field(spec.source, spec.origin, "distillation.teacher") + ": " + e.what());
  }
  apply_unpad(spec, teacher);
  teacher.dropout_in_training = false;  // frozen, in eval mode
  return teacher;
}

namespace {

// What each task asks of its models: a masked-LM head (not XLNet's permutation LM) or XLNet's, and
// a teacher that scores the same vocabulary and, for the cosine loss, has hidden states of the same width.
void check_task_fits_models(const RunSpec& spec, const ModelConfig& model, const ModelConfig* teacher) {
  if (spec.task == Task::classification) return;
  if (spec.task == Task::plm) {
    if (model.arch != Architecture::xlnet) {
      fail_field(spec, "task", "plm is XLNet's permutation LM, but " + model.name + " is " + to_string(model.arch) +
                                   ", which pre-trains with masked LM (task mlm)");
    }
    return;
  }
  if (model.arch == Architecture::xlnet) {
    fail_field(spec, "task", std::string(to_string(spec.task)) + " needs a masked-LM head, but " + model.name +
                                 " is XLNet, which pre-trains with permutation LM (task plm), not masked LM");
  }
  if (!teacher) return;
  if (teacher->arch == Architecture::xlnet) {
    fail_field(spec, "distillation.teacher", teacher->name + " is XLNet: a teacher must be a masked LM (BERT, "
                                             "DistilBERT or RoBERTa)");
  }
  if (teacher->vocab_size != model.vocab_size) {
    fail_field(spec, "distillation.teacher", teacher->name + " scores " + std::to_string(teacher->vocab_size) +
                                                 " tokens, the student " + model.name + " " +
                                                 std::to_string(model.vocab_size) + ": they must share a vocabulary");
  }
  // Same size is not the same vocabulary: RoBERTa's byte-level BPE numbers other tokens than
  // BERT's WordPiece, and a teacher padding with another id would score the student's padding.
  const auto tokenizer_family = [](Architecture arch) {
    return arch == Architecture::roberta ? "byte-level BPE (RoBERTa)" : "WordPiece (BERT, DistilBERT)";
  };
  if (std::string(tokenizer_family(teacher->arch)) != tokenizer_family(model.arch) ||
      teacher->pad_token_id != model.pad_token_id) {
    fail_field(spec, "distillation.teacher", teacher->name + " reads " + tokenizer_family(teacher->arch) + " ids, padding with " +
                                                 std::to_string(teacher->pad_token_id) + ", the student " + model.name + " " +
                                                 tokenizer_family(model.arch) + " ids, padding with " +
                                                 std::to_string(model.pad_token_id) + ": they must share a vocabulary");
  }
  if (spec.distillation.alpha_cos > 0 && teacher->hidden_size != model.hidden_size) {
    fail_field(spec, "distillation.alpha_cos", "the cosine loss compares hidden states, but the teacher's are " +
                                                   std::to_string(teacher->hidden_size) + " wide and the student's " +
                                                   std::to_string(model.hidden_size) + " (set alpha_cos to 0)");
  }
  if (student_starts_from_teacher(spec)) {
    const std::string mismatch = student_init_mismatch(model, *teacher);
    if (!mismatch.empty()) fail_field(spec, "distillation.init_from_teacher", mismatch + " (set it to false)");
  }
  if (teacher->max_position_embeddings > 0 && spec.data.seq_len > teacher->usable_positions()) {
    fail_field(spec, "data.seq_len", std::to_string(spec.data.seq_len) + " is longer than the teacher " + teacher->name +
                                         " can take (" + std::to_string(teacher->usable_positions()) + " positions)");
  }
}

}  // namespace

CudaGraphChoice resolve_cuda_graph(const RunSpec& spec, const LaunchEnv& launch) {
  if (spec.train.cuda_graph.has_value()) return {*spec.train.cuda_graph, ""};
  if (!spec.device.is_cuda()) return {false, ""};  // nothing to say: graphs are a CUDA feature
  const std::vector<FieldProblem> obstacles = cuda_graph_obstacles(spec);
  if (!obstacles.empty()) {
    return {false, "eager steps: train.cuda_graph is unset and " + obstacles.front().field + ": " +
                       obstacles.front().message};
  }
  if (launch.distributed()) {
    return {false, "eager steps: train.cuda_graph is unset and a data-parallel step's all-reduces start from "
                   "autograd hooks on the host"};
  }
  return {true, "the step is captured in a CUDA graph at step " + std::to_string(kCudaGraphCaptureStep) +
                    " (train.cuda_graph unset; false runs it eagerly)"};
}

TrainerConfig trainer_config(const RunSpec& spec, const LaunchEnv& launch) {
  TrainerConfig c;
  c.epochs = spec.train.epochs;
  c.max_steps = spec.train.max_steps;
  c.batch_size = spec.train.batch_size;
  c.grad_accum_steps = spec.train.grad_accum_steps;
  c.drop_last = spec.data.drop_last;
  c.bucket_by_length = spec.data.bucket_by_length;
  c.data_seed = spec.data.seed;
  c.prefetch = spec.data.prefetch;
  c.lr = spec.train.lr;
  c.lr_warmup_steps = spec.train.warmup_steps;
  c.weight_decay = spec.train.weight_decay;
  c.max_grad_norm = spec.train.max_grad_norm;
  c.optimizer = resolve_optimizer_impl(spec.train.optimizer_impl, spec.device.is_cuda());
  c.dropout = spec.train.dropout;
  c.cuda_graph = resolve_cuda_graph(spec, launch).captured;
  c.precision = spec.precision;
  c.timed_warmup_steps = spec.timing.warmup_steps;
  c.profile_steps = spec.timing.profile_steps;
  if (spec.task == Task::mlm || spec.task == Task::distillation) {
    c.pseudo_perplexity_fraction = spec.mlm.pseudo_perplexity_fraction;
  }
  return c;
}

namespace {

// XLNet without dropout projects the distances' encodings once a batch (the spec's batch size):
// what that saves per sample, on the grid at seq_len, or attending by sample (model.unpad on the
// CPU) at the longest of the training samples' `lengths` in each batch, batched in file order (the
// run's seeded order makes other batches); each step records its own count.
double shared_encodings_saved_per_sample(const ModelConfig& model, const RunSpec& spec,
                                         const std::vector<int64_t>& lengths) {
  const int64_t batch = spec.train.batch_size;
  if (!(model.unpad && model.unpad_attention_by_sample) || lengths.empty()) {
    const std::vector<int64_t> grid(static_cast<std::size_t>(batch), spec.data.seq_len);
    return shared_encodings_train_flops_saved(model, spec.data.seq_len, grid, false) / static_cast<double>(batch);
  }
  double saved = 0;
  for (auto first = lengths.begin(); first != lengths.end();) {
    const auto end = first + std::min<std::ptrdiff_t>(batch, lengths.end() - first);
    saved += shared_encodings_train_flops_saved(model, spec.data.seq_len, {first, end}, true);
    first = end;
  }
  return saved / static_cast<double>(lengths.size());
}

// timing.profile_steps profiles the run's last steps: after the warm-up, leaving a step to time,
// and inside the last epoch (one profiler session, never restarted).
void check_profile_window(const RunSpec& spec, const StepPlan& steps) {
  const int64_t n = spec.timing.profile_steps;
  if (n == 0) return;
  if (spec.timing.warmup_steps + n >= steps.total_steps) {
    fail_field(spec, "timing.profile_steps",
               std::to_string(n) + " profiled step(s) and " + std::to_string(spec.timing.warmup_steps) +
                   " warm-up step(s) leave none of the run's " + std::to_string(steps.total_steps) +
                   " steps to time; run more steps or profile fewer");
  }
  const int64_t last_epoch_steps = steps.total_steps - (steps.total_steps - 1) / steps.steps_per_epoch * steps.steps_per_epoch;
  if (n > last_epoch_steps) {
    fail_field(spec, "timing.profile_steps",
               std::to_string(n) + " steps do not fit in the run's last epoch (" + std::to_string(last_epoch_steps) +
                   " steps); the profiler records the last steps of one epoch");
  }
}

}  // namespace

layers::AttentionUse attention_use_of(const RunSpec& spec, const ModelConfig& model) {
  layers::AttentionUse use;
  use.on_cuda = spec.device.is_cuda();
  use.fused_cpu_dropout = spec.train.dropout && model.attention_dropout > 0 &&
                          spec.cpu.dropout == CpuDropoutChoice::fused && spec.precision == Precision::fp32;
  return use;
}

SpecModels check_models_and_device(const RunSpec& spec) {
  SpecModels models{model_config_for(spec), std::nullopt};
  if (spec.task == Task::distillation) models.teacher = teacher_config_for(spec);
  check_model_fits(spec, models.model);
  check_task_fits_models(spec, models.model, models.teacher ? &*models.teacher : nullptr);
  check_device(spec);
  return models;
}

RunPlan prepare_run(const RunSpec& spec) {
  RunPlan plan;
  plan.spec = spec;
  SpecModels models = check_models_and_device(spec);
  plan.model = std::move(models.model);
  plan.teacher = std::move(models.teacher);
  plan.launch = group_as_the_spec_asks(detect_launch(), spec);  // torchrun / srun / mpirun, or a single process
  check_launch(spec, plan.launch);  // refuses a data-parallel train.cuda_graph too
  plan.cost = model_cost(plan.model, spec.num_labels, spec.data.seq_len, spec.task);
  const ModelConfig* teacher = plan.teacher ? &*plan.teacher : nullptr;
  const TaskWork task = task_work(spec, teacher);
  plan.cost.train_flops_per_sample =
      run_train_flops_per_sample(plan.model, teacher, spec.num_labels, spec.data.seq_len, spec.task);
  if (task.sparse_prediction) {
    // The head at the expected share of positions, mlm.probability of them (a little above the
    // true share, which leaves out padding and special tokens); each step records its own count.
    plan.cost.train_flops_per_sample -= (1.0 - spec.mlm.probability) * static_cast<double>(spec.data.seq_len) *
                                        masked_lm_head_train_flops_per_position(plan.model, teacher);
  }
  plan.data = std::make_shared<const PreparedData>(prepare_data(spec, plan.model));
  check_data_fills_a_step(spec, *plan.data, plan.launch.world_size);
  std::vector<int64_t> lengths;  // the training samples', where model.unpad makes their work theirs
  if (spec.model.unpad) {
    const TokenizedSamples& train = plan.data->train;
    for (int64_t i = 0; i < train.size(); ++i) lengths.push_back(train.length(i));
  }
  if (!lengths.empty()) {
    // The work at the real tokens alone, each sample padded to seq_len as under max_length (at most
    // that with dynamic padding); each step records its own count.
    plan.cost.train_flops_per_sample -= run_unpad_train_flops_saved(plan.model, task, spec.data.seq_len, lengths) /
                                        static_cast<double>(lengths.size());
  }
  plan.cost.train_flops_per_sample -= shared_encodings_saved_per_sample(plan.model, spec, lengths);
  if (const std::string why = resolve_cuda_graph(spec, plan.launch).why; !why.empty()) spdlog::info("{}", why);
  plan.trainer = trainer_config(spec, plan.launch);
  plan.steps = plan_steps(plan.trainer, plan.data->train.size(), plan.launch.world_size);
  check_profile_window(spec, plan.steps);
  plan.threads = spec.threads > 0 ? static_cast<int>(spec.threads) : threads_per_process(plan.launch, usable_cores());
  plan.output_path = expand_output(spec);
  plan.spec.resolved["threads"] = plan.threads;
  // `auto` choices are recorded as what this build and device resolved them to.
  const layers::AttentionUse attention_use = attention_use_of(spec, plan.model);
  plan.model.attention = layers::resolve_attention(spec.model.attention, attention_use);
  plan.spec.resolved["model"]["attention"] = to_string(plan.model.attention);
  plan.model.mask_every_batch = spec.model.padding_mask == PaddingMaskChoice::always;
  plan.model.fused_qkv = spec.model.fused_qkv;
  plan.model.fused_layer_norm = spec.model.fused_layer_norm;
  if (plan.teacher) {  // the teacher's attention runs as the student's, but `auto` knows it never drops out
    layers::AttentionUse frozen = attention_use;
    frozen.fused_cpu_dropout = false;
    plan.teacher->attention = layers::resolve_attention(spec.model.attention, frozen);
    plan.teacher->mask_every_batch = plan.model.mask_every_batch;
    plan.teacher->fused_qkv = plan.model.fused_qkv;
    plan.teacher->fused_layer_norm = plan.model.fused_layer_norm;
  }
  if (spec.task == Task::distillation) {
    plan.spec.resolved["distillation"]["teacher_precision"] =
        to_string(spec.distillation.teacher_precision.value_or(spec.precision));
  }
  plan.spec.resolved["train"]["optimizer_impl"] = to_string(plan.trainer.optimizer);
  plan.spec.resolved["train"]["cuda_graph"] = plan.trainer.cuda_graph;
  return plan;
}

std::vector<std::string> spec_changes(const nlohmann::json& asked, const nlohmann::json& recorded) {
  // What prepare_run writes into the resolved spec: the choice a run made where the spec left it
  // open (threads 0, `auto`, an unset train.cuda_graph). A recorded choice matches an open one.
  static const std::set<std::string> kResolvedByTheRun = {"threads", "model.attention", "train.optimizer_impl",
                                                          "train.cuda_graph", "distillation.teacher_precision"};
  const auto left_open = [](const nlohmann::json& value) {
    return value.is_null() || value == "auto" || value == 0;
  };
  const auto recorded_fields = flatten_fields(recorded);
  std::vector<std::string> changes;
  for (const auto& [field, value] : flatten_fields(asked)) {
    if (is_bookkeeping_field(field)) continue;  // a sweep sets name and output for each point
    const auto it = recorded_fields.find(field);
    if (it == recorded_fields.end() || it->second == value) continue;  // not recorded: an older tbench
    if (kResolvedByTheRun.count(field) && left_open(value)) continue;
    changes.push_back(field + " " + json_text(it->second) + " -> " + json_text(value));
  }
  return changes;
}

namespace {

// Data-parallel: joins the other ranks first (a rank 0 that then stops, say on an existing
// result, ends their wait at once). Null for a single process.
std::unique_ptr<Communicator> join_ranks(const RunPlan& plan) {
  if (!plan.launch.distributed()) return nullptr;
  return Communicator::connect(plan.launch, rank_device(plan.spec, plan.launch),
                               std::chrono::seconds(plan.spec.dist.timeout_s),
                               std::chrono::seconds(plan.spec.dist.heartbeat_timeout_s),
                               std::chrono::seconds(plan.spec.dist.stall_timeout_s));
}

// The CPU allocator the spec asks for (cpu.allocator); env.cpu.allocator records which was used.
void set_cpu_allocator(CpuAllocatorChoice choice) {
  if (choice == CpuAllocatorChoice::system) {
    use_system_cpu_allocator();
  } else if (!install_caching_cpu_allocator(default_cpu_cache_limit())) {
    spdlog::warn("cpu.allocator caching: LibTorch kept another CPU allocator; env.cpu.allocator says which was used");
  }
}

// Threads, seeds and math modes are set on purpose and recorded: Debian's OpenMP starts with
// one thread otherwise, and cuDNN would allow TF32 unless told not to.
torch::Device set_up_process(const RunPlan& plan) {
  torch::set_num_threads(plan.threads);
  set_cpu_allocator(plan.spec.cpu.allocator);
  layers::set_cpu_dropout_kernel(plan.spec.cpu.dropout);
  torch::manual_seed(static_cast<uint64_t>(plan.spec.train.seed));
  set_cuda_tf32(plan.spec.cuda.tf32);
  return rank_device(plan.spec, plan.launch);
}

// The models a run trains and the loss around them: a classifier, or a masked LM (with, for
// distillation, its frozen teacher). `trained()` is the module whose parameters train.
struct RunModels {
  std::shared_ptr<SequenceClassifier> classifier;
  std::shared_ptr<MaskedLanguageModel> masked_lm;
  std::shared_ptr<MaskedLanguageModel> teacher;
  std::unique_ptr<TrainingObjective> objective;

  torch::nn::Module& trained() const { return objective->trained(); }
};

// Distillation's teacher: its weights (or, for a timing run, random init), then the student's
// start from its layers if asked. The student's own model.weights, if any, are loaded after.
std::shared_ptr<MaskedLanguageModel> build_teacher(const RunPlan& plan, MaskedLanguageModel& student) {
  const DistillationSpec& d = plan.spec.distillation;
  auto teacher = build_masked_lm(*plan.teacher);
  if (!d.teacher.weights.empty()) {
    load_weights(plan.spec, *teacher, d.teacher.weights, "distillation.teacher_weights", /*whole=*/true);
  }
  if (student_starts_from_teacher(plan.spec)) {
    const auto set = init_student_from_teacher(student, plan.model, *teacher, *plan.teacher);
    spdlog::info("student {} started from teacher {}: {} tensors (layers {})", plan.model.name, plan.teacher->name,
                 set.size(), json_text(json(teacher_layers_for(plan.model.num_layers, plan.teacher->num_layers))));
  }
  return teacher;
}

RunModels build_models(const RunPlan& plan, const torch::Device& device) {
  const RunSpec& spec = plan.spec;
  spdlog::info("{}: {} {} ({}), {} on {}, {} thread(s), batch {} x accum {}, seq {}, {} steps/epoch", spec.name,
               to_string(spec.task), plan.model.name, to_string(plan.model.arch), to_string(spec.precision),
               spec.device.text(), plan.threads, spec.train.batch_size, spec.train.grad_accum_steps, spec.data.seq_len,
               plan.steps.steps_per_epoch);
  RunModels models;
  if (spec.task == Task::classification) {
    models.classifier = build_classifier(plan.model, spec.num_labels);
    if (!spec.model.weights.empty()) load_weights(spec, *models.classifier, spec.model.weights, "model.weights");
    models.classifier->to(device);
    models.objective = classification_objective(*models.classifier, spec.precision, device);
    return models;
  }
  models.masked_lm = spec.task == Task::plm ? build_permutation_lm(plan.model) : build_masked_lm(plan.model);
  if (spec.task == Task::distillation) models.teacher = build_teacher(plan, *models.masked_lm);
  if (!spec.model.weights.empty()) load_weights(spec, *models.masked_lm, spec.model.weights, "model.weights");
  models.masked_lm->to(device);
  if (!models.teacher) {
    models.objective = masked_lm_objective(*models.masked_lm, spec.precision, device);
    return models;
  }
  models.teacher->to(device);
  const DistillationSpec& d = spec.distillation;
  DistillationLoss loss{d.temperature, d.alpha_ce, d.alpha_mlm, d.alpha_cos, d.restrict_ce_to_mask,
                        d.teacher_precision.value_or(spec.precision)};
  models.objective = distillation_objective(*models.masked_lm, *models.teacher, loss, spec.precision, device);
  return models;
}

// How often the GPU monitor reads NVML: often enough for a median clock over a short epoch, and
// on its own thread, so no step waits for it.
constexpr std::chrono::milliseconds kGpuSampleInterval{100};

// The GPU's clocks, power and throttling through each epoch, where NVML can read them; null on
// CPU, and where it cannot (the result's env.nvml says why).
std::unique_ptr<GpuMonitor> gpu_monitor_for(const torch::Device& device) {
  if (!device.is_cuda()) return nullptr;
  std::string why;
  auto source = make_nvml_sample_source(cuda_pci_bus_id(device.has_index() ? device.index() : 0), why);
  if (!source) {
    spdlog::debug("no GPU telemetry: {}", why);
    return nullptr;
  }
  return std::make_unique<GpuMonitor>(std::move(source), kGpuSampleInterval);
}

// --fail-at-step and --hang-at-step, for tests, so that the paths a real mid-run fault takes can
// be run on any rank of a data-parallel group. Once the step has run, the run fails as one whose
// record cannot be written would (a full disk under the iteration stream), or its host stays in
// that record for good, as one whose write never returns would (the stream on a hung file system:
// the process lives, its heartbeat beats, and its progress stands still at that step).
class InjectedFault final : public TrainObserver {
 public:
  enum class Kind { fail, hang };
  InjectedFault(Kind kind, int64_t global_step) : kind_(kind), global_step_(global_step) {}
  void on_iteration(const IterationRecord& record) override {
    if (record.global_step != global_step_) return;
    if (kind_ == Kind::fail) {
      throw std::runtime_error("failed on purpose at step " + std::to_string(global_step_) + " (--fail-at-step)");
    }
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }

 private:
  Kind kind_;
  int64_t global_step_;
};

struct RunClock {
  std::string started_at = iso8601_now();
  Clock::time_point start = Clock::now();
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();  // the MLPerf log's init_start
};

// What the run's MLPerf log states before its first epoch (timing.mllog).
MllogRunFacts mllog_facts(const RunPlan& plan) {
  const RunSpec& spec = plan.spec;
  const AdamWSettings adamw;  // the trainer's betas and epsilon: HF's defaults
  MllogRunFacts f;
  f.model = spec.model.name;
  f.seed = spec.train.seed;
  f.global_batch_size = spec.train.batch_size * spec.train.grad_accum_steps * plan.launch.world_size;
  f.gradient_accumulation_steps = spec.train.grad_accum_steps;
  f.max_sequence_length = spec.data.seq_len;
  f.base_learning_rate = spec.train.lr;
  f.weight_decay = spec.train.weight_decay;
  f.beta1 = adamw.beta1;
  f.beta2 = adamw.beta2;
  f.epsilon = adamw.eps;
  f.warmup_steps = spec.train.warmup_steps;
  f.training_steps = plan.steps.total_steps;
  f.gradient_clip_norm = spec.train.max_grad_norm;
  f.train_samples = plan.data->train.size();
  f.eval_samples = plan.data->eval.size();
  f.precision = to_string(spec.precision);
  f.device = spec.device.text();
  f.task = to_string(spec.task);
  f.world_size = plan.launch.world_size;
  f.result_path = plan.output_path;
  return f;
}

// Writes to the MLPerf log after its trainer is done (`write`): a log that cannot be written fails
// a run that had not failed; a run that had keeps its own reason.
template <typename Write>
void write_mllog_or_fail(Write&& write, RunStatus& status, std::string& error) {
  try {
    write();
  } catch (const std::exception& e) {
    if (status == RunStatus::failed) return;
    status = RunStatus::failed;
    error = e.what();
  }
}

// The training loop with its observers: the JSONL stream, the MLPerf log (timing.mllog: rank 0's,
// or null) and the progress line (rank 0 only).
TrainRun train(const RunPlan& plan, TrainingObjective& objective, const torch::Device& device, GradientSync* sync,
               const RunOptions& options, MllogStream* mllog) {
  Trainer trainer(plan.trainer, objective, *plan.data, device, sync);
  const ModelConfig* teacher = plan.teacher ? &*plan.teacher : nullptr;
  BatchFlops batch_flops(plan.spec, plan.model, teacher);
  trainer.set_flops_model([&](const Batch& batch) { return batch_flops(batch); });
  const bool writes_result = plan.launch.rank == 0;
  std::optional<IterationStream> stream;
  if (writes_result) stream.emplace(iterations_path_for(plan.output_path));
  auto progress = make_progress(choose_progress_mode(options.quiet || !writes_result));
  std::vector<TrainObserver*> observers;  // the stream first: a step is on disk before it is shown
  if (stream) observers.push_back(&*stream);
  if (mllog) observers.push_back(mllog);
  observers.push_back(progress.get());
  std::optional<InjectedFault> failure, hang;
  if (options.fail_at_step > 0) observers.push_back(&failure.emplace(InjectedFault::Kind::fail, options.fail_at_step));
  if (options.hang_at_step > 0) observers.push_back(&hang.emplace(InjectedFault::Kind::hang, options.hang_at_step));
  // Rank 0 profiles; the others leave the same steps out of their timing.
  std::unique_ptr<StepProfiler> profiler;
  if (plan.trainer.profile_steps > 0 && writes_result) {
    profiler = make_kineto_profiler(device.is_cuda(), trace_path_for(plan.output_path));
    trainer.set_profiler(profiler.get());
  }
  const std::unique_ptr<GpuMonitor> gpu_monitor = gpu_monitor_for(device);  // this rank's own GPU
  trainer.set_gpu_monitor(gpu_monitor.get());
  TrainRun run = trainer.run(observers, g_stop_requested);
  if (mllog) write_mllog_or_fail([&] { mllog->end_training(); }, run.outcome.status, run.outcome.error);
  return run;
}

Result assemble_result(const RunPlan& plan, const torch::nn::Module& model, const TrainRun& run,
                       const RunClock& clock) {
  SummaryInputs inputs;
  inputs.started_at = clock.started_at;
  inputs.ended_at = iso8601_now();  // the run's: the planning below is the result's
  inputs.wall_seconds = seconds_since(clock.start);
  inputs.warmup_steps = plan.spec.timing.warmup_steps;
  inputs.steps_per_epoch = plan.steps.steps_per_epoch;
  inputs.train_flops_per_sample = plan.cost.train_flops_per_sample;
  inputs.outcome = run.outcome;
  Result result;
  result.model = model_info(plan, count_parameters(model), planned_epoch_flops(plan));
  inputs.expected_step_train_flops = result.model.expected_step_train_flops();
  result.tbench_version = version();
  result.git_sha = git_sha();
  result.spec = plan.spec.resolved;
  result.env = collect_env();
  result.data = plan.data->description;
  result.records = run.records;
  result.profile = run.profile;
  result.summary = summarize(run.records, inputs);
  result.summary.peak_rss_bytes = peak_rss_bytes();
  result.files = {plan.output_path, iterations_path_for(plan.output_path), "",
                  plan.spec.timing.mllog ? mllog_path_for(plan.output_path) : ""};
  return result;
}

// Saving is part of the run: a failure fails it, but the measurements are still written.
void save_weights_if_asked(const RunPlan& plan, const torch::nn::Module& model, Result& result) {
  const std::string& path = plan.spec.model.save_weights;
  if (path.empty() || result.summary.status == RunStatus::failed) return;
  try {
    save_hf_weights(model, path, {{"tbench_model", plan.model.name}, {"tbench_result", plan.output_path}});
    result.files.weights = path;
    spdlog::info("saved weights: {}", path);
  } catch (const Error& e) {
    result.summary.status = RunStatus::failed;
    result.summary.error = std::string("saving weights failed: ") + e.what();
  }
}

// Who set the pace of an asynchronous device's steps: a GPU that had run everything queued before
// most steps began waited for the host, and a faster GPU would not shorten those steps.
void report_host_pace(const Summary& s, bool cuda_graph) {
  if (!s.host_ms || !s.device_idle_at_start_fraction) return;
  const char* remedy = cuda_graph ? ": the host sets this step's pace, captured as it is"
                                  : ": the host sets this step's pace (train.cuda_graph takes it out of the step)";
  spdlog::info("host: issued a step in {:.1f} ms median; the GPU had run all queued work before {:.0f}% of the "
               "steps began{}",
               s.host_ms->median, 100 * *s.device_idle_at_start_fraction,
               s.host_paced() ? remedy : "");
}

ExitCode report_outcome(const Result& result, bool captured_its_step) {
  const Summary& s = result.summary;
  if (s.samples_per_s) {
    std::string projected = s.projected_epoch_seconds ? format_duration(*s.projected_epoch_seconds) : "-";
    if (const auto& ci = s.projected_epoch_seconds_ci95) {
      projected += ", 95% CI " + format_duration(ci->low) + "-" + format_duration(ci->high);
    }
    spdlog::info("{}: {:.2f} samples/s, step {:.1f} ms median (p10 {:.1f}, p90 {:.1f}) over {} steps, {} warm-up "
                 "excluded; epoch {} (projected {})",
                 to_string(s.status), *s.samples_per_s, s.step_ms.median, s.step_ms.p10, s.step_ms.p90,
                 s.step_ms.count, s.warmup_steps, s.epoch_seconds ? format_duration(*s.epoch_seconds) : "-", projected);
  }
  report_host_pace(s, captured_its_step);
  if (!s.mfu_error.empty()) spdlog::warn("no MFU: {}", s.mfu_error);
  spdlog::info("result: {}", result.files.result);
  switch (s.status) {
    case RunStatus::completed: return ExitCode::ok;
    case RunStatus::interrupted:
      spdlog::warn("interrupted: the result holds the {} steps measured", result.records.iterations.size());
      return ExitCode::interrupted;
    case RunStatus::failed: spdlog::error("run failed: {}", s.error); return ExitCode::run_failed;
  }
  return ExitCode::internal;
}

// Ctrl-C after the last step: the training was whole, and so is its result, but the exit code
// still says the user asked to stop (a script's loop of runs ends there).
ExitCode interrupted_after_training() {
  spdlog::warn("interrupted after the training had completed: its result is whole");
  return ExitCode::interrupted;
}

// The data-parallel group a rank trained in (comm: null without one), whose reports rank 0 gathers.
struct TrainedGroup {
  Communicator* comm;
  const torch::Device& device;
  GradientSync* sync;
};

// Rank 0's result once training has ended: every rank's reports (with a group), the utilisation,
// the saved weights, the MLPerf log's run_stop, then the file.
ExitCode write_result(const RunPlan& plan, const torch::nn::Module& model, const TrainRun& run, const RunClock& clock,
                      const DevicePeak& peak, const TrainedGroup& group, MllogStream* mllog) {
  Result result = assemble_result(plan, model, run, clock);
  if (group.comm) {  // every rank's timings, the dist section, and the global summary
    const RankReport own = rank_report(*group.comm, group.device, run, group.sync);
    result.dist = gather_rank_reports(*group.comm, plan.spec, own, group.sync, &g_stop_requested);
    make_global(result.summary, *result.dist);
  }
  set_utilisation(result.summary, probe_cpu_peak_again(plan, result.summary, peak), plan.launch.world_size);
  save_weights_if_asked(plan, model, result);
  if (mllog) {
    write_mllog_or_fail([&] { mllog->finish(result.summary.status, result.summary.error); }, result.summary.status,
                        result.summary.error);
  }
  try {
    write_file_atomically(plan.output_path, json_text(to_json(result), 2) + "\n");
  } catch (const Error& e) {
    // A full disk usually fails the stream first: say why the run ended, then why nothing was saved.
    if (result.summary.status == RunStatus::failed) spdlog::error("run failed: {}", result.summary.error);
    throw Error(ExitCode::run_failed, std::string(e.what()) + " (no result was written; an earlier result there is untouched)");
  }
  return report_outcome(result, plan.trainer.cuda_graph);
}

// Everything after the rendezvous (comm: null without a group): set-up, training and rank 0's
// result. `trained` is set once training has ended.
ExitCode run_joined(const RunPlan& plan, const RunOptions& options, Communicator* comm, bool& trained) {
  const bool writes_result = plan.launch.rank == 0;
  if (writes_result) {
    ensure_writable(plan.output_path, options.force,
                    {/*trace=*/plan.trainer.profile_steps > 0, /*mllog=*/plan.spec.timing.mllog});
  }
  const RunClock clock;
  const torch::Device device = set_up_process(plan);
  const RunModels models = build_models(plan, device);
  torch::nn::Module& model = models.trained();
  const DevicePeak peak = writes_result ? device_peak(plan) : DevicePeak{};  // only rank 0's is used
  const auto sync = comm ? make_gradient_sync(*comm, model, plan.spec.dist) : nullptr;  // rank 0's weights everywhere
  // Ended (run_stop) once the result's status is final, after the ranks' reports and the saving.
  std::optional<MllogStream> mllog;
  if (writes_result && plan.spec.timing.mllog) {
    mllog.emplace(mllog_path_for(plan.output_path), clock.started, mllog_facts(plan));
  }
  // From the first step to the result on disk, a first Ctrl-C is a request: the trainer stops after
  // the step in flight, and one that comes after the training still lets the result be written.
  InterruptScope interrupts;
  // An error escaping from here on ends the log with its own words, not the destructor's guess.
  try {
    const TrainRun run = train(plan, *models.objective, device, sync.get(), options, mllog ? &*mllog : nullptr);
    trained = true;
    if (comm) comm->note_progress("after training (its report)");
    if (options.die_after_training) std::_Exit(128 + SIGKILL);  // no report, no result, no announcement
    if (options.interrupt_after_training) std::raise(SIGINT);    // the run's InterruptScope takes it
    // The others may be waiting for this rank in a collective it will not join: they stop at once.
    // A rank that lost its peers has no cause of its own to tell.
    if (comm && run.outcome.status == RunStatus::failed && !run.outcome.lost_peers) {
      comm->announce_failure(run.outcome.error);
    }
    if (!options.dump_params.empty()) {
      write_parameters(model, options.dump_params + (comm ? ".rank" + std::to_string(comm->rank()) : ""));
    }
    const ExitCode code =
        comm && !writes_result ? finish_peer_rank(*comm, device, run, sync.get())
                               : write_result(plan, model, run, clock, peak, {comm, device, sync.get()},
                                              mllog ? &*mllog : nullptr);
    return code == ExitCode::ok && g_stop_requested.load() ? interrupted_after_training() : code;
  } catch (const std::exception& e) {
    if (mllog) mllog->abandon(error_text(e));  // as tbench prints it
    throw;
  }
}

}  // namespace

ExitCode execute_run(const RunPlan& plan, const RunOptions& options) {
  const auto comm = join_ranks(plan);
  bool trained = false;
  if (!comm) return run_joined(plan, options, nullptr, trained);
  // Rank 0, which hosts the store, gives the others a few seconds to read a failure there.
  const auto linger = [&] { comm->linger_until_peers_know(std::min(comm->timeout(), std::chrono::milliseconds(5000))); };
  try {
    return run_joined(plan, options, comm.get(), trained);
  } catch (const PeerFailed&) {
    if (!trained) linger();  // another rank's failure, already announced
    throw;
  } catch (const CommFailure&) {
    throw;  // lost its peers: no cause of its own to tell
  } catch (const std::exception& e) {
    // A rank stopping before training (rank 0's existing result without --force, a model too big
    // for this rank's device, ...) leaves the others waiting in the weights' broadcast: tell them.
    // After training only rank 0 waits, for the peers' reports: a peer's failure then is the run's
    // error in rank 0's result (which gives up on its report once its heartbeat stops).
    if (!trained) {
      comm->announce_failure(e);
      linger();
    } else if (comm->rank() != 0) {
      comm->announce_failure(e);
    }
    throw;
  }
}

}  // namespace tbench
