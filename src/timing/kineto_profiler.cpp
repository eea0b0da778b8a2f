// timing.profile_steps through LibTorch's Kineto profiler (torch/csrc/autograd/profiler_kineto.h,
// the API torch.profiler drives in Python): the same events PyTorch users read in its tables.
#include <torch/csrc/autograd/profiler_kineto.h>

#include "tbench/env/torch_features.hpp"
#include "tbench/errors.hpp"
#include "tbench/timing/step_profiler.hpp"

namespace tbench {
namespace {

namespace kineto = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// Enough names for every kernel of a transformer step (about 60 to 120 on a GPU), so report --profile
// sorts the whole step into kinds of work again, not only its largest names.
constexpr std::size_t kTopEntries = 200;

// libkineto::ActivityType::GPU_USER_ANNOTATION, the same value in every Kineto since 2021 (the enum
// is not in every LibTorch's headers): a record_function range on the device's timeline, spanning
// the kernels inside it. Counted as device work, it would count those kernels twice.
constexpr uint8_t kGpuUserAnnotation = 2;

// Kineto reports microseconds up to torch 2.0 and nanoseconds from 2.1.
ProfiledEvent plain_event(const kineto::KinetoEvent& e) {
  ProfiledEvent out;
  out.name = e.name();
  out.thread = e.startThreadId();
  out.on_device = e.deviceType() == c10::DeviceType::CUDA && e.activityType() != kGpuUserAnnotation;
#if TBENCH_TORCH_AT_LEAST(2, 1)
  out.start_us = static_cast<double>(e.startNs()) / 1e3;
  out.duration_us = static_cast<double>(e.durationNs()) / 1e3;
#else
  out.start_us = static_cast<double>(e.startUs());
  out.duration_us = static_cast<double>(e.durationUs());
#endif
  return out;
}

class KinetoStepProfiler : public StepProfiler {
 public:
  KinetoStepProfiler(bool cuda, std::string trace_path) : cuda_(cuda), trace_path_(std::move(trace_path)) {
    activities_.insert(ActivityType::CPU);
    if (cuda_) activities_.insert(ActivityType::CUDA);
  }

  ~KinetoStepProfiler() override {
    if (!running_) return;
    try {
      kineto::disableProfiler();  // a run that ended inside the window: leave no profiler enabled
    } catch (...) {
    }
  }

  void start() override {
    const ProfilerConfig config(ProfilerState::KINETO);
    try {
      kineto::prepareProfiler(config, activities_);
      kineto::enableProfiler(config, activities_);
      running_ = true;
    } catch (const c10::Error& e) {
      throw Error(ExitCode::run_failed, std::string("timing.profile_steps: the profiler did not start (") +
                                            e.what_without_backtrace() + ")");
    }
  }

  ProfileSummary stop() override {
    running_ = false;
    const auto result = kineto::disableProfiler();
    std::vector<ProfiledEvent> events;
    for (const auto& e : result->events()) events.push_back(plain_event(e));
    ProfileSummary summary = summarize_profile(events, cuda_, kTopEntries);
    if (trace_path_.empty()) return summary;
    try {
      result->save(trace_path_);
      summary.trace = trace_path_;
    } catch (const c10::Error& e) {  // e.g. a LibTorch built without Kineto (Debian's 1.13) records events but no trace
      summary.trace_error = e.what_without_backtrace();
    }
    return summary;
  }

 private:
  bool cuda_;
  std::string trace_path_;
  std::set<ActivityType> activities_;
  bool running_ = false;
};

}  // namespace

std::unique_ptr<StepProfiler> make_kineto_profiler(bool cuda, std::string trace_path) {
  return std::make_unique<KinetoStepProfiler>(cuda, std::move(trace_path));
}

}  // namespace tbench
