#pragma once
// An exception's message as tbench prints it. Kept apart from errors.hpp, which the torch-free
// results library includes.
#include <exception>
#include <string>

#include <c10/util/Exception.h>

namespace tbench {

// LibTorch's errors append a C++ backtrace to what(); a user is shown the message alone.
inline std::string error_text(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

}  // namespace tbench
