#include <fstream>
#include <sstream>

#include "tbench/analysis/analysis.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/results/result.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// `pointer` is a plain C string so that no temporary is bound at the call sites, which keep the
// returned reference (GCC 14's -Wdangling-reference cannot tell that it points into `j`).
const json& require(const json& j, const char* pointer, const std::string& path) {
  const json::json_pointer ptr(pointer);
  if (!j.contains(ptr)) throw input_error(path + ": " + pointer + ": missing (is this a complete tbench result?)");
  return j.at(ptr);
}

}  // namespace

ResultFile load_result(const std::string& path) {
  const std::string text = read_file(path, "the result file");
  ResultFile r;
  r.path = path;
  try {
    r.json = json::parse(text);
  } catch (const json::parse_error& e) {
    throw input_error(path + ": not valid JSON: " + e.what());
  }
  if (!r.json.is_object() || r.json.value("schema", "") != kResultSchemaId) {
    throw input_error(path + ": schema: not a tbench result (expected \"schema\": \"" + kResultSchemaId + "\")");
  }
  try {
    const json& j = r.json;
    r.model = require(j, "/model/name", path);
    r.params = require(j, "/model/params", path);
    r.train_flops_per_sample = require(j, "/model/train_flops_per_sample", path);
    r.host = require(j, "/env/host", path);
    r.device = require(j, "/spec/device", path);
    r.precision = require(j, "/spec/precision", path);
    r.threads = require(j, "/spec/threads", path);
    r.batch_size = require(j, "/spec/train/batch_size", path);
    r.grad_accum = require(j, "/spec/train/grad_accum_steps", path);
    r.seq_len = require(j, "/spec/data/seq_len", path);
    // Samples an epoch trains on: the data section's count (file sources, eval held out), else the
    // spec's (older results; synthetic data).
    const json::json_pointer trained("/data/train_samples"), requested("/spec/data/num_samples");
    if (j.contains(trained) && j.at(trained).is_number()) r.num_samples = j.at(trained).get<int64_t>();
    else if (j.contains(requested) && j.at(requested).is_number()) r.num_samples = j.at(requested).get<int64_t>();
    // Data-parallel results hold rank 0's iterations (per-device samples) and a global summary.
    r.world_size = j.value(json::json_pointer("/dist/world_size"), int64_t{1});
    const json::json_pointer share("/summary/comm_share");
    if (j.contains(share) && j.at(share).is_number()) r.comm_share = j.at(share).get<double>();
    r.status = require(j, "/summary/status", path);
    r.steps_per_epoch = require(j, "/summary/steps_per_epoch", path);
    const std::string gpu = j.value(json::json_pointer("/env/gpu/name"), std::string());
    r.machine = r.device == "cpu" || gpu.empty() ? r.host + " (cpu)" : r.host + " (" + gpu + ")";
    for (const auto& it : require(j, "/iterations", path)) {
      const double seconds = it.at("seconds");
      if (it.value("warmup", false)) {
        r.warmup_seconds.push_back(seconds);
      } else {
        r.step_seconds.push_back(seconds);
        r.step_samples.push_back(it.at("samples").get<int64_t>() * r.world_size);
      }
    }
    for (const auto& e : require(j, "/epochs", path)) {
      if (!e.value("complete", true)) continue;
      r.epoch_wall_seconds.push_back(e.at("seconds"));
      double sum = 0;
      for (const auto& it : j["iterations"]) {
        if (it.at("epoch") == e.at("epoch")) sum += it.at("seconds").get<double>();
      }
      r.epoch_step_sum.push_back(sum);
    }
    const json& summary = require(j, "/summary", path);
    if (summary["samples_per_s"].is_number()) r.samples_per_s = summary["samples_per_s"];
    if (summary["epoch_seconds"].is_number()) {
      r.epoch_seconds = summary["epoch_seconds"];
    } else if (summary["projected_epoch_seconds"].is_number()) {
      r.epoch_seconds = summary["projected_epoch_seconds"];
      r.epoch_projected = true;
    }
  } catch (const json::exception& e) {
    throw input_error(path + ": malformed tbench result: " + e.what());
  }
  if (r.step_seconds.empty()) {
    throw input_error(path + ": no steady-state steps to analyse (all " + std::to_string(r.warmup_seconds.size()) +
                      " steps were warm-up); run more steps or lower timing.warmup_steps");
  }
  return r;
}

std::vector<ResultFile> load_results(const std::vector<std::string>& paths) {
  std::vector<ResultFile> out;
  out.reserve(paths.size());
  for (const auto& p : paths) out.push_back(load_result(p));
  return out;
}

std::string label_of(const ResultFile& r, const std::string& by) {
  if (by == "machine") return r.machine;
  if (by == "host") return r.host;
  if (by == "device") return r.device;
  if (by == "precision") return r.precision;
  if (by == "threads") return std::to_string(r.threads) + (r.threads == 1 ? " thread" : " threads");
  if (by == "batch_size") return "batch " + std::to_string(r.batch_size);
  if (by == "seq_len") return "seq " + std::to_string(r.seq_len);
  if (by == "world_size") return std::to_string(r.world_size) + (r.world_size == 1 ? " process" : " processes");
  if (by == "name") return r.json["spec"].value("name", r.model);
  throw input_error("--by: '" + by + "' is not one of machine, host, device, precision, threads, batch_size, seq_len, world_size, name");
}

}  // namespace tbench
