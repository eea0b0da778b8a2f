// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA).
// Written against torch 2.x (at::cuda::CUDAEvent, at::cuda::getCurrentCUDAStream).
//
// A step is the time between two CUDA events recorded on the device's current stream, one just
// before its first op and one just after its last. The host never waits to time a step: it asks
// each end event whether it has passed (cudaEventQuery) and reads the pair once it has. Because
// step N+1's start is recorded right after step N's end, a GPU that is never idle has step times
// that add up to the wall time, while host work between steps (records, progress) overlaps the
// queued GPU work instead of adding to it.
#include <deque>
#include <stdexcept>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>

#include "tbench/cuda/cuda.hpp"
#include "tbench/timing/clock.hpp"

namespace tbench::cuda {
namespace {

// Timing events: cudaEventDefault keeps timing on (torch's default is cudaEventDisableTiming).
at::cuda::CUDAEvent timing_event() { return at::cuda::CUDAEvent(cudaEventDefault); }

class EventStepTimer : public StepTimer {
 public:
  explicit EventStepTimer(const torch::Device& device) : device_index_(device.has_index() ? device.index() : 0) {
    // The origin: on an idle device an event recorded now passes at once, so event time since
    // `origin_` is "seconds since the timer was made".
    c10::cuda::CUDAGuard guard(device_index_);
    at::cuda::getCurrentCUDAStream(device_index_).synchronize();
    origin_.record(at::cuda::getCurrentCUDAStream(device_index_));
    origin_.synchronize();
  }

  const char* method() const override { return "cuda_events"; }

  void begin() override {
    open_ = spare_pair();
    // Every earlier step has passed its end event (those taken were waited for): the GPU ran out
    // of queued work before the host began this step, so the host sets the pace.
    open_.device_idle_at_start = pending_.empty() || pending_.back().end.query();
    open_.host_began = Clock::now();
    open_.start.record(at::cuda::getCurrentCUDAStream(device_index_));
  }

  void end() override {
    open_.end.record(at::cuda::getCurrentCUDAStream(device_index_));
    open_.host_seconds = seconds_between(open_.host_began, Clock::now());
    pending_.push_back(std::move(open_));
  }

  std::size_t pending() const override { return pending_.size(); }

  bool oldest_done() const override { return !pending_.empty() && pending_.front().end.query(); }

  StepTime take_oldest() override {
    if (pending_.empty()) throw std::logic_error("StepTimer: no step to take");
    EventPair pair = std::move(pending_.front());
    pending_.pop_front();
    pair.end.synchronize();  // returns at once when oldest_done()
    StepTime t;
    t.seconds = static_cast<double>(pair.start.elapsed_time(pair.end)) / 1e3;
    t.ended_at = static_cast<double>(origin_.elapsed_time(pair.end)) / 1e3;
    t.host_seconds = pair.host_seconds;
    t.device_idle_at_start = pair.device_idle_at_start;
    spares_.push_back(std::move(pair));
    return t;
  }

 private:
  struct EventPair {
    at::cuda::CUDAEvent start = timing_event();
    at::cuda::CUDAEvent end = timing_event();
    Clock::time_point host_began;
    double host_seconds = 0;
    bool device_idle_at_start = false;
  };

  // Events are reused: creating two per step would cost a driver call each.
  EventPair spare_pair() {
    if (spares_.empty()) return EventPair{};
    EventPair pair = std::move(spares_.back());
    spares_.pop_back();
    return pair;
  }

  c10::DeviceIndex device_index_;
  at::cuda::CUDAEvent origin_ = timing_event();
  EventPair open_;
  std::deque<EventPair> pending_;
  std::vector<EventPair> spares_;
};

}  // namespace

std::unique_ptr<StepTimer> make_event_step_timer(const torch::Device& device) {
  return std::make_unique<EventStepTimer>(device);
}

}  // namespace tbench::cuda
