#pragma once
// Failures announced through the rendezvous store, and the watch a waiting rank reads them from
// (src/dist/failure_watch.cpp). Used by the process group; a header of its own for its tests.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "tbench/dist/dist.hpp"

namespace tbench {

inline constexpr const char* kFailureCountKey = "tbench/failures";
// Set once `rank` needs rank 0's store no more: it has read the failure that ends it (another
// rank's, or its watcher's word that it was stuck or silent). Rank 0, which hosts the store, lingers
// for it where the store is the only way that rank can learn why the run ended.
std::string released_key(int rank);

// Every rank's heartbeat: a count its watch adds to every kHeartbeatInterval for as long as the
// rank lives, so rank 0 can tell a peer that is still preparing its report from one that is gone.
std::string heartbeat_key(int rank);
inline constexpr std::chrono::milliseconds kHeartbeatInterval{1000};
// How long a rank's heartbeat has stood still, as far as one reader can vouch for it: from the
// read that first saw the count it still has (the count only grows, so an unchanged count means
// no beat in between), provided the reads came at most `max_gap` apart and each was answered
// within it. A longer gap or a slow answer (this process or the store's host paused: a suspended
// job, a debugger, swapping) starts the count again, since the silent rank may have been paused
// with them and beats again once resumed.
class HeartbeatSilence {
 public:
  using Clock = std::chrono::steady_clock;
  HeartbeatSilence(Clock::time_point start, Clock::duration max_gap) : since_(start), last_answer_(start), max_gap_(max_gap) {}
  void saw(int64_t beats, Clock::time_point asked, Clock::time_point answered) {
    const bool vouched = asked - last_answer_ <= max_gap_ && answered - asked <= max_gap_;
    if (beats != beats_ || !vouched) {
      beats_ = beats;
      since_ = answered;
    }
    last_answer_ = answered;
  }
  // The silence its reads vouch for: from the first read of the count to the latest (0 before
  // two reads), never the time since the latest, in which this process may have been paused.
  Clock::duration vouched() const { return last_answer_ - since_; }

 private:
  int64_t beats_ = -1;  // no read yet: counts start at 0
  Clock::time_point since_, last_answer_;
  Clock::duration max_gap_;
};
// Reads of a heartbeat further apart than this vouch for nothing in between.
inline constexpr std::chrono::milliseconds kHeartbeatReadGap = 2 * kHeartbeatInterval;

// The rank whose heartbeat `rank` watches while it waits in a collective: the next one around the
// ring, so every rank is watched by one other and the store reads grow with the world, not its
// square. None in a world of one.
std::optional<int> watched_neighbour(int rank, int world_size);
// "15", "1.5": a limit in seconds, for messages.
std::string seconds_text(std::chrono::milliseconds limit);
// The failure a watching rank announces for a silent neighbour, and whether an announced error is
// one (the rank itself said nothing: its log will not say why).
std::string silent_rank_error(int watcher, std::chrono::milliseconds limit);
bool is_silent_rank_error(const std::string& error);

// Where a rank's host is in its run, published with its heartbeat (under progress_key) for the
// rank that watches it: a rank that has not started the collective its watcher waits in, whose
// heartbeat beats and whose progress stands still, is stuck in work of its own (a file-system read
// or write that never returns, a deadlock, a device wait on a kernel that never ends), not lost.
struct RankProgress {
  int64_t moves = 0;        // grows at every new phase and collective: it stands still only with the host
  int64_t collectives = 0;  // collectives started; every rank starts the same ones in the same order
  std::string where;        // kSettingUp, "epoch 1 step 41", "epoch 1 eval", ...
};
// Where a rank is from its rendezvous to its first note: building the model, loading weights
// (rank 0 alone, before the weights' broadcast), measuring the CPU's peak. No step bounds it, so
// dist.stall_timeout_s leaves it to dist.timeout_s.
inline constexpr const char* kSettingUp = "setting up";
std::string progress_key(int rank);
std::string progress_text(const RankProgress& progress);
std::optional<RankProgress> parse_progress(const std::string& text);  // nullopt: not one of ours
// Publishes `rank`'s progress for its watcher; read_progress reads it back. Both throw what the
// store throws.
void publish_progress(c10d::Store& store, int rank, const RankProgress& progress);
// `rank`'s progress as last published; nullopt where it published none (or not one of ours).
std::optional<RankProgress> read_progress(c10d::Store& store, int rank);

// The watched rank is stuck in work of its own, as far as its watcher can tell: it has not started
// the collective the watcher waits in (the `awaited`-th collective: on a GPU the host may have
// started later ones), its heartbeat moved lately (`heartbeat_silence` short: the process lives),
// and its progress has stood still for at least `limit` (`progress_stillness`, vouched for as
// HeartbeatSilence does).
bool stuck_in_own_work(const RankProgress& theirs, int64_t awaited,
                       HeartbeatSilence::Clock::duration heartbeat_silence,
                       HeartbeatSilence::Clock::duration progress_stillness, std::chrono::milliseconds limit);
// A heartbeat that moved within this long says its process lives.
inline constexpr std::chrono::milliseconds kAliveWithin = 3 * kHeartbeatInterval;
// When a wait's dist.timeout_s is up, a neighbour that has not joined the collective and whose
// progress stood still this long (or for dist.stall_timeout_s, where that is shorter) is named as
// the cause (a shorter stillness is a slow rank's).
inline constexpr std::chrono::milliseconds kStuckAtTimeout{5000};
// Counts the waits, on any rank, whose dist.timeout_s was up. Every watcher whose rank waits judges
// its neighbour by kStuckAtTimeout once it reads a count above 0, whether or not its own wait has
// timed out yet: with three or more ranks the stuck rank's watcher may have joined the collective
// later than the rank that timed out first, and that rank's exit would end its wait unnamed.
inline constexpr const char* kWaitsTimedOutKey = "tbench/waits_timed_out";
// The failure a watching rank announces for a neighbour stuck in `where`, and whether an announced
// error is one.
std::string stuck_rank_error(int watcher, const std::string& where, std::chrono::milliseconds stillness);
bool is_stuck_rank_error(const std::string& error);
// Either watcher's announcement: the other ranks gave up on the rank named, which said nothing.
bool is_given_up_error(const std::string& error);

// Writes a rank's failure under the next number. Throws what the store throws.
void write_failure(c10d::Store& store, int rank, const std::string& error);
// Every announced failure, first announced first. Throws what the store throws.
std::vector<RankFailure> read_failures(c10d::Store& store);

// Looks for announced failures on a thread of its own, over a store connection of its own, every
// Communicator::kFailureCheckInterval while a wait has asked lately (note_interest), so that a
// store that stops answering holds up that thread and never a wait. The same thread beats the
// rank's heartbeat and publishes its progress (once a beat while the host moves, and at once where
// it moves after a beat in which it stood still), and, while a wait asks, reads the watched rank's
// once a beat: silent for `silence_limit` (0: never), or stuck in its own work for `stall_limit`
// (0: only when a wait's dist.timeout_s is up, this rank's (look_now's `wait_timed_out`) or any
// other's (kWaitsTimedOutKey)), that rank is
// announced as failed on its behalf, which ends every rank's wait (a hung peer holds a collective
// until the backend's timeout, and under NCCL so may a dead one).
class FailureWatch {
 public:
  FailureWatch(c10::intrusive_ptr<c10d::Store> store, int rank, std::optional<int> watched = std::nullopt,
               std::chrono::milliseconds silence_limit = Communicator::kDefaultHeartbeatTimeout,
               std::chrono::milliseconds stall_limit = std::chrono::milliseconds(0));
  ~FailureWatch();  // a thread stuck in the store is left behind (it shares nothing)
  // How long the watched rank's heartbeat may stand still, and its work outside the collective
  // this rank waits in (0: no limit).
  struct Limits {
    std::chrono::milliseconds silence, stall;
  };
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

  // A wait is in progress: look for a while.
  void note_interest();
  // The first failure seen so far.
  std::optional<RankFailure> seen() const;
  // Looks again now, waiting up to `patience` for the answer. `wait_timed_out`: a wait's
  // dist.timeout_s is up; the watch counts it under kWaitsTimedOutKey, for the other ranks'
  // watchers, and a watched rank stuck in its own work (kStuckAtTimeout) is announced first.
  std::optional<RankFailure> look_now(std::chrono::milliseconds patience, bool wait_timed_out = false);
  // This rank's host enters a new phase of its run (`where`), or starts a collective (returns its
  // number, from 1), or waits for the collectives up to number `awaited`: what its watcher reads,
  // and what it compares its neighbour's with.
  void note_progress(const std::string& where);
  int64_t note_collective();
  void note_waiting_on(int64_t awaited);
  int64_t collectives_started() const;
  // Counts this rank among those that need the store no more, from the watch's thread.
  void release();
  // This rank announced a failure of its own: its host is at work, and a failure announced in its
  // name is its own doing.
  void note_own_failure();
  bool announced_own_failure() const;
  // Where the others gave up on this rank (its watcher announced it silent or stuck) and its host
  // then does not move for `grace`, its host is stuck where no wait can see that: a timer of its
  // own (which no store call can hold up) ends the process with exit code 4, as its launcher
  // would otherwise have to. Off until called; Communicator::connect turns it on with
  // dist.timeout_s, so a test that plays such a rank in its own process must move it on within that.
  void end_process_when_abandoned(std::chrono::milliseconds grace);

 private:
  struct State;
  static void watch(const std::shared_ptr<State>& state, c10d::Store& store, int rank, std::optional<int> watched,
                    Limits limits);
  static void end_if_never_moves(std::shared_ptr<State> state, int rank, RankFailure failure, int64_t moves,
                                 std::chrono::milliseconds grace);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace tbench
