#pragma once
// FNV-1a, 64 bits: a hash that is the same on every build and machine (std::hash is not), for
// names that must come out the same next time: token cache files, shortened sweep point ids.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tbench {

inline constexpr uint64_t kFnv1aOffset = 1469598103934665603ULL;

// Over `size` bytes, continuing from `hash` (so several buffers hash as one).
inline uint64_t fnv1a(const void* data, std::size_t size, uint64_t hash = kFnv1aOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  return hash;
}

inline uint64_t fnv1a(const std::string& text) { return fnv1a(text.data(), text.size()); }

}  // namespace tbench
