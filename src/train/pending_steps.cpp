#include "tbench/train/pending_steps.hpp"

namespace tbench {
namespace {

// [loss, loss scale, found_inf, terms...] in one host tensor: one copy per step, not several. On CUDA it is
// pinned and copied without blocking, so the copy runs in stream order before the end event.
torch::Tensor stage_on_host(const StepOutputs& out) {
  const auto options = out.loss.options().dtype(torch::kFloat);
  const auto scale = out.loss_scale.defined() ? out.loss_scale.reshape({1}).to(torch::kFloat) : torch::ones({1}, options);
  const auto inf = out.found_inf.defined() ? out.found_inf.reshape({1}).to(torch::kFloat) : torch::zeros({1}, options);
  std::vector<torch::Tensor> parts = {out.loss.detach().reshape({1}).to(torch::kFloat), scale, inf};
  if (out.terms.defined()) parts.push_back(out.terms.detach().reshape({-1}).to(torch::kFloat));
  const auto values = torch::cat(parts);
  if (!values.is_cuda()) return values;
  auto host = torch::empty({values.numel()}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true));
  host.copy_(values, /*non_blocking=*/true);
  return host;
}

}  // namespace

PendingSteps::PendingSteps(std::unique_ptr<StepTimer> timer, std::size_t max_pending)
    : timer_(std::move(timer)), max_pending_(std::max<std::size_t>(1, max_pending)) {}

void PendingSteps::end_step(IterationRecord record, const StepOutputs& outputs) {
  staged_.push_back(Staged{stage_on_host(outputs), outputs.comm_waits});
  timer_->end();
  records_.push_back(std::move(record));
}

IterationRecord PendingSteps::complete_oldest() {
  const StepTime time = timer_->take_oldest();  // waits only if the step has not finished
  IterationRecord record = std::move(records_.front());
  records_.pop_front();
  const Staged staged = std::move(staged_.front());
  staged_.pop_front();
  const torch::Tensor& values = staged.values;
  const float* v = values.data_ptr<float>();
  record.seconds = time.seconds;
  record.ended_at = time.ended_at;
  record.host_seconds = time.host_seconds;
  record.device_idle_at_start = time.device_idle_at_start;
  record.loss = static_cast<double>(v[0]);
  record.loss_scale = static_cast<double>(v[1]);
  record.skipped = record.skipped || v[2] != 0.0f;
  for (const auto& waited : staged.comm_waits) record.comm_wait_seconds += waited();
  for (std::size_t i = 0; i < record.loss_terms.size() && 3 + static_cast<int64_t>(i) < values.numel(); ++i) {
    record.loss_terms[i].second = static_cast<double>(v[3 + i]);
  }
  return record;
}

std::vector<IterationRecord> PendingSteps::take_finished(bool wait_for_all) {
  std::vector<IterationRecord> finished;
  while (!records_.empty() && (wait_for_all || records_.size() > max_pending_ || timer_->oldest_done())) {
    finished.push_back(complete_oldest());
  }
  return finished;
}

}  // namespace tbench
