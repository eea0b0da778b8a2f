// A data-parallel rank that fails tells the others through the rendezvous store: its error goes
// under the next number of tbench/failures. A rank waiting on a collective looks there between
// slices of its wait, through a FailureWatch: a thread of its own with a store connection of its
// own, since the store's client has no receive timeout and a store that stops answering (the link
// to rank 0 cut) must hold up that thread, never the wait, which the backend's timeout ends.
// That thread also beats the rank's heartbeat, which rank 0 reads while it gathers the reports,
// publishes where the rank's host is (its progress), and, while this rank waits, reads its
// neighbour's: a peer that stopped without a word (a frozen host, a cut link, a process stopped or
// hung in the kernel, or under NCCL one killed) is then announced by the rank that watches it, and
// every wait ends with that instead of the backend's timeout; so is a peer whose process lives but
// whose work stands still outside the collective (dist.stall_timeout_s, or once any rank's wait
// has timed out).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "tbench/dist/failure_watch.hpp"

namespace tbench {
namespace {

std::string failure_key(int64_t number) { return "tbench/failure/" + std::to_string(number); }

// How long the watch keeps looking after a wait last asked.
constexpr auto kInterestSpan = 3 * Communicator::kFailureCheckInterval;

}  // namespace

std::string heartbeat_key(int rank) { return "tbench/heartbeat/" + std::to_string(rank); }

std::string released_key(int rank) { return "tbench/released/" + std::to_string(rank); }

std::optional<int> watched_neighbour(int rank, int world_size) {
  if (world_size < 2) return std::nullopt;
  return (rank + 1) % world_size;
}

std::string seconds_text(std::chrono::milliseconds limit) {
  std::ostringstream text;
  text << static_cast<double>(limit.count()) / 1000.0;
  return text.str();
}

std::string progress_key(int rank) { return "tbench/progress/" + std::to_string(rank); }

std::string progress_text(const RankProgress& progress) {
  return nlohmann::json{{"moves", progress.moves}, {"collectives", progress.collectives}, {"where", progress.where}}
      .dump();
}

std::optional<RankProgress> parse_progress(const std::string& text) {
  try {
    const auto json = nlohmann::json::parse(text);
    return RankProgress{json.at("moves").get<int64_t>(), json.at("collectives").get<int64_t>(),
                        json.at("where").get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void publish_progress(c10d::Store& store, int rank, const RankProgress& progress) {
  const std::string text = progress_text(progress);
  store.set(progress_key(rank), std::vector<uint8_t>(text.begin(), text.end()));
}

std::optional<RankProgress> read_progress(c10d::Store& store, int rank) {
  if (!store.check({progress_key(rank)})) return std::nullopt;
  const auto bytes = store.get(progress_key(rank));
  return parse_progress(std::string(bytes.begin(), bytes.end()));
}

bool stuck_in_own_work(const RankProgress& theirs, int64_t awaited, HeartbeatSilence::Clock::duration heartbeat_silence,
                       HeartbeatSilence::Clock::duration progress_stillness, std::chrono::milliseconds limit) {
  return theirs.collectives < awaited && heartbeat_silence < kAliveWithin && progress_stillness >= limit;
}

constexpr const char* kStuckRankErrorStart = "stuck in its own work";

std::string stuck_rank_error(int watcher, const std::string& where, std::chrono::milliseconds stillness) {
  stillness = (stillness + std::chrono::milliseconds(50)) / 100 * 100;  // reads a beat apart: tenths are plenty
  return std::string(kStuckRankErrorStart) + " (" + where + "): it had not started the collective rank " +
         std::to_string(watcher) + " waited in, and its progress did not move for " + seconds_text(stillness) +
         " s while its heartbeat beat (the process lives: a file-system read or write that never returns, a "
         "deadlock, a device wait on a kernel that never ends)";
}

bool is_stuck_rank_error(const std::string& error) { return error.rfind(kStuckRankErrorStart, 0) == 0; }

bool is_given_up_error(const std::string& error) { return is_silent_rank_error(error) || is_stuck_rank_error(error); }

constexpr const char* kSilentRankErrorStart = "stopped answering: its heartbeat in the rendezvous store";

std::string silent_rank_error(int watcher, std::chrono::milliseconds limit) {
  return std::string(kSilentRankErrorStart) + " did not move for " + seconds_text(limit) +
         " s while rank " + std::to_string(watcher) +
         " waited in a collective (the process stopped or hung, or its host was lost or cut off)";
}

bool is_silent_rank_error(const std::string& error) { return error.rfind(kSilentRankErrorStart, 0) == 0; }

void write_failure(c10d::Store& store, int rank, const std::string& error) {
  const int64_t number = store.add(kFailureCountKey, 1);
  const std::string text = nlohmann::json{{"rank", rank}, {"error", error}}.dump();
  store.set(failure_key(number), std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<RankFailure> read_failures(c10d::Store& store) {
  std::vector<RankFailure> failures;
  const int64_t count = store.add(kFailureCountKey, 0);
  // A rank that died between drawing its number and writing under it leaves a gap: skip it.
  for (int64_t number = 1; number <= count; ++number) {
    if (!store.check({failure_key(number)})) continue;
    const auto bytes = store.get(failure_key(number));
    try {
      const auto text = nlohmann::json::parse(bytes.begin(), bytes.end());
      failures.push_back({text.at("rank").get<int64_t>(), text.at("error").get<std::string>()});
    } catch (const nlohmann::json::exception&) {
      // not one of ours: another program shares the store's port
    }
  }
  return failures;
}

struct FailureWatch::State {
  std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;
  std::chrono::steady_clock::time_point interest_until{};  // a wait asked until about then
  int64_t looks_asked = 0, looks_done = 0;                   // look_now's requests
  bool release_asked = false, released = false;
  bool in_store = false;  // the thread is in a store call, which may never return
  bool timed_out_look = false;  // a look_now after a wait's dist.timeout_s, not done yet
  std::optional<RankFailure> failure;
  RankProgress progress{0, 0, kSettingUp};
  bool announced_own = false;                    // note_own_failure: it failed for a reason of its own
  // The host had not moved at the last beat; its next move is published at once (publish_now), so
  // a rank that resumes (joins the collective its watcher waits in) is not taken for stuck for up
  // to a beat. A moving host is published once a beat.
  bool stood_still = false, publish_now = false;
  int64_t awaited = 0;                           // note_waiting_on: the collective the host waits for
  std::chrono::milliseconds abandoned_grace{0};  // end_process_when_abandoned (0: off)

  bool interested() const { return std::chrono::steady_clock::now() < interest_until; }
  bool release_pending() const { return release_asked && !released; }
  bool asked_now() const { return stop || looks_asked > looks_done || release_pending() || publish_now; }
  // Under the lock: every move of the host goes through here.
  void host_moved() {
    ++progress.moves;
    if (!std::exchange(stood_still, false)) return;
    publish_now = true;
    changed.notify_all();
  }
};

FailureWatch::FailureWatch(c10::intrusive_ptr<c10d::Store> store, int rank, std::optional<int> watched,
                           std::chrono::milliseconds silence_limit, std::chrono::milliseconds stall_limit)
    : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_, store = std::move(store), rank, watched, silence_limit, stall_limit] {
    watch(state, *store, rank, watched, Limits{silence_limit, stall_limit});
  });
}

FailureWatch::~FailureWatch() {
  bool stuck = false;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    // A release asked just before this rank ends still reaches rank 0, which lingers for it.
    state_->changed.wait_for(lock, std::chrono::seconds(1), [&] { return !state_->release_pending(); });
    state_->stop = true;
    // A heartbeat or a look in progress ends within a store round trip; one that does not is stuck.
    state_->changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return !state_->in_store; });
    stuck = state_->in_store;
  }
  state_->changed.notify_all();
  // A thread stuck in the store holds only what it shares with nobody else now: let it go.
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

namespace {

// The stillness that names a rank once a wait has timed out: kStuckAtTimeout, or the stall limit
// where that is shorter (a wait that timed out is no reason to wait longer than the limit says).
std::chrono::milliseconds at_timeout(std::chrono::milliseconds stall_limit) {
  return stall_limit.count() > 0 ? std::min(stall_limit, kStuckAtTimeout) : kStuckAtTimeout;
}

// What a waiting rank knows of the rank it watches, from its reads of that rank's heartbeat and
// progress: how long each has stood still, and where the rank last said it was.
class Neighbour {
 public:
  using Clock = HeartbeatSilence::Clock;
  explicit Neighbour(int rank)
      : rank_(rank), heartbeat_(Clock::now(), kHeartbeatReadGap), progress_still_(Clock::now(), kHeartbeatReadGap) {}
  int rank() const { return rank_; }

  // One read of each (a few store round trips). Throws what the store throws.
  void read(c10d::Store& store) {
    auto asked = Clock::now();
    heartbeat_.saw(store.add(heartbeat_key(rank_), 0), asked, Clock::now());
    asked = Clock::now();
    if (auto progress = read_progress(store, rank_)) last_ = std::move(*progress);
    progress_still_.saw(last_.moves, asked, Clock::now());
  }

  // The failure the watcher announces on this rank's behalf, if its reads show one: a heartbeat
  // silent for the silence limit, or work stuck for the stall limit (kStuckAtTimeout once a wait,
  // the watcher's or another rank's, has timed out).
  std::optional<std::string> failure(int watcher, int64_t awaited, FailureWatch::Limits limits,
                                     bool wait_timed_out) const {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    if (limits.silence.count() > 0 && heartbeat_.vouched() > limits.silence) {
      return silent_rank_error(watcher, limits.silence);
    }
    // The stall limit bounds the stretch between two collectives of training; the set-up has no
    // such bound (rank 0 alone loads the weights), so only a wait's timeout judges it, by
    // kStuckAtTimeout alone.
    const milliseconds limit = last_.where == kSettingUp ? milliseconds(0) : limits.stall;
    const milliseconds stall = wait_timed_out ? at_timeout(limit) : limit;
    if (stall.count() > 0 && stuck_in_own_work(last_, awaited, heartbeat_.vouched(), progress_still_.vouched(), stall)) {
      return stuck_rank_error(watcher, last_.where, duration_cast<milliseconds>(progress_still_.vouched()));
    }
    return std::nullopt;
  }

 private:
  int rank_;
  HeartbeatSilence heartbeat_, progress_still_;
  RankProgress last_{0, 0, kSettingUp};  // until its first record is read
};

}  // namespace

void FailureWatch::watch(const std::shared_ptr<State>& shared, c10d::Store& store, int rank, std::optional<int> watched,
                         Limits limits) {
  using Clock = std::chrono::steady_clock;
  State& state = *shared;
  std::unique_lock<std::mutex> lock(state.mutex);
  Clock::time_point next_beat = Clock::now();  // the first beat at once
  // Read only while this rank waits: a peer that finished may stop beating, but not while a
  // collective this rank is in still needs it.
  std::optional<Neighbour> neighbour;
  if (watched) neighbour.emplace(*watched);
  bool neighbour_announced = false;
  bool counted_own_timeout = false;  // under kWaitsTimedOutKey, once
  bool a_wait_timed_out = false;     // this rank's or another's: the count never goes down
  int64_t published_moves = -1;
  bool abandoned = false;  // this rank read that the others gave up on it
  for (;;) {
    const bool interested = state.interested();
    const Clock::time_point until =
        interested ? std::min(Clock::now() + Communicator::kFailureCheckInterval, next_beat) : next_beat;
    state.changed.wait_until(lock, until, [&] { return state.asked_now() || (!interested && state.interested()); });
    if (state.stop) return;
    // A wait began: look after one interval (unless a beat is due).
    const bool beat = Clock::now() >= next_beat;
    if (!interested && state.interested() && !state.asked_now() && !beat) continue;
    const bool look = !state.failure && (interested || state.looks_asked > state.looks_done);
    const bool release = state.release_pending();
    const int64_t looks = state.looks_asked;
    const bool timed_out = std::exchange(state.timed_out_look, false);
    // Interest as it is now: the wait above may have outlasted it (or this process was paused).
    const bool watch_neighbour =
        (timed_out || (beat && state.interested())) && neighbour && !state.failure && !neighbour_announced;
    const bool publish = std::exchange(state.publish_now, false) || beat;
    if (!look && !release && !publish && !watch_neighbour) {
      state.looks_done = looks;
      state.changed.notify_all();
      continue;
    }
    if (beat) next_beat = Clock::now() + kHeartbeatInterval;
    const std::optional<RankProgress> progress =
        publish && state.progress.moves != published_moves ? std::optional<RankProgress>(state.progress) : std::nullopt;
    if (beat) state.stood_still = !progress;
    const int64_t awaited = state.awaited;
    // While the others may give up on this rank, every beat reads whether they did (a look for a
    // wait may see it first). Where its host is before this round's reads is where it must move
    // from; the timer is armed once.
    const bool may_be_abandoned = state.abandoned_grace.count() > 0 && !abandoned && !state.announced_own;
    const bool read_own_fate = beat && may_be_abandoned;
    const int64_t moves_before = state.progress.moves;
    state.in_store = true;
    lock.unlock();
    std::optional<RankFailure> found, given_up_on;
    try {
      if (beat) store.add(heartbeat_key(rank), 1);  // first: a read that fails must not cost a beat
      if (progress) {
        publish_progress(store, rank, *progress);
        published_moves = progress->moves;
      }
    } catch (const std::exception&) {
      // the store's host is gone: the backend says so in the wait
    }
    try {
      if (look || read_own_fate) {
        const auto failures = read_failures(store);
        if (look && !failures.empty()) found = failures.front();
        for (const auto& f : failures) {
          if (may_be_abandoned && f.rank == rank && is_given_up_error(f.error)) {
            given_up_on = f;
            break;
          }
        }
      }
      // It needs the store no more: it read the failure that ends it (rank 0 may go).
      if (release || given_up_on) store.set(released_key(rank), std::vector<uint8_t>{'1'});
      if (watch_neighbour && !found) {
        if (timed_out && !counted_own_timeout) {
          store.add(kWaitsTimedOutKey, 1);
          counted_own_timeout = true;
        }
        a_wait_timed_out = a_wait_timed_out || timed_out || store.add(kWaitsTimedOutKey, 0) > 0;
        neighbour->read(store);
        if (const auto error = neighbour->failure(rank, awaited, limits, a_wait_timed_out)) {
          write_failure(store, neighbour->rank(), *error);
          neighbour_announced = true;
          const auto failures = read_failures(store);  // the first one may be another's
          if (!failures.empty()) found = failures.front();
        }
      }
    } catch (const std::exception&) {
      // the store's host is gone: the backend says so in the wait
    }
    lock.lock();
    state.in_store = false;
    if (found && !state.failure) state.failure = found;
    if (given_up_on) {
      abandoned = true;
      if (!state.failure) state.failure = given_up_on;  // its next wait stops at once, store or not
      end_if_never_moves(shared, rank, *given_up_on, moves_before, state.abandoned_grace);
    }
    if (release) state.released = true;
    state.looks_done = looks;
    state.changed.notify_all();
  }
}

// Ends the process once `grace` has passed since the others gave up on `rank` (`failure`), unless
// its host has moved from where it was then (`moves`) or its watch stopped (the rank ended as it
// should). On a thread of its own, so that a watch held up in the store cannot keep a stuck rank
// alive; the time is counted in slices, and one that overran (the process was paused: a suspended
// job) starts the count again, as HeartbeatSilence does; and the message goes straight to stderr,
// outside the lock, since a host stuck in a log write may hold the logger's.
void FailureWatch::end_if_never_moves(std::shared_ptr<State> state, int rank, RankFailure failure, int64_t moves,
                                      std::chrono::milliseconds grace) {
  std::thread([state = std::move(state), rank, failure = std::move(failure), moves, grace] {
    using Clock = std::chrono::steady_clock;
    std::string where;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      const auto moved = [&] { return state->stop || state->progress.moves != moves; };
      Clock::duration counted{0};
      for (auto last = Clock::now(); counted < grace;) {
        if (state->changed.wait_for(lock, kHeartbeatInterval, moved)) return;
        const auto slice = Clock::now() - last;
        last += slice;
        counted = slice > kHeartbeatReadGap ? Clock::duration(0) : counted + slice;
      }
      where = state->progress.where;
    }
    const std::string text = "rank " + std::to_string(rank) + ": the other ranks gave up on it (" + failure.describe() +
                             "), and its host has not moved from " + where + " in the " + seconds_text(grace) +
                             " s since: ending the process\n";
    const ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
    (void)written;  // nothing more can be done about a stderr that fails
    std::_Exit(static_cast<int>(ExitCode::run_failed));
  }).detach();
}

void FailureWatch::note_interest() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->interest_until = std::chrono::steady_clock::now() + kInterestSpan;
  }
  state_->changed.notify_all();
}

std::optional<RankFailure> FailureWatch::seen() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->failure;
}

std::optional<RankFailure> FailureWatch::look_now(std::chrono::milliseconds patience, bool wait_timed_out) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (state_->failure) return state_->failure;
  const int64_t ticket = ++state_->looks_asked;
  state_->timed_out_look = state_->timed_out_look || wait_timed_out;
  state_->changed.notify_all();
  state_->changed.wait_for(lock, patience, [&] { return state_->looks_done >= ticket; });
  return state_->failure;
}

void FailureWatch::note_progress(const std::string& where) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->progress.where = where;
  state_->host_moved();
}

int64_t FailureWatch::note_collective() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->host_moved();
  return ++state_->progress.collectives;
}

int64_t FailureWatch::collectives_started() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->progress.collectives;
}

void FailureWatch::note_waiting_on(int64_t awaited) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->awaited = awaited;
}

void FailureWatch::note_own_failure() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->announced_own = true;
  state_->host_moved();  // its host is at work: it announced
}

bool FailureWatch::announced_own_failure() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->announced_own;
}

void FailureWatch::end_process_when_abandoned(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->abandoned_grace = grace;
}

void FailureWatch::release() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->release_asked = true;
  }
  state_->changed.notify_all();
}

}  // namespace tbench
