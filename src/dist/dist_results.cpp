// Every rank's timings end up in rank 0's one result: each rank summarises its own steady-state
// steps, the others hand their report to rank 0 through the rendezvous store (no collective, so
// it works after a peer failed), and rank 0 gathers them into the result's `dist` section.
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "dist_internal.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/dist/failure_watch.hpp"
#include "tbench/dist/peer_reports.hpp"
#include "tbench/env/env.hpp"
#include "tbench/files.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

void send_rank_report(Communicator& comm, const RankReport& report) {
  try {
    comm.peers().publish(report_key(comm.rank()), json_text(to_json(report)));
  } catch (const std::exception& e) {
    spdlog::warn("could not hand this rank's timings to rank 0 (it may have stopped): {}", e.what());
  }
}

}  // namespace

RankReport rank_report(const Communicator& comm, const torch::Device& device, const TrainRun& run,
                       const GradientSync* sync) {
  RankReport report = make_rank_report(run.records, run.outcome);
  report.rank = comm.rank();
  report.local_rank = comm.launch().local_rank;
  report.host = host_name();
  report.device = device.str();
  report.allreduces = sync_stats(sync).allreduces;
  return report;
}

ExitCode finish_peer_rank(Communicator& comm, const torch::Device& device, const TrainRun& run,
                          const GradientSync* sync) {
  send_rank_report(comm, rank_report(comm, device, run, sync));
  const auto steps = run.records.iterations.size();
  switch (run.outcome.status) {
    case RunStatus::completed:
      spdlog::info("{} steps done; rank 0 writes the result", steps);
      return ExitCode::ok;
    case RunStatus::interrupted:
      spdlog::warn("interrupted with the other ranks after {} steps; rank 0 writes the result", steps);
      return ExitCode::interrupted;
    case RunStatus::failed: spdlog::error("run failed: {}", run.outcome.error); return ExitCode::run_failed;
  }
  return ExitCode::internal;
}

namespace {

using Clock = std::chrono::steady_clock;

// Why ranks sent no report, as far as rank 0 can tell.
void warn_of_missing_reports(const GatheredReports& g, std::chrono::milliseconds silence_limit) {
  if (g.missing.empty()) return;
  const auto listed = [](const std::vector<int64_t>& ranks) {
    std::vector<std::string> text;
    for (auto r : ranks) text.push_back(std::to_string(r));
    return join(text);
  };
  spdlog::warn("no timings from rank(s) {}: they stopped before reporting; the result holds the others", listed(g.missing));
  if (g.stopped) spdlog::warn("interrupted while rank 0 waited for the reports: the result holds those that came");
  if (g.store_gone) spdlog::warn("the rendezvous store stopped answering while rank 0 waited for the reports");
  if (!g.failed.empty()) spdlog::warn("rank(s) {} failed before reporting (see their logs)", listed(g.failed));
  if (!g.stuck.empty()) {
    spdlog::warn("rank(s) {} were stuck in work of their own while the others waited for them (see the run's error)",
                 listed(g.stuck));
  }
  if (!g.silent.empty()) {
    spdlog::warn("rank(s) {} stopped answering before reporting (no heartbeat in the store for {} s): killed, "
                 "stopped, or their host was lost or cut off",
                 listed(g.silent), seconds_text(silence_limit));
  }
}

}  // namespace

DistSection gather_rank_reports(Communicator& comm, const RunSpec& spec, RankReport own, const GradientSync* sync,
                                const std::atomic<bool>* stop) {
  using std::chrono::milliseconds;
  const int world = comm.world_size();
  // A failed rank 0 gives the others time to reach their next collective, where they read its
  // announced failure: a few seconds beyond its own slowest steps. Not dist.timeout_s, since the
  // rank that broke the run may never report.
  const auto slow_step = milliseconds(static_cast<int64_t>(3 * std::max(own.step_ms.p90, 0.0)));
  const milliseconds patience =
      own.status == RunStatus::failed ? std::min(comm.timeout(), milliseconds(5000) + slow_step) : comm.timeout();
  DistSection dist;
  dist.ranks.push_back(std::move(own));
  PeerStore peers = comm.peers();
  GatheredReports gathered = await_peer_reports(peers, world, comm.heartbeat_timeout(), Clock::now() + patience, stop);
  for (auto& report : gathered.reports) dist.ranks.push_back(std::move(report));
  dist.missing_ranks = gathered.missing;
  warn_of_missing_reports(gathered, comm.heartbeat_timeout());
  dist.first_failure = comm.announced_failure();
  const SyncStats stats = sync_stats(sync);
  const LaunchEnv& launch = comm.launch();
  dist.world_size = world;
  dist.backend = comm.backend();
  dist.launcher = to_string(launch.launcher);
  dist.master = launch.master_addr + ":" + std::to_string(launch.master_port);
  dist.per_device_batch = spec.train.batch_size * spec.train.grad_accum_steps;
  dist.global_batch = dist.per_device_batch * world;
  dist.bucket_mb = spec.dist.bucket_mb;
  dist.buckets = stats.buckets;
  dist.sync_every_micro_step = spec.dist.sync_every_micro_step;
  dist.gradient_as_bucket_view = spec.dist.gradient_as_bucket_view;
  dist.allreduces = stats.allreduces;
  dist.timeout_s = spec.dist.timeout_s;
  return dist;
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
