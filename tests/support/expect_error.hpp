#pragma once
// The check most bad-input tests make: a call throws tbench's Error with exit code 2 (bad input),
// and its message names what is wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tbench/errors.hpp"

namespace tbench::testing {

// Expects `f` to throw a bad-input Error whose message contains every one of `parts`.
template <typename F>
void expect_input_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nmissing: " << p;
  }
}

}  // namespace tbench::testing
