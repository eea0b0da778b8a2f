#pragma once
// Every failure tbench reports maps to one exit code, so scripts can tell bad input from a
// failed run. The codes are documented in README.md ("Exit codes").
#include <stdexcept>
#include <string>

namespace tbench {

enum class ExitCode : int {
  ok = 0,
  internal = 1,        // a bug or an unexpected library error
  bad_input = 2,       // spec, model config, data or command line is wrong
  result_exists = 3,   // the output file exists and --force was not given
  run_failed = 4,      // training itself failed (non-finite loss, out of memory, ...)
  interrupted = 130,   // Ctrl-C: what was measured is still written
};

// An error the user can fix; `what()` is the whole message, already naming file and field.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input: "<file>[:<line>]: <field>: <what is wrong>".
inline Error input_error(const std::string& message) { return Error(ExitCode::bad_input, message); }

}  // namespace tbench
