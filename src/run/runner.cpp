#include "tbench/runner.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>
#include <regex>

#include <spdlog/spdlog.h>

#include "tbench/data.hpp"
#include "tbench/data_sources.hpp"
#include "tbench/dist.hpp"
#include "tbench/env.hpp"
#include "tbench/hardware.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/layers.hpp"
#include "tbench/optimizer.hpp"
#include "tbench/progress.hpp"
#include "tbench/results.hpp"
#include "tbench/safetensors.hpp"
#include "tbench/stats.hpp"
#include "tbench/version.hpp"

namespace tbench {
namespace {

using nlohmann::json;

std::atomic<bool> g_stop_requested{false};

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

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string expand_output(const RunSpec& spec) {
  const std::string device = std::regex_replace(spec.device, std::regex(":"), "");
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
  if (spec.device == "cpu") return;
  if (!torch::cuda::is_available()) {
    fail_field(spec, "device", "'" + spec.device + "' requested, but no CUDA device is available to this build of "
                               "LibTorch " TORCH_VERSION " (use device: cpu)");
  }
  const auto colon = spec.device.find(':');
  const int64_t index = colon == std::string::npos ? 0 : std::stoll(spec.device.substr(colon + 1));
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (index >= count) {
    fail_field(spec, "device", "'" + spec.device + "' does not exist; this machine has " + std::to_string(count) +
                                   " CUDA device(s) (cuda:0 .. cuda:" + std::to_string(count - 1) + ")");
  }
}

void check_model_fits(const RunSpec& spec, const ModelConfig& model) {
  if (model.max_position_embeddings > 0) {
    // RoBERTa's positions start after the padding id, so it has pad + 1 fewer usable positions.
    const int64_t usable = model.max_position_embeddings -
                           (model.arch == Architecture::roberta ? model.pad_token_id + 1 : 0);
    if (spec.data.seq_len > usable) {
      fail_field(spec, "data.seq_len", std::to_string(spec.data.seq_len) + " is longer than " + model.name +
                                           " can take (" + std::to_string(usable) + " positions)");
    }
  }
}

void check_data_fills_a_step(const RunSpec& spec, const PreparedData& data, int64_t world_size) {
  const int64_t per_step = spec.train.batch_size * spec.train.grad_accum_steps * world_size;
  const std::string field = spec.data.source == "synthetic" ? "data.num_samples" : "data.path";
  if (data.train.size() < per_step && spec.data.drop_last) {
    fail_field(spec, field, std::to_string(data.train.size()) + " training samples" +
                                (data.eval.size() > 0 ? " (after holding out " + std::to_string(data.eval.size()) + " for eval)" : "") +
                                " are fewer than one optimizer step takes (train.batch_size x train.grad_accum_steps" +
                                (world_size > 1 ? " x " + std::to_string(world_size) + " processes" : "") + " = " +
                                std::to_string(per_step) + ")");
  }
  if (world_size > 1 && !spec.data.drop_last) {
    // A partial last step would give ranks unequal shares, and some none: the all-reduce would hang.
    fail_field(spec, "data.drop_last", "false is not supported with data-parallel training (every rank must take "
                                       "the same number of steps)");
  }
}

void load_weights(const RunSpec& spec, torch::nn::Module& model) {
  WeightLoadReport report;
  try {
    report = load_hf_weights(model, spec.model.weights);
  } catch (const Error& e) {
    throw input_error(spec.where("model.weights") + e.what());
  }
  spdlog::info("loaded {} tensors from {}", report.loaded.size(), spec.model.weights);
  if (!report.initialised.empty()) {
    std::string names;
    for (const auto& n : report.initialised) names += (names.empty() ? "" : ", ") + n;
    spdlog::info("not in the checkpoint, newly initialised (the task head): {}", names);
  }
  if (!report.unexpected.empty()) {
    spdlog::info("{} checkpoint tensors not used by the classifier (e.g. a pre-training head), such as {}",
                 report.unexpected.size(), report.unexpected.front());
  }
}

json model_json(const RunPlan& plan, int64_t built_params) {
  return {{"name", plan.model.name},
          {"arch", to_string(plan.model.arch)},
          {"hidden_size", plan.model.hidden_size},
          {"num_layers", plan.model.num_layers},
          {"num_heads", plan.model.num_heads},
          {"vocab_size", plan.model.vocab_size},
          {"source", plan.model.source},
          {"params", built_params},
          {"base_params", plan.cost.base_params},
          {"train_flops_per_sample", plan.cost.train_flops_per_sample},
          {"weights", plan.spec.model.weights.empty() ? json("random init") : json(plan.spec.model.weights)}};
}

// The device's best case for this precision, the denominator of MFU: measured on CPUs (no
// vendor table applies), the dense datasheet figure on known GPUs.
struct Peak {
  double flops_per_s = 0;
  double bytes_per_s = 0;
  std::string source;
};

Peak device_peak(const RunSpec& spec, int threads) {
  Peak peak;
  if (spec.device == "cpu") {
    const std::string precision = to_string(spec.precision);
    peak.flops_per_s = measure_cpu_matmul_flops(threads, precision);
    peak.source = "measured: 1024^3 " + precision + " matmul, " + std::to_string(threads) + " thread(s)";
    return peak;
  }
  const torch::Device device(spec.device);
  const std::string name = cuda_device_name(device.has_index() ? device.index() : 0);
  if (const auto gpu = find_gpu(name)) {
    peak.flops_per_s = peak_tflops(*gpu, to_string(spec.precision)) * 1e12;
    peak.bytes_per_s = gpu->memory_gbps * 1e9;
    peak.source = gpu->name + " datasheet (" + gpu->source + ")";
  } else {
    peak.source = "unknown GPU '" + name + "': no datasheet entry";
  }
  return peak;
}

}  // namespace

ModelConfig model_config_for(const RunSpec& spec) {
  try {
    return spec.model.config.empty() ? shipped_model_config(spec.model.name) : read_model_config(spec.model.config);
  } catch (const Error& e) {
    throw input_error(locate_field(spec.source, spec.origin, spec.model.config.empty() ? "model.name" : "model.config") +
                      ": " + e.what());
  }
}

RunPlan prepare_run(const RunSpec& spec) {
  RunPlan plan;
  plan.spec = spec;
  plan.model = model_config_for(spec);
  check_model_fits(spec, plan.model);
  check_device(spec);
  plan.launch = detect_launch();  // torchrun / srun / mpirun, or a single process
  check_launch(spec, plan.launch);
  if (spec.train.cuda_graph && plan.launch.distributed()) {
    fail_field(spec, "train.cuda_graph", "is not supported with data-parallel training (the gradient all-reduce "
                                         "hooks cannot be captured in a graph)");
  }
  plan.cost = model_cost(plan.model, spec.num_labels, spec.data.seq_len);
  plan.data = std::make_shared<const PreparedData>(prepare_data(spec, plan.model));
  check_data_fills_a_step(spec, *plan.data, plan.launch.world_size);
  plan.steps = plan_steps(spec.train, plan.data->train.size(), plan.launch.world_size, spec.data.drop_last);
  plan.threads = spec.threads > 0 ? static_cast<int>(spec.threads) : threads_per_process(plan.launch, physical_cores());
  plan.output_path = expand_output(spec);
  plan.spec.resolved["threads"] = plan.threads;
  // `auto` choices are recorded as what this build and device resolved them to.
  plan.model.attention = layers::resolve_attention(spec.model.attention);
  plan.spec.resolved["model"]["attention"] = to_string(plan.model.attention);
  plan.spec.resolved["train"]["optimizer_impl"] =
      to_string(resolve_optimizer_impl(parse_optimizer_impl(spec.train.optimizer_impl), spec.device != "cpu"));
  return plan;
}

ExitCode execute_run(const RunPlan& plan, const RunOptions& options) {
  const RunSpec& spec = plan.spec;
  // Data-parallel: join the other ranks first (a rank 0 that then stops, say on an existing
  // result, ends their wait at once). Only rank 0 writes the result and the stream.
  const auto comm = plan.launch.distributed() ? Communicator::connect(plan.launch, rank_device(spec, plan.launch),
                                                                      std::chrono::seconds(spec.dist.timeout_s))
                                              : nullptr;
  const bool writes_result = plan.launch.rank == 0;
  if (writes_result) ensure_writable(plan.output_path, options.force);
  const std::string started_at = iso8601_now();
  const auto wall_start = std::chrono::steady_clock::now();

  // Threads are set on purpose and recorded: Debian's OpenMP starts with 1 thread otherwise.
  torch::set_num_threads(plan.threads);
  torch::manual_seed(static_cast<uint64_t>(spec.train.seed));
  set_cuda_tf32(spec.cuda.tf32);  // explicitly off by default: fp32 stays fp32 (cuDNN would allow TF32)
  const torch::Device device = rank_device(spec, plan.launch);

  spdlog::info("{}: {} ({}), {} on {}, {} thread(s), batch {} x accum {}, seq {}, {} steps/epoch", spec.name,
               plan.model.name, to_string(plan.model.arch), to_string(spec.precision), spec.device, plan.threads,
               spec.train.batch_size, spec.train.grad_accum_steps, spec.data.seq_len, plan.steps.steps_per_epoch);
  auto model = build_classifier(plan.model, spec.num_labels);
  if (!spec.model.weights.empty()) load_weights(spec, *model);
  model->to(device);
  const int64_t params = count_parameters(*model);

  const Peak peak = device_peak(spec, plan.threads);
  const auto sync = comm ? make_gradient_sync(*comm, *model, spec.dist) : nullptr;  // rank 0's weights everywhere
  Trainer trainer(spec, *model, *plan.data, device, sync.get());
  std::map<int64_t, double> flops_at_length;  // a handful of distinct padded lengths per run
  trainer.set_flops_model([&](int64_t length) {
    auto [it, added] = flops_at_length.try_emplace(length, 0.0);
    if (added) it->second = model_cost(plan.model, spec.num_labels, length).train_flops_per_sample;
    return it->second;
  });

  std::optional<IterationStream> stream;
  if (writes_result) stream.emplace(iterations_path_for(plan.output_path));
  Recorder recorder;
  auto progress = make_progress(choose_progress_mode(options.quiet || !writes_result));
  TrainOutcome outcome;
  {
    InterruptScope interrupts;
    std::vector<TrainObserver*> observers = {&recorder, progress.get()};
    if (stream) observers.insert(observers.begin(), &*stream);
    outcome = trainer.run(observers, g_stop_requested);
  }
  if (!options.dump_params.empty()) {
    write_parameters(*model, options.dump_params + (comm ? ".rank" + std::to_string(comm->rank()) : ""));
  }
  if (comm && !writes_result) return finish_peer_rank(*comm, device, recorder, outcome, sync.get());

  SummaryInputs inputs;
  inputs.warmup_steps = spec.timing.warmup_steps;
  inputs.steps_per_epoch = plan.steps.steps_per_epoch;
  inputs.train_flops_per_sample = plan.cost.train_flops_per_sample;
  inputs.started_at = started_at;
  inputs.ended_at = iso8601_now();
  inputs.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  inputs.status = outcome.status;
  inputs.error = outcome.error;
  inputs.timing_method = outcome.timing_method;

  json result = {{"schema", kResultSchemaId},
                 {"tbench", {{"version", version()}, {"git", git_sha()}}},
                 {"spec", spec.resolved},
                 {"env", collect_env()},
                 {"model", model_json(plan, params)},
                 {"data", plan.data->description},
                 {"iterations", recorder.iterations},
                 {"epochs", recorder.epochs},
                 {"summary", summarize(recorder, inputs)}};
  json& summary = result["summary"];
  summary["peak_rss_bytes"] = peak_rss_bytes();
  summary["peak_flops_per_s"] = peak.flops_per_s > 0 ? json(peak.flops_per_s) : json(nullptr);
  summary["peak_bytes_per_s"] = peak.bytes_per_s > 0 ? json(peak.bytes_per_s) : json(nullptr);
  summary["peak_source"] = peak.source;
  summary["mfu"] = peak.flops_per_s > 0 && summary["train_flops_per_s"].is_number()
                       ? json(summary["train_flops_per_s"].get<double>() / peak.flops_per_s)
                       : json(nullptr);
  result["files"] = {{"result", plan.output_path}, {"iterations", iterations_path_for(plan.output_path)}};
  if (comm) {  // every rank's timings, the dist section, and the global summary
    outcome = merge_rank_reports(result, *comm, spec, rank_report(*comm, device, recorder, outcome, sync.get()),
                                 sync.get(), outcome);
  }
  if (!spec.model.save_weights.empty() && outcome.status != RunStatus::failed) {
    try {
      save_hf_weights(*model, spec.model.save_weights, {{"tbench_model", plan.model.name}, {"tbench_result", plan.output_path}});
      result["files"]["weights"] = spec.model.save_weights;
      spdlog::info("saved weights: {}", spec.model.save_weights);
    } catch (const Error& e) {
      // The measurements are still worth keeping: record the failure and write the result.
      outcome.status = RunStatus::failed;
      outcome.error = std::string("saving weights failed: ") + e.what();
      result["summary"]["status"] = to_string(outcome.status);
      result["summary"]["error"] = outcome.error;
    }
  }
  write_file_atomically(plan.output_path, result.dump(2) + "\n");

  const json& s = result["summary"];
  if (s["samples_per_s"].is_number()) {
    spdlog::info("{}: {:.2f} samples/s, step {:.1f} ms median (p10 {:.1f}, p90 {:.1f}) over {} steps, {} warm-up "
                 "excluded; epoch {} (projected {})",
                 to_string(outcome.status), s["samples_per_s"].get<double>(), s["step_ms"]["median"].get<double>(),
                 s["step_ms"]["p10"].get<double>(), s["step_ms"]["p90"].get<double>(), s["timed_steps"].get<int64_t>(),
                 s["warmup_steps"].get<int64_t>(), s["epoch_time"].is_null() ? "-" : s["epoch_time"].get<std::string>(),
                 s["projected_epoch_time"].get<std::string>());
  }
  spdlog::info("result: {}", plan.output_path);
  switch (outcome.status) {
    case RunStatus::completed: return ExitCode::ok;
    case RunStatus::interrupted:
      spdlog::warn("interrupted: the result holds the {} steps measured", recorder.iterations.size());
      return ExitCode::interrupted;
    case RunStatus::failed: spdlog::error("run failed: {}", outcome.error); return ExitCode::run_failed;
  }
  return ExitCode::internal;
}

}  // namespace tbench
