// The libFuzzer entry points of tbench_fuzz: picks the target named by TBENCH_FUZZ_TARGET once,
// then hands it every input. See fuzz_target.hpp for the rule each target checks.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include "fuzz_target.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"

namespace tbench::fuzz {
namespace {

std::map<std::string, TargetFn>& registry() {
  static std::map<std::string, TargetFn> targets;
  return targets;
}

std::map<std::string, SeedFn>& seed_registry() {
  static std::map<std::string, SeedFn> seeds;
  return seeds;
}

const TargetFn* chosen = nullptr;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "tbench_fuzz: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

bool register_target(const std::string& name, TargetFn fn) {
  registry().emplace(name, std::move(fn));
  return true;
}

bool register_seeds(const std::string& name, SeedFn fn) {
  seed_registry().emplace(name, std::move(fn));
  return true;
}

std::string repo_file(const std::string& relative) {
  return read_file(std::string(TBENCH_SOURCE_DIR) + "/" + relative, "a seed file");
}

std::vector<std::string> repo_files(const std::string& folder, const std::string& suffix) {
  std::vector<std::string> found;
  const std::filesystem::path root = std::string(TBENCH_SOURCE_DIR);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(std::filesystem::relative(entry.path(), root).string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string join_files(const std::vector<std::string>& files) {
  std::string out;
  for (std::size_t i = 0; i < files.size(); ++i) out += (i ? std::string("\n") + kFileSeparator + "\n" : "") + files[i];
  return out;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : registry()) names.push_back(name);
  return names;
}

const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes the folder runs after static destructors.
  static const std::string* dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    const auto path = base / ("tbench-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return new std::string(path.string());
  }();
  return *dir;
}

std::string write_scratch_file(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write the scratch file " + path);
  return path;
}

std::vector<std::string> split_files(const std::string& bytes, std::size_t count) {
  std::vector<std::string> parts(count);
  const std::string separator = std::string("\n") + kFileSeparator + "\n";
  std::size_t begin = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t end = i + 1 < count ? bytes.find(separator, begin) : std::string::npos;
    parts[i] = bytes.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (end == std::string::npos) break;
    begin = end + separator.size();
  }
  return parts;
}

void expect_success_or_input_error(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) {
      fail("a tbench::Error with exit code " + std::to_string(static_cast<int>(e.code())) +
           " instead of bad input (2): " + e.what());
    }
  } catch (const c10::Error& e) {
    fail(std::string("a LibTorch error escaped: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    fail(std::string("an exception other than tbench::Error escaped: ") + e.what());
  } catch (...) {
    fail("a non-standard exception escaped");
  }
}

}  // namespace tbench::fuzz

namespace {

// TBENCH_FUZZ_WRITE_SEEDS=<dir>: writes every target's seeds to <dir>/<target>/seed-N and exits.
void write_seeds(const std::string& dir) {
  for (const auto& [name, seeds] : tbench::fuzz::seed_registry()) {
    const auto folder = std::filesystem::path(dir) / name;
    std::filesystem::create_directories(folder);
    const auto inputs = seeds();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      std::ofstream out(folder / ("seed-" + std::to_string(i)), std::ios::binary);
      out << inputs[i];
    }
    std::printf("%s: %zu seeds\n", name.c_str(), inputs.size());
  }
  std::exit(0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // readers may warn; millions of warnings slow the run
  if (const char* dir = std::getenv("TBENCH_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  const char* name = std::getenv("TBENCH_FUZZ_TARGET");
  const auto& targets = tbench::fuzz::registry();
  const auto it = name ? targets.find(name) : targets.end();
  if (it == targets.end()) {
    std::string names;
    for (const auto& n : tbench::fuzz::target_names()) names += " " + n;
    tbench::fuzz::fail(std::string("set TBENCH_FUZZ_TARGET to one of:") + names);
  }
  tbench::fuzz::chosen = &it->second;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  (*tbench::fuzz::chosen)(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
