#include "tbench/timing/step_timer.hpp"

#include <chrono>
#include <deque>
#include <stdexcept>

#include "tbench/cuda/cuda.hpp"
#include "tbench/timing/clock.hpp"

namespace tbench {
namespace {

// CPU ops are synchronous: when end() is called the step's work is done, so the clock is exact
// and every pending step can be taken at once.
class HostStepTimer : public StepTimer {
 public:
  const char* method() const override { return "steady_clock"; }
  void begin() override { began_ = Clock::now(); }
  void end() override {
    const auto now = Clock::now();
    StepTime t;
    t.seconds = seconds_between(began_, now);
    t.ended_at = seconds_between(origin_, now);
    done_.push_back(t);
  }
  std::size_t pending() const override { return done_.size(); }
  bool oldest_done() const override { return !done_.empty(); }
  StepTime take_oldest() override {
    if (done_.empty()) throw std::logic_error("StepTimer: no step to take");
    const StepTime t = done_.front();
    done_.pop_front();
    return t;
  }

 private:
  const Clock::time_point origin_ = Clock::now();
  Clock::time_point began_;
  std::deque<StepTime> done_;
};

}  // namespace

std::unique_ptr<StepTimer> make_host_step_timer() { return std::make_unique<HostStepTimer>(); }

std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device) {
#if TBENCH_WITH_CUDA
  if (device.is_cuda()) return cuda::make_event_step_timer(device);
#endif
  if (device.is_cuda()) throw std::logic_error("a CUDA device in a build without CUDA");
  return make_host_step_timer();
}

}  // namespace tbench
