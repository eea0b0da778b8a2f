#pragma once
// Progress while training: a tqdm-like bar on a terminal, periodic log lines otherwise.
#include <memory>

#include "tbench/train/train_run.hpp"

namespace tbench {

enum class ProgressMode { bar, log, none };

// bar when stderr is a terminal, log otherwise; none when quiet.
ProgressMode choose_progress_mode(bool quiet);
std::unique_ptr<TrainObserver> make_progress(ProgressMode mode);

// "epoch 1/3  45%|████▌     | 1406/3125 [01:27<01:46, 16.1it/s, loss=0.69]"
std::string format_progress_bar(int64_t epoch, int64_t epochs, int64_t done, int64_t total, double elapsed,
                                double loss);

}  // namespace tbench
