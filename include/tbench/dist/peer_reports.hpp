#pragma once
// Rank 0's gather of the other ranks' reports through the rendezvous store, and when it stops
// waiting for a rank whose report can no longer come (src/dist/peer_reports.cpp). Used by
// gather_rank_reports; a header of its own for its tests, which play the peers on a store of their
// own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "tbench/results/result.hpp"

namespace tbench {

// What the ranks read and write of one another in the rendezvous store outside the failure watch:
// their reports at the end, and what rank 0 reads of a peer that has not reported. Each read
// answers nullopt (false) when the store does not: its host is gone, and nothing more can come.
class PeerStore {
 public:
  explicit PeerStore(c10d::Store& store) : store_(store) {}
  // Throws what the store throws.
  void publish(const std::string& key, const std::string& value);
  // The value of `key`; nullopt if it is not there yet.
  std::optional<std::string> fetch(const std::string& key);
  // How often `rank` has beaten its heartbeat (every kHeartbeatInterval while it lives, from its
  // failure watch).
  std::optional<int64_t> heartbeats_of(int rank);
  // Whether `rank` needs the store no more: it read the failure that ends it.
  bool has_released(int rank);
  // How often `rank`'s host has moved on (FailureWatch::note_progress, note_collective), as last
  // published with its heartbeat (0 before its first).
  std::optional<int64_t> progress_moves_of(int rank);
  // Every failure announced so far, first first.
  std::optional<std::vector<RankFailure>> announced_failures();

 private:
  c10d::Store& store_;
};

// Where rank `rank` publishes its report.
std::string report_key(int rank);

// The peers' reports and what became of the ranks that sent none.
struct GatheredReports {
  std::vector<RankReport> reports;  // ranks 1..world-1 that reported, in rank order
  std::vector<int64_t> missing;     // the others
  // Of those: given up on for a stopped heartbeat, for work stuck while its heartbeat beat (its
  // watcher's word), or for a failure announced by the rank itself.
  std::vector<int64_t> silent, stuck, failed;
  bool store_gone = false;  // a store call failed (its host gone): nothing more could come
  bool stopped = false;     // the user's stop request (Ctrl-C) ended the wait
};

// A peer that announced a failure and whose heartbeat has not moved for this long has ended
// without a report (a peer failing in training reports after its announcement, and may take its
// time: it beats meanwhile). Three beats, so one read that lands between two beats is no sign.
inline constexpr std::chrono::milliseconds kFailedPeerGrace{3000};

// The reports of ranks 1..world_size-1, read from the store as they arrive until `deadline`. A rank
// is given up on before the deadline (dist.timeout_s for a completed rank 0) once its report can no
// longer come: its heartbeat stopped, for `silence_limit` (dist.heartbeat_timeout_s; 0: never) if
// it announced nothing, for kFailedPeerGrace if it announced a failure (or its watcher announced
// it silent); for one announced stuck, which beats on, once it has read that and its host has
// stood still as long. Store calls that fail end the wait (rank 0 hosts the store, so none can
// hang, unless torchrun's agent hosts it). `stop` (null: none), once set, ends the wait too: the
// ranks still awaited are missing.
GatheredReports await_peer_reports(PeerStore& peers, int world_size, std::chrono::milliseconds silence_limit,
                                   std::chrono::steady_clock::time_point deadline,
                                   const std::atomic<bool>* stop = nullptr);

}  // namespace tbench
