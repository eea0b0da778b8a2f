#pragma once
// The steps the trainer has issued but not yet reported.
//
// On CUDA the host queues a step's work and moves on; the step's time, loss, loss scale and
// overflow flag are known only once the device has run it. Each step's values are copied to
// pinned host memory at its end (asynchronously, before its end event), so once the end event
// has passed they can be read with no synchronisation at all. Records leave in step order, so
// observers (the JSONL stream) still see every step, in order, just a step or two later. On CPU
// every step is finished when it returns, and each record leaves at once.
#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "tbench/results/records.hpp"
#include "tbench/timing/step_timer.hpp"

namespace tbench {

// What a step leaves on the device for its record.
struct StepOutputs {
  torch::Tensor loss;        // the step's mean loss, 0-dim float
  torch::Tensor loss_scale;  // fp16: the scale this step used ([1] float); undefined otherwise
  torch::Tensor found_inf;   // fp16: [1] float, non-zero if the step overflowed (and was skipped)
  torch::Tensor terms;       // the loss's parts ([k] float, the record's loss_terms order); undefined: none
  std::vector<DeferredSeconds> comm_waits;  // data-parallel: each reduced backward's wait for its all-reduces
};

class PendingSteps {
 public:
  // At most `max_pending` steps wait: beyond that, taking records waits for the oldest, which
  // bounds how late a failure (a non-finite loss) is noticed.
  PendingSteps(std::unique_ptr<StepTimer> timer, std::size_t max_pending);

  const char* timing_method() const { return timer_->method(); }
  void begin_step() { timer_->begin(); }
  // Stages the step's outputs for the host, then closes its timing.
  void end_step(IterationRecord record, const StepOutputs& outputs);
  // The finished steps' records, oldest first, with seconds, ended_at, loss, loss_scale, skipped,
  // comm_wait_seconds and the values of loss_terms filled in. `wait_for_all`: waits for every pending step (epoch end, stop, failure).
  std::vector<IterationRecord> take_finished(bool wait_for_all);
  std::size_t size() const { return records_.size(); }

 private:
  IterationRecord complete_oldest();

  std::unique_ptr<StepTimer> timer_;
  std::size_t max_pending_;
  std::deque<IterationRecord> records_;
  struct Staged {
    torch::Tensor values;  // on the host: [loss, loss scale, found_inf, terms...]
    std::vector<DeferredSeconds> comm_waits;
  };
  std::deque<Staged> staged_;
};

}  // namespace tbench
