#pragma once
// Helpers for the data-parallel tests (dist_cli_test, two_host_cli_test, the GPU's NCCL test).
#include <string>
#include <vector>

namespace tbench::testing {

// Whether this build has the Gloo backend (CPU data parallelism), or NCCL (GPU).
bool have_gloo();
bool have_nccl();

// The floats of a `--dump-params` file, in order.
std::vector<float> read_floats(const std::string& path);
// The largest |a[i] - b[i]| over the common length.
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace tbench::testing
