#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "tbench/analysis/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/json_text.hpp"
#include "tbench/results/result.hpp"
#include "tbench/results/summary.hpp"
#include "tbench/sweep/sweep.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

constexpr int64_t kMaxCount = int64_t{1} << 31;   // batch sizes, samples, steps, epochs, lengths, threads
constexpr int64_t kMaxWorld = int64_t{1} << 20;   // processes in a data-parallel run
constexpr int64_t kMaxParams = int64_t{1} << 50;
constexpr double kMaxSeconds = 1e9;               // 31 years: a step, an epoch or a run past it is corrupt
// The share by which a complete epoch's steps may sum past its wall time: the steps are timed by
// CUDA events or the steady clock, the epoch by the host clock around them, so they agree to the
// timing check's 2 %, not to the microsecond.
constexpr double kStepSumSlack = 0.05;

// Typed reads of a result's fields. A result file is outside bytes (copied between machines,
// edited, cut short), so every value is checked for its type and range where it is read: a
// double where an integer belongs (1e300 into an int64 is undefined behaviour), null, a string.
class ResultReader {
 public:
  ResultReader(const json& root, const std::string& path) : root_(root), path_(path) {}

  const json* find(const char* pointer) const {
    const json::json_pointer ptr(pointer);
    return root_.contains(ptr) ? &root_.at(ptr) : nullptr;
  }
  const json& require(const char* pointer) const {
    const json* v = find(pointer);
    if (!v) throw input_error(path_ + ": " + pointer + ": missing (is this a complete tbench result?)");
    return *v;
  }
  std::string string(const char* pointer) const {
    const json& v = require(pointer);
    if (!v.is_string()) throw bad(pointer, "expected a string, got " + json_text(v));
    return v.get<std::string>();
  }
  std::string string_or(const char* pointer, const std::string& fallback) const {
    const json* v = find(pointer);
    return v && v->is_string() ? v->get<std::string>() : fallback;
  }
  // Integers are bounded as well as typed: analysis multiplies them (samples x world size, batch x
  // accumulation), and the products must stay inside int64.
  int64_t integer(const json& v, const std::string& where, int64_t minimum, int64_t maximum = kMaxCount) const {
    const bool in_range = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(maximum)) &&
                          v.get<int64_t>() >= minimum && v.get<int64_t>() <= maximum;
    if (!in_range) {
      throw bad(where, "expected an integer in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "], got " +
                           json_text(v));
    }
    return v.get<int64_t>();
  }
  int64_t integer(const char* pointer, int64_t minimum, int64_t maximum = kMaxCount) const {
    return integer(require(pointer), pointer, minimum, maximum);
  }
  int64_t integer_or(const char* pointer, int64_t fallback, int64_t minimum, int64_t maximum = kMaxCount) const {
    const json* v = find(pointer);
    return v && !v->is_null() ? integer(*v, pointer, minimum, maximum) : fallback;
  }
  double number(const json& v, const std::string& where) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw bad(where, "expected a number >= 0, got " + json_text(v));
    }
    return v.get<double>();
  }
  double number(const char* pointer) const { return number(require(pointer), pointer); }
  // A duration: a number >= 0 that a run could have taken (format_duration and the sums stay exact).
  double seconds(const json& v, const std::string& where) const {
    const double value = number(v, where);
    if (value > kMaxSeconds) throw bad(where, "expected seconds up to 1e9, got " + json_text(v));
    return value;
  }
  bool boolean(const json& v, const std::string& where) const {
    if (!v.is_boolean()) throw bad(where, "expected true or false, got " + json_text(v));
    return v.get<bool>();
  }
  // An optional value: nullptr where it is absent or null (unknown); anything else is read and
  // checked as the field's type (a string or a negative figure is a corrupt file, not an unknown).
  const json* given(const char* pointer) const {
    const json* v = find(pointer);
    return v && !v->is_null() ? v : nullptr;
  }
  std::optional<double> optional_number(const char* pointer) const {
    const json* v = given(pointer);
    return v ? std::optional<double>(number(*v, pointer)) : std::nullopt;
  }
  std::optional<double> optional_seconds(const char* pointer) const {
    const json* v = given(pointer);
    return v ? std::optional<double>(seconds(*v, pointer)) : std::nullopt;
  }
  // An optional setting of the resolved spec: absent (results before the field) or null is false.
  bool optional_flag(const char* pointer) const {
    const json* v = given(pointer);
    return v && boolean(*v, pointer);
  }
  // An optional flag of a record: absent is `fallback`.
  bool flag_or(const json& object, const char* key, const std::string& where, bool fallback) const {
    return object.contains(key) ? boolean(object[key], where + "/" + key) : fallback;
  }
  // An optional interval of seconds, [low, high] with low <= high (null: none).
  std::optional<Interval> interval_if_any(const char* pointer) const {
    const json* v = given(pointer);
    if (!v) return std::nullopt;
    if (!v->is_array() || v->size() != 2) throw bad(pointer, "expected [low, high] or null, got " + json_text(*v));
    const Interval interval{seconds((*v)[0], std::string(pointer) + "/0"), seconds((*v)[1], std::string(pointer) + "/1")};
    if (interval.low > interval.high) throw bad(pointer, "low above high: " + json_text(*v));
    return interval;
  }
  Error bad(const std::string& where, const std::string& what) const {
    return input_error(path_ + ": " + where + ": " + what);
  }

 private:
  const json& root_;
  const std::string& path_;
};

// The processes that shared rank 0's host (dist.ranks names each rank's host), which together used
// its cores. Where a rank never reported, the run is taken to have been on one host.
int64_t processes_on_host(const ResultReader& read, const std::string& host, int64_t world_size) {
  const json* ranks = read.given("/dist/ranks");
  if (!ranks || !ranks->is_array() || static_cast<int64_t>(ranks->size()) != world_size) return world_size;
  int64_t same = 0;
  for (const auto& rank : *ranks) {
    const bool named = rank.is_object() && rank.contains("host") && rank["host"].is_string();
    same += named && rank["host"].get<std::string>() == host;
  }
  return std::max<int64_t>(same, 1);
}

// The GPU a CUDA run used, as `env` records it: env.cuda.devices[N].name for device_used "cuda:N";
// empty for CPU runs and results without it.
std::string gpu_name(const ResultReader& read, const std::string& device) {
  if (device.rfind("cuda:", 0) != 0) return "";
  const std::string index = device.substr(5);
  if (index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos) return "";
  return read.string_or(("/env/cuda/devices/" + std::to_string(std::stoi(index)) + "/name").c_str(), "");
}

// Each planned epoch's mean FLOPs per step; results from before the per-epoch list hold one figure,
// the planned epochs' mean, which stands for every epoch.
std::vector<double> planned_epoch_flops(const ResultReader& read) {
  std::vector<double> planned;
  if (const json* list = read.find("/model/planned_epoch_step_train_flops"); list && !list->is_null()) {
    if (!list->is_array() || list->empty()) {
      throw read.bad("/model/planned_epoch_step_train_flops", "expected a list of at least one epoch's figure, or null");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string where = "/model/planned_epoch_step_train_flops/" + std::to_string(i);
      planned.push_back(read.number((*list)[i], where));
      if (!(planned.back() > 0)) throw read.bad(where, "a step's training FLOPs are more than 0");
    }
  } else if (const auto mean = read.optional_number("/model/expected_step_train_flops"); mean && *mean > 0) {
    planned.push_back(*mean);
  }
  return planned;
}

// A CPU run's peak probes (before and after its timed epochs); none for a datasheet's peak or a
// result from before the field.
std::vector<double> peak_probes(const ResultReader& read) {
  std::vector<double> probes;
  const json* list = read.given("/summary/peak_probes_flops_per_s");
  if (!list) return probes;
  if (!list->is_array() || list->empty()) {
    throw read.bad("/summary/peak_probes_flops_per_s", "expected a list of at least one probed rate, or null, got " +
                                                           json_text(*list));
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string where = "/summary/peak_probes_flops_per_s/" + std::to_string(i);
    probes.push_back(read.number((*list)[i], where));
    if (!(probes.back() > 0)) throw read.bad(where, "a probed rate is more than 0, got " + json_text((*list)[i]));
  }
  return probes;
}

void read_iterations(const ResultReader& read, const json& list, ResultFile& r) {
  if (!list.is_array()) throw read.bad("/iterations", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& it = list[i];
    const std::string where = "/iterations/" + std::to_string(i);
    if (!it.is_object()) throw read.bad(where, "expected an object");
    const auto field = [&](const char* key) -> const json& {
      if (!it.contains(key)) throw read.bad(where + "/" + key, "missing");
      return it[key];
    };
    ResultIteration record;
    record.epoch = read.integer(field("epoch"), where + "/epoch", 0);
    record.samples = read.integer(field("samples"), where + "/samples", 1);
    record.seconds = read.seconds(field("seconds"), where + "/seconds");
    if (!(record.seconds > 0)) throw read.bad(where + "/seconds", "a step takes more than 0 seconds");
    record.warmup = read.flag_or(it, "warmup", where, false);
    if (it.contains("ended_at") && !it["ended_at"].is_null()) record.ended_at = read.seconds(it["ended_at"], where + "/ended_at");
    if (it.contains("tokens")) record.tokens = read.integer(it["tokens"], where + "/tokens", 0);
    if (it.contains("real_tokens")) record.real_tokens = read.integer(it["real_tokens"], where + "/real_tokens", 0);
    if (it.contains("train_flops")) record.train_flops = read.number(it["train_flops"], where + "/train_flops");
    record.profiled = read.flag_or(it, "profiled", where, false);
    r.iterations.push_back(record);
    if (record.profiled) continue;  // slowed by the profiler, like the summary leaves them out
    if (record.warmup) {
      r.warmup_seconds.push_back(record.seconds);
    } else {
      r.step_seconds.push_back(record.seconds);
      r.step_samples.push_back(record.samples * r.world_size);
    }
  }
}

// An epoch ran its steps within its wall time: predict --epochs counts the difference as
// the epoch's time outside its steps, so records that disagree would make a wrong prediction.
void check_epoch_holds_its_steps(const ResultReader& read, const std::string& where, int64_t epoch, int64_t steps,
                                 double step_sum, double wall) {
  if (steps == 0) {
    throw read.bad(where + "/epoch", "epoch " + std::to_string(epoch) +
                                         " has no steps in /iterations (their epoch numbers differ)");
  }
  if (step_sum > wall * (1 + kStepSumSlack) + 1e-3) {
    throw read.bad(where + "/seconds", "epoch " + std::to_string(epoch) + " took " + format_fixed(wall, 3) +
                                          " s, but its steps sum to " + format_fixed(step_sum, 3) + " s");
  }
}

void read_epochs(const ResultReader& read, const json& list, ResultFile& r) {
  if (!list.is_array()) throw read.bad("/epochs", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string where = "/epochs/" + std::to_string(i);
    if (!e.is_object() || !e.contains("epoch") || !e.contains("seconds")) throw read.bad(where, "expected {epoch, seconds, ...}");
    const int64_t epoch = read.integer(e["epoch"], where + "/epoch", 0);
    // The profiler's start and stop are paid once, by the run that asked for them: not an epoch's cost.
    const double wall = read.seconds(e["seconds"], where + "/seconds");
    const double profiler = e.contains("profiler_seconds") ? read.seconds(e["profiler_seconds"], where + "/profiler_seconds") : 0.0;
    if (profiler > wall) throw read.bad(where + "/profiler_seconds", "is longer than the epoch's seconds");
    if (e.contains("eval") && e["eval"].is_object() && e["eval"].contains("seconds")) {
      r.epoch_eval_seconds.push_back(read.seconds(e["eval"]["seconds"], where + "/eval/seconds"));
    }
    double sum = 0;
    int64_t steps = 0, profiled = 0;
    for (const auto& it : r.iterations) {
      if (it.epoch != epoch) continue;
      sum += it.seconds;
      ++steps;
      profiled += it.profiled ? 1 : 0;
    }
    const bool complete = read.flag_or(e, "complete", where, true);
    if (steps > 0 || complete) check_epoch_holds_its_steps(read, where, epoch, steps, sum, wall - profiler);
    // Its profiled steps as steady steps of their own work, as the summary counts them
    // (epoch_seconds_unprofiled): the profiler slows the steps it records. The time outside the
    // steps stays as measured.
    double unprofiled = 0;
    if (profiled > 0 && !r.step_seconds.empty()) {
      const SteadyStep steady = run_steady_step(r, /*fit_flops=*/true);
      for (const auto& it : r.iterations) {
        if (it.epoch == epoch && it.profiled) unprofiled += steady.seconds_at(it.train_flops) - it.seconds;
      }
    }
    if (!complete) {
      // A partial epoch's time outside its steps counts too (predict --epochs).
      if (steps > 0 && !r.partial_epoch) {
        r.partial_epoch = ResultFile::PartialEpoch{wall - profiler + unprofiled, sum + unprofiled};
      }
      continue;
    }
    if (e.contains("samples")) r.epoch_samples_seen.push_back(read.integer(e["samples"], where + "/samples", 0));
    r.epoch_wall_seconds.push_back(wall - profiler + unprofiled);
    r.epoch_step_sum.push_back(sum + unprofiled);
    r.profiled_a_complete_epoch = r.profiled_a_complete_epoch || profiler > 0 || profiled > 0;
  }
}

// The samples an epoch trains over all ranks: what its complete epochs trained, else (an epoch
// projected from steady steps, which scales to the planned work; an older result without the
// count) the plan's: every training sample under data.drop_last false (its last step partial),
// else its full steps.
double epoch_samples_of(const ResultFile& r) {
  const double ranks = static_cast<double>(r.world_size);
  if (!r.epoch_projected && !r.epoch_samples_seen.empty()) {
    double sum = 0;
    for (int64_t samples : r.epoch_samples_seen) sum += static_cast<double>(samples);
    return sum / static_cast<double>(r.epoch_samples_seen.size()) * ranks;
  }
  if (!r.drop_last && r.world_size == 1 && r.num_samples > 0) return static_cast<double>(r.num_samples);
  // In doubles: each count is bounded where it is read, but their product need not fit an int64.
  return static_cast<double>(r.steps_per_epoch) * static_cast<double>(r.batch_size) *
         static_cast<double>(r.grad_accum) * ranks;
}

// Timed steps' mean padded tokens over the profiled steps': 1 when either is unknown. A step's
// kernels do work in proportion to its tokens, to first order, so the profiled steps' kernel time
// scales by this to stand for a timed step when their lengths differed (dynamic padding).
double profiled_to_timed_tokens(const ResultFile& r) {
  double timed = 0, profiled = 0;
  int64_t timed_steps = 0, profiled_steps = 0;
  for (const auto& it : r.iterations) {
    if (it.warmup && !it.profiled) continue;
    if (it.tokens <= 0) return 1.0;
    if (it.profiled) {
      profiled += static_cast<double>(it.tokens);
      ++profiled_steps;
    } else {
      timed += static_cast<double>(it.tokens);
      ++timed_steps;
    }
  }
  if (timed_steps == 0 || profiled_steps == 0) return 1.0;
  return (timed / static_cast<double>(timed_steps)) / (profiled / static_cast<double>(profiled_steps));
}

// predict --target's kernel split: a device profile's profile.bounds, per profiled step.
// How many steps timing.profile_steps profiled: /profile/steps is [first, last].
int64_t profiled_step_count(const ResultReader& read) {
  const json& steps = read.require("/profile/steps");
  if (!steps.is_array() || steps.size() != 2) throw read.bad("/profile/steps", "expected [first, last]");
  const int64_t first = read.integer(steps[0], "/profile/steps/0", 1);
  const int64_t last = read.integer(steps[1], "/profile/steps/1", first);
  return last - first + 1;
}

// Only where the profile lists its entries by name: predict --target reads a profile's bounds alone.
void read_step_profile(const ResultReader& read, ResultFile& r) {
  const json* profile = read.find("/profile");
  if (!profile || profile->is_null() || !read.find("/profile/top")) return;
  ResultFile::StepProfile p;
  p.measures = read.string("/profile/measures");
  const auto steps = static_cast<double>(profiled_step_count(read));
  p.measured_ms_per_step = read.number("/profile/measured_ms") / steps;
  const json& top = read.require("/profile/top");
  if (!top.is_array()) throw read.bad("/profile/top", "expected a list");
  for (std::size_t i = 0; i < top.size(); ++i) {
    const json& entry = top[i];
    const std::string where = "/profile/top/" + std::to_string(i);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("ms")) {
      throw read.bad(where, "expected {name, calls, ms, share}");
    }
    p.top_ms_per_step.emplace_back(entry["name"].get<std::string>(), read.number(entry["ms"], where + "/ms") / steps);
  }
  r.step_profile = p;
}

void read_kernel_seconds(const ResultReader& read, ResultFile& r) {
  const json* bounds = read.find("/profile/bounds");
  if (!bounds || read.string_or("/profile/measures", "") != "device kernels") return;
  const int64_t profiled = profiled_step_count(read);
  if (!bounds->is_array()) throw read.bad("/profile/bounds", "expected a list");
  ResultFile::KernelSeconds per_step;
  double launches = 0;
  bool every_entry_counted = true;
  for (std::size_t i = 0; i < bounds->size(); ++i) {
    const json& entry = (*bounds)[i];
    const std::string where = "/profile/bounds/" + std::to_string(i);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("ms")) {
      throw read.bad(where, "expected {name, calls, ms, share}");
    }
    const std::string name = entry["name"].get<std::string>();
    double* part = name == "compute" ? &per_step.compute : name == "memory" ? &per_step.memory : nullptr;
    if (!part && name != "communication") {
      throw read.bad(where + "/name", "expected compute, memory or communication, got " + json_text(entry["name"]));
    }
    const double seconds = read.number(entry["ms"], where + "/ms") / 1e3;
    if (part) *part += seconds;
    if (entry.contains("calls") && !entry["calls"].is_null()) {
      const double calls = read.number(entry["calls"], where + "/calls");
      if (calls < 0) throw read.bad(where + "/calls", "expected a count of 0 or more");
      launches += calls;
    } else {
      every_entry_counted = false;
    }
  }
  // A profile that recorded no kernels (a LibTorch without CUPTI) splits nothing: the roofline
  // predicts instead of a "split" that holds the whole step.
  if (!(per_step.compute + per_step.memory > 0)) return;
  const double per_timed_step = profiled_to_timed_tokens(r) / static_cast<double>(profiled);
  per_step.compute *= per_timed_step;
  per_step.memory *= per_timed_step;
  r.kernel_seconds_per_step = per_step;
  // Launches do not scale with the tokens: a shorter batch runs the same kernels on less data.
  if (every_entry_counted) r.kernel_launches_per_step = launches / static_cast<double>(profiled);
}

json parse_json_file(const std::string& path) {
  const std::string text = read_file(path, "the result file");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw input_error(path + ": not valid JSON: " + e.what());
  }
}

bool is_sweep_state(const json& j) { return j.is_object() && j.value("schema", json()) == kSweepStateSchemaId; }

ResultFile result_from_json(const std::string& path, json document) {
  ResultFile r;
  r.path = path;
  r.json = std::move(document);
  if (is_sweep_state(r.json)) {
    throw input_error(path + ": a sweep's state file, not a result: its points' results are the other .json files "
                             "in its folder");
  }
  if (!r.json.is_object() || !r.json.contains("schema") || r.json["schema"] != kResultSchemaId) {
    throw input_error(path + ": schema: not a tbench result (expected \"schema\": \"" + kResultSchemaId + "\")");
  }
  const ResultReader read(r.json, path);
  // A section that is not one would be reported by its first field as missing.
  for (const char* section : {"model", "spec", "env", "summary"}) {
    if (r.json.contains(section) && !r.json[section].is_object()) {
      throw read.bad(std::string("/") + section, "expected a section (an object), got a " + std::string(r.json[section].type_name()));
    }
  }
  r.model = read.string("/model/name");
  r.task = read.string_or("/model/task", "classification");  // results before tasks were classification
  r.params = read.integer("/model/params", 0, kMaxParams);
  r.train_flops_per_sample = read.number("/model/train_flops_per_sample");
  r.planned_epoch_step_train_flops = planned_epoch_flops(read);
  r.hidden_size = read.optional_number("/model/hidden_size").value_or(768.0);
  r.num_layers = read.optional_number("/model/num_layers").value_or(12.0);
  r.num_heads = read.optional_number("/model/num_heads").value_or(12.0);
  // XLNet's attention is always eager, whatever model.attention resolved to.
  r.stores_attention_scores = read.string_or("/spec/model/attention", "eager") != "sdpa" ||
                              read.string_or("/model/arch", "") == "xlnet";
  r.unpadded = read.optional_flag("/spec/model/unpad");  // results before model.unpad padded
  r.host = read.string("/env/host");
  r.device = read.string("/spec/device");
  r.name = read.string_or("/spec/name", r.model);
  r.precision = read.string("/spec/precision");
  r.threads = read.integer("/spec/threads", 0);
  r.batch_size = read.integer("/spec/train/batch_size", 1);
  r.grad_accum = read.integer("/spec/train/grad_accum_steps", 1);
  r.seq_len = read.integer("/spec/data/seq_len", 1);
  const json* drop_last = read.find("/spec/data/drop_last");  // absent or null: the default, true
  r.drop_last = !drop_last || drop_last->is_null() || read.optional_flag("/spec/data/drop_last");
  // Samples an epoch trains on: the data section's count (file sources, eval held out), else the
  // spec's (older results; synthetic data).
  r.num_samples = read.integer_or("/data/train_samples", read.integer_or("/spec/data/num_samples", 0, 0, kMaxParams), 0, kMaxParams);
  // Data-parallel results hold rank 0's iterations (per-device samples) and a global summary.
  r.world_size = read.integer_or("/dist/world_size", 1, 1, kMaxWorld);
  r.rank0_device = read.string_or("/dist/ranks/0/device", "");
  r.processes_on_host = processes_on_host(read, r.host, r.world_size);
  r.comm_share = read.optional_number("/summary/comm_share");
  r.status = read.string("/summary/status");
  if (r.status != "completed" && r.status != "interrupted" && r.status != "failed") {
    throw read.bad("/summary/status", "expected completed, interrupted or failed, got " + json_text(r.status));
  }
  r.steps_per_epoch = read.integer("/summary/steps_per_epoch", 0);
  r.peak_flops_per_s = read.optional_number("/summary/peak_flops_per_s");
  r.peak_bytes_per_s = read.optional_number("/summary/peak_bytes_per_s");
  r.gpu_power_w_mean = read.optional_number("/summary/gpu_power_w_mean");
  r.gpu_energy_j_per_sample = read.optional_number("/summary/gpu_energy_j_per_sample");
  r.tf32 = read.optional_flag("/spec/cuda/tf32");
  r.cuda_graph = read.optional_flag("/spec/train/cuda_graph");  // absent before the field: eager
  r.gpu = gpu_name(read, device_used(r));
  r.machine = r.host + " (" + processor_of(r) + ")";
  r.peak_source = read.string_or("/summary/peak_source", r.machine);
  r.peak_probes_flops_per_s = peak_probes(read);
  read_iterations(read, read.require("/iterations"), r);
  read_epochs(read, read.require("/epochs"), r);
  read_kernel_seconds(read, r);
  read_step_profile(read, r);
  if (r.step_seconds.empty()) {
    throw TooShortToAnalyse(path + ": no steady-state steps to analyse (all " + std::to_string(r.warmup_seconds.size()) +
                      " steps were warm-up); run more steps or lower timing.warmup_steps");
  }
  read.require("/summary");
  // Every result with a timed step has its rate and an epoch time (measured or projected).
  r.samples_per_s = read.number("/summary/samples_per_s");
  if (!(r.samples_per_s > 0)) throw read.bad("/summary/samples_per_s", "timed steps train more than 0 samples a second");
  if (const json* idle = read.find("/summary/device_idle_at_start_fraction"); idle && !idle->is_null()) {
    const double share = read.number(*idle, "/summary/device_idle_at_start_fraction");
    if (share > 1) throw read.bad("/summary/device_idle_at_start_fraction", "expected a share in [0, 1], got " + json_text(*idle));
    r.device_idle_at_start_fraction = share;
  }
  if (const auto epoch = read.optional_seconds("/summary/epoch_seconds")) {
    // As results since 2026-11-29 record it (before, summary.epoch_seconds held the profiled steps'
    // slowdown, and before 2026-11-27 the profiler's start and stop too): the complete epochs' own
    // mean, each as read_epochs counts it, where one was profiled.
    r.epoch_seconds = r.profiled_a_complete_epoch ? spread(r.epoch_wall_seconds).mean : *epoch;
  } else if (const auto projected = read.optional_seconds("/summary/projected_epoch_seconds")) {
    r.epoch_seconds = *projected;
    r.epoch_projected = true;
    r.projected_epoch_ci95 = read.interval_if_any("/summary/projected_epoch_seconds_ci95");
  } else {
    throw read.bad("/summary", "neither epoch_seconds nor projected_epoch_seconds (is this a complete tbench result?)");
  }
  r.epoch_samples = epoch_samples_of(r);
  // A zero would make every speedup against it 0.00x.
  if (!(r.epoch_seconds > 0)) {
    throw read.bad(r.epoch_projected ? "/summary/projected_epoch_seconds" : "/summary/epoch_seconds",
                   "an epoch of timed steps takes more than 0 seconds");
  }
  return r;
}

}  // namespace

ResultFile load_result(const std::string& path) { return result_from_json(path, parse_json_file(path)); }

std::vector<ResultFile> load_results(const std::vector<std::string>& paths, std::vector<std::string>* left_out) {
  const auto is_trace = [](const std::string& path) {  // trace_path_for's name; not read (it can be large)
    const std::string suffix = ".trace.json";
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::vector<ResultFile> out;
  out.reserve(paths.size());
  for (const auto& p : paths) {
    if (left_out && is_trace(p)) {
      left_out->push_back(p + " is a profiled run's trace (timing.profile_steps), not a result");
      continue;
    }
    json document = parse_json_file(p);
    if (left_out && is_sweep_state(document)) {
      left_out->push_back(p + " is a sweep's state file, not a result");
      continue;
    }
    try {
      out.push_back(result_from_json(p, std::move(document)));
    } catch (const TooShortToAnalyse& e) {
      // One run cut short among a folder's (results/*.json) would lose the whole table.
      if (!left_out) throw;
      left_out->push_back(e.what());
    }
  }
  return out;
}

std::string processor_of(const ResultFile& r) {
  if (r.device == "cpu") return "cpu";
  return r.gpu.empty() ? "cuda" : r.gpu;
}

std::optional<WidestProbeSpread> widest_peak_probe_spread(const std::vector<const ResultFile*>& runs) {
  std::optional<WidestProbeSpread> widest;
  for (const auto* r : runs) {
    const auto spread = probe_spread(r->peak_probes_flops_per_s);
    if (spread && (!widest || *spread > widest->spread)) widest = WidestProbeSpread{r, *spread};
  }
  return widest;
}

std::string device_used(const ResultFile& r) {
  const bool cuda = r.device.rfind("cuda", 0) == 0;
  // Rank 0's own record, else the spec's device, which a data-parallel rank 0 did not use by index.
  const std::string device = !r.rank0_device.empty() ? r.rank0_device : cuda && r.world_size > 1 ? "cuda" : r.device;
  return device == "cuda" ? "cuda:0" : device;
}

std::string model_row(const ResultFile& r, const std::string& by) {
  return r.task == "classification" || by == "task" ? r.model : r.model + " [" + r.task + "]";
}

const nlohmann::json* find_dotted(const nlohmann::json& root, const std::string& dotted) {
  const nlohmann::json* at = &root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    if (dot == std::string::npos) return at;
    start = dot + 1;
  }
}

namespace {

// A dotted spec field's column: "optimizer_impl=fused", from the resolved spec the result records.
std::string spec_field_label(const ResultFile& r, const std::string& field) {
  const nlohmann::json* value = find_dotted(r.json, "spec." + field);
  if (!value) {
    throw input_error("--by " + field + ": " + r.path + " records no spec field '" + field +
                      "' (a dotted field of the resolved spec, e.g. train.optimizer_impl)");
  }
  const std::string text = value->is_string() ? value->get<std::string>() : json_text(*value);
  return field.substr(field.rfind('.') + 1) + "=" + text;
}

}  // namespace

std::string label_of(const ResultFile& r, const std::string& by) {
  if (by.find('.') != std::string::npos) return spec_field_label(r, by);
  if (by == "machine") return r.machine;
  if (by == "host") return r.host;
  if (by == "device") return device_used(r);
  if (by == "precision") return r.precision;
  if (by == "threads") return std::to_string(r.threads) + (r.threads == 1 ? " thread" : " threads");
  if (by == "batch_size") return "batch " + std::to_string(r.batch_size);
  if (by == "seq_len") return "seq " + std::to_string(r.seq_len);
  if (by == "world_size") return std::to_string(r.world_size) + (r.world_size == 1 ? " process" : " processes");
  if (by == "name") return r.name;
  if (by == "task") return r.task;
  throw input_error("--by: '" + by + "' is not one of machine, host, device, precision, threads, batch_size, seq_len, "
                    "world_size, task, name, nor a dotted spec field (e.g. train.optimizer_impl)");
}

}  // namespace tbench
