// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>

#include "tbench/cuda/cuda.hpp"

namespace tbench::cuda {
namespace {

class CurrentStreamEvent final : public StreamEvent {
 public:
  explicit CurrentStreamEvent(int device_index) : device_index_(static_cast<c10::DeviceIndex>(device_index)) {
    c10::cuda::CUDAGuard guard(device_index_);
    event_.record(at::cuda::getCurrentCUDAStream(device_index_));
  }

  void synchronize() override { event_.synchronize(); }
  bool done() override { return event_.query(); }

  double seconds_since(StreamEvent& earlier) override {
    event_.synchronize();
    auto& start = dynamic_cast<CurrentStreamEvent&>(earlier);
    return static_cast<double>(start.event_.elapsed_time(event_)) / 1e3;
  }

 private:
  c10::DeviceIndex device_index_;
  at::cuda::CUDAEvent event_{cudaEventDefault};  // timing on: torch's default turns it off
};

}  // namespace

std::unique_ptr<StreamEvent> record_stream_event(int device_index) {
  return std::make_unique<CurrentStreamEvent>(device_index);
}

}  // namespace tbench::cuda
