// Profiles summed from recorded events: device kernels by duration, host operators by self time,
// and the kinds of work their names stand for.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "support/cli.hpp"
#include "tbench/timing/profile.hpp"

namespace tbench {
namespace {

ProfiledEvent kernel(const std::string& name, double start_us, double duration_us) {
  return {name, 0, start_us, duration_us, /*on_device=*/true};
}

ProfiledEvent host_op(const std::string& name, uint64_t thread, double start_us, double duration_us) {
  return {name, thread, start_us, duration_us, /*on_device=*/false};
}

TEST(Profile, NamesFallIntoKindsOfWork) {
  EXPECT_EQ(op_category("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "gemm");
  EXPECT_EQ(op_category("cutlass::Kernel2<cutlass_80_tensorop_s16816gemm>"), "gemm");
  EXPECT_EQ(op_category("nvjet_sm90_hss_128x256_64x4_2x1_v_bz_coopA_NTN"), "gemm");
  EXPECT_EQ(op_category("aten::addmm"), "gemm");
  EXPECT_EQ(op_category("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>"), "attention");
  EXPECT_EQ(op_category("fmha_cutlassB_f32_aligned_64x64_k64_sm80"), "attention");
  EXPECT_EQ(op_category("aten::_softmax"), "attention");
  EXPECT_EQ(op_category("void at::native::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>"),
            "loss");
  EXPECT_EQ(op_category("aten::nll_loss_forward"), "loss");
  EXPECT_EQ(op_category("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "communication");
  EXPECT_EQ(op_category("void at::native::GammaBetaBackwardCUDAKernel<float, float>"), "normalization");
  EXPECT_EQ(op_category("aten::to"), "copy");
  EXPECT_EQ(op_category("aten::topk"), "other");
  EXPECT_EQ(op_category("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"), "normalization");
  EXPECT_EQ(op_category("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>"),
            "optimizer");
  EXPECT_EQ(op_category("Memcpy HtoD (Pinned -> Device)"), "copy");
}

// The step's memory-bound passes, by what they do: the names from bert-base's bf16
// profile on an H100 (bench/results/gpu/NVIDIA-H100-80GB-HBM3/raw), where these were "other".
const std::vector<std::pair<std::string, std::string>> kElementwiseKernels = {
    {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
     "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4>",
     "copy"},
    {"void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda(float)#1}, std::array<char*, 2ul> >",
     "copy"},
    {"void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >",
     "activation"},
    {"void at::native::vectorized_elementwise_kernel<8, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}, std::array<char*, 3ul> >",
     "activation"},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >",
     "elementwise"},
    {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<"
     "c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::"
     "{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 8> >",
     "reduction"},
    {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>",
     "dropout"},
    {"void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(int, int, int, int, int, int, int, int)", "attention"},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_scale_kernel<"
     "c10::BFloat16, bool, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, "
     "bool)#1}, std::array<char*, 4ul> >",
     "dropout"},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::threshold_kernel_impl<float>"
     "(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, std::array<char*, 3ul> >",
     "activation"},
    {"aten::native_dropout", "dropout"},
    {"aten::gelu_backward", "activation"},
    {"aten::add_", "elementwise"},
    {"aten::sum", "reduction"},
    {"aten::topk", "other"},
    {"void at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, double, double, int)", "other"},
};

TEST(Profile, MemoryBoundPassesAreNamedByWhatWouldFuseThem) {
  for (const auto& [name, category] : kElementwiseKernels) EXPECT_EQ(op_category(name), category) << name;
  for (const auto& [name, category] : kElementwiseKernels) {
    if (name.rfind("aten::", 0) == 0) continue;  // host operators are not kernels
    EXPECT_EQ(kernel_bound(name), "memory") << name;
  }
}

// Host operators (the CPU's profile) by their whole name, so an arithmetic op's prefix takes no
// other op: AdamW's addcmul_ and addcdiv_ are the optimizer, addmv a matrix product.
const std::vector<std::pair<std::string, std::string>> kHostOperators = {
    {"aten::addcdiv_", "optimizer"}, {"aten::addcmul_", "optimizer"}, {"aten::addmv", "gemm"},
    {"aten::baddbmm", "gemm"},       {"aten::multinomial", "other"},  {"aten::mul_", "elementwise"},
    {"aten::rsub", "elementwise"},   {"aten::divide", "other"},       {"aten::threshold_backward", "activation"},
};

TEST(Profile, HostOperatorsAreSortedByTheirWholeName) {
  for (const auto& [name, category] : kHostOperators) EXPECT_EQ(op_category(name), category) << name;
}

// bench/hf_side_by_side.py sorts HF's kernels with its own copy of op_category's keywords, so that
// the two profiles compare category by category: the copy must sort every name here alike.
TEST(Profile, HfSideBySideSortsKernelsAsTbenchDoes) {
  if (std::system("python3 -c '' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 to run the bench script";
  std::vector<std::string> names = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                                    "nvjet_sm90_hss_128x256_64x4_2x1_v_bz_coopA_NTN",
                                    "aten::addmm",
                                    "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>",
                                    "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0",
                                    "void at::native::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>",
                                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                    "void at::native::GammaBetaBackwardCUDAKernel<float, float>",
                                    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>",
                                    "Memcpy HtoD (Pinned -> Device)",
                                    "aten::to"};
  for (const auto& named : kElementwiseKernels) names.push_back(named.first);
  for (const auto& named : kHostOperators) names.push_back(named.first);
  testing::ScratchDir dir;
  std::string listing;
  for (const auto& name : names) listing += name + "\n";
  const std::string path = dir.write("names.txt", listing);
  const std::string command = "python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); "
                              "from hf_side_by_side import kernel_category; "
                              "[print(kernel_category(line.rstrip(\"\\n\"))) for line in open(sys.argv[2])]' '" +
                              std::string(TBENCH_SOURCE_DIR) + "/bench' '" + path + "'";
  FILE* python = popen(command.c_str(), "r");
  ASSERT_NE(python, nullptr);
  std::vector<std::string> sorted;
  char line[256];
  while (std::fgets(line, sizeof line, python)) sorted.emplace_back(std::string(line).substr(0, std::strcspn(line, "\n")));
  ASSERT_EQ(pclose(python), 0) << command;
  ASSERT_EQ(sorted.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(sorted[i], op_category(names[i])) << names[i];
}

// predict --target scales tensor-core kernels by peak FLOPs and the rest by bandwidth.
TEST(Profile, KernelsAreBoundByComputeMemoryOrCommunication) {
  EXPECT_EQ(kernel_bound("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "compute");
  EXPECT_EQ(kernel_bound("nvjet_sm90_hss_128x256_64x4_2x1_v_bz_coopA_NTN"), "compute");
  EXPECT_EQ(kernel_bound("pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>"),
            "compute");
  EXPECT_EQ(kernel_bound("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)"),
            "compute");
  EXPECT_EQ(kernel_bound("cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0"), "compute");
  // Eager attention: its batched matmuls are compute, its softmax a memory-bound pass.
  EXPECT_EQ(kernel_bound("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float>"), "memory");
  EXPECT_EQ(kernel_bound("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"), "memory");
  EXPECT_EQ(kernel_bound("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"), "memory");
  EXPECT_EQ(kernel_bound("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>"),
            "memory");
  EXPECT_EQ(kernel_bound("Memcpy HtoD (Pinned -> Device)"), "memory");
  EXPECT_EQ(kernel_bound("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "communication");
}

// Kernels never nest: their durations add up, and host events are left out of a device profile.
TEST(Profile, DeviceKernelsAddUpByNameAndKind) {
  const std::vector<ProfiledEvent> events = {
      kernel("ampere_sgemm_128x64_tn", 0, 300), kernel("ampere_sgemm_128x64_tn", 400, 300),
      kernel("flash_fwd_kernel", 800, 100),     kernel("elementwise_kernel<gelu>", 950, 50),
      host_op("aten::addmm", 1, 0, 5000),  // the host side: not device time
  };
  const ProfileSummary p = summarize_profile(events, /*on_device=*/true, 2);
  EXPECT_EQ(p.measures, "device kernels");
  EXPECT_DOUBLE_EQ(p.measured_ms, 0.75);
  ASSERT_EQ(p.top.size(), 2u);  // top_n
  EXPECT_EQ(p.top[0].name, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(p.top[0].calls, 2);
  EXPECT_DOUBLE_EQ(p.top[0].ms, 0.6);
  EXPECT_DOUBLE_EQ(p.top[0].share, 0.8);
  ASSERT_EQ(p.categories.size(), 3u);
  EXPECT_EQ(p.categories[0].name, "gemm");
  EXPECT_EQ(p.categories[1].name, "attention");
  EXPECT_DOUBLE_EQ(p.categories[2].share, 0.05 / 0.75);
  ASSERT_EQ(p.bounds.size(), 2u);
  EXPECT_EQ(p.bounds[0].name, "compute");  // the GEMMs and flash attention
  EXPECT_DOUBLE_EQ(p.bounds[0].ms, 0.7);
  EXPECT_EQ(p.bounds[0].calls, 3);
  EXPECT_EQ(p.bounds[1].name, "memory");
  EXPECT_DOUBLE_EQ(p.bounds[1].ms, 0.05);
}

// An operator's self time leaves out the operators it called (per thread), so the sum is the
// time the host spent, not more.
TEST(Profile, HostOperatorsCountSelfTimeOnly) {
  const std::vector<ProfiledEvent> events = {
      host_op("aten::linear", 1, 0, 100),     // calls addmm (60): self 40
      host_op("aten::addmm", 1, 10, 60),      // calls copy_ (20): self 40
      host_op("aten::copy_", 1, 20, 20),      // self 20
      host_op("aten::gelu", 1, 100, 30),      // starts as linear ends: not its child
      host_op("aten::addmm", 2, 5, 50),       // another thread: not inside thread 1's linear
      kernel("gemm", 0, 1000),                // device: not in a host profile
  };
  const ProfileSummary p = summarize_profile(events, /*on_device=*/false, 10);
  EXPECT_EQ(p.measures, "host operators, self time");
  EXPECT_NEAR(p.measured_ms, (100 + 30 + 50) / 1e3, 1e-12);  // every host microsecond once
  std::map<std::string, double> ms;
  for (const auto& e : p.top) ms[e.name] = e.ms;
  EXPECT_NEAR(ms["aten::linear"], 0.040, 1e-12);
  EXPECT_NEAR(ms["aten::addmm"], 0.040 + 0.050, 1e-12);
  EXPECT_NEAR(ms["aten::copy_"], 0.020, 1e-12);
  EXPECT_NEAR(ms["aten::gelu"], 0.030, 1e-12);
}

TEST(Profile, JsonSaysHowBusyTheDeviceWas) {
  ProfileSummary p = summarize_profile({kernel("gemm", 0, 600)}, true, 5);
  p.first_step = 3;
  p.last_step = 4;
  p.wall_ms = 1.2;
  const auto j = to_json(p);
  EXPECT_EQ(j["steps"], nlohmann::json::array({3, 4}));
  EXPECT_DOUBLE_EQ(j["device_busy_fraction"].get<double>(), 0.5);
  EXPECT_TRUE(j["trace"].is_null());
  const auto host = to_json(summarize_profile({host_op("aten::mm", 1, 0, 10)}, false, 5));
  EXPECT_FALSE(host.contains("device_busy_fraction"));
  ASSERT_TRUE(j.contains("bounds"));
  EXPECT_EQ(j["bounds"][0]["name"], "compute");
  EXPECT_FALSE(host.contains("bounds"));  // host operators are not kernels
}

}  // namespace
}  // namespace tbench
