#pragma once
// The random stream of one sample in one epoch, shared by the masked-LM and permutation-LM
// corruptions (src/data/ only): a sample's draws depend on (seed, epoch, sample index) alone.
#include <cstdint>

namespace tbench {

// SplitMix64: a well-mixed 64-bit stream from any seed (a bare counter would do: each value is
// mixed). Its own generator, not <random>'s distributions, whose output differs between libraries.
class SampleRandom {
 public:
  SampleRandom(int64_t seed, int64_t epoch, int64_t sample)
      : state_(mix(mix(mix(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(sample))) {}

  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t next() { return mix(state_++); }

  uint64_t state_;
};


}  // namespace tbench
