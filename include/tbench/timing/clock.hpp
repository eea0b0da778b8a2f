#pragma once
// The one clock tbench times the host with, and the one way to turn two readings into seconds.
#include <chrono>

namespace tbench {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

inline double seconds_since(Clock::time_point start) { return seconds_between(start, Clock::now()); }

}  // namespace tbench
