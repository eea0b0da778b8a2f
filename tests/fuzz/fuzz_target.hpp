#pragma once
// tbench's fuzz targets: one libFuzzer binary (tbench_fuzz) holding a target per reader of outside
// bytes, picked by TBENCH_FUZZ_TARGET (scripts/fuzz sets it). One binary links LibTorch once
// instead of once per target.
//
// The rule every target checks: whatever the bytes, a reader either succeeds or throws
// tbench::Error with the bad-input exit code. Anything else — a crash, a sanitizer report, another
// exception type (nlohmann's type_error, std::out_of_range, c10::Error), another exit code — is
// a bug, and the target aborts so libFuzzer saves the input.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tbench::fuzz {

using TargetFn = std::function<void(const std::string& bytes)>;
using SeedFn = std::function<std::vector<std::string>()>;

// Registers a target at static-initialisation time (see TBENCH_FUZZ_TARGET below), and the seed
// inputs it starts from: the repo's own valid files, or what tbench's own writers produce
// (TBENCH_FUZZ_WRITE_SEEDS=<dir> writes them; scripts/fuzz seeds).
bool register_target(const std::string& name, TargetFn fn);
bool register_seeds(const std::string& name, SeedFn fn);
std::vector<std::string> target_names();

// A file of the repo (TBENCH_SOURCE_DIR/<relative>), read whole; throws if it is missing.
std::string repo_file(const std::string& relative);
// The repo's files under `folder` whose names end in `suffix`, sorted.
std::vector<std::string> repo_files(const std::string& folder, const std::string& suffix);
// Joins files into one multi-file input (see split_files).
std::string join_files(const std::vector<std::string>& files);

// A private scratch folder for this process (under /dev/shm where it exists): readers take paths,
// so each input is written to a file there first.
const std::string& scratch_dir();
// Writes `bytes` to <scratch>/<name> (replacing it) and returns the path.
std::string write_scratch_file(const std::string& name, const std::string& bytes);

// Inputs that hold several files: the parts between lines of exactly kFileSeparator, in order.
// Missing parts are empty; the seed corpus uses the same layout (scripts/fuzz).
inline constexpr const char* kFileSeparator = "=====tbench-fuzz-next-file=====";
std::vector<std::string> split_files(const std::string& bytes, std::size_t count);

// Runs `read`; a tbench bad-input Error is the expected answer to bad bytes, anything else aborts
// with what was thrown.
void expect_success_or_input_error(const std::function<void()>& read);

}  // namespace tbench::fuzz

#define TBENCH_FUZZ_CONCAT_(a, b) a##b
#define TBENCH_FUZZ_CONCAT(a, b) TBENCH_FUZZ_CONCAT_(a, b)
// TBENCH_FUZZ_TARGET(spec_json) { ... uses `bytes` ... }
#define TBENCH_FUZZ_TARGET(name)                                                                 \
  static void TBENCH_FUZZ_CONCAT(fuzz_target_, name)(const std::string& bytes);                  \
  static const bool TBENCH_FUZZ_CONCAT(fuzz_registered_, name) =                                 \
      ::tbench::fuzz::register_target(#name, TBENCH_FUZZ_CONCAT(fuzz_target_, name));            \
  static void TBENCH_FUZZ_CONCAT(fuzz_target_, name)(const std::string& bytes)

// TBENCH_FUZZ_SEEDS(spec_json) { return {...}; }
#define TBENCH_FUZZ_SEEDS(name)                                                                  \
  static std::vector<std::string> TBENCH_FUZZ_CONCAT(fuzz_seeds_, name)();                       \
  static const bool TBENCH_FUZZ_CONCAT(fuzz_seeds_registered_, name) =                           \
      ::tbench::fuzz::register_seeds(#name, TBENCH_FUZZ_CONCAT(fuzz_seeds_, name));              \
  static std::vector<std::string> TBENCH_FUZZ_CONCAT(fuzz_seeds_, name)()
