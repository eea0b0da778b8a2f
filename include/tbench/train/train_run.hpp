#pragma once
// What a training loop hands back, and what watches it as it runs: plain values with no LibTorch,
// so the result, the analysis commands and their tests build without it.
#include <optional>
#include <string>
#include <vector>

#include "tbench/results/records.hpp"
#include "tbench/timing/profile.hpp"

namespace tbench {

enum class RunStatus { completed, interrupted, failed };
const char* to_string(RunStatus s);

struct TrainOutcome {
  RunStatus status = RunStatus::completed;
  std::string error;          // why it failed
  // It failed because it lost its data-parallel peers (CommFailure: one died, failed, or the link
  // broke): no cause of its own to announce to the others.
  bool lost_peers = false;
  std::string timing_method;  // how steps were timed: "steady_clock" (CPU) or "cuda_events"
};

// Every record a run made, in order.
struct RunRecords {
  std::vector<IterationRecord> iterations;
  std::vector<EpochRecord> epochs;
};

// A finished (or stopped, or failed) training loop: what it measured and how it ended.
struct TrainRun {
  RunRecords records;
  TrainOutcome outcome;
  std::optional<ProfileSummary> profile;  // timing.profile_steps, where a profiler recorded them
};

// Receives each record as it is made (the JSONL stream, the progress line).
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_epoch_start(int64_t epoch, int64_t epochs, int64_t steps_in_epoch) {}
  virtual void on_iteration(const IterationRecord& record) {}
  virtual void on_epoch_end(const EpochRecord& record) {}
};

}  // namespace tbench
