#include "tbench/data/data.hpp"

namespace tbench {
namespace {

bool broadcast_over_batch(const torch::Tensor& t) { return t.dim() > 0 && t.size(0) > 1 && t.stride(0) == 0; }

}  // namespace

torch::Tensor pinned(const torch::Tensor& t) {
  if (broadcast_over_batch(t)) return t.narrow(0, 0, 1).pin_memory().expand(t.sizes());
  return t.pin_memory();
}

torch::Tensor moved_to(const torch::Tensor& t, const torch::Device& device, bool non_blocking) {
  if (broadcast_over_batch(t)) return t.narrow(0, 0, 1).to(device, non_blocking).expand(t.sizes());
  return t.to(device, non_blocking);
}

BatchLoader::BatchLoader(const TokenizedSamples& samples, CollateOptions collate, int64_t prefetch, bool pin_memory)
    : samples_(samples), collate_(collate), prefetch_(static_cast<std::size_t>(std::max<int64_t>(0, prefetch))),
      pin_memory_(pin_memory) {
  if (prefetch_ > 0) worker_ = std::thread([this] { work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Batch BatchLoader::make(const std::vector<int64_t>& indices, int64_t epoch) const {
  Batch batch = collate(samples_, indices, collate_, epoch);
  if (pin_memory_) {
    // Page-locked host memory lets the host-to-device copy run asynchronously (non_blocking).
    for (auto* t : {&batch.inputs.input_ids, &batch.inputs.attention_mask, &batch.inputs.token_type_ids,
                    &batch.inputs.scored_positions, &batch.inputs.token_positions, &batch.inputs.perm_mask, &batch.inputs.target_mapping, &batch.labels}) {
      if (t->defined()) *t = pinned(*t);  // the optional ones: only the tasks that use them
    }
  }
  return batch;
}

void BatchLoader::start_epoch(const std::vector<StepBatches>& steps, int64_t epoch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    epoch_ = epoch;
    pending_.clear();
    ready_.clear();
    for (const auto& step : steps) {
      for (const auto& micro : step) pending_.push_back(micro);
    }
  }
  changed_.notify_all();
}

Batch BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (prefetch_ == 0) {
    if (pending_.empty()) throw std::logic_error("BatchLoader::next: no batch left in this epoch");
    const auto indices = std::move(pending_.front());
    pending_.pop_front();
    const int64_t epoch = epoch_;
    lock.unlock();
    return make(indices, epoch);
  }
  changed_.wait(lock, [&] { return !ready_.empty() || error_ || (pending_.empty() && ready_.empty() && !busy_); });
  if (error_) std::rethrow_exception(error_);
  if (ready_.empty()) throw std::logic_error("BatchLoader::next: no batch left in this epoch");
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();  // room in the queue for the worker
  return batch;
}

void BatchLoader::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || (!pending_.empty() && ready_.size() < prefetch_); });
    if (stopping_) return;
    const auto indices = std::move(pending_.front());
    pending_.pop_front();
    const uint64_t generation = generation_;
    const int64_t epoch = epoch_;
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    Batch batch;
    try {
      batch = make(indices, epoch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) {
      error_ = error;
    } else if (generation == generation_) {
      ready_.push_back(std::move(batch));
    }
    changed_.notify_all();
  }
}

}  // namespace tbench
