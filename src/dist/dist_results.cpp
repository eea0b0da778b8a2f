// Every rank's timings end up in rank 0's one result: each rank summarises its own steady-state
// steps, the others hand their summary to rank 0 through the rendezvous store (no collective, so
// it works after a peer failed), and rank 0 adds the `dist` section and the global summary.
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "dist_internal.hpp"
#include "tbench/dist.hpp"
#include "tbench/results.hpp"
#include "tbench/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

std::string this_host() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string key_for(int rank) { return "report/" + std::to_string(rank); }

}  // namespace

json rank_report(const Communicator& comm, const torch::Device& device, const Recorder& recorder,
                 const TrainOutcome& outcome, const GradientSync* sync) {
  std::vector<double> step_ms, wait_ms;
  double seconds = 0, waited = 0;
  int64_t samples = 0;
  for (const auto& r : recorder.iterations) {
    if (r.warmup) continue;
    step_ms.push_back(r.seconds * 1e3);
    wait_ms.push_back(r.comm_wait_seconds * 1e3);
    seconds += r.seconds;
    waited += r.comm_wait_seconds;
    samples += r.samples;
  }
  const SyncStats stats = sync_stats(sync);
  return {{"rank", comm.rank()},
          {"local_rank", comm.launch().local_rank},
          {"host", this_host()},
          {"device", device.str()},
          {"status", to_string(outcome.status)},
          {"error", outcome.error.empty() ? json(nullptr) : json(outcome.error)},
          {"steps", static_cast<int64_t>(recorder.iterations.size())},
          {"timed_steps", static_cast<int64_t>(step_ms.size())},
          {"step_ms", spread(step_ms)},
          {"comm_wait_ms", spread(wait_ms)},
          {"comm_share", seconds > 0 ? json(waited / seconds) : json(nullptr)},
          {"samples_per_s", seconds > 0 ? json(static_cast<double>(samples) / seconds) : json(nullptr)},
          {"allreduces", stats.allreduces}};
}

void send_rank_report(Communicator& comm, const json& report) {
  try {
    comm.publish(key_for(comm.rank()), report.dump());
  } catch (const std::exception& e) {
    spdlog::warn("could not hand this rank's timings to rank 0 (it may have stopped): {}", e.what());
  }
}

ExitCode finish_peer_rank(Communicator& comm, const torch::Device& device, const Recorder& recorder,
                          const TrainOutcome& outcome, const GradientSync* sync) {
  send_rank_report(comm, rank_report(comm, device, recorder, outcome, sync));
  switch (outcome.status) {
    case RunStatus::completed:
      spdlog::info("{} steps done; rank 0 writes the result", recorder.iterations.size());
      return ExitCode::ok;
    case RunStatus::interrupted:
      spdlog::warn("interrupted with the other ranks after {} steps; rank 0 writes the result", recorder.iterations.size());
      return ExitCode::interrupted;
    case RunStatus::failed: spdlog::error("run failed: {}", outcome.error); return ExitCode::run_failed;
  }
  return ExitCode::internal;
}

TrainOutcome merge_rank_reports(json& result, Communicator& comm, const RunSpec& spec, json own_report,
                                const GradientSync* sync, TrainOutcome outcome) {
  using std::chrono::milliseconds;
  const int world = comm.world_size();
  // A completed rank 0 waits as long as for any peer; a failed one only briefly, since the rank
  // that broke the run may never report.
  const milliseconds patience = outcome.status == RunStatus::failed ? std::min(comm.timeout(), milliseconds(5000))
                                                                     : comm.timeout();
  const auto deadline = std::chrono::steady_clock::now() + patience;
  json ranks = json::array({own_report});
  std::vector<int> missing;
  for (int r = 1; r < world; ++r) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto text = comm.fetch(key_for(r), std::max(left, milliseconds(1)));
    json report;
    if (text) report = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (report.is_object()) {
      ranks.push_back(report);
    } else {
      missing.push_back(r);
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (int r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
    spdlog::warn("no timings from rank(s) {}: they stopped before reporting; the result holds the others", list);
  }

  // A peer's own failure explains a lost contact here; a peer failing after rank 0 completed
  // (its last step) fails the run too.
  for (const auto& report : ranks) {
    if (report["rank"] == 0 || report.value("status", "") != "failed") continue;
    const std::string peer = "rank " + report["rank"].dump() + ": " + report.value("error", std::string("failed"));
    outcome.error += (outcome.error.empty() ? "" : "; ") + peer;
    outcome.status = RunStatus::failed;
  }

  const SyncStats stats = sync_stats(sync);
  const int64_t per_device = spec.train.batch_size * spec.train.grad_accum_steps;
  const LaunchEnv& launch = comm.launch();
  std::vector<double> shares, medians;
  for (const auto& report : ranks) {
    if (report["comm_share"].is_number()) shares.push_back(report["comm_share"]);
    if (report["timed_steps"].get<int64_t>() > 0) medians.push_back(report["step_ms"]["median"]);
  }
  result["dist"] = {{"world_size", world},
                    {"backend", comm.backend()},
                    {"launcher", to_string(launch.launcher)},
                    {"master", launch.master_addr + ":" + std::to_string(launch.master_port)},
                    {"per_device_batch", per_device},
                    {"global_batch", per_device * world},
                    {"bucket_mb", spec.dist.bucket_mb},
                    {"buckets", stats.buckets},
                    {"sync_every_micro_step", spec.dist.sync_every_micro_step},
                    {"allreduces", stats.allreduces},
                    {"timeout_s", spec.dist.timeout_s},
                    {"ranks", ranks},
                    {"missing_ranks", missing}};

  json& s = result["summary"];
  s["scope"] = "global";
  s["world_size"] = world;
  s["per_device_samples_per_s"] = s["samples_per_s"];
  for (const char* key : {"samples_per_s", "tokens_per_s", "real_tokens_per_s", "train_flops_per_s"}) {
    if (s[key].is_number()) s[key] = s[key].get<double>() * world;  // every rank ran the same steps, in lockstep
  }
  s["comm_share"] = shares.empty() ? json(nullptr) : json(spread(shares).mean);
  const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
  s["rank_step_spread"] = medians.empty() || *low <= 0 ? json(nullptr) : json((*high - *low) / *low);
  s["status"] = to_string(outcome.status);
  s["error"] = outcome.error.empty() ? json(nullptr) : json(outcome.error);
  return outcome;
}

void write_parameters(const torch::nn::Module& model, const std::string& path) {
  std::string bytes;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const auto values = item.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
    bytes.append(static_cast<const char*>(values.data_ptr()), static_cast<std::size_t>(values.numel()) * sizeof(float));
  }
  write_file_atomically(path, bytes);
}

}  // namespace tbench
