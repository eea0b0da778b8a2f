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
inline constexpr const char* kReleasedKey = "tbench/released";  // ranks that need rank 0's store no more

// Every rank's heartbeat: a count its watch adds to every kHeartbeatInterval for as long as the
// rank lives, so rank 0 can tell a peer that is still preparing its report from one that is gone.
std::string heartbeat_key(int rank);
inline constexpr std::chrono::milliseconds kHeartbeatInterval{1000};

// Writes a rank's failure under the next number. Throws what the store throws.
void write_failure(c10d::Store& store, int rank, const std::string& error);
// Every announced failure, first announced first. Throws what the store throws.
std::vector<RankFailure> read_failures(c10d::Store& store);

// Looks for announced failures on a thread of its own, over a store connection of its own, every
// Communicator::kFailureCheckInterval while a wait has asked lately (note_interest), so that a
// store that stops answering holds up that thread and never a wait. The same thread beats the
// rank's heartbeat.
class FailureWatch {
 public:
  FailureWatch(c10::intrusive_ptr<c10d::Store> store, int rank);
  ~FailureWatch();  // a thread stuck in the store is left behind (it shares nothing)
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

  // A wait is in progress: look for a while.
  void note_interest();
  // The first failure seen so far.
  std::optional<RankFailure> seen() const;
  // Looks again now, waiting up to `patience` for the answer.
  std::optional<RankFailure> look_now(std::chrono::milliseconds patience);
  // Counts this rank among those that need the store no more, from the watch's thread.
  void release();

 private:
  struct State;
  static void watch(State& state, c10d::Store& store, int rank);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace tbench
