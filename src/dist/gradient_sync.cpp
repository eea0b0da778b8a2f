// Bucketed gradient all-reduce that overlaps backward, as DistributedDataParallel's reducer does:
// parameters in reverse order (their gradients arrive roughly in that order) packed into buckets
// of ~dist.bucket_mb; a post-hook on each parameter's gradient accumulator counts the bucket's
// ready gradients, and the bucket's all-reduce starts as soon as its last one has been
// accumulated. Buckets start strictly in index order, so every rank issues the same collectives
// in the same order. After backward the trainer waits for them all and gets the mean gradients:
// on CPU the host waits; on a GPU only the stream does, so the host queues the next step while
// the all-reduces run, as DDP's reducer lets it.
// With dist.gradient_as_bucket_view (DDP's option of that name) each parameter's .grad becomes a
// view into its bucket once its first gradient has been copied there: from then on backward
// accumulates into the bucket, the all-reduce averages it in place and the optimizer reads it
// there. That saves a gradient-sized buffer per rank and the two copies a step between .grad and
// the bucket; the arithmetic is the same.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "dist_internal.hpp"
#include "tbench/cuda/cuda.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/timing/clock.hpp"

namespace tbench {
namespace {


// Runs after AccumulateGrad has added this backward's gradient into the parameter's .grad.
class GradReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit GradReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

class BucketedGradientSync final : public GradientSync {
 public:
  BucketedGradientSync(Communicator& comm, std::vector<torch::Tensor> params, const DistSpec& spec)
      : comm_(comm),
        params_(std::move(params)),
        every_micro_step_(spec.sync_every_micro_step),
        grads_in_buckets_(spec.gradient_as_bucket_view),
        on_cuda_(params_.front().is_cuda()),
        stop_requests_(on_cuda_ ? 1 : 0) {
    stats_.bucket_mb = spec.bucket_mb;
    stats_.sync_every_micro_step = spec.sync_every_micro_step;
    stats_.gradient_as_bucket_view = spec.gradient_as_bucket_view;
    stats_.parameters = static_cast<int64_t>(params_.size());
    build_buckets(spec.bucket_mb);
    for (std::size_t i = 0; i < params_.size(); ++i) {
      // The accumulator is held weakly by the parameter: keep it alive, or the next backward
      // would make a new one without the hook.
      auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
      const auto key = accumulator->add_post_hook(std::make_unique<GradReadyHook>([this, i] { on_grad_ready(i); }));
      hooks_.emplace_back(std::move(accumulator), key);
    }
  }

  ~BucketedGradientSync() override {
    for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  }

  int rank() const override { return comm_.rank(); }
  int world_size() const override { return comm_.world_size(); }
  void note_progress(const std::string& where) override { comm_.note_progress(where); }
  bool stop_agreed() override { return stop_requests_.agreed(); }
  void finish_reductions() override { stop_requests_.read_all(); }
  void await_reductions() override {
#if TBENCH_WITH_CUDA
    if (last_reduced_) await_reduction(*last_reduced_, last_reduced_through_);
#endif
  }

  // Gradients that live in the buckets are zeroed there, one fill a bucket, and stay views. Any
  // other is dropped, as model.zero_grad(set_to_none) does.
  void zero_gradients(torch::nn::Module& model) override {
    std::fill(got_gradient_.begin(), got_gradient_.end(), 0);
    if (!grads_in_buckets_) {
      model.zero_grad(/*set_to_none=*/true);
      return;
    }
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!grad_in_bucket(i)) params_[i].mutable_grad().reset();
    }
    for (auto& bucket : buckets_) bucket.flat.zero_();
  }

  void before_backward(bool last_micro_step, bool stop) override {
    std::lock_guard<std::mutex> lock(mutex_);
    reset_buckets();
    local_stop_ = stop;
    last_micro_step_ = last_micro_step;
    reducing_.store(last_micro_step || every_micro_step_);
  }

  DeferredSeconds after_backward() override {
    if (!reducing_.load()) return {};
    {
      // Buckets whose parameters got no gradient in this backward go now (as zeros).
      std::lock_guard<std::mutex> lock(mutex_);
      while (next_ < buckets_.size()) launch(buckets_[next_++]);
      reducing_.store(false);
    }
    rethrow_hook_error();
#if TBENCH_WITH_CUDA
    if (on_cuda_) return after_backward_on_cuda();
#endif
    const auto start = Clock::now();
    comm_.wait_all();
    const double waited = seconds_since(start);
    take_mean_gradients();
    // One request a step, the last micro-step's: a request never goes from true back to false.
    if (last_micro_step_) stop_requests_.add(stop_request_sum().clone());
    return [waited] { return waited; };
  }

  SyncStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
#if TBENCH_WITH_CUDA
  // As DDP does on a GPU, nothing here waits on the host: the stream waits for the all-reduces,
  // then averages and copies the gradients; the stop request follows to pinned memory. The wait
  // is timed on the stream, from backward's last kernel to the last all-reduce's end.
  DeferredSeconds after_backward_on_cuda() {
    const int device = params_.front().device().index();
    std::shared_ptr<cuda::StreamEvent> backward_done = cuda::record_stream_event(device);
    comm_.wait_all();
    std::shared_ptr<cuda::StreamEvent> reduced = cuda::record_stream_event(device);
    last_reduced_ = reduced;
    const int64_t through = comm_.collectives_started();  // the collectives `reduced` follows
    last_reduced_through_ = through;
    take_mean_gradients();
    if (last_micro_step_) {
      const auto request = stop_request_sum();
      auto host = torch::empty({1}, request.options().device(torch::kCPU).pinned_memory(true));
      host.copy_(request, /*non_blocking=*/true);
      std::shared_ptr<cuda::StreamEvent> copied = cuda::record_stream_event(device);
      stop_requests_.add(host, [this, copied, through] { await_reduction(*copied, through); });
    }
    return [backward_done, reduced] { return reduced->seconds_since(*backward_done); };
  }

  // The host's only wait on the all-reduces, with dist.timeout_s as its deadline, so a peer that
  // died or hangs ends this rank with CommFailure (exit 4, a failed result) rather than leaving it
  // to NCCL's watchdog (whose own timeout is later: see Communicator::connect).
  // A peer's announced failure ends the wait within Communicator::kFailureCheckInterval.
  // `through`: the number of the last collective before it (the host may have started later ones).
  void await_reduction(cuda::StreamEvent& reduced, int64_t through) const {
    // One given up on already: this one is queued behind it (the epoch's end reads the rest).
    if (comm_.gave_up()) {
      throw CommFailure("rank " + std::to_string(comm_.rank()) +
                        ": a gradient all-reduce is queued behind one this rank gave up on");
    }
    comm_.note_waiting_on(through);
    const auto deadline = std::chrono::steady_clock::now() + comm_.timeout();
    auto next_check = std::chrono::steady_clock::now() + Communicator::kFailureCheckInterval;
    while (!reduced.done()) {
      if (std::chrono::steady_clock::now() > next_check) {
        comm_.throw_if_a_peer_failed("a gradient all-reduce");
        next_check += Communicator::kFailureCheckInterval;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        comm_.collective_timed_out("a gradient all-reduce");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
#endif

  // The buckets hold the sums over ranks: each parameter's .grad gets its mean (where .grad is a
  // view into its bucket, the division did that). A parameter that got no gradient in this step
  // (on any rank: the same model everywhere) has none, as with copied gradients, so the optimizer
  // skips it: a view it kept from an earlier step, zero now, is dropped (it comes back with the
  // parameter's next gradient).
  void take_mean_gradients() {
    torch::NoGradGuard no_grad;
    const double world = static_cast<double>(comm_.world_size());
    for (auto& bucket : buckets_) bucket.flat.div_(world);
    for (std::size_t i = 0; i < params_.size(); ++i) {
      auto& param = params_[i];
      if (!param.grad().defined()) continue;
      if (grad_in_bucket(i)) {
        if (!got_gradient_[i]) param.mutable_grad().reset();
        continue;
      }
      param.grad().copy_(slot_of_[i].view_as(param));
    }
  }

  bool grad_in_bucket(std::size_t i) const {
    const auto& grad = params_[i].grad();
    return grads_in_buckets_ && grad.defined() && grad.data_ptr() == slot_of_[i].data_ptr();
  }

  // The control bucket's last element: the ranks' stop requests, summed and divided by the world.
  torch::Tensor stop_request_sum() const {
    for (const auto& bucket : buckets_) {
      if (bucket.control) return bucket.flat.narrow(0, bucket.flat.numel() - 1, 1);
    }
    throw std::logic_error("gradient sync: no control bucket");
  }

  struct Bucket {
    std::vector<std::size_t> members;  // indices into params_
    torch::Tensor flat;                // the gradients, then their sum over ranks
    std::size_t ready = 0;
    bool control = false;              // the last element carries the stop request
  };

  void build_buckets(double bucket_mb) {
    const double capacity = bucket_mb * 1024.0 * 1024.0;
    bucket_of_.assign(params_.size(), 0);
    slot_of_.assign(params_.size(), torch::Tensor());
    got_gradient_.assign(params_.size(), 0);
    std::vector<Bucket> buckets;
    double bytes = 0;
    for (std::size_t k = params_.size(); k-- > 0;) {
      const auto& p = params_[k];
      const double size = static_cast<double>(p.numel() * static_cast<int64_t>(p.element_size()));
      const bool fits = !buckets.empty() && bytes + size <= capacity &&
                        params_[buckets.back().members.front()].scalar_type() == p.scalar_type() &&
                        params_[buckets.back().members.front()].device() == p.device();
      if (!fits) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().members.push_back(k);
      bytes += size;
      bucket_of_[k] = buckets.size() - 1;
    }
    buckets.back().control = true;
    for (auto& b : buckets) {
      int64_t numel = 0;
      for (const auto k : b.members) numel += params_[k].numel();
      const auto& first = params_[b.members.front()];
      b.flat = torch::zeros({numel + (b.control ? 1 : 0)}, first.options().requires_grad(false));
      int64_t offset = 0;
      for (const auto k : b.members) {
        slot_of_[k] = b.flat.narrow(0, offset, params_[k].numel());
        offset += params_[k].numel();
      }
      stats_.bucket_bytes_max = std::max<int64_t>(stats_.bucket_bytes_max, b.flat.numel() * b.flat.element_size());
    }
    buckets_ = std::move(buckets);
    stats_.buckets = static_cast<int64_t>(buckets_.size());
  }

  // Autograd's thread (the caller's on CPU, the device thread on CUDA).
  void on_grad_ready(std::size_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    got_gradient_[index] = 1;
    if (!reducing_.load()) return;
    auto& bucket = buckets_[bucket_of_[index]];
    ++bucket.ready;
    while (next_ < buckets_.size() && buckets_[next_].ready == buckets_[next_].members.size()) {
      launch(buckets_[next_++]);
    }
  }

  // Under mutex_. A gradient not yet in the bucket is copied there (and, with
  // gradient_as_bucket_view, becomes a view of it: the only copy it ever needs).
  void launch(Bucket& bucket) {
    torch::NoGradGuard no_grad;
    for (const auto i : bucket.members) {
      if (grad_in_bucket(i)) continue;
      auto& param = params_[i];
      auto& slot = slot_of_[i];
      if (!param.grad().defined()) {
        slot.zero_();
        continue;
      }
      slot.copy_(param.grad().reshape({-1}));
      // A view has the bucket's contiguous layout: a strided parameter keeps copying.
      if (grads_in_buckets_ && param.is_contiguous()) param.mutable_grad() = slot.view_as(param);
    }
    if (bucket.control) bucket.flat.narrow(0, bucket.flat.numel() - 1, 1).fill_(local_stop_ ? 1.0 : 0.0);
    try {
      comm_.allreduce_async(bucket.flat);
      ++stats_.allreduces;
    } catch (...) {
      if (!hook_error_) hook_error_ = std::current_exception();
    }
  }

  void reset_buckets() {
    for (auto& b : buckets_) b.ready = 0;
    next_ = 0;
  }

  void rethrow_hook_error() {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::swap(error, hook_error_);
    }
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const CommFailure&) {
      throw;
    } catch (const std::exception& e) {
      throw CommFailure("rank " + std::to_string(comm_.rank()) + ": starting a gradient all-reduce failed: " + e.what());
    }
  }

  Communicator& comm_;
  std::vector<torch::Tensor> params_;
  const bool every_micro_step_;
  const bool grads_in_buckets_;  // dist.gradient_as_bucket_view
  const bool on_cuda_;
  StopRequests stop_requests_;  // read one reduction late on a GPU
#if TBENCH_WITH_CUDA
  std::shared_ptr<cuda::StreamEvent> last_reduced_;  // the stream passed the latest all-reduces
  int64_t last_reduced_through_ = 0;                 // the number of the last of them
#endif
  std::vector<std::size_t> bucket_of_;  // by parameter: its bucket
  std::vector<torch::Tensor> slot_of_;  // by parameter: its place in its bucket, flat
  std::vector<char> got_gradient_;      // by parameter: backward reached it in this step
  std::vector<Bucket> buckets_;
  // The accumulator's pointer type: shared_ptr<Node> up to LibTorch 2.13, intrusive_ptr<Node> from 2.14.
  using AccumulatorPtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));
  std::vector<std::pair<AccumulatorPtr, uintptr_t>> hooks_;
  mutable std::mutex mutex_;
  std::atomic<bool> reducing_{false};
  bool local_stop_ = false;
  bool last_micro_step_ = false;  // the optimizer step follows this backward
  std::size_t next_ = 0;  // the next bucket to start: buckets start in index order on every rank
  std::exception_ptr hook_error_;
  SyncStats stats_;
};

}  // namespace

std::unique_ptr<GradientSync> make_gradient_sync(Communicator& comm, torch::nn::Module& model, const DistSpec& spec) {
  std::vector<torch::Tensor> shared, trainable;
  for (const auto& p : model.parameters()) {
    shared.push_back(p);
    if (p.requires_grad()) trainable.push_back(p);
  }
  for (const auto& b : model.buffers()) {
    if (b.is_floating_point()) shared.push_back(b);
  }
  try {
    comm.broadcast_from_rank0(shared);
  } catch (const PeerFailed&) {
    throw;  // it says why
  } catch (const CommFailure& e) {
    throw CommFailure(std::string(e.what()) + "; rank 0 may have stopped before training (an existing result "
                                              "without --force, say): see its log");
  }
  if (trainable.empty()) throw Error(ExitCode::internal, "the model has no trainable parameters");
  auto sync = std::make_unique<BucketedGradientSync>(comm, std::move(trainable), spec);
  const SyncStats s = sync->stats();
  spdlog::info("weights broadcast from rank 0; {} gradients in {} all-reduce bucket(s) of up to {:.2f} MiB{}, {}",
               s.parameters, s.buckets, static_cast<double>(s.bucket_bytes_max) / 1048576.0,
               spec.gradient_as_bucket_view ? " (the gradients live there)" : "",
               spec.sync_every_micro_step ? "reduced after every micro-step" : "reduced on the last micro-step");
  return sync;
}

void StopRequests::add(torch::Tensor sum, std::function<void()> arrived) {
  unread_.push_back(Request{std::move(sum), std::move(arrived)});
}

bool StopRequests::agreed() { return read_down_to(lag_); }

bool StopRequests::read_all() { return read_down_to(0); }

bool StopRequests::read_down_to(std::size_t unread) {
  while (unread_.size() > unread) {
    Request request = std::move(unread_.front());
    unread_.pop_front();
    if (request.arrived) request.arrived();
    agreed_ = agreed_ || request.sum.item<double>() > 0;
  }
  return agreed_;
}

SyncStats sync_stats(const GradientSync* sync) {
  if (const auto* s = dynamic_cast<const BucketedGradientSync*>(sync)) return s->stats();
  return {};
}

}  // namespace tbench
