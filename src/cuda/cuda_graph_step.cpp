// NOT COMPILED in the CPU build: src/cuda/ builds only with a CUDA LibTorch (TBENCH_WITH_CUDA),
// and this file's body only where torch >= 2.2 (TBENCH_HAS_CUDA_GRAPH_STEP). Written against the
// torch 2.x API (at::cuda::CUDAGraph, side streams from the pool, CUDAEvent for ordering).
//
// train.cuda_graph: the whole step (forward, loss, backward, unscale, clipping, fused AdamW,
// loss-scale update) is recorded once into a CUDA graph and then replayed each step on fixed
// input buffers. What makes that valid: shapes never change (the spec requires padded batches,
// no partial step, one micro-batch); nothing in the step reads a value back to the host (clipping
// and the fp16 skip stay on the device, the fused AdamW reads its learning rate from a device
// tensor); the gradients are None before the capture, so backward assigns them (and a replay
// rewrites them) instead of accumulating; dropout's random numbers come from the default CUDA
// generator, whose offsets CUDAGraph advances on every replay.
#include "tbench/env/torch_features.hpp"

#if TBENCH_HAS_CUDA_GRAPH_STEP

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include "tbench/cuda/cuda.hpp"

namespace tbench::cuda {
namespace {

torch::Tensor copy_of(const torch::Tensor& t) { return t.defined() ? t.clone() : torch::Tensor(); }

// `waiter` runs nothing more until what `producer` has queued so far is done.
void wait_for(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& producer) {
  at::cuda::CUDAEvent ready;
  ready.record(producer);
  ready.block(waiter);
}

class GraphedStep : public CapturedStep {
 public:
  GraphedStep(const ModelInputs& inputs, const torch::Tensor& labels)
      : inputs_{copy_of(inputs.input_ids), copy_of(inputs.attention_mask), copy_of(inputs.token_type_ids),
                inputs.has_padding},
        labels_(labels.clone()) {}

  StepOutputs warm_up(const TrainStepBody& body) { return body(inputs_, labels_); }

  // Called with the side stream current. Recording runs none of the kernels. Thread-local capture
  // (as PyTorch's cudagraph trees capture): the batch loader's thread keeps pinning the next
  // batches meanwhile, and in the default global mode its cudaHostAlloc or event query would
  // invalidate the capture and fail the loader. Calls that would break the graph still fail on
  // this thread, and autograd's thread queues its backward kernels on the capturing stream.
  void record(const TrainStepBody& body) {
    graph_.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      outputs_ = body(inputs_, labels_);
    } catch (const c10::Error& e) {
      end_failed_capture();
      TORCH_CHECK(false, "train.cuda_graph: capturing the step failed (", e.what_without_backtrace(),
                  "); set train.cuda_graph to false");
    } catch (...) {
      end_failed_capture();
      throw;
    }
    graph_.capture_end();
  }

  StepOutputs replay(const ModelInputs& inputs, const torch::Tensor& labels) override {
    // A step captured without the padding mask would ignore this batch's padding.
    TORCH_CHECK(inputs_.has_padding || !inputs.has_padding,
                "train.cuda_graph: a padded batch reached a step captured without the padding mask");
    copy_into(inputs_.input_ids, inputs.input_ids);
    copy_into(inputs_.attention_mask, inputs.attention_mask);
    copy_into(inputs_.token_type_ids, inputs.token_type_ids);
    copy_into(labels_, labels);
    graph_.replay();
    return outputs_;
  }

 private:
  static void copy_into(torch::Tensor& buffer, const torch::Tensor& value) {
    if (buffer.defined()) buffer.copy_(value, /*non_blocking=*/true);
  }

  // The stream must leave capture mode before anything else runs on it; the capture's own error
  // is the one worth reporting.
  void end_failed_capture() noexcept {
    try {
      graph_.capture_end();
    } catch (...) {
    }
  }

  ModelInputs inputs_;
  torch::Tensor labels_;
  at::cuda::CUDAGraph graph_;
  StepOutputs outputs_;
};

}  // namespace

std::unique_ptr<CapturedStep> capture_step(const torch::Device& device, const ModelInputs& inputs,
                                           const torch::Tensor& labels, const TrainStepBody& body,
                                           StepOutputs& warmup_outputs) {
  const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
  const c10::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream(index);
  auto step = std::make_unique<GraphedStep>(inputs, labels);
  // Graphs are captured on a side stream, never the default one; the warm-up runs there too.
  const c10::cuda::CUDAStream side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  wait_for(side, main);
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    warmup_outputs = step->warm_up(body);
    step->record(body);
  }
  wait_for(main, side);
  return step;
}

}  // namespace tbench::cuda

#endif  // TBENCH_HAS_CUDA_GRAPH_STEP
