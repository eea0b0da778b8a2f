// Rank 0 gathers the other ranks' reports from the rendezvous store (no collective, so it works
// after a peer failed), and stops waiting for a rank once its report can no longer come: what it
// reads of that rank's heartbeat, progress and announced failure tells it so.
#include <algorithm>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "dist_internal.hpp"
#include "tbench/dist/failure_watch.hpp"
#include "tbench/dist/peer_reports.hpp"

namespace tbench {

void PeerStore::publish(const std::string& key, const std::string& value) {
  store_.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::optional<std::string> PeerStore::fetch(const std::string& key) {
  try {
    if (!store_.check({key})) return std::nullopt;
    const auto bytes = store_.get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    spdlog::debug("store key {}: {}", key, error_text(e));
    return std::nullopt;
  }
}

std::optional<int64_t> PeerStore::heartbeats_of(int rank) {
  try {
    return store_.add(heartbeat_key(rank), 0);
  } catch (const std::exception& e) {
    spdlog::debug("heartbeat of rank {}: {}", rank, error_text(e));
    return std::nullopt;
  }
}

bool PeerStore::has_released(int rank) {
  try {
    return store_.check({released_key(rank)});
  } catch (const std::exception& e) {
    spdlog::debug("whether rank {} released the store: {}", rank, error_text(e));
    return false;
  }
}

std::optional<int64_t> PeerStore::progress_moves_of(int rank) {
  try {
    const auto progress = read_progress(store_, rank);
    return progress ? progress->moves : 0;
  } catch (const std::exception& e) {
    spdlog::debug("progress of rank {}: {}", rank, error_text(e));
    return std::nullopt;
  }
}

std::optional<std::vector<RankFailure>> PeerStore::announced_failures() {
  try {
    return read_failures(store_);
  } catch (const std::exception& e) {
    spdlog::debug("announced failures: {}", error_text(e));
    return std::nullopt;
  }
}

std::string report_key(int rank) { return "tbench/report/" + std::to_string(rank); }

namespace {

using Clock = std::chrono::steady_clock;

// Reports are looked for this often; heartbeats and announcements once a second, so a large
// world does not flood the store.
constexpr std::chrono::milliseconds kReportPoll{100};
constexpr std::chrono::milliseconds kLivenessPoll{1000};

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

}  // namespace

GatheredReports await_peer_reports(PeerStore& peers, int world_size, std::chrono::milliseconds silence_limit,
                                   Clock::time_point deadline, const std::atomic<bool>* stop) {
  GatheredReports gathered;
  std::map<int, AwaitedRank> waiting;  // the first pass reads every heartbeat, which starts its count
  for (int r = 1; r < world_size; ++r) {
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
      const auto failures = peers.announced_failures();
      gathered.store_gone = !failures.has_value();
      for (const auto& f : failures.value_or(std::vector<RankFailure>{})) {
        announced.emplace(f.rank, announcement_of(f));
      }
    }
    for (auto it = waiting.begin(); it != waiting.end() && !gathered.store_gone;) {
      const int rank = it->first;
      AwaitedRank& awaited = it->second;
      if (const auto text = peers.fetch(report_key(rank))) {
        arrived[rank] = parse_rank_report(*text);
        it = waiting.erase(it);
        continue;
      }
      const auto now = Clock::now();
      if (look_at_liveness) {
        const auto beats = peers.heartbeats_of(rank);
        gathered.store_gone = !beats.has_value();
        if (beats) awaited.heartbeat.saw(*beats, now, Clock::now());
        const auto failure = announced.find(rank);
        if (failure != announced.end() && !awaited.announced) awaited.announced = failure->second;
        if (awaited.announced == Announcement::stuck) {
          const auto asked = Clock::now();
          if (const auto moves = peers.progress_moves_of(rank)) awaited.progress.saw(*moves, asked, Clock::now());
        }
      }
      const auto silence = awaited.heartbeat.vouched();
      if (awaited.announced == Announcement::stuck) {
        // It beats on. Its report cannot come while its host stays where it was; once it has read
        // that it was given up on (its watch ends it later, which needs the store rank 0 hosts) it
        // is gone, as it is once its heartbeat stops. A host that moves on reaches its next wait
        // and reports.
        const bool read_its_fate_and_stands_still =
            peers.has_released(rank) && awaited.progress.vouched() > kFailedPeerGrace;
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
    if (stop && stop->load()) {
      gathered.stopped = true;
      break;
    }
    std::this_thread::sleep_for(kReportPoll);
  }
  // Those still awaited at the deadline whose failure was announced go under its kind.
  for (const auto& [rank, awaited] : waiting) {
    if (awaited.announced) given_up_list(gathered, *awaited.announced).push_back(rank);
  }
  for (int r = 1; r < world_size; ++r) {
    // A report published as its rank was given up on still counts.
    if (arrived.count(r) == 0 && !gathered.store_gone) {
      if (const auto text = peers.fetch(report_key(r))) arrived[r] = parse_rank_report(*text);
    }
    const auto found = arrived.find(r);
    if (found != arrived.end() && found->second) {
      gathered.reports.push_back(*found->second);
    } else {
      gathered.missing.push_back(r);
    }
  }
  const auto reported = [&](int64_t r) {
    return std::find(gathered.missing.begin(), gathered.missing.end(), r) == gathered.missing.end();
  };
  for (auto* given_up : {&gathered.silent, &gathered.stuck, &gathered.failed}) {
    given_up->erase(std::remove_if(given_up->begin(), given_up->end(), reported), given_up->end());
  }
  return gathered;
}

}  // namespace tbench
