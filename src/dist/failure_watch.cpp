// A data-parallel rank that fails tells the others through the rendezvous store: its error goes
// under the next number of tbench/failures. A rank waiting on a collective looks there between
// slices of its wait, through a FailureWatch: a thread of its own with a store connection of its
// own, since the store's client has no receive timeout and a store that stops answering (the link
// to rank 0 cut) must hold up that thread, never the wait, which the backend's timeout ends.
// That thread also beats the rank's heartbeat, which rank 0 reads while it gathers the reports,
// and, while this rank waits, reads its neighbour's: a peer that stopped without a word (a frozen
// host, a cut link, a process stopped or hung in the kernel, or under NCCL one killed) is then
// announced by the rank that watches it, and every wait ends with that instead of the backend's
// timeout.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tbench/dist/failure_watch.hpp"

namespace tbench {
namespace {

std::string failure_key(int64_t number) { return "tbench/failure/" + std::to_string(number); }

// How long the watch keeps looking after a wait last asked.
constexpr auto kInterestSpan = 3 * Communicator::kFailureCheckInterval;

}  // namespace

std::string heartbeat_key(int rank) { return "tbench/heartbeat/" + std::to_string(rank); }

std::optional<int> watched_neighbour(int rank, int world_size) {
  if (world_size < 2) return std::nullopt;
  return (rank + 1) % world_size;
}

std::string seconds_text(std::chrono::milliseconds limit) {
  std::ostringstream text;
  text << static_cast<double>(limit.count()) / 1000.0;
  return text.str();
}

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
  std::optional<RankFailure> failure;

  bool interested() const { return std::chrono::steady_clock::now() < interest_until; }
  bool release_pending() const { return release_asked && !released; }
  bool asked_now() const { return stop || looks_asked > looks_done || release_pending(); }
};

FailureWatch::FailureWatch(c10::intrusive_ptr<c10d::Store> store, int rank, std::optional<int> watched,
                           std::chrono::milliseconds silence_limit)
    : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_, store = std::move(store), rank, watched, silence_limit] {
    watch(*state, *store, rank, watched, silence_limit);
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

void FailureWatch::watch(State& state, c10d::Store& store, int rank, std::optional<int> watched,
                         std::chrono::milliseconds silence_limit) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(state.mutex);
  Clock::time_point next_beat = Clock::now();  // the first beat at once
  // Read only while this rank waits: a peer that finished may stop beating, but not while a
  // collective this rank is in still needs it.
  HeartbeatSilence neighbour(Clock::now(), kHeartbeatReadGap);
  bool neighbour_announced = false;
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
    // Interest as it is now: the wait above may have outlasted it (or this process was paused).
    const bool watch_neighbour = beat && state.interested() && watched && !state.failure && !neighbour_announced;
    if (!look && !release && !beat) {
      state.looks_done = looks;
      state.changed.notify_all();
      continue;
    }
    if (beat) next_beat = Clock::now() + kHeartbeatInterval;
    state.in_store = true;
    lock.unlock();
    std::optional<RankFailure> found;
    try {
      if (beat) store.add(heartbeat_key(rank), 1);  // first: a read that fails must not cost a beat
    } catch (const std::exception&) {
      // the store's host is gone: the backend says so in the wait
    }
    try {
      if (look) {
        const auto failures = read_failures(store);
        if (!failures.empty()) found = failures.front();
      }
      if (release) store.add(kReleasedKey, 1);
      if (watch_neighbour && !found) {
        const auto asked = Clock::now();
        const int64_t beats = store.add(heartbeat_key(*watched), 0);
        neighbour.saw(beats, asked, Clock::now());
        if (neighbour.vouched() > silence_limit) {
          write_failure(store, *watched, silent_rank_error(rank, silence_limit));
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
    if (release) state.released = true;
    state.looks_done = looks;
    state.changed.notify_all();
  }
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

std::optional<RankFailure> FailureWatch::look_now(std::chrono::milliseconds patience) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (state_->failure) return state_->failure;
  const int64_t ticket = ++state_->looks_asked;
  state_->changed.notify_all();
  state_->changed.wait_for(lock, patience, [&] { return state_->looks_done >= ticket; });
  return state_->failure;
}

void FailureWatch::release() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->release_asked = true;
  }
  state_->changed.notify_all();
}

}  // namespace tbench
