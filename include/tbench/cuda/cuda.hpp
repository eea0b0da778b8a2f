#pragma once
// Entry points into src/cuda/, which is compiled only in CUDA builds (TBENCH_WITH_CUDA=1): call
// them only under `#if TBENCH_WITH_CUDA`. Everything else in tbench stays free of CUDA headers.
#include <cstdint>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tbench/models/classifier.hpp"
#include "tbench/train/pending_steps.hpp"
#include "tbench/timing/step_timer.hpp"

namespace tbench::cuda {

// CUDA-event step timer on `device`'s current stream (src/cuda/cuda_step_timer.cpp).
std::unique_ptr<StepTimer> make_event_step_timer(const torch::Device& device);

// The caching allocator's high-water marks since the last reset (src/cuda/cuda_memory.cpp).
struct AllocatorPeaks {
  int64_t allocated_bytes = 0;  // tensors alive at the peak
  int64_t reserved_bytes = 0;   // what the allocator held from the driver at its peak
};
void reset_allocator_peaks(int device_index);
AllocatorPeaks allocator_peaks(int device_index);

// A timing event recorded on `device_index`'s current stream when it is made, so the host can
// time and await one point in the queued work without waiting for the whole device
// (src/cuda/cuda_stream.cpp).
class StreamEvent {
 public:
  virtual ~StreamEvent() = default;
  // Blocks the host until the stream has run everything queued before the event.
  virtual void synchronize() = 0;
  // Whether the stream has passed the event (no wait).
  virtual bool done() = 0;
  // Device seconds from `earlier` to this event; waits for this one to pass.
  virtual double seconds_since(StreamEvent& earlier) = 0;
};
std::unique_ptr<StreamEvent> record_stream_event(int device_index);

// Runtime, driver, cuDNN and per-device facts for `env.cuda` (src/cuda/cuda_env.cpp).
nlohmann::json runtime_info();
nlohmann::json device_info(int device_index);

// train.cuda_graph (src/cuda/cuda_graph_step.cpp): one whole train step recorded as a CUDA graph
// and replayed on fixed input buffers, so a step costs one graph launch instead of hundreds of
// kernel launches.
class CapturedStep {
 public:
  virtual ~CapturedStep() = default;
  // Copies this step's batch into the graph's input buffers and replays the step. The outputs
  // are the same device tensors every time, rewritten by each replay.
  virtual StepOutputs replay(const ModelInputs& inputs, const torch::Tensor& labels) = 0;
};

// The step as the graph records it: forward, backward and update on the buffers it is given.
using TrainStepBody = std::function<StepOutputs(const ModelInputs& inputs, const torch::Tensor& labels)>;

// Runs `body` once for real on a side stream with this step's batch (the warm-up PyTorch requires
// before a capture: lazy library state and allocator blocks are created outside the graph), puts
// its outputs in `warmup_outputs`, then records a second call into a graph (recording runs
// nothing). A capture that fails throws c10::Error naming train.cuda_graph.
std::unique_ptr<CapturedStep> capture_step(const torch::Device& device, const ModelInputs& inputs,
                                           const torch::Tensor& labels, const TrainStepBody& body,
                                           StepOutputs& warmup_outputs);

}  // namespace tbench::cuda
