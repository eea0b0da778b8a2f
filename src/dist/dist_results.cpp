// Every rank's timings end up in rank 0's one result: each rank summarises its own steady-state
// steps, the others hand their report to rank 0 through the rendezvous store (no collective, so
// it works after a peer failed), and rank 0 gathers them into the result's `dist` section.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "dist_internal.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/dist/failure_watch.hpp"
#include "tbench/env/env.hpp"
#include "tbench/files.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

std::string key_for(int rank) { return "report/" + std::to_string(rank); }

void send_rank_report(Communicator& comm, const RankReport& report) {
  try {
    comm.publish(key_for(comm.rank()), json_text(to_json(report)));
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

// A peer that announced a failure and whose heartbeat has not moved for this long has ended
// without a report (a peer failing in training reports after its announcement, and may take its
// time: it beats meanwhile). Three beats, so one read that lands between two beats is no sign.
constexpr std::chrono::milliseconds kFailedPeerGrace{3000};
// Reports are looked for this often; heartbeats and announcements once a second, so a large
// world does not flood the store.
constexpr std::chrono::milliseconds kReportPoll{100};
constexpr std::chrono::milliseconds kLivenessPoll{1000};

// The peers' reports and what became of the ranks that sent none.
struct GatheredReports {
  std::vector<RankReport> reports;  // ranks 1..world-1 that reported, in rank order
  std::vector<int64_t> missing;     // the others
  // Of those: given up on for a stopped heartbeat, for work stuck while its heartbeat beat (its
  // watcher's word), or for a failure announced by the rank itself.
  std::vector<int64_t> silent, stuck, failed;
  bool store_gone = false;                  // a store call failed (its host gone): nothing more could come
};

// Who announced a rank's failure: the rank itself (it reports after that, unless it died), or
// its watcher, which saw it fall silent or get stuck (no report can follow).
enum class Announcement { by_itself, silent, stuck };

Announcement announcement_of(const RankFailure& failure) {
  if (is_silent_rank_error(failure.error)) return Announcement::silent;
  if (is_stuck_rank_error(failure.error)) return Announcement::stuck;
  return Announcement::by_itself;
}

// Where a rank given up on for an announced failure is listed.
std::vector<int64_t>& given_up_list(GatheredReports& gathered, Announcement kind) {
  switch (kind) {
    case Announcement::silent: return gathered.silent;
    case Announcement::stuck: return gathered.stuck;
    case Announcement::by_itself: break;
  }
  return gathered.failed;
}

// One peer rank not yet heard from. A peer that has not reported and whose heartbeat has stood
// still for dist.heartbeat_timeout_s is gone: a live one beats even while it prepares a long report.
struct AwaitedRank {
  HeartbeatSilence heartbeat;
  HeartbeatSilence progress;              // its host's moves, read once it was announced stuck
  std::optional<Announcement> announced;  // a failure in its name was seen
};

// The reports of ranks 1..world-1, read from the store as they arrive until `deadline`. A rank is
// given up on before the deadline (dist.timeout_s for a completed rank 0) once its report can no
// longer come: its heartbeat stopped, for long if it announced nothing, briefly if it announced a
// failure (or its watcher announced it silent); for one announced stuck, which beats on, once it
// has read that and its host has stood still as long. (Store calls that fail end the wait; rank 0
// hosts the store, so none can hang, unless torchrun's agent hosts it.)
GatheredReports await_peer_reports(Communicator& comm, Clock::time_point deadline) {
  GatheredReports gathered;
  const auto silence_limit = comm.heartbeat_timeout();
  std::map<int, AwaitedRank> waiting;  // the first pass reads every heartbeat, which starts its count
  for (int r = 1; r < comm.world_size(); ++r) {
    waiting.emplace(r, AwaitedRank{HeartbeatSilence(Clock::now(), kHeartbeatReadGap),
                                   HeartbeatSilence(Clock::now(), kHeartbeatReadGap), std::nullopt});
  }
  std::map<int, std::optional<RankReport>> arrived;
  Clock::time_point next_liveness_look = Clock::now();  // a failure announced already counts at once
  for (;;) {
    const bool look_at_liveness = Clock::now() >= next_liveness_look;
    std::map<int64_t, Announcement> announced;  // the first failure in each rank's name
    if (look_at_liveness) {
      next_liveness_look = Clock::now() + kLivenessPoll;
      const auto failures = comm.announced_failures();
      gathered.store_gone = !failures.has_value();
      for (const auto& f : failures.value_or(std::vector<RankFailure>{})) {
        announced.emplace(f.rank, announcement_of(f));
      }
    }
    for (auto it = waiting.begin(); it != waiting.end() && !gathered.store_gone;) {
      const int rank = it->first;
      AwaitedRank& awaited = it->second;
      if (const auto text = comm.fetch(key_for(rank), std::chrono::milliseconds(0))) {
        arrived[rank] = parse_rank_report(*text);
        it = waiting.erase(it);
        continue;
      }
      const auto now = Clock::now();
      if (look_at_liveness) {
        const auto beats = comm.heartbeats_of(rank);
        gathered.store_gone = !beats.has_value();
        if (beats) awaited.heartbeat.saw(*beats, now, Clock::now());
        const auto failure = announced.find(rank);
        if (failure != announced.end() && !awaited.announced) awaited.announced = failure->second;
        if (awaited.announced == Announcement::stuck) {
          const auto asked = Clock::now();
          if (const auto moves = comm.progress_moves_of(rank)) awaited.progress.saw(*moves, asked, Clock::now());
        }
      }
      const auto silence = awaited.heartbeat.vouched();
      if (awaited.announced == Announcement::stuck) {
        // It beats on. Its report cannot come while its host stays where it was; once it has read
        // that it was given up on (its watch ends it later, which needs the store rank 0 hosts) it
        // is gone, as it is once its heartbeat stops. A host that moves on reaches its next wait
        // and reports.
        const bool read_its_fate_and_stands_still =
            comm.has_released(rank) && awaited.progress.vouched() > kFailedPeerGrace;
        if (!read_its_fate_and_stands_still && silence <= kFailedPeerGrace) {
          ++it;
          continue;
        }
        gathered.stuck.push_back(rank);
      } else if (awaited.announced && silence > kFailedPeerGrace) {
        given_up_list(gathered, *awaited.announced).push_back(rank);
      } else if (silence_limit.count() > 0 && silence > silence_limit) {
        gathered.silent.push_back(rank);
      } else {
        ++it;
        continue;
      }
      it = waiting.erase(it);
    }
    if (waiting.empty() || gathered.store_gone || Clock::now() > deadline) break;
    std::this_thread::sleep_for(kReportPoll);
  }
  // Those still awaited at the deadline whose failure was announced go under its kind.
  for (const auto& [rank, awaited] : waiting) {
    if (awaited.announced) given_up_list(gathered, *awaited.announced).push_back(rank);
  }
  for (int r = 1; r < comm.world_size(); ++r) {
    // A report published as its rank was given up on still counts.
    if (arrived.count(r) == 0 && !gathered.store_gone) {
      if (const auto text = comm.fetch(key_for(r), std::chrono::milliseconds(0))) arrived[r] = parse_rank_report(*text);
    }
    const auto found = arrived.find(r);
    if (found != arrived.end() && found->second) {
      gathered.reports.push_back(*found->second);
    } else {
      gathered.missing.push_back(r);
    }
  }
  const auto reported = [&](int64_t r) { return std::find(gathered.missing.begin(), gathered.missing.end(), r) == gathered.missing.end(); };
  for (auto* given_up : {&gathered.silent, &gathered.stuck, &gathered.failed}) {
    given_up->erase(std::remove_if(given_up->begin(), given_up->end(), reported), given_up->end());
  }
  return gathered;
}

// Why ranks sent no report, as far as rank 0 can tell.
void warn_of_missing_reports(const GatheredReports& g, std::chrono::milliseconds silence_limit) {
  if (g.missing.empty()) return;
  const auto listed = [](const std::vector<int64_t>& ranks) {
    std::vector<std::string> text;
    for (auto r : ranks) text.push_back(std::to_string(r));
    return join(text);
  };
  spdlog::warn("no timings from rank(s) {}: they stopped before reporting; the result holds the others", listed(g.missing));
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

DistSection gather_rank_reports(Communicator& comm, const RunSpec& spec, RankReport own, const GradientSync* sync) {
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
  GatheredReports gathered = await_peer_reports(comm, Clock::now() + patience);
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
