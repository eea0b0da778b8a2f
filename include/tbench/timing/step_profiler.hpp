#pragma once
// Records what a few training steps run, for timing.profile_steps: the trainer starts it before
// the first profiled step and stops it after the last, with the device idle both times.
#include <memory>
#include <string>

#include "tbench/timing/profile.hpp"

namespace tbench {

class StepProfiler {
 public:
  virtual ~StepProfiler() = default;
  virtual void start() = 0;
  // Ends the recording and sums it (timing/profile.hpp); the trainer fills in the steps and wall time.
  virtual ProfileSummary stop() = 0;
};

// LibTorch's Kineto profiler: host operators, and on a CUDA device every kernel and copy. stop()
// writes the Chrome/Perfetto trace to `trace_path` (none when empty). Throws a run error where
// this LibTorch was built without Kineto.
std::unique_ptr<StepProfiler> make_kineto_profiler(bool cuda, std::string trace_path);

}  // namespace tbench
