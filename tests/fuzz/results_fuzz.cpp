// Fuzz targets for files tbench reads back: result files (report, compare, predict, scaling all
// start from load_result), a peer's rank report (data-parallel runs exchange them through the
// store) and a GPU spec file (predict --target-spec).
#include <optional>

#include "fuzz_target.hpp"
#include "tbench/analysis/analysis.hpp"
#include "tbench/env/hardware.hpp"
#include "tbench/results/result.hpp"

namespace {

using tbench::fuzz::expect_success_or_input_error;

// What the analysis commands do with a result that loads.
void analyse(const tbench::ResultFile& r) {
  const std::vector<tbench::ResultFile> results = {r};
  const auto report = tbench::build_report(results, "machine", "");
  for (const char* format : {"table", "markdown", "csv", "json", "html"}) tbench::render_report(report, format);
  tbench::render_scaling(tbench::build_scaling(results), "table");
  if (r.step_profile) {
    const auto profile = tbench::build_profile_report(results, "machine");
    for (const char* format : {"table", "markdown", "csv", "json"}) tbench::render_profile_report(profile, format);
  }
  tbench::compare_results(r, r);
  tbench::predict_epochs(r, 5, &r);
  tbench::predict_target(r, *tbench::find_gpu("H100"), &r);
}

// predict --target --target-host with the result timing its own host: apart from analyse, which
// stops at the first input error, so a result the plain prediction refuses still reaches it.
void pace_by_its_own_host(const tbench::ResultFile& r) {
  const tbench::HostPace pace = tbench::measure_host_pace({&r});
  tbench::predict_target(r, *tbench::find_gpu("H100"), &r, &pace);
}

}  // namespace

TBENCH_FUZZ_TARGET(result_file) {
  const std::string path = tbench::fuzz::write_scratch_file("result.json", bytes);
  std::optional<tbench::ResultFile> r;
  expect_success_or_input_error([&] { r = tbench::load_result(path); });
  if (!r) return;
  expect_success_or_input_error([&] { analyse(*r); });
  expect_success_or_input_error([&] { pace_by_its_own_host(*r); });
}
TBENCH_FUZZ_SEEDS(result_file) {
  // The committed benchmark results that are tbench's own (not the eager reference's files).
  std::vector<std::string> seeds;
  for (const auto& path : tbench::fuzz::repo_files("bench/results", ".json")) {
    if (path.find("-tbench-") == std::string::npos) continue;
    seeds.push_back(tbench::fuzz::repo_file(path));
    if (seeds.size() == 6) break;
  }
  // A GPU run whose host held its steps, with a kernel profile: one that times its host.
  seeds.push_back(tbench::fuzz::repo_file("bench/results/gpu/NVIDIA-H200/raw/tbench-distilbert-base-uncased-seq128-bf16.json"));
  return seeds;
}

TBENCH_FUZZ_TARGET(rank_report) {
  expect_success_or_input_error([&] { tbench::parse_rank_report(bytes); });
}
TBENCH_FUZZ_SEEDS(rank_report) {
  return {R"({"rank": 1, "local_rank": 0, "host": "node2", "device": "cpu", "status": "completed", "error": null,
 "steps": 12, "step_ms": {"count": 10, "mean": 101.5, "median": 100.0, "p10": 95.0, "p90": 110.0, "min": 90.0, "max": 120.0, "stdev": 5.0},
 "comm_wait_ms": {"count": 10, "mean": 1.5, "median": 1.0, "p10": 0.5, "p90": 2.0, "min": 0.1, "max": 3.0, "stdev": 0.5},
 "comm_share": 0.01, "samples_per_s": 80.0, "allreduces": 24})"};
}

TBENCH_FUZZ_TARGET(device_spec) {
  const std::string path = tbench::fuzz::write_scratch_file("gpu.json", bytes);
  expect_success_or_input_error([&] { tbench::read_device_spec(path); });
}
TBENCH_FUZZ_SEEDS(device_spec) {
  return {R"({"name": "My GPU", "fp32_tflops": 19.5, "tf32_tflops": 156, "fp16_tflops": 312, "bf16_tflops": 312, "memory_gbps": 2039})",
          R"({"name": "Old GPU", "fp32_tflops": 14, "memory_gbps": 900})"};
}
