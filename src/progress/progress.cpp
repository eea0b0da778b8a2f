#include "tbench/progress/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "tbench/timing/clock.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

class EpochProgress : public TrainObserver {
 public:
  void on_epoch_start(int64_t epoch, int64_t epochs, int64_t steps) override {
    epoch_ = epoch;
    epochs_ = epochs;
    total_ = steps;
    done_ = 0;
    start_ = Clock::now();
  }
  void on_iteration(const IterationRecord& r) override {
    done_ = r.step;
    loss_ = r.loss;
    show(false);
  }
  void on_epoch_end(const EpochRecord&) override { show(true); }

 protected:
  virtual void show(bool final) = 0;
  int64_t epoch_ = 0, epochs_ = 0, total_ = 0, done_ = 0;
  double loss_ = 0;
  Clock::time_point start_ = Clock::now();
};

class TerminalBar : public EpochProgress {
  void show(bool final) override {
    // Redraw at most 10 times a second: the bar must not cost the benchmark anything measurable.
    if (!final && seconds_since(last_draw_) < 0.1) return;
    last_draw_ = Clock::now();
    // "\x1b[K" clears what a longer line before left (times under 10 s carry a fraction).
    std::fprintf(stderr, "\r%s\x1b[K%s",
                 format_progress_bar(epoch_, epochs_, done_, total_, seconds_since(start_), loss_).c_str(),
                 final ? "\n" : "");
    std::fflush(stderr);
  }
  Clock::time_point last_draw_{};
};

class LogLines : public EpochProgress {
  void show(bool final) override {
    // A line every 10% of the epoch or every 30 s, whichever comes first.
    const int64_t every = std::max<int64_t>(1, total_ / 10);
    if (!final && done_ % every != 0 && seconds_since(last_line_) < 30) return;
    if (final && done_ % every == 0) return;  // already logged this step
    last_line_ = Clock::now();
    const double elapsed = seconds_since(start_);
    const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
    spdlog::info("epoch {}/{} step {}/{} ({:.0f}%) {:.2f} it/s loss {:.4f} elapsed {} eta {}", epoch_, epochs_,
                 done_, total_, 100.0 * static_cast<double>(done_) / static_cast<double>(std::max<int64_t>(1, total_)),
                 rate, loss_, format_duration(elapsed), format_duration(eta));
  }
  Clock::time_point last_line_ = Clock::now();
};

class Silent : public TrainObserver {};

}  // namespace

std::string format_progress_bar(int64_t epoch, int64_t epochs, int64_t done, int64_t total, double elapsed,
                                double loss) {
  static const char* partial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  constexpr int width = 10;
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0;
  const int eighths = static_cast<int>(fraction * width * 8);
  std::string bar;
  for (int i = 0; i < eighths / 8; ++i) bar += "█";
  int cells = eighths / 8;
  if (cells < width && eighths % 8) {
    bar += partial[eighths % 8];
    ++cells;
  }
  bar += std::string(static_cast<std::size_t>(width - cells), ' ');
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double remaining = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  char rate_text[32];
  if (rate >= 1 || rate == 0) {
    std::snprintf(rate_text, sizeof rate_text, "%.1fit/s", rate);
  } else {
    std::snprintf(rate_text, sizeof rate_text, "%.2fs/it", 1.0 / rate);
  }
  char text[256];
  std::snprintf(text, sizeof text, "epoch %lld/%lld %3.0f%%|%s| %lld/%lld [%s<%s, %s, loss=%.3g]",
                static_cast<long long>(epoch), static_cast<long long>(epochs), fraction * 100, bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(total), format_duration(elapsed).c_str(),
                format_duration(remaining).c_str(), rate_text, loss);
  return text;
}

ProgressMode choose_progress_mode(bool quiet) {
  if (quiet) return ProgressMode::none;
  return isatty(STDERR_FILENO) ? ProgressMode::bar : ProgressMode::log;
}

std::unique_ptr<TrainObserver> make_progress(ProgressMode mode) {
  switch (mode) {
    case ProgressMode::bar: return std::make_unique<TerminalBar>();
    case ProgressMode::log: return std::make_unique<LogLines>();
    case ProgressMode::none: break;
  }
  return std::make_unique<Silent>();
}

}  // namespace tbench
