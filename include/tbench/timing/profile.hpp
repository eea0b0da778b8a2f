#pragma once
// Where a step's time goes: the events a profiler recorded over a few steady steps, summed per
// operator (or GPU kernel) and per kind of work. Plain C++ (no LibTorch): the result file writes
// it and the tests feed it made-up events. timing/step_profiler.hpp records the events.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tbench {

// One recorded interval: a GPU kernel or copy (`on_device`), or a host operator on a thread.
struct ProfiledEvent {
  std::string name;
  uint64_t thread = 0;  // host events: the thread that ran it (nesting is per thread)
  double start_us = 0;
  double duration_us = 0;
  bool on_device = false;
};

struct ProfileEntry {
  std::string name;
  int64_t calls = 0;
  double ms = 0;     // summed over the profiled steps
  double share = 0;  // of ProfileSummary::measured_ms
};

struct ProfileSummary {
  int64_t first_step = 0, last_step = 0;  // the global steps profiled
  // "device kernels" (CUDA: every kernel and copy's device time) or "host operators, self time"
  // (CPU: an operator's time less the operators it called, so nothing is counted twice).
  std::string measures;
  double measured_ms = 0;  // what the entries add up to
  double wall_ms = 0;      // the profiled steps' wall time on the host clock, from first start to last end
  double overhead_ms = 0;  // starting and stopping the profiler (device drained, trace written): in no step
  std::vector<ProfileEntry> categories;  // by op_category, largest first
  std::vector<ProfileEntry> bounds;      // device profiles only: by kernel_bound, largest first
  std::vector<ProfileEntry> top;         // the largest operators or kernels, largest first
  std::string trace;                     // the Chrome/Perfetto trace file, empty if none was written
  std::string trace_error;               // why none was, where writing it failed
};

// The kind of work a kernel or operator name stands for, by the names cuBLAS, CUTLASS, ATen, NCCL
// and the attention kernels use: loss, communication, attention, gemm, normalization, optimizer,
// copy (casts among them), dropout, activation, reduction (bias gradients among them), elementwise
// (residual adds, scaling), or other.
std::string op_category(const std::string& name);

// What bounds a GPU kernel's time, so predict --target can scale it by the matching ratio of two
// GPUs: "compute" for tensor-core work (GEMMs and the fused attention kernels: flash,
// memory-efficient, cuDNN's), "communication" for collectives, "memory" for the rest
// (elementwise, a bare softmax, norms, the optimizer, copies, the loss), which stream their
// operands through once and wait on bandwidth.
std::string kernel_bound(const std::string& name);

// Sums `events` into a summary: device events only when `on_device` (their durations never
// nest), else host events by self time. `top` keeps the `top_n` largest.
ProfileSummary summarize_profile(const std::vector<ProfiledEvent>& events, bool on_device, std::size_t top_n);

nlohmann::json to_json(const ProfileSummary& profile);

}  // namespace tbench
