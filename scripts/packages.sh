# The Debian packages tbench builds with, apart from LibTorch itself. Sourced by scripts/setup
# (the host: Debian 12), scripts/debian13 (the LibTorch 2.6 roots) and scripts/debian14 (LibTorch
# 2.14), so all build from one list.
# shellcheck shell=bash
TBENCH_BUILD_PACKAGES=(
  cmake ninja-build g++ git pkg-config
  libgloo-dev             # Gloo's headers: data-parallel training on CPU (c10d's ProcessGroupGloo)
  libopenblas0-openmp     # a real BLAS behind libblas.so.3, on torch's OpenMP (reference BLAS is ~45x slower)
  libcli11-dev nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev
  libicu-dev              # Unicode for the HF-exact tokenizers
  libgtest-dev libgmock-dev
)
