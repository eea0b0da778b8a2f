#pragma once
// How long each optimizer step took, measured where the work runs.
//
// CPU: every op runs synchronously on the calling thread, so a steady_clock reading before and
// after a step is the step. CUDA: the host only queues work; a step's time is the distance
// between two CUDA events recorded on the stream around it, read once the end event has passed,
// so timing never makes the host wait for the device (src/cuda/cuda_step_timer.cpp).
//
// Steps are timed first in, first out: begin() and end() bracket a step, and the oldest
// unread step is read with oldest_done() / take_oldest().
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace tbench {

// A duration inside a step that the host reads once the step has run: on CUDA the distance
// between two events, waiting for the later one; on CPU a figure already known.
using DeferredSeconds = std::function<double()>;

struct StepTime {
  double seconds = 0;   // the step's duration
  double ended_at = 0;  // when it ended, in seconds since the timer was made
  // Asynchronous devices (CUDA) only; unset on CPU, where the host's time is the step. The host's
  // own time to issue the step (begin() to end(): its batch's wait and any wait for the device
  // inside the step included), and whether the device had already run all earlier work when the
  // step began: then the device waited for the host, which sets the pace.
  std::optional<double> host_seconds;
  std::optional<bool> device_idle_at_start;
};

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  // "steady_clock" or "cuda_events", recorded in the result.
  virtual const char* method() const = 0;
  virtual void begin() = 0;  // just before the step's first op
  virtual void end() = 0;    // just after its last op was issued
  virtual std::size_t pending() const = 0;  // steps ended but not yet taken
  // The oldest pending step has finished on its device; taking it will not wait.
  virtual bool oldest_done() const = 0;
  // Removes the oldest pending step and returns its time, waiting for it to finish if needed.
  virtual StepTime take_oldest() = 0;
};

// The steady_clock timer (synchronous devices).
std::unique_ptr<StepTimer> make_host_step_timer();
// The timer for a device: CUDA events on CUDA (CUDA builds only), the steady clock otherwise.
std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device);

}  // namespace tbench
