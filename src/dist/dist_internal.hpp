#pragma once
// Shared inside src/dist/ only.
#include <cstdint>

#include "tbench/torch_error_text.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {

// How the gradient sync packed and reduced the gradients.
struct SyncStats {
  int64_t buckets = 0;
  int64_t bucket_bytes_max = 0;  // the largest bucket, in bytes
  int64_t allreduces = 0;        // bucket all-reduces started so far
  int64_t parameters = 0;
  bool sync_every_micro_step = false;
  bool gradient_as_bucket_view = false;
  double bucket_mb = 0;
};

// Zeros for anything that is not the c10d gradient sync (or null).
SyncStats sync_stats(const GradientSync* sync);

}  // namespace tbench
