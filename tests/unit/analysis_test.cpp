// report / compare / predict on hand-made result files with known answers.
#include <gtest/gtest.h>

#include <functional>

#include "support/cli.hpp"
#include "support/expect_error.hpp"
#include "tbench/analysis/analysis.hpp"
#include "tbench/analysis/table.hpp"
#include "tbench/errors.hpp"
#include "tbench/results/result.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

// A minimal result: `epochs` epochs of `steps` steps of `step_seconds` each (plus jitter),
// `warmup` of them slower warm-up steps at the start.
json make_result(const std::string& model, const std::string& host, double step_seconds, int epochs, int steps,
                 int warmup = 1, double jitter = 0.0, int64_t threads = 2) {
  json iterations = json::array(), epoch_records = json::array();
  double clock = 0;
  int global = 0;
  for (int e = 1; e <= epochs; ++e) {
    double sum = 0;
    for (int s = 1; s <= steps; ++s) {
      ++global;
      const bool is_warmup = global <= warmup;
      const double seconds = (is_warmup ? 3 * step_seconds : step_seconds) * (1 + jitter * ((global % 3) - 1));
      clock += seconds;
      sum += seconds;
      iterations.push_back({{"epoch", e}, {"step", s}, {"global_step", global}, {"samples", 8}, {"tokens", 128},
                            {"real_tokens", 128}, {"seconds", seconds}, {"data_seconds", 0.0}, {"loss", 0.5},
                            {"lr", 1e-4}, {"loss_scale", 1.0}, {"skipped", false}, {"warmup", is_warmup},
                            {"ended_at", clock}});
    }
    epoch_records.push_back({{"epoch", e}, {"steps", steps}, {"samples", 8 * steps}, {"tokens", 128 * steps},
                             {"seconds", sum + 0.01}, {"complete", true}});
  }
  return {{"schema", kResultSchemaId},
          {"spec", {{"name", "t"}, {"device", "cpu"}, {"precision", "fp32"}, {"threads", threads},
                    {"train", {{"batch_size", 8}, {"grad_accum_steps", 1}}}, {"data", {{"seq_len", 16}}}}},
          {"env", {{"host", host}}},
          {"model", {{"name", model}, {"params", 1000000}, {"train_flops_per_sample", 1e9}, {"hidden_size", 64},
                     {"num_layers", 2}, {"num_heads", 4}}},
          {"iterations", iterations},
          {"epochs", epoch_records},
          {"summary", {{"status", "completed"}, {"steps_per_epoch", steps}, {"samples_per_s", 8 / step_seconds},
                       {"epoch_seconds", epochs > 0 ? json(steps * step_seconds) : json(nullptr)},
                       {"projected_epoch_seconds", steps * step_seconds}, {"peak_flops_per_s", 100e9},
                       {"peak_source", "measured"}}}};
}

// After a test sets its own step times: each epoch's wall time their sum again (and 10 ms outside
// them), as a run would record it.
json with_epochs_timing_their_steps(json result) {
  for (auto& epoch : result["epochs"]) {
    double sum = 0;
    for (const auto& it : result["iterations"]) {
      if (it["epoch"] == epoch["epoch"]) sum += it["seconds"].get<double>();
    }
    epoch["seconds"] = sum + 0.01;
  }
  return result;
}

// A drifting machine's steps: the first half at `first` seconds, the second at `second`, each step
// alternating `jitter` about them; one slower warm-up step ahead.
json drifting_result(double first, double second, double jitter, int steps) {
  json result = make_result("m", "h", first, 1, steps + 1);
  for (int i = 0; i < steps; ++i) {
    result["iterations"][i + 1]["seconds"] = (i < steps / 2 ? first : second) + jitter * ((i % 2) * 2 - 1);
  }
  return with_epochs_timing_their_steps(result);
}

class Analysis : public ::testing::Test {
 protected:
  testing::ScratchDir dir;
  std::string write(const std::string& name, const json& j) { return dir.write(name, j.dump()); }
};

// The machine a GPU result names is the GPU its device index used, from env.cuda.devices (the
// place env writes it; reading a key env never writes labelled every GPU run "(cpu)").
TEST_F(Analysis, GpuResultsNameTheirDevicesGpu) {
  json result = make_result("m", "h", 1, 1, 4);
  result["env"]["cuda"] = {{"devices", {{{"name", "NVIDIA A100-SXM4-80GB"}}, {{"name", "NVIDIA H100 80GB HBM3"}}}}};
  result["spec"]["device"] = "cuda:1";
  EXPECT_EQ(load_result(write("cuda1.json", result)).gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(load_result(write("cuda1.json", result)).machine, "h (NVIDIA H100 80GB HBM3)");
  result["spec"]["device"] = "cuda";
  EXPECT_EQ(load_result(write("cuda.json", result)).machine, "h (NVIDIA A100-SXM4-80GB)");
  result["spec"]["device"] = "cuda:7";  // an index env has no device for: still not a CPU run
  EXPECT_EQ(load_result(write("cuda7.json", result)).machine, "h (cuda)");
  result["spec"]["device"] = "cpu";
  EXPECT_EQ(load_result(write("cpu.json", result)).machine, "h (cpu)");
}

TEST_F(Analysis, LoadRejectsWhatIsNotAResult) {
  const auto expect_error = [&](const std::string& path, const std::string& fragment) {
    try {
      load_result(path);
      ADD_FAILURE() << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(dir.write("bad.json", "{"), "not valid JSON");
  expect_error(write("other.json", {{"schema", "something-else"}}), "not a tbench result");
  json truncated = make_result("m", "h", 1, 1, 4);
  truncated.erase("iterations");
  expect_error(write("truncated.json", truncated), "/iterations: missing");
  expect_error(write("warmup_only.json", make_result("m", "h", 1, 1, 2, /*warmup=*/2)), "no steady-state steps");
  expect_error(dir.file("missing.json"), "cannot open");
  // Found by fuzzing: a field of the wrong type escaped as nlohmann's type_error (exit 1), and a
  // huge double where an integer belongs was converted with undefined behaviour.
  json mistyped = make_result("m", "h", 1, 1, 4);
  mistyped["spec"]["threads"] = 1e300;
  expect_error(write("mistyped.json", mistyped), "/spec/threads: expected an integer in [0, 2147483648], got 1e+300");
  json null_time = make_result("m", "h", 1, 1, 4);
  null_time["iterations"][1]["seconds"] = nullptr;
  expect_error(write("null_time.json", null_time), "/iterations/1/seconds: expected a number >= 0, got null");
  json number_schema = make_result("m", "h", 1, 1, 4);
  number_schema["schema"] = 1;
  expect_error(write("number_schema.json", number_schema), "not a tbench result");
  expect_error(dir.write("overflow.json", "{\"schema\": 1e999}"), "not valid JSON");
}

// A figure report, compare or predict would print or compute with, corrupt in the file, is refused
// by its field (exit 2), never read as unknown, zero or a default: found by reading hand-edited copies.
TEST_F(Analysis, LoadRejectsFiguresItWouldReportWrongly) {
  const auto expect_refused = [&](const std::string& name, const json& result, const std::string& fragment) {
    try {
      load_result(write(name + ".json", result));
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << name;
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << name << ": " << e.what();
    }
  };
  const auto edited = [](const std::function<void(json&)>& edit) {
    json result = make_result("m", "h", 1, 1, 4);
    edit(result);
    return result;
  };
  expect_refused("negative_epoch", edited([](json& r) { r["summary"]["epoch_seconds"] = -5; }),
                 "/summary/epoch_seconds: expected a number >= 0, got -5");
  expect_refused("string_epoch", edited([](json& r) { r["summary"]["epoch_seconds"] = "49"; }),
                 "/summary/epoch_seconds: expected a number >= 0, got \"49\"");
  expect_refused("no_epoch", edited([](json& r) {
                   r["summary"]["epoch_seconds"] = nullptr;
                   r["summary"].erase("projected_epoch_seconds");
                 }),
                 "/summary: neither epoch_seconds nor projected_epoch_seconds");
  expect_refused("huge_epoch", edited([](json& r) { r["summary"]["epoch_seconds"] = 1e300; }),
                 "/summary/epoch_seconds: expected seconds up to 1e9");
  expect_refused("no_rate", edited([](json& r) { r["summary"].erase("samples_per_s"); }), "/summary/samples_per_s: missing");
  expect_refused("negative_rate", edited([](json& r) { r["summary"]["samples_per_s"] = -2; }), "/summary/samples_per_s");
  expect_refused("summary_text", edited([](json& r) { r["summary"] = "x"; }),
                 "/summary: expected a section (an object), got a string");
  expect_refused("zero_rate", edited([](json& r) { r["summary"]["samples_per_s"] = 0; }),
                 "/summary/samples_per_s: timed steps train more than 0 samples a second");
  expect_refused("zero_epoch", edited([](json& r) { r["summary"]["epoch_seconds"] = 0; }),
                 "/summary/epoch_seconds: an epoch of timed steps takes more than 0 seconds");
  expect_refused("negative_power", edited([](json& r) { r["summary"]["gpu_power_w_mean"] = -100; }),
                 "/summary/gpu_power_w_mean");
  expect_refused("string_share", edited([](json& r) { r["summary"]["comm_share"] = "0.2"; }), "/summary/comm_share");
  expect_refused("zero_probe", edited([](json& r) { r["summary"]["peak_probes_flops_per_s"] = {40e9, 0}; }),
                 "/summary/peak_probes_flops_per_s/1: a probed rate is more than 0, got 0");
  expect_refused("probe_text", edited([](json& r) { r["summary"]["peak_probes_flops_per_s"] = "fast"; }),
                 "/summary/peak_probes_flops_per_s: expected a list of at least one probed rate, or null, got \"fast\"");
  expect_refused("no_probes", edited([](json& r) { r["summary"]["peak_probes_flops_per_s"] = json::array(); }),
                 "/summary/peak_probes_flops_per_s: expected a list of at least one probed rate, or null, got []");
  expect_refused("status", edited([](json& r) { r["summary"]["status"] = "bogus"; }),
                 "/summary/status: expected completed, interrupted or failed, got \"bogus\"");
  // A warm-up flag read as false would count the warm-up among the steady steps.
  expect_refused("string_warmup", edited([](json& r) { r["iterations"][0]["warmup"] = "true"; }),
                 "/iterations/0/warmup: expected true or false, got \"true\"");
  expect_refused("string_profiled", edited([](json& r) { r["iterations"][2]["profiled"] = 1; }),
                 "/iterations/2/profiled: expected true or false");
  expect_refused("string_end", edited([](json& r) { r["iterations"][1]["ended_at"] = "later"; }), "/iterations/1/ended_at");
  expect_refused("string_complete", edited([](json& r) { r["epochs"][0]["complete"] = "no"; }),
                 "/epochs/0/complete: expected true or false");
  // The resolved spec's switches that analysis reads: TF32 sets the peak, the graph the baseline.
  expect_refused("string_tf32", edited([](json& r) { r["spec"]["cuda"] = {{"tf32", "yes"}}; }),
                 "/spec/cuda/tf32: expected true or false, got \"yes\"");
  expect_refused("number_graph", edited([](json& r) { r["spec"]["train"]["cuda_graph"] = 1; }), "/spec/train/cuda_graph");
  expect_refused("string_unpad", edited([](json& r) { r["spec"]["model"] = {{"unpad", "true"}}; }), "/spec/model/unpad");
  // Steps and epochs that disagree: predict --epochs takes the epoch's time outside its steps as
  // its wall time less their sum.
  expect_refused("other_epoch", edited([](json& r) { r["epochs"][0]["epoch"] = 2; }),
                 "/epochs/0/epoch: epoch 2 has no steps in /iterations");
  expect_refused("short_epoch", edited([](json& r) { r["epochs"][0]["seconds"] = 3.0; }),
                 "/epochs/0/seconds: epoch 1 took 3.000 s, but its steps sum to 6.000 s");
  // A partial epoch too: predict --epochs counts its time outside its steps (found by review: a
  // negative one shrank the prediction).
  expect_refused("short_partial_epoch", edited([](json& r) {
                   r["epochs"][0]["complete"] = false;
                   r["epochs"][0]["seconds"] = 1.0;
                 }),
                 "/epochs/0/seconds: epoch 1 took 1.000 s, but its steps sum to 6.000 s");
  // Within the timers' agreement the steps may sum a little past the epoch.
  EXPECT_NO_THROW(load_result(write("close.json", edited([](json& r) { r["epochs"][0]["seconds"] = 5.9; }))));
  // Unknown stays unknown: null figures are not errors.
  EXPECT_FALSE(load_result(write("null_power.json", edited([](json& r) { r["summary"]["gpu_power_w_mean"] = nullptr; })))
                   .gpu_power_w_mean);
}

// A device profile of 2 steps: its `top` names the GEMM, a cast, a residual add and a bias gradient
// (the last three "other" before they had kinds of their own), and 2 ms of kernels past them.
json with_device_profile(json result, double scale) {
  const auto entry = [&](const std::string& name, double ms) {
    return json{{"name", name}, {"calls", 2}, {"ms", ms * scale}, {"share", 0.0}};
  };
  result["profile"] = {
      {"steps", {5, 6}},
      {"measures", "device kernels"},
      {"measured_ms", 20.0 * scale},
      {"wall_ms", 21.0 * scale},
      {"overhead_ms", 1.0},
      {"categories", json::array({{{"name", "other"}, {"calls", 6}, {"ms", 10.0 * scale}, {"share", 0.5}}})},
      {"bounds", json::array({{{"name", "compute"}, {"calls", 2}, {"ms", 8.0 * scale}, {"share", 0.4}},
                              {{"name", "memory"}, {"calls", 6}, {"ms", 12.0 * scale}, {"share", 0.6}}})},
      {"top", json::array({entry("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 8.0),
                           entry("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>", 4.0),
                           entry("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 3.0),
                           entry("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16>>", 3.0)})},
      {"trace", nullptr}};
  return result;
}

// report --profile: each result's profiled step by kind of work, sorted again with today's kinds,
// the time past its top entries a row of its own; a result without a profile is refused by name.
TEST_F(Analysis, ProfileReportSortsEachResultsStepByKindOfWork) {
  json fast = with_device_profile(make_result("m", "h100", 0.010, 1, 10), 1.0);
  json slow = with_device_profile(make_result("m", "h200", 0.020, 1, 10), 2.0);
  const auto results = load_results({write("fast.json", fast), write("slow.json", slow)});
  ASSERT_TRUE(results[0].step_profile);
  EXPECT_DOUBLE_EQ(results[0].step_profile->measured_ms_per_step, 10.0);  // 20 ms over steps 5 and 6
  const auto columns = build_profile_report(results, "host");
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[0].label, "h100");
  EXPECT_EQ(columns[1].label, "h200");
  EXPECT_DOUBLE_EQ(columns[0].kinds.at("gemm"), 4.0);
  EXPECT_DOUBLE_EQ(columns[0].kinds.at("copy"), 2.0);
  EXPECT_DOUBLE_EQ(columns[0].kinds.at("elementwise"), 1.5);
  EXPECT_DOUBLE_EQ(columns[0].kinds.at("reduction"), 1.5);
  EXPECT_DOUBLE_EQ(columns[0].kinds.at("(below the profile's top entries)"), 1.0);
  EXPECT_EQ(columns[0].kinds.count("other"), 0u) << "the stored categories are not used";
  EXPECT_DOUBLE_EQ(columns[1].kinds.at("gemm"), 8.0);
  EXPECT_DOUBLE_EQ(columns[0].median_step_ms, 10.0);

  const std::string table = render_profile_report(columns, "table");
  EXPECT_NE(table.find("device kernels"), std::string::npos) << table;
  EXPECT_NE(table.find("4.00 (40.0%)"), std::string::npos) << table;
  EXPECT_LT(table.find("gemm"), table.find("copy")) << "largest first";
  EXPECT_LT(table.find("reduction"), table.find("(below the profile's top entries)")) << "the unnamed time last";
  EXPECT_NE(render_profile_report(columns, "markdown").find("| gemm |"), std::string::npos);
  const json rows = json::parse(render_profile_report(columns, "json"))["rows"];
  double fast_sum = 0;
  for (const auto& row : rows) {
    if (row["label"] == "h100") fast_sum += row["ms_per_step"].get<double>();
  }
  EXPECT_NEAR(fast_sum, 10.0, 1e-12) << "the kinds add up to the profile's time";
  EXPECT_NE(render_profile_report(columns, "csv").find("label,result,measures,kind,ms_per_step"), std::string::npos);
  EXPECT_THROW(render_profile_report(columns, "html"), Error);

  // Two results with one label are numbered; a result that profiled nothing names itself.
  EXPECT_EQ(build_profile_report(results, "name")[1].label, "t #2");
  const auto plain = load_results({write("plain.json", make_result("m", "h", 0.01, 1, 10))});
  try {
    build_profile_report(plain, "host");
    ADD_FAILURE() << "a result without a profile";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("plain.json: no profile by name (profile.top): run it with timing.profile_steps"),
              std::string::npos)
        << e.what();
  }
  json broken = fast;
  broken["profile"]["top"][1]["ms"] = "4";
  try {
    load_result(write("broken.json", broken));
    ADD_FAILURE() << "a profile entry without a number";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/profile/top/1/ms: expected a number >= 0"), std::string::npos) << e.what();
  }
}

// A measured epoch holds its warm-up steps and the gaps between steps; a projected one (a run
// stopped by train.max_steps) holds steady steps alone. Their ratio read as a speedup of the
// setting (found by review: 1.15x from the way each epoch was measured), so the report warns.
TEST_F(Analysis, ReportWarnsOfASpeedupOfAMeasuredOverAProjectedEpoch) {
  json measured = make_result("m", "h", 1.0, 1, 10);
  json projected = make_result("m", "h2", 1.0, 1, 10);
  projected["summary"]["epoch_seconds"] = nullptr;
  projected["epochs"][0]["complete"] = false;
  const auto mixed = build_report(load_results({write("a.json", measured), write("b.json", projected)}), "host", "");
  ASSERT_EQ(mixed.unlike_epochs.size(), 1u);
  EXPECT_NE(mixed.unlike_epochs[0].find("m: the speedup of 'h2' over 'h'"), std::string::npos) << mixed.unlike_epochs[0];
  const auto alike = build_report(load_results({write("a.json", measured), write("c.json", make_result("m", "h2", 1.0, 1, 10))}),
                                  "host", "");
  EXPECT_TRUE(alike.unlike_epochs.empty());
}

TEST_F(Analysis, ReportGroupsRepeatsAndComputesSpeedups) {
  const auto results = load_results({write("a1.json", make_result("bert", "S1", 1.0, 1, 10)),
                                     write("a2.json", make_result("bert", "S1", 1.2, 1, 10)),
                                     write("b.json", make_result("bert", "S2", 0.5, 1, 10)),
                                     write("c.json", make_result("distil", "S2", 0.25, 1, 10))});
  const Report r = build_report(results, "host", "S1");
  EXPECT_EQ(r.models, (std::vector<std::string>{"bert", "distil"}));
  EXPECT_EQ(r.labels, (std::vector<std::string>{"S1", "S2"}));
  const ReportCell& s1 = r.cells.at("bert").at("S1");
  EXPECT_EQ(s1.runs, 2);
  EXPECT_DOUBLE_EQ(s1.epoch_mean, 11.0);
  EXPECT_NEAR(s1.epoch_stdev, 1.41421356, 1e-6);
  // 80 samples an epoch at 8/s and at 6.67/s: 160 samples in 22 s, as the mean epoch says, not the
  // rates' arithmetic mean (7.33/s).
  EXPECT_NEAR(s1.samples_per_s, 80.0 / 11.0, 1e-9);
  EXPECT_DOUBLE_EQ(*r.cells.at("bert").at("S2").speedup, 2.2);
  EXPECT_FALSE(r.cells.at("distil").at("S2").speedup.has_value());  // no baseline run of distil

  EXPECT_NE(render_report(r, "table").find("00:11 ±1.4s"), std::string::npos) << render_report(r, "table");
  EXPECT_NE(render_report(r, "markdown").find("| **bert** |"), std::string::npos);
  const std::string csv = render_report(r, "csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "model,host,runs,epoch_seconds_mean,epoch_seconds_stdev,epoch_time,projected,samples_per_s,speedup,"
            "gpu_power_w,gpu_energy_j_per_sample,projected_ci95_low,projected_ci95_high,speedup_ci95_low,"
            "speedup_ci95_high,speedup_ci95_basis,peak_probe_spread,machine_speed_moved,epoch_samples");
  // S1's two repeats (10 s, 12 s) know their mean with one degree of freedom, S2's one run's
  // identical steps know theirs exactly: 2.2x (0.69-6.98).
  EXPECT_NE(csv.find("bert,S2,1,5.000,0.000,00:05.00,false,16.000,2.2000,,,,,0.6931,6.9836,repeats and steps,,false,80.0\n"),
            std::string::npos)
      << csv;
  EXPECT_EQ(render_report(r, "table").find("J/sample"), std::string::npos);  // no GPU figures, no mention
  const json j = json::parse(render_report(r, "json"));
  EXPECT_EQ(j["rows"].size(), 3u);
  const std::string html = render_report(r, "html");
  EXPECT_NE(html.find("const DATA = {"), std::string::npos);
  EXPECT_THROW(render_report(r, "pdf"), Error);
  EXPECT_THROW(build_report(results, "host", "S9"), Error);
  EXPECT_THROW(build_report(results, "colour", ""), Error);
}

// Every speedup carries its 95% interval: between repeats where both cells have them (Welch on the
// log ratio; scipy.stats.t gives 1.6275 .. 2.4577 for 11 s over 5.5 s from three runs each), else
// from a single run's steps, as `compare` counts them; none in the baseline column.
TEST_F(Analysis, ReportGivesEachSpeedupItsInterval) {
  std::vector<std::string> files;
  for (double s : {1.0, 1.2, 1.1}) files.push_back(write("s1-" + std::to_string(s) + ".json", make_result("bert", "S1", s, 1, 10)));
  for (double s : {0.5, 0.55, 0.6}) files.push_back(write("s2-" + std::to_string(s) + ".json", make_result("bert", "S2", s, 1, 10)));
  const auto repeats = load_results(files);
  const Report r = build_report(repeats, "host", "S1");
  const ReportCell& s2 = r.cells.at("bert").at("S2");
  ASSERT_TRUE(s2.speedup && s2.speedup_ci95);
  EXPECT_NEAR(*s2.speedup, 2.0, 1e-12);
  EXPECT_NEAR(s2.speedup_ci95->low, 1.6275244133526605, 1e-9);
  EXPECT_NEAR(s2.speedup_ci95->high, 2.4577204293729134, 1e-9);
  EXPECT_FALSE(r.cells.at("bert").at("S1").speedup_ci95);
  EXPECT_NE(render_report(r, "table").find("2.00x (1.63-2.46)"), std::string::npos) << render_report(r, "table");
  const json row = json::parse(render_report(r, "json"))["rows"][1];
  EXPECT_NEAR(row["speedup_ci95_low"].get<double>(), 1.6275244133526605, 1e-9);

  EXPECT_EQ(s2.speedup_ci95_basis, "repeats");
  EXPECT_EQ(render_report(r, "csv").find("*"), std::string::npos);

  // One run a side: each epoch known from its steady step, the steps a series (the slow run's
  // machine changed speed halfway: 20 steps worth 2, the fewest). 21 s over 10.5 s; the interval
  // from numpy's lag-1 autocorrelation, bias-corrected, and scipy's t at Welch's 1.0179 degrees
  // of freedom.
  json slow = drifting_result(1.0, 1.1, 0.01, 20), fast = drifting_result(0.5, 0.5, 0.01, 20);
  slow["env"]["host"] = "S1";
  fast["env"]["host"] = "S2";
  const auto single = load_results({write("slow.json", slow), write("fast.json", fast)});
  const Report one_each = build_report(single, "host", "S1");
  const ReportCell& one = one_each.cells.at("m").at("S2");
  ASSERT_TRUE(one.speedup_ci95);
  EXPECT_NEAR(*one.speedup, 2.0, 1e-12);
  EXPECT_NEAR(one.speedup_ci95->low, 1.1035927013730324, 1e-9);
  EXPECT_NEAR(one.speedup_ci95->high, 3.6245256017219116, 1e-9);
  EXPECT_EQ(one.speedup_ci95_basis, "steps");
  EXPECT_NE(render_report(one_each, "table").find("2.00x (1.10-3.62)*"), std::string::npos)
      << render_report(one_each, "table");
  EXPECT_NE(render_report(one_each, "csv").find(",1.1036,3.6245,steps,,false,168.0\n"), std::string::npos)
      << render_report(one_each, "csv");

  // Dynamic padding: a run's step times follow their FLOPs, so its epoch is known from the line
  // in them (as the summary projects it), far better than from the steps' spread about their mean.
  json padded = make_result("m", "S3", 1.0, 1, 21);
  padded["model"]["planned_epoch_step_train_flops"] = {1.5e9};
  for (int i = 0; i < 21; ++i) {
    const double flops = 1e9 * (1 + (i * 7 % 10) / 10.0);  // 1.0 .. 1.9 GFLOP
    padded["iterations"][i]["train_flops"] = flops;
    if (i > 0) padded["iterations"][i]["seconds"] = flops / 1e9 + 0.001 * ((i % 2) * 2 - 1);
  }
  padded = with_epochs_timing_their_steps(padded);
  const auto with_line = load_results({write("base.json", fast), write("padded.json", padded)});
  const ReportCell line_cell = build_report(with_line, "host", "S2").cells.at("m").at("S3");
  const Comparison per_sample = compare_results(with_line[0], with_line[1]);
  ASSERT_TRUE(line_cell.speedup_ci95 && per_sample.ci95);
  EXPECT_LT(line_cell.speedup_ci95->high / line_cell.speedup_ci95->low, 1.02);
  EXPECT_GT(per_sample.ci95->high / per_sample.ci95->low, 1.1);  // the work's spread taken as noise

  // A run with one timed step knows nothing of its spread: no interval, and compare says so.
  const auto one_step = load_results({write("s1.json", make_result("m", "S1", 1.0, 1, 2)),
                                      write("s2.json", make_result("m", "S2", 0.5, 1, 2))});
  EXPECT_FALSE(build_report(one_step, "host", "S1").cells.at("m").at("S2").speedup_ci95);
  EXPECT_FALSE(compare_results(one_step[0], one_step[1]).ci95);
  EXPECT_FALSE(compare_results(one_step[0], one_step[1]).significant);
}

// A cell of one run cut short (no complete epoch) shows the projection with its 95% interval, in
// every format; repeats show their spread instead, and a malformed interval names its field.
TEST_F(Analysis, ReportShowsAProjectedEpochsInterval) {
  const auto projected = [](double low, double high) {
    json r = make_result("bert", "S1", 1.0, 1, 100);
    r["summary"]["epoch_seconds"] = nullptr;
    r["summary"]["projected_epoch_seconds_ci95"] = {low, high};
    return r;
  };
  const auto one = load_results({write("one.json", projected(95.2, 104.4))});
  const Report r = build_report(one, "host", "");
  ASSERT_TRUE(r.cells.at("bert").at("S1").projected_ci95);
  EXPECT_NE(render_report(r, "table").find("~01:40 [01:35, 01:44]"), std::string::npos) << render_report(r, "table");
  EXPECT_NE(render_report(r, "table").find("[ ] its 95% interval"), std::string::npos);
  EXPECT_NE(render_report(r, "csv").find(",95.200,104.400,,,,,false,"), std::string::npos) << render_report(r, "csv");
  const json row = json::parse(render_report(r, "json"))["rows"][0];
  EXPECT_EQ(row["projected_ci95_low"], 95.2);
  EXPECT_EQ(row["projected_ci95_high"], 104.4);
  EXPECT_NE(render_report(r, "html").find("\"projected_ci95_low\":95.2"), std::string::npos);  // in the page's data

  const auto repeats = load_results({write("r1.json", projected(95.2, 104.4)), write("r2.json", projected(90, 110))});
  const ReportCell cell = build_report(repeats, "host", "").cells.at("bert").at("S1");
  EXPECT_TRUE(cell.projected);
  EXPECT_FALSE(cell.projected_ci95);

  json reversed = projected(104.5, 95.5), short_pair = projected(1, 2), negative = projected(-1, 2);
  short_pair["summary"]["projected_epoch_seconds_ci95"] = {1.0};
  for (const auto& [name, bad] : {std::pair{"reversed", reversed}, {"short", short_pair}, {"negative", negative}}) {
    const std::string path = write(std::string(name) + ".json", bad);
    try {
      load_result(path);
      ADD_FAILURE() << name << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("/summary/projected_epoch_seconds_ci95"), std::string::npos) << e.what();
    }
  }
}

// Where results carry their GPU's power and energy (NVML), the cell shows the mean over the
// repeats that measured them; a repeat without them does not count as zero.
TEST_F(Analysis, ReportShowsTheGpusPowerAndEnergyWhereMeasured) {
  json a1 = make_result("bert", "S1", 1.0, 1, 10), a2 = make_result("bert", "S1", 1.0, 1, 10);
  json b = make_result("bert", "S2", 1.0, 1, 10);
  a1["summary"]["gpu_power_w_mean"] = 400.0;
  a1["summary"]["gpu_energy_j_per_sample"] = 2.0;
  a2["summary"]["gpu_power_w_mean"] = 500.0;
  a2["summary"]["gpu_energy_j_per_sample"] = 3.0;
  b["summary"]["gpu_power_w_mean"] = nullptr;  // a CPU run writes null
  const auto results = load_results({write("a1.json", a1), write("a2.json", a2), write("b.json", b)});
  const Report r = build_report(results, "host", "S1");
  const ReportCell& s1 = r.cells.at("bert").at("S1");
  EXPECT_DOUBLE_EQ(*s1.gpu_power_w, 450.0);
  EXPECT_DOUBLE_EQ(*s1.gpu_energy_j_per_sample, 2.5);
  EXPECT_FALSE(r.cells.at("bert").at("S2").gpu_power_w.has_value());
  const std::string table = render_report(r, "table");
  EXPECT_NE(table.find("450 W, 2.50 J/sample"), std::string::npos) << table;
  EXPECT_NE(table.find("J/sample: one GPU's mean power and energy per sample"), std::string::npos) << table;
  EXPECT_NE(render_report(r, "csv").find(",450.0,2.5000,"), std::string::npos) << render_report(r, "csv");
  const json rows = json::parse(render_report(r, "json"))["rows"];
  EXPECT_TRUE(rows[1]["gpu_power_w"].is_null());
}

TEST_F(Analysis, ReportCsvQuotesNamesWithCommasAndQuotes) {
  const auto results = load_results({write("q.json", make_result("bert, \"large\"", "S1", 1.0, 1, 10))});
  const std::string csv = render_report(build_report(results, "host", ""), "csv");
  EXPECT_NE(csv.find("\n\"bert, \"\"large\"\"\",S1,1,"), std::string::npos) << csv;
}

// Two columns, the second right-aligned in markdown; a measured number and a missing one.
Table small_table() {
  Table table;
  table.caption = "note";
  table.columns = {{"name"}, {"value", Align::right}};
  table.rows = {{"a", Cell::number(1.5, 2)}, {"bb", Cell::number_or_blank(std::nullopt, 2)}};
  return table;
}

TEST(Table, TextPadsColumnsUnderAnUnderlinedHeader) {
  EXPECT_EQ(to_text(small_table()),
            "note\n"
            "name  value\n"
            "----  -----\n"
            "a     1.50 \n"
            "bb         \n");
}

TEST(Table, MarkdownHasItalicCaptionAndAlignmentRow) {
  EXPECT_EQ(to_markdown(small_table()),
            "_note_\n\n"
            "| name | value |\n"
            "|---|---:|\n"
            "| a | 1.50 |\n"
            "| bb |  |\n");
}

TEST(Table, MarkdownEscapesABarAndFlattensALineBreakInACell) {
  Table table;
  table.columns = {{"name"}};
  table.rows = {{"a|b"}, {"two\nlines"}};
  EXPECT_EQ(to_markdown(table), "| name |\n|---|\n| a\\|b |\n| two lines |\n");
}

TEST(Table, CsvLeavesTheCaptionOutAndBlanksMissingValues) {
  EXPECT_EQ(to_csv(small_table()), "name,value\na,1.50\nbb,\n");
}

TEST(Table, JsonKeepsFullPrecisionAndNull) {
  Table table = small_table();
  table.rows.push_back({Cell::text_or_null(""), Cell::integer(7)});
  table.rows.push_back({"c", Cell::number(2.0 / 3.0, 1)});
  const json rows = to_json(table);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], json::parse(R"({"name": "a", "value": 1.5})"));
  EXPECT_EQ(rows[1], json::parse(R"({"name": "bb", "value": null})"));
  EXPECT_EQ(rows[2], json::parse(R"({"name": null, "value": 7})"));
  EXPECT_EQ(rows[3]["value"].get<double>(), 2.0 / 3.0);  // text shows "0.7"; JSON is not rounded
}

TEST(Table, CsvQuotesFieldsWithCommasQuotesAndLineBreaks) {
  Table table;
  table.columns = {{"run"}, {"device"}};
  table.rows = {{"a,b", "NVIDIA \"X\""}, {"two\nlines", "carriage\rreturn"}, {"plain", Cell::boolean(true)}};
  EXPECT_EQ(to_csv(table),
            "run,device\n"
            "\"a,b\",\"NVIDIA \"\"X\"\"\"\n"
            "\"two\nlines\",\"carriage\rreturn\"\n"
            "plain,true\n");
}

TEST_F(Analysis, CompareFindsARealDifferenceAndNoneWhereThereIsNone) {
  const ResultFile slow = load_result(write("slow.json", make_result("m", "h", 2.0, 1, 30, 1, 0.05)));
  const ResultFile fast = load_result(write("fast.json", make_result("m", "h", 1.0, 1, 30, 1, 0.05)));
  const ResultFile same = load_result(write("same.json", make_result("m", "h", 2.0, 1, 30, 1, 0.05)));
  const Comparison c = compare_results(slow, fast);
  EXPECT_NEAR(c.ratio, 2.0, 1e-9);
  ASSERT_TRUE(c.ci95);
  EXPECT_LT(c.ci95->low, 2.0);
  EXPECT_GT(c.ci95->high, 2.0);
  EXPECT_TRUE(c.significant);
  const Comparison n = compare_results(slow, same);
  EXPECT_NEAR(n.ratio, 1.0, 1e-9);
  EXPECT_FALSE(n.significant);
}

// A partial step (an epoch's last under data.drop_last false) pays a step's fixed cost for a few
// samples: weighed per sample like a full one, it made runs whose summaries agreed to 0.5% read
// 0.95x "significantly slower" (found by an audit). Left out, and counted.
TEST_F(Analysis, CompareLeavesPartialStepsOut) {
  const json full = make_result("m", "h", 0.1, 1, 20, 1, 0.01);
  json with_tail = full;
  json tail = with_tail["iterations"].back();
  tail["step"] = 21;
  tail["global_step"] = 21;
  tail["samples"] = 1;
  tail["seconds"] = 0.05;  // 4x a full step's time per sample
  with_tail["iterations"].push_back(tail);
  with_tail = with_epochs_timing_their_steps(with_tail);
  const Comparison c =
      compare_results(load_result(write("full.json", full)), load_result(write("tail.json", with_tail)));
  EXPECT_NEAR(c.ratio, 1.0, 1e-12);
  EXPECT_EQ(c.b.partial_steps, 1);
  EXPECT_EQ(c.a.partial_steps, 0);
  EXPECT_EQ(c.b.steps, c.a.steps);
  EXPECT_FALSE(c.significant);
}

// Steps of exactly equal times on both sides (a clock's tick, copied timings) have no spread: an
// interval of zero width called 0.999x "significantly slower" (found by an audit). None, and why.
TEST_F(Analysis, CompareGivesNoIntervalWithoutASpread) {
  const ResultFile a = load_result(write("a.json", make_result("m", "h", 0.01, 1, 20)));
  const ResultFile b = load_result(write("b.json", make_result("m", "h", 0.01001, 1, 20)));
  const Comparison c = compare_results(a, b);
  EXPECT_FALSE(c.ci95);
  EXPECT_FALSE(c.significant);
  EXPECT_NE(c.no_interval.find("took the same time"), std::string::npos) << c.no_interval;
  const Comparison one = compare_results(load_result(write("one.json", make_result("m", "h", 0.01, 1, 2))), b);
  EXPECT_NE(one.no_interval.find("one timed step"), std::string::npos) << one.no_interval;
}

// Steps are a series: where A's machine changed speed halfway, its 20 steps are worth 2
// independent ones (lag-1 autocorrelation 0.8, bias-corrected to 1), and the difference from B
// that 20 independent steps would call significant (1.005 .. 1.054) is not. Figures from
// scipy.stats.t and numpy on the same steps.
TEST_F(Analysis, CompareCountsADriftingRunsStepsAsTheirEffectiveNumber) {
  const ResultFile a = load_result(write("a.json", drifting_result(1.0, 1.1, 0.01, 20)));
  const ResultFile b = load_result(write("b.json", drifting_result(1.02, 1.02, 0.01, 20)));
  const Comparison c = compare_results(a, b);
  EXPECT_NEAR(c.ratio, 1.0294117647058822, 1e-12);
  ASSERT_TRUE(c.a.lag1_autocorrelation && c.b.lag1_autocorrelation);
  EXPECT_NEAR(*c.a.lag1_autocorrelation, 1.0, 1e-12);   // 0.8 raw: (20 x 0.8 + 1) / 17, held to 1
  EXPECT_NEAR(*c.b.lag1_autocorrelation, -1.0, 1e-12);  // -0.95 raw
  EXPECT_NEAR(*c.a.effective_steps, 2.0, 1e-12);
  EXPECT_EQ(*c.b.effective_steps, 20);  // alternating steps count as independent ones, never more
  EXPECT_EQ(c.a.basis, "steps");
  ASSERT_TRUE(c.ci95);
  EXPECT_NEAR(c.ci95->low, 0.5584966639753992, 1e-6);
  EXPECT_NEAR(c.ci95->high, 1.8973946482902464, 1e-6);
  EXPECT_FALSE(c.significant);
  // Under kSerialStepsMin steps the steps count as independent.
  const Comparison few = compare_results(load_result(write("a9.json", drifting_result(1.0, 1.1, 0.01, 9))), b);
  EXPECT_FALSE(few.a.lag1_autocorrelation);
  EXPECT_EQ(*few.a.effective_steps, 9);
}

// A CPU run's peak probes before and after its epochs say whether the machine's speed moved
// during it: each side keeps its runs' widest spread, and the probes of that run.
TEST_F(Analysis, CompareKeepsEachSidesWidestPeakProbeSpread) {
  json steady = make_result("m", "h", 1.0, 1, 10), moved = make_result("m", "h", 1.0, 1, 10);
  steady["summary"]["peak_probes_flops_per_s"] = {60e9, 62e9};
  moved["summary"]["peak_probes_flops_per_s"] = {32e9, 64e9};
  const ResultFile a1 = load_result(write("a1.json", steady)), a2 = load_result(write("a2.json", moved));
  // A result from before the field (none), and one with a datasheet's peak (null): no probes.
  const ResultFile b = load_result(write("b.json", make_result("m", "h", 0.9, 1, 10)));
  json datasheet = make_result("m", "h", 0.9, 1, 10);
  datasheet["summary"]["peak_probes_flops_per_s"] = nullptr;
  EXPECT_TRUE(load_result(write("datasheet.json", datasheet)).peak_probes_flops_per_s.empty());
  const Comparison c = compare_results({&a1, &a2}, {&b});
  ASSERT_TRUE(c.a.peak_probe_spread);
  EXPECT_DOUBLE_EQ(*c.a.peak_probe_spread, 1.0);
  EXPECT_EQ(c.a.peak_probes_flops_per_s, (std::vector<double>{32e9, 64e9}));
  EXPECT_FALSE(c.b.peak_probe_spread);
  // One probe (a run stopped before the second) has no spread.
  steady["summary"]["peak_probes_flops_per_s"] = {60e9};
  EXPECT_FALSE(compare_results(load_result(write("one.json", steady)), b).a.peak_probe_spread);
}

// A report cell with a run whose CPU peak probes lay far apart is marked in every format, and
// warned of by name; probes close together, one probe, or none mark nothing.
TEST_F(Analysis, ReportMarksCellsWhereTheMachinesSpeedMoved) {
  json steady = make_result("m", "h1", 1.0, 1, 10), moved = make_result("m", "h1", 1.1, 1, 10);
  json other = make_result("m", "h2", 0.5, 1, 10);
  steady["summary"]["peak_probes_flops_per_s"] = {60e9, 62e9};
  moved["summary"]["peak_probes_flops_per_s"] = {32e9, 64e9};
  other["summary"]["peak_probes_flops_per_s"] = {60e9, 66e9};  // 10% apart: within the noise
  const std::string moved_path = write("moved.json", moved);
  const auto results = load_results({write("steady.json", steady), moved_path, write("other.json", other)});
  const Report r = build_report(results, "host", "");
  const ReportCell& h1 = r.cells.at("m").at("h1");
  ASSERT_TRUE(h1.peak_probe_spread);
  EXPECT_DOUBLE_EQ(*h1.peak_probe_spread, 1.0);  // the widest of its runs
  EXPECT_TRUE(h1.machine_speed_moved());
  EXPECT_NEAR(*r.cells.at("m").at("h2").peak_probe_spread, 0.1, 1e-12);
  EXPECT_FALSE(r.cells.at("m").at("h2").machine_speed_moved());
  ASSERT_EQ(r.speed_moved.size(), 1u);
  EXPECT_EQ(r.speed_moved[0], "m / h1: the machine's speed moved during " + moved_path +
                                  ": its CPU peak probes before and after the epochs gave 32.0 and 64.0 GFLOP/s, "
                                  "100% apart, and its rates carry that");
  const std::string table = render_report(r, "table");
  EXPECT_NE(table.find("! = the machine's speed moved during one of its runs"), std::string::npos) << table;
  EXPECT_NE(table.find("1.00x ! (n=2)"), std::string::npos) << table;
  EXPECT_NE(render_report(r, "markdown").find("1.00x ! (n=2)"), std::string::npos);
  const std::string csv = render_report(r, "csv");
  EXPECT_NE(csv.find(",1.0000,true,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.1000,false,"), std::string::npos) << csv;
  const json rows = json::parse(render_report(r, "json"))["rows"];
  EXPECT_EQ(rows[0]["machine_speed_moved"], true);
  EXPECT_EQ(rows[1]["machine_speed_moved"], false);
  EXPECT_NE(render_report(r, "html").find("c.machine_speed_moved ? \" !\""), std::string::npos);

  // Runs without two probes (a GPU's datasheet peak, an older result, a run stopped early) mark nothing.
  steady["summary"]["peak_probes_flops_per_s"] = {60e9};
  const Report none = build_report(load_results({write("one.json", steady), write("old.json", make_result("m", "h2", 0.5, 1, 10))}),
                                   "host", "");
  EXPECT_FALSE(none.cells.at("m").at("h1").peak_probe_spread);
  EXPECT_TRUE(none.speed_moved.empty());
  EXPECT_EQ(render_report(none, "table").find("speed moved"), std::string::npos);
}

// Repeats on each side: the interval comes from the spread of the runs' means (each run an
// independent draw), so it sees how much the next run of a setting differs, which no single run's
// steps can. Runs at 1.0, 1.1 and 0.9 s a step against 0.5, 0.55 and 0.6: scipy.stats.t at
// Welch's 3.96 degrees of freedom gives 1.8182 (1.4629 .. 2.2597).
TEST_F(Analysis, CompareTakesEachSidesRepeatsSpread) {
  std::vector<ResultFile> a, b;
  for (double s : {1.0, 1.1, 0.9}) a.push_back(load_result(write("a" + std::to_string(s) + ".json", make_result("m", "h", s, 1, 10))));
  for (double s : {0.5, 0.55, 0.6}) b.push_back(load_result(write("b" + std::to_string(s) + ".json", make_result("m", "h", s, 1, 10))));
  const Comparison c = compare_results({&a[0], &a[1], &a[2]}, {&b[0], &b[1], &b[2]});
  EXPECT_NEAR(c.ratio, 1.8181818181818183, 1e-12);
  ASSERT_TRUE(c.ci95);
  EXPECT_NEAR(c.ci95->low, 1.4629087318962763, 1e-7);
  EXPECT_NEAR(c.ci95->high, 2.2597343579198284, 1e-7);
  EXPECT_TRUE(c.significant);
  EXPECT_EQ(c.a.basis, "repeats");
  EXPECT_EQ(c.a.runs, 3);
  EXPECT_EQ(c.a.steps, 27);  // 9 timed steps a run
  EXPECT_NEAR(*c.a.runs_cv_pct, 10.0, 1e-9);
  EXPECT_FALSE(c.a.effective_steps);
  // One run on a side knows only its steps, here exactly (no jitter): B's repeats alone set the
  // interval, with their 2 degrees of freedom (scipy: 1.4506 .. 2.2788).
  const Comparison mixed = compare_results({&a[0]}, {&b[0], &b[1], &b[2]});
  EXPECT_EQ(mixed.a.basis, "steps");
  EXPECT_EQ(mixed.b.basis, "repeats");
  ASSERT_TRUE(mixed.ci95);
  EXPECT_NEAR(mixed.ci95->low, 1.4506421198439503, 1e-9);
  EXPECT_NEAR(mixed.ci95->high, 2.278842644057898, 1e-9);
}

// compare names what else differs between its two runs: spec fields (not the name, the output
// path or sweep bookkeeping), fields only one side records, and the code, torch and BLAS.
TEST_F(Analysis, CompareListsTheSettingsThatDiffer) {
  json a = make_result("m", "h", 2.0, 1, 30, 1, 0.05);
  a["spec"]["model"] = {{"name", "bert"}, {"sparse_last_layer", false}};
  a["spec"]["output"] = "a.json";
  a["env"]["torch"] = "1.13.1";
  a["tbench"] = {{"git", "abc"}};
  json b = a;
  b["spec"]["name"] = "other";
  b["spec"]["output"] = "b.json";
  b["spec"]["sweep"] = {{"point", 3}};
  b["spec"]["model"]["sparse_last_layer"] = true;
  b["spec"]["threads"] = 1;
  b["spec"]["cuda"] = {{"tf32", true}};
  b["env"]["torch"] = "2.6.0";
  const ResultFile ra = load_result(write("a.json", a)), rb = load_result(write("b.json", b));
  const auto differences = compare_results(ra, rb).differences;
  std::vector<std::string> described;
  for (const auto& d : differences) described.push_back(d.field + ": " + d.a.dump() + " -> " + d.b.dump());
  EXPECT_EQ(described, (std::vector<std::string>{"cuda.tf32: null -> true", "model.sparse_last_layer: false -> true",
                                                 "threads: 2 -> 1", "env.torch: \"1.13.1\" -> \"2.6.0\""}));
  EXPECT_FALSE(differences[0].a_recorded);  // a's tbench had no cuda.tf32
  EXPECT_EQ(setting_value_text(differences[0].a, differences[0].a_recorded), "(not recorded)");
  EXPECT_EQ(setting_value_text(differences[0].b, differences[0].b_recorded), "true");
  // A null the spec records is a value: weights loaded against none.
  json weighted = a, unweighted = a;
  unweighted["spec"]["model"]["weights"] = nullptr;
  weighted["spec"]["model"]["weights"] = "w.pt";
  const auto weights = compare_results(load_result(write("u.json", unweighted)), load_result(write("w.json", weighted))).differences;
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(setting_value_text(weights[0].a, weights[0].a_recorded), "null");
  EXPECT_TRUE(compare_results(ra, ra).differences.empty());
  // What no spec field records: the machine, and the world size the launcher set.
  json wide = a;
  wide["env"]["host"] = "node7";
  wide["dist"] = {{"world_size", 2}};
  const ResultFile rw = load_result(write("wide.json", wide));
  described.clear();
  for (const auto& d : compare_results(ra, rw).differences) described.push_back(d.field + ": " + d.a.dump() + " -> " + d.b.dump());
  EXPECT_EQ(described, (std::vector<std::string>{"machine: \"h (cpu)\" -> \"node7 (cpu)\"", "world_size: 1 -> 2"}));
}

// report --by takes any dotted field of the resolved spec: a sweep's axis becomes the columns.
TEST_F(Analysis, ReportColumnsByAnySpecField) {
  json full = make_result("m", "h", 2.0, 1, 10);
  full["spec"]["model"] = {{"name", "m"}, {"sparse_last_layer", false}};
  full["spec"]["train"]["optimizer_impl"] = "fused";
  json sparse = full;
  sparse["spec"]["model"]["sparse_last_layer"] = true;
  const ResultFile a = load_result(write("full.json", full)), b = load_result(write("sparse.json", sparse));
  EXPECT_EQ(label_of(a, "model.sparse_last_layer"), "sparse_last_layer=false");
  EXPECT_EQ(label_of(b, "model.sparse_last_layer"), "sparse_last_layer=true");
  EXPECT_EQ(label_of(a, "train.optimizer_impl"), "optimizer_impl=fused");  // strings without quotes
  const std::vector<ResultFile> results{a, b};
  const Report report = build_report(results, "model.sparse_last_layer", "");
  EXPECT_EQ(report.labels, (std::vector<std::string>{"sparse_last_layer=false", "sparse_last_layer=true"}));
  testing::expect_input_error([&] { label_of(a, "model.no_such_field"); },
                              {"records no spec field 'model.no_such_field'", "full.json"});
}

// Two processes of a 100-sample epoch at batch 32 train 64 samples an epoch, one trains 96: their
// epoch times' ratio called the slower one faster (1.04x at 0.80x the throughput, found by an
// audit). The speedup is per trained sample, and a note says so.
TEST_F(Analysis, ReportSpeedupIsPerTrainedSample) {
  const json one = make_result("m", "h1", 1.0, 1, 12);  // 96 samples an epoch in 12 s
  json fewer = make_result("m", "h2", 1.0, 1, 8);       // 64 samples in 8 s: the same pace
  const std::vector<ResultFile> runs{load_result(write("one.json", one)), load_result(write("fewer.json", fewer))};
  EXPECT_DOUBLE_EQ(runs[0].epoch_samples, 96);
  EXPECT_DOUBLE_EQ(runs[1].epoch_samples, 64);
  const Report r = build_report(runs, "host", "");
  EXPECT_NEAR(*r.cells.at("m").at("h2").speedup, 1.0, 1e-12);
  ASSERT_EQ(r.unlike_samples.size(), 1u);
  EXPECT_NE(r.unlike_samples[0].find("'h2' trained 64 samples an epoch against 'h1''s 96"), std::string::npos)
      << r.unlike_samples[0];
  // A projection scales to the planned work, a partial last step (data.drop_last false) at its own
  // size: its epoch trains every sample, not whole batches (found by review).
  json projected = make_result("m", "h3", 1.0, 1, 10);
  projected["summary"].erase("epoch_seconds");
  projected["epochs"][0]["complete"] = false;
  projected["spec"]["data"]["drop_last"] = false;
  projected["data"] = {{"train_samples", 75}};
  EXPECT_DOUBLE_EQ(load_result(write("projected.json", projected)).epoch_samples, 75);
  projected["spec"]["data"]["drop_last"] = true;
  EXPECT_DOUBLE_EQ(load_result(write("projected.json", projected)).epoch_samples, 80);
  // Where the epochs trained alike, the speedup is their times' ratio, with no note.
  const Report same = build_report({runs[0], load_result(write("same.json", make_result("m", "h2", 0.5, 1, 12)))}, "host", "");
  EXPECT_NEAR(*same.cells.at("m").at("h2").speedup, 2.0, 1e-9);
  EXPECT_TRUE(same.unlike_samples.empty());
}

// One run that stopped in its warm-up among a folder's lost report its whole table (exit 2, found
// by an audit): with `left_out` (report's load), it is left out and named; compare still refuses it.
TEST_F(Analysis, ReportLeavesARunTooShortToAnalyseOut) {
  const std::string good = write("good.json", make_result("m", "h", 1.0, 1, 4));
  const std::string short_run = write("short.json", make_result("m", "h", 1.0, 1, 2, /*warmup=*/2));
  std::vector<std::string> left_out;
  const auto results = load_results({good, short_run}, &left_out);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_NE(left_out[0].find("short.json: no steady-state steps"), std::string::npos) << left_out[0];
  EXPECT_THROW(load_results({good, short_run}), TooShortToAnalyse);
}

// The profiler slows the steps it records (timing.profile_steps): an epoch that held them counts
// them at the timed steps' mean, as the summary does, not as they ran (15% over on a tiny model,
// found by an audit). The time outside the steps stays as measured.
TEST_F(Analysis, AProfiledEpochCountsItsProfiledStepsAtTheTimedMean) {
  json result = make_result("m", "h", 1.0, 1, 10, /*warmup=*/1);  // 1 warm-up (3 s) + 9 steps of 1 s
  result["iterations"][9]["profiled"] = true;
  result["iterations"][9]["seconds"] = 4.0;  // slowed 4x
  result = with_epochs_timing_their_steps(result);  // 3 + 8 + 4 + 0.01
  result["epochs"][0]["seconds"] = result["epochs"][0]["seconds"].get<double>() + 0.5;
  result["epochs"][0]["profiler_seconds"] = 0.5;
  const ResultFile r = load_result(write("profiled.json", result));
  EXPECT_NEAR(r.epoch_seconds, 3 + 8 + 1 + 0.01, 1e-9);
  ASSERT_EQ(r.epoch_step_sum.size(), 1u);
  EXPECT_NEAR(r.epoch_step_sum[0], 12.0, 1e-9);
  // The profiled step is the epoch's partial last one (a quarter of the work): a steady step of
  // its own work, not of the full steps' mean.
  for (auto& it : result["iterations"]) it["train_flops"] = 8e9;
  result["iterations"][9]["train_flops"] = 2e9;
  result["iterations"][9]["samples"] = 2;
  EXPECT_NEAR(load_result(write("partial.json", result)).epoch_seconds, 3 + 8 + 0.25 + 0.01, 1e-9);
}

// A cell that averages runs of different settings is flagged; repeats that differ only in their
// seeds, or in the field the columns are by, are not.
TEST_F(Analysis, ReportFlagsCellsThatAverageUnlikeRuns) {
  json one = make_result("m", "h", 2.0, 1, 10);
  one["spec"]["model"] = {{"name", "m"}, {"sparse_last_layer", false}};
  one["spec"]["train"]["seed"] = 1;
  json repeat = one, sparse = one;
  repeat["spec"]["train"]["seed"] = 2;
  sparse["spec"]["model"]["sparse_last_layer"] = true;
  const std::vector<ResultFile> repeats{load_result(write("one.json", one)), load_result(write("repeat.json", repeat))};
  EXPECT_TRUE(build_report(repeats, "machine", "").mixed.empty());
  const std::vector<ResultFile> unlike{repeats[0], load_result(write("sparse.json", sparse))};
  const auto mixed = build_report(unlike, "machine", "").mixed;
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_NE(mixed[0].find("its 2 runs differ in model.sparse_last_layer"), std::string::npos) << mixed[0];
  EXPECT_TRUE(build_report(unlike, "model.sparse_last_layer", "").mixed.empty());
  // What columns may differ in by design is no excuse inside one cell: a cell by machine that
  // averages two torch versions, or one by device that averages two machines, is flagged.
  json other_torch = repeat;
  other_torch["env"]["torch"] = "2.6.0";
  const auto torch_cell = build_report({repeats[0], load_result(write("torch.json", other_torch))}, "machine", "").mixed;
  ASSERT_EQ(torch_cell.size(), 1u);
  EXPECT_NE(torch_cell[0].find("differ in env.torch"), std::string::npos) << torch_cell[0];
  json other_host = repeat;
  other_host["env"]["host"] = "h2";
  const auto device_cell = build_report({repeats[0], load_result(write("h2.json", other_host))}, "device", "").mixed;
  ASSERT_EQ(device_cell.size(), 1u);
  EXPECT_NE(device_cell[0].find("differ in machine"), std::string::npos) << device_cell[0];
}

// Speedups between columns are of one change, the column key: a column whose runs differ from the
// baseline's in more (found by review: fp32 at seq 128 against bf16 at seq 512 "by precision") is
// warned of, naming the fields. The same run given twice is no repeat.
TEST_F(Analysis, ReportWarnsOfColumnsThatDifferInMoreThanTheirKey) {
  json fp32 = make_result("m", "h", 2.0, 1, 10);
  json fp16 = make_result("m", "h", 1.0, 1, 10);
  fp16["spec"]["precision"] = "fp16";
  const std::vector<ResultFile> alike{load_result(write("fp32.json", fp32)), load_result(write("fp16.json", fp16))};
  EXPECT_TRUE(build_report(alike, "precision", "").unlike_columns.empty());
  fp16["spec"]["data"]["seq_len"] = 32;
  const std::vector<ResultFile> unlike{alike[0], load_result(write("fp16-seq32.json", fp16))};
  const auto warned = build_report(unlike, "precision", "").unlike_columns;
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("'fp16' against 'fp32' is not only a change of precision: data.seq_len 16 -> 32"),
            std::string::npos)
      << warned[0];
  testing::expect_input_error([&] { build_report({alike[0], alike[0]}, "precision", ""); }, {"fp32.json is given twice"});
  testing::expect_input_error([&] { build_report({alike[0], load_result(write("copy.json", fp32))}, "precision", ""); },
                              {"copy.json holds the same run as", "fp32.json"});
}

// Columns by host keep a host's runs on different GPUs apart: the machine is the host and its GPU.
TEST_F(Analysis, ReportByHostWarnsOfRunsOnDifferentGpus) {
  json h200 = make_result("m", "vm", 1.0, 1, 10);
  h200["spec"]["device"] = "cuda";
  h200["env"]["cuda"] = {{"devices", json::array({{{"name", "NVIDIA H200"}}})}};
  json h100 = h200, other_host = h200;
  h100["env"]["cuda"]["devices"][0]["name"] = "NVIDIA H100 80GB HBM3";
  h100["spec"]["train"]["seed"] = 7;
  other_host["env"]["host"] = "node2";
  const std::vector<ResultFile> same_gpu{load_result(write("vm.json", h200)), load_result(write("node2.json", other_host))};
  const Report by_host = build_report(same_gpu, "host", "");
  EXPECT_TRUE(by_host.unlike_columns.empty()) << by_host.unlike_columns.front();
  const std::vector<ResultFile> one_host{same_gpu[0], load_result(write("vm-h100.json", h100))};
  const Report mixed = build_report(one_host, "host", "");
  ASSERT_EQ(mixed.mixed.size(), 1u);
  EXPECT_NE(mixed.mixed[0].find("differ in machine"), std::string::npos) << mixed.mixed[0];
}

// spec.device "cuda" is cuda:0, and a data-parallel rank 0 took cuda:0 whatever the spec's index:
// columns by device do not split one GPU in two, and compare does not call it a difference.
TEST_F(Analysis, ReportByDeviceTakesCudaAsCudaZero) {
  json bare = make_result("m", "vm", 1.0, 1, 10);
  bare["spec"]["device"] = "cuda";
  bare["env"]["cuda"] = {{"devices", json::array({{{"name", "NVIDIA H100 80GB HBM3"}}, {{"name", "NVIDIA H200"}}})}};
  json zero = bare, one = bare, ranks = bare;
  zero["spec"]["device"] = "cuda:0";
  zero["spec"]["train"]["seed"] = 7;
  one["spec"]["device"] = "cuda:1";
  ranks["spec"]["device"] = "cuda:1";
  ranks["dist"] = {{"world_size", 2}};
  const ResultFile rb = load_result(write("bare.json", bare)), r0 = load_result(write("zero.json", zero)),
                   r1 = load_result(write("one.json", one)), rr = load_result(write("ranks.json", ranks));
  EXPECT_EQ(label_of(rb, "device"), "cuda:0");
  EXPECT_EQ(label_of(r1, "device"), "cuda:1");
  EXPECT_EQ(r1.gpu, "NVIDIA H200");
  EXPECT_EQ(label_of(rr, "device"), "cuda:0");  // rank 0 used its local rank's GPU
  EXPECT_EQ(rr.gpu, "NVIDIA H100 80GB HBM3");
  // Rank 0's own record says which it used (a group of one at LOCAL_RANK 1, say).
  json alone = one;
  alone["dist"] = {{"world_size", 1}, {"ranks", json::array({{{"rank", 0}, {"device", "cuda:1"}}})}};
  alone["spec"]["device"] = "cuda:0";
  const ResultFile ra = load_result(write("alone.json", alone));
  EXPECT_EQ(label_of(ra, "device"), "cuda:1");
  EXPECT_EQ(ra.gpu, "NVIDIA H200");
  const Report report = build_report({rb, r0}, "device", "");
  EXPECT_EQ(report.labels, (std::vector<std::string>{"cuda:0"}));
  EXPECT_TRUE(report.mixed.empty()) << report.mixed.front();
  for (const auto& d : compare_results(rb, r0).differences) EXPECT_NE(d.field, "device") << d.a << " -> " << d.b;
  ASSERT_FALSE(compare_results(rb, r1).differences.empty());
  EXPECT_EQ(compare_results(rb, r1).differences.front().field, "device");
}

TEST_F(Analysis, PredictEpochsSeparatesWarmupFromSteadyState) {
  const ResultFile one = load_result(write("one.json", make_result("m", "h", 1.0, 1, 10, /*warmup=*/2)));
  const ResultFile three = load_result(write("three.json", make_result("m", "h", 1.0, 3, 10, 2)));
  const EpochPrediction p = predict_epochs(one, 3, &three);
  // Steady epoch: 10 x 1 s + 0.01 s outside the steps; warm-up: 2 steps x 2 s extra, once.
  EXPECT_NEAR(p.steady_epoch_seconds, 10.01, 1e-9);
  EXPECT_NEAR(p.warmup_overhead_seconds, 4.0, 1e-9);
  EXPECT_NEAR(p.predicted_seconds, 34.03, 1e-9);
  EXPECT_NEAR(*p.actual_seconds, 34.03, 1e-9);
  EXPECT_NEAR(*p.error_pct, 0.0, 1e-9);
  ASSERT_TRUE(p.naive_seconds);
  EXPECT_NEAR(*p.naive_seconds, 3 * 14.01, 1e-9);  // the naive way counts warm-up every epoch
  EXPECT_FALSE(p.from_partial_epoch);
  EXPECT_FALSE(p.predicted_with_eval_seconds);  // no epoch evaluated
  EXPECT_GT(*p.naive_error_pct, 20.0);
  EXPECT_THROW(predict_epochs(one, 2, &three), Error);  // actual has 3 epochs
}

// A run cut short by train.max_steps before its first epoch ended (4 of 10 steps, 1 of warm-up)
// still predicts whole epochs: its steady steps times the epoch's steps, the time outside the steps
// its partial epoch's (0.01 s). There is no naive figure, and no epoch to predict from at all is
// refused.
TEST_F(Analysis, PredictEpochsFromARunCutShortBeforeItsFirstEpochEnded) {
  json cut = make_result("m", "h", 1.0, 1, 4, /*warmup=*/1);
  cut["summary"]["steps_per_epoch"] = 10;
  cut["epochs"][0]["complete"] = false;
  const ResultFile r = load_result(write("cut.json", cut));
  const EpochPrediction p = predict_epochs(r, 2, nullptr);
  EXPECT_TRUE(p.from_partial_epoch);
  EXPECT_NEAR(p.steady_epoch_seconds, 10.01, 1e-9);
  EXPECT_NEAR(p.warmup_overhead_seconds, 2.0, 1e-9);
  EXPECT_NEAR(p.predicted_seconds, 2.0 + 2 * 10.01, 1e-9);
  EXPECT_FALSE(p.naive_seconds);
  const ResultFile two = load_result(write("two.json", make_result("m", "h", 1.0, 2, 10, 1)));
  const EpochPrediction scored = predict_epochs(r, 2, &two);
  EXPECT_NEAR(*scored.error_pct, 0.0, 1e-9);
  EXPECT_FALSE(scored.naive_error_pct);
  cut["epochs"] = json::array();
  const ResultFile none = load_result(write("none.json", cut));
  testing::expect_input_error([&] { predict_epochs(none, 2, nullptr); }, {"none.json", "no epoch with steps measured"});
}

// Each epoch's evaluation runs after its steps, outside the training time: the prediction adds the
// measured epochs' mean evaluation for each epoch, and scores that against an actual run that
// evaluated every epoch.
TEST_F(Analysis, PredictEpochsAddsEachEpochsEvaluation) {
  json one = make_result("m", "h", 1.0, 1, 10, /*warmup=*/2);
  one["epochs"][0]["eval"] = {{"loss", 0.5}, {"seconds", 1.5}};
  json three = make_result("m", "h", 1.0, 3, 10, 2);
  for (auto& e : three["epochs"]) e["eval"] = {{"loss", 0.5}, {"seconds", 2.0}};
  const ResultFile actual = load_result(write("three.json", three));
  const EpochPrediction p = predict_epochs(load_result(write("one.json", one)), 3, &actual);
  ASSERT_TRUE(p.eval_seconds_per_epoch);
  EXPECT_DOUBLE_EQ(*p.eval_seconds_per_epoch, 1.5);
  EXPECT_NEAR(*p.predicted_with_eval_seconds, 34.03 + 3 * 1.5, 1e-9);
  EXPECT_NEAR(*p.error_pct, 0.0, 1e-9);  // training time alone, as before
  EXPECT_NEAR(*p.actual_with_eval_seconds, 34.03 + 3 * 2.0, 1e-9);
  EXPECT_NEAR(*p.with_eval_error_pct, 100.0 * (38.53 - 40.03) / 40.03, 1e-9);
}

// The prediction's 95% interval is the mean steady step's, times the steps it stands for: the
// epochs' steps but the measured warm-up ones. Steady steps of 0.8, 1.0 and 1.2 s in turn (8 of
// them: mean 0.975 s, 0.195 s^2 of squared deviations) over 3 epochs of 10 steps, 2 of warm-up.
TEST_F(Analysis, PredictEpochsGivesTheMeanStepsIntervalAndScoresIt) {
  const double jitter = 0.2;
  const ResultFile one = load_result(write("one.json", make_result("m", "h", 1.0, 1, 10, 2, jitter)));
  const ResultFile three = load_result(write("three.json", make_result("m", "h", 1.0, 3, 10, 2, jitter)));
  const EpochPrediction p = predict_epochs(one, 3, &three);
  ASSERT_TRUE(p.predicted_seconds_ci95);
  const double half = 28 * 2.365 * std::sqrt(0.195 / 7) / std::sqrt(8.0);
  EXPECT_NEAR(p.predicted_seconds_ci95->low, p.predicted_seconds - half, 1e-3);
  EXPECT_NEAR(p.predicted_seconds_ci95->high, p.predicted_seconds + half, 1e-3);
  EXPECT_EQ(p.actual_within_ci95, std::optional<bool>(true));
  const ResultFile slower = load_result(write("slower.json", make_result("m", "h", 1.5, 3, 10, 2, jitter)));
  EXPECT_EQ(predict_epochs(one, 3, &slower).actual_within_ci95, std::optional<bool>(false));
  // Without an actual run nothing is scored; with equal steps the interval has no width.
  EXPECT_FALSE(predict_epochs(one, 3, nullptr).actual_within_ci95);
  const ResultFile equal_steps = load_result(write("even.json", make_result("m", "h", 1.0, 1, 10, 2)));
  const EpochPrediction even = predict_epochs(equal_steps, 3, nullptr);
  ASSERT_TRUE(even.predicted_seconds_ci95);
  EXPECT_NEAR(even.predicted_seconds_ci95->high - even.predicted_seconds_ci95->low, 0.0, 1e-9);
}

// A prediction scored against another workload's run is a meaningless error: --actual must run the
// same model, samples a step, length and precision (and for epochs, on the same device, with the
// same steps an epoch); a --target actual must have run on a GPU.
TEST_F(Analysis, PredictionsAreScoredOnlyAgainstTheSameWorkload) {
  const ResultFile one = load_result(write("one.json", make_result("m", "h", 1.0, 1, 10, 2)));
  const auto actual_with = [&](const std::string& name, const std::function<void(json&)>& edit) {
    json actual = make_result("m", "h", 1.0, 2, 10, 2);
    edit(actual);
    return load_result(write(name + ".json", actual));
  };
  const auto expect_refused = [&](const ResultFile& actual, const std::string& fragment) {
    try {
      predict_epochs(one, 2, &actual);
      ADD_FAILURE() << actual.path << " was scored";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  const ResultFile same = actual_with("same", [](json&) {});
  EXPECT_NO_THROW(predict_epochs(one, 2, &same));
  expect_refused(actual_with("model", [](json& r) { r["model"]["name"] = "other"; }), "model other (predicted for m)");
  expect_refused(actual_with("precision", [](json& r) { r["spec"]["precision"] = "bf16"; }),
                 "precision bf16 (predicted for fp32)");
  expect_refused(actual_with("batch", [](json& r) { r["spec"]["train"]["batch_size"] = 16; }), "samples a step 16");
  expect_refused(actual_with("seq", [](json& r) { r["spec"]["data"]["seq_len"] = 32; }), "seq_len 32");
  expect_refused(actual_with("device", [](json& r) { r["spec"]["device"] = "cuda"; }), "device cuda (predicted for cpu)");
  expect_refused(actual_with("epoch", [](json& r) { r["summary"]["steps_per_epoch"] = 20; }), "steps an epoch 20");
  expect_refused(actual_with("world", [](json& r) { r["dist"] = {{"world_size", 2}}; }), "world size 2 (predicted for 1)");
  expect_refused(actual_with("tf32", [](json& r) { r["spec"]["cuda"] = {{"tf32", true}}; }),
                 "precision fp32 with TF32 (predicted for fp32)");
  // The processor, not spec.device's text: "cuda" and "cuda:0" on one GPU are the same; another
  // GPU is not.
  const auto on = [&](const std::string& name, const std::string& device, const std::string& gpu) {
    json run = make_result("m", "h", 1.0, 2, 10, 2);
    run["spec"]["device"] = device;
    run["env"]["cuda"] = {{"devices", {{{"name", gpu}}}}};
    return load_result(write(name + ".json", run));
  };
  const ResultFile h100 = on("h100", "cuda", "NVIDIA H100 80GB HBM3");
  const ResultFile h100_index = on("h100_index", "cuda:0", "NVIDIA H100 80GB HBM3");
  EXPECT_NO_THROW(predict_epochs(h100, 2, &h100_index));
  const ResultFile a100 = on("a100", "cuda:0", "NVIDIA A100-SXM4-80GB");
  try {
    predict_epochs(h100, 2, &a100);
    ADD_FAILURE() << "an A100 run scored an H100 prediction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device NVIDIA A100-SXM4-80GB (predicted for NVIDIA H100 80GB HBM3)"),
              std::string::npos)
        << e.what();
  }

  DeviceSpec target;
  target.name = "Test GPU";
  target.fp32_tflops = 10;
  target.memory_gbps = 1e6;
  const auto on_gpu = [](json& r) { r["spec"]["device"] = "cuda"; };
  const ResultFile gpu = actual_with("gpu", on_gpu), cpu = actual_with("cpu", [](json&) {});
  EXPECT_NO_THROW(predict_target(one, target, &gpu));
  EXPECT_THROW(predict_target(one, target, &cpu), Error);  // not a GPU run
  const ResultFile gpu_bf16 = actual_with("gpu_bf16", [&](json& r) {
    on_gpu(r);
    r["spec"]["precision"] = "bf16";
  });
  try {
    predict_target(one, target, &gpu_bf16);
    ADD_FAILURE() << "a bf16 run scored an fp32 prediction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("precision bf16 (predicted for fp32)"), std::string::npos) << e.what();
  }
}

// With dynamic padding each step's time follows its work: steps of 1 and 2 GFLOP in turn taking
// 0.1 s + 0.2 s per GFLOP, two 3 s warm-up steps of 1 GFLOP, and planned epochs of 1.8 GFLOP a
// step on average. The steady step is the line's 0.46 s there, not the timed steps' mean (0.4 s);
// each warm-up step's overhead is beyond a steady step of its own work (0.3 s).
TEST_F(Analysis, PredictEpochsReadsALineInTheStepsFlopsAtThePlannedEpochs) {
  json source = make_result("m", "h", 1.0, 1, 10, /*warmup=*/2);
  double sum = 0;
  for (auto& it : source["iterations"]) {
    const int step = it["step"];
    it["train_flops"] = step % 2 == 0 ? 1e9 : 2e9;
    if (it["warmup"].get<bool>()) it["train_flops"] = 1e9;
    it["seconds"] = it["warmup"].get<bool>() ? 3.0 : 0.1 + 2e-10 * it["train_flops"].get<double>();
    sum += it["seconds"].get<double>();
  }
  source["epochs"][0]["seconds"] = sum + 0.01;
  const EpochPrediction mean_only = predict_epochs(load_result(write("unplanned.json", source)), 3, nullptr);
  EXPECT_EQ(mean_only.step_model, "mean");  // no planned figure: the timed steps' mean
  EXPECT_NEAR(mean_only.steady_step_seconds, 0.4, 1e-9);
  source["model"]["planned_epoch_step_train_flops"] = {1.8e9};
  const EpochPrediction p = predict_epochs(load_result(write("planned.json", source)), 3, nullptr);
  EXPECT_EQ(p.step_model, "flops line");
  ASSERT_TRUE(p.step_train_flops);
  EXPECT_DOUBLE_EQ(*p.step_train_flops, 1.8e9);
  EXPECT_NEAR(p.steady_step_seconds, 0.46, 1e-9);
  EXPECT_NEAR(p.warmup_overhead_seconds, 2 * (3.0 - 0.3), 1e-9);
  EXPECT_NEAR(p.predicted_seconds, 5.4 + 3 * (10 * 0.46 + 0.01), 1e-9);
  ASSERT_TRUE(p.predicted_seconds_ci95);  // an exact line: no width
  EXPECT_NEAR(p.predicted_seconds_ci95->high - p.predicted_seconds_ci95->low, 0.0, 1e-6);
  // Results from before the per-epoch list hold the planned epochs' mean alone: read the same.
  json older = source;
  older["model"].erase("planned_epoch_step_train_flops");
  older["model"]["expected_step_train_flops"] = 1.8e9;
  EXPECT_NEAR(predict_epochs(load_result(write("older.json", older)), 3, nullptr).predicted_seconds, p.predicted_seconds,
              1e-12);
  // Steps of one work (fixed shapes) leave the slope to noise: the mean again, scaled to the
  // planned work where that differs (a partial last step the timed ones did not include).
  for (auto& it : source["iterations"]) it["train_flops"] = 1e9;
  const EpochPrediction scaled = predict_epochs(load_result(write("fixed.json", source)), 3, nullptr);
  EXPECT_EQ(scaled.step_model, "mean, scaled to the planned work");
  EXPECT_NEAR(scaled.steady_step_seconds, mean_only.steady_step_seconds * 1.8, 1e-9);
  source["model"]["planned_epoch_step_train_flops"] = {1e9};
  EXPECT_EQ(predict_epochs(load_result(write("fixed.json", source)), 3, nullptr).step_model, "mean");
}

// An N-epoch run trains the first N epochs the source planned: the line is read at their mean work
// (planned epochs of 1.2, 2.0 and 1.9 GFLOP a step: 1.2 for one epoch, 1.6 for two, 1.7 for three
// or more). Its interval is the steady steps': those steps' mean work is the planned epochs' less
// the warm-up steps' (one epoch of 10 steps at 1.2 GFLOP, less two warm-up steps of 1 GFLOP:
// 1.25 GFLOP), and a time never goes below 0.
TEST_F(Analysis, PredictEpochsReadsTheFirstNPlannedEpochsAndTheSteadyStepsInterval) {
  json source = make_result("m", "h", 1.0, 1, 10, /*warmup=*/2);
  double sum = 0;
  std::vector<double> timed_flops, timed_seconds;
  for (auto& it : source["iterations"]) {
    const int step = it["step"];
    const bool warmup = it["warmup"].get<bool>();
    const double flops = warmup ? 1e9 : step % 2 == 0 ? 1e9 : 2e9;
    const double noise = (step % 3 == 0 ? 0.02 : step % 3 == 1 ? -0.015 : 0.0);
    it["train_flops"] = flops;
    it["seconds"] = warmup ? 3.0 : 0.1 + 2e-10 * flops + noise;
    sum += it["seconds"].get<double>();
    if (!warmup) {
      timed_flops.push_back(flops);
      timed_seconds.push_back(it["seconds"].get<double>());
    }
  }
  source["epochs"][0]["seconds"] = sum + 0.01;
  source["model"]["planned_epoch_step_train_flops"] = {1.2e9, 2.0e9, 1.9e9};
  const ResultFile r = load_result(write("planned.json", source));
  const auto line = fit_line(timed_flops, timed_seconds);
  ASSERT_TRUE(line);
  const std::vector<std::pair<int64_t, double>> read_at = {{1, 1.2e9}, {2, 1.6e9}, {3, 1.7e9}, {5, 1.7e9}};
  for (const auto& [epochs, flops] : read_at) {
    SCOPED_TRACE(epochs);
    const EpochPrediction p = predict_epochs(r, epochs, nullptr);
    EXPECT_EQ(p.step_model, "flops line");
    ASSERT_TRUE(p.step_train_flops);
    EXPECT_NEAR(*p.step_train_flops, flops, 1.0);
    EXPECT_NEAR(p.steady_step_seconds, line->at(flops), 1e-12);
  }
  const EpochPrediction one = predict_epochs(r, 1, nullptr);
  const auto steady_ci = line->mean_interval_95_at(1.25e9);
  ASSERT_TRUE(one.predicted_seconds_ci95);
  ASSERT_TRUE(steady_ci);
  EXPECT_NEAR(one.predicted_seconds_ci95->high - one.predicted_seconds, 8 * (steady_ci->high - line->at(1.25e9)), 1e-9);
  EXPECT_NEAR(one.predicted_seconds - one.predicted_seconds_ci95->low, 8 * (steady_ci->high - line->at(1.25e9)), 1e-9);

  // Two timed steps far apart: Student's t at 1 degree of freedom reaches below 0 seconds.
  const EpochPrediction noisy = predict_epochs(load_result(write("noisy.json", make_result("m", "h", 1.0, 1, 3, 1, 0.9))), 3, nullptr);
  ASSERT_TRUE(noisy.predicted_seconds_ci95);
  EXPECT_DOUBLE_EQ(noisy.predicted_seconds_ci95->low, 0.0);
  EXPECT_GT(noisy.predicted_seconds_ci95->high, noisy.predicted_seconds);
}

// A planned figure that is not a positive number is a broken result, named at load.
TEST_F(Analysis, PlannedEpochFlopsMustBePositive) {
  json source = make_result("m", "h", 1.0, 1, 10, /*warmup=*/2);
  source["model"]["planned_epoch_step_train_flops"] = {1e9, 0.0};
  try {
    load_result(write("zero.json", source));
    ADD_FAILURE() << "a planned epoch of no work was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/model/planned_epoch_step_train_flops/1"), std::string::npos) << e.what();
  }
  source["model"]["planned_epoch_step_train_flops"] = "many";
  EXPECT_THROW(load_result(write("text.json", source)), Error);
  source["model"]["planned_epoch_step_train_flops"] = nullptr;
  source["model"]["expected_step_train_flops"] = 0.0;  // an older result's: none planned
  EXPECT_TRUE(load_result(write("older.json", source)).planned_epoch_step_train_flops.empty());
}

// The profiler's start and stop (timing.profile_steps) are no epoch's cost: predicting more
// epochs leaves them out, and a figure that cannot be is refused naming the field.
TEST_F(Analysis, PredictEpochsLeavesTheProfilerOut) {
  json plain = make_result("m", "h", 1.0, 1, 10, /*warmup=*/2);
  json profiled = plain;
  profiled["epochs"][0]["seconds"] = profiled["epochs"][0]["seconds"].get<double>() + 3.0;
  profiled["epochs"][0]["profiler_seconds"] = 3.0;
  EXPECT_NEAR(predict_epochs(load_result(write("plain.json", plain)), 3, nullptr).predicted_seconds,
              predict_epochs(load_result(write("profiled.json", profiled)), 3, nullptr).predicted_seconds, 1e-9);
  profiled["epochs"][0]["profiler_seconds"] = 1e6;
  try {
    load_result(write("bad.json", profiled));
    ADD_FAILURE() << "a profiler longer than its epoch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/epochs/0/profiler_seconds"), std::string::npos) << e.what();
  }
}

TEST_F(Analysis, PredictTargetCalibratesOnTheMeasuredDevice) {
  const ResultFile r = load_result(write("r.json", make_result("m", "h", 0.2, 1, 10)));
  DeviceSpec target;
  target.name = "Test GPU";
  target.fp32_tflops = 10;
  target.memory_gbps = 1e6;  // effectively never memory-bound
  const TargetPrediction p = predict_target(r, target, nullptr);
  // 8 samples x 1 GFLOP = 8 GFLOP per step; source: 100 GFLOP/s peak, 0.2 s -> 40% efficiency.
  EXPECT_NEAR(p.flops_per_step, 8e9, 1);
  EXPECT_NEAR(p.source_efficiency, 0.4, 1e-9);
  EXPECT_NEAR(p.predicted_step_seconds, 8e9 / 10e12 / 0.4, 1e-12);
  EXPECT_NEAR(p.naive_step_seconds, 0.2 * 100e9 / 10e12, 1e-12);
  EXPECT_EQ(p.bound, "compute");
  target.memory_gbps = 1e-3;
  json with_bandwidth = make_result("m", "h", 0.2, 1, 10);
  with_bandwidth["summary"]["peak_bytes_per_s"] = 1e12;
  EXPECT_EQ(predict_target(load_result(write("bw.json", with_bandwidth)), target, nullptr).bound, "memory");
  target.fp16_tflops = 0;
  json fp16 = make_result("m", "h", 0.2, 1, 10);
  fp16["spec"]["precision"] = "fp16";
  EXPECT_THROW(predict_target(load_result(write("fp16.json", fp16)), target, nullptr), Error);
  // A recorded peak below what the steps did (an older CPU result's own, measured too low) would
  // calibrate above 100% and predict faster than the target's datasheet: refused.
  json low_peak = make_result("m", "h", 0.2, 1, 10);
  low_peak["summary"]["peak_flops_per_s"] = 10e9;  // 8 GFLOP in 0.2 s is 40 GFLOP/s
  testing::expect_input_error([&] { predict_target(load_result(write("low.json", low_peak)), target, nullptr); },
                              {"low.json: its steps ran at 400% of the peak it records", "too low"});
}

// Steps that recorded their FLOPs (dynamic padding, model.unpad, sparse prediction: fewer than the
// plan's figure at seq_len) calibrate with the timed steps' own mean, warm-up and profiled steps left out.
TEST_F(Analysis, PredictTargetCalibratesWithTheStepsCountedFlops) {
  json result = make_result("m", "h", 0.2, 1, 10);
  double timed_sum = 0;
  int timed = 0;
  for (std::size_t i = 0; i < result["iterations"].size(); ++i) {
    json& it = result["iterations"][i];
    const double flops = 2e9 + 1e8 * static_cast<double>(i % 4);  // below 8 samples x 1 GFLOP
    it["train_flops"] = it["warmup"].get<bool>() ? 50e9 : flops;
    if (i == 6) it["profiled"] = true;
    if (!it["warmup"].get<bool>() && i != 6) {
      timed_sum += flops;
      ++timed;
    }
  }
  DeviceSpec target;
  target.name = "Test GPU";
  target.fp32_tflops = 10;
  target.memory_gbps = 1e6;
  const TargetPrediction p = predict_target(load_result(write("counted.json", result)), target, nullptr);
  ASSERT_GT(timed, 0);
  EXPECT_NEAR(p.flops_per_step, timed_sum / timed, 1);
  EXPECT_NEAR(p.source_efficiency, p.flops_per_step / 100e9 / 0.2, 1e-9);
  // One timed step without its count: the plan's figure for every step.
  result["iterations"][8].erase("train_flops");
  EXPECT_NEAR(predict_target(load_result(write("partly.json", result)), target, nullptr).flops_per_step, 8e9, 1);
}

// An fp32 run with TF32 on used TF32's peak for its MFU; the target's TF32 peak is the one to scale to.
TEST_F(Analysis, PredictTargetUsesTheTf32PeakForTf32Runs) {
  json source = make_result("m", "h", 0.2, 1, 10);
  DeviceSpec target;
  target.name = "Test GPU";
  target.fp32_tflops = 10;
  target.tf32_tflops = 80;
  target.memory_gbps = 1e6;
  EXPECT_NEAR(predict_target(load_result(write("ieee.json", source)), target, nullptr).naive_step_seconds,
              0.2 * 100e9 / 10e12, 1e-12);
  source["spec"]["cuda"] = {{"tf32", true}};
  EXPECT_NEAR(predict_target(load_result(write("tf32.json", source)), target, nullptr).naive_step_seconds,
              0.2 * 100e9 / 80e12, 1e-12);
  // A spec file that leaves tf32_tflops out says nothing of TF32: its fp32 figure would have
  // predicted an A100 6x slow (found by an audit). Refused, naming the key; 0 says "none".
  const std::string file = dir.write("gpu.json", R"({"name": "G", "fp32_tflops": 10, "memory_gbps": 1000000})");
  testing::expect_input_error([&] { predict_target(load_result(write("tf32b.json", source)), read_device_spec(file), nullptr); },
                              {"tf32_tflops: missing"});
  const std::string none = dir.write("none.json", R"({"name": "G", "fp32_tflops": 10, "tf32_tflops": 0, "memory_gbps": 1000000})");
  EXPECT_NEAR(predict_target(load_result(write("tf32c.json", source)), read_device_spec(none), nullptr).naive_step_seconds,
              0.2 * 100e9 / 10e12, 1e-12);
  // Without the source's bandwidth the roofline is its compute side alone, and so is its bound.
  target.memory_gbps = 1e-3;
  EXPECT_EQ(predict_target(load_result(write("tf32d.json", source)), target, nullptr).bound, "compute");
}

// Where the source's bandwidth is known, the step is its compute time plus its memory time, both
// scaled by the efficiency measured on the source: H100 -> H200 (same peak, more bandwidth) is
// faster by the memory side's share, where the peak-TFLOPS ratio sees no change.
TEST_F(Analysis, PredictTargetAddsTheMemorySideWhereTheSourceBandwidthIsKnown) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  const ResultFile r = load_result(write("bw.json", source));
  const double flops = 8e9, bytes = estimate_bytes_per_step(r);
  DeviceSpec target;
  target.name = "Twice the bandwidth";
  target.fp32_tflops = 0.1;  // the source's 100 GFLOP/s
  target.memory_gbps = 2000;
  const TargetPrediction p = predict_target(r, target, nullptr);
  const double source_ideal = flops / 100e9 + bytes / 1e12;
  EXPECT_NEAR(p.source_efficiency, source_ideal / 0.4, 1e-12);
  EXPECT_NEAR(p.predicted_step_seconds, (flops / 100e9 + bytes / 2e12) / (source_ideal / 0.4), 1e-12);
  EXPECT_LT(p.predicted_step_seconds, 0.4);
  EXPECT_NEAR(p.naive_step_seconds, 0.4, 1e-12);  // same peak: the naive ratio sees no change
}

// The memory side's activations are at the padded tokens the timed steps computed: half of them
// (dynamic padding to a mean length of 8 of seq_len 16) store half the tokens, with attention's
// S x S at the shorter length; a result without per-step tokens is taken at seq_len. Under
// model.unpad the per-token part is at the real tokens the layers ran (on a GPU, attention's
// queries, keys and values at the grid's).
TEST_F(Analysis, BytesPerStepFollowTheTokensTheStepsComputed) {
  json source = make_result("m", "h", 0.4, 1, 10);
  const ResultFile full = load_result(write("full.json", source));
  for (auto& it : source["iterations"]) it["tokens"] = it["warmup"].get<bool>() ? 128 : 64;
  const ResultFile shorter = load_result(write("shorter.json", source));
  for (auto& it : source["iterations"]) it.erase("tokens");
  const ResultFile without = load_result(write("without.json", source));
  // 1e6 parameters, 2 layers of hidden 64 and 4 heads, fp32 (2 bytes a 16-bit activation, doubled).
  const double parameters = 10.0 * 4.0 * 1e6;
  const auto activations = [&](const ResultFile& r, double tokens, double length) {
    return 2.0 * 2 * tokens * 64 * (34.0 + (r.stores_attention_scores ? 5.0 * 4 * length / 64 : 0.0)) * 2.0;
  };
  EXPECT_NEAR(estimate_bytes_per_step(full), parameters + activations(full, 128, 16), 1);
  EXPECT_NEAR(estimate_bytes_per_step(shorter), parameters + activations(shorter, 64, 8), 1);
  EXPECT_NEAR(estimate_bytes_per_step(without), estimate_bytes_per_step(full), 1);
  // model.unpad: the per-token part at the real tokens' rows, the scores still at the grid's.
  for (auto& it : source["iterations"]) {
    it["tokens"] = 128;
    it["real_tokens"] = it["warmup"].get<bool>() ? 128 : 48;
  }
  source["spec"]["model"]["unpad"] = true;
  const ResultFile unpadded = load_result(write("unpadded.json", source));
  ASSERT_TRUE(unpadded.stores_attention_scores);
  const double scores = 2.0 * 2 * 128 * 64 * (5.0 * 4 * 16 / 64) * 2.0;
  EXPECT_NEAR(estimate_bytes_per_step(unpadded), parameters + 2.0 * 2 * 48 * 64 * 34.0 * 2.0 + scores, 1);
  source["spec"]["device"] = "cuda:0";  // attention on the grid: Q, K and V (6 of the 34) saved there
  EXPECT_NEAR(estimate_bytes_per_step(load_result(write("unpadded-gpu.json", source))),
              parameters + 2.0 * 2 * 64 * (28.0 * 48 + 6.0 * 128) * 2.0 + scores, 1);
  source["spec"]["device"] = "cpu";
  source["spec"]["model"]["unpad"] = false;  // padded, the real tokens are not the rows
  EXPECT_NEAR(estimate_bytes_per_step(load_result(write("padded.json", source))), estimate_bytes_per_step(full), 1);
}

// A CUDA run's profile of its steps `first`..`last`: `compute_ms` and `memory_ms` of kernel time
// in all, as profile.bounds records it.
json device_profile(int first, int last, double compute_ms, double memory_ms) {
  return {{"steps", {first, last}}, {"measures", "device kernels"}, {"measured_ms", compute_ms + memory_ms},
          {"bounds", {{{"name", "compute"}, {"calls", 10}, {"ms", compute_ms}, {"share", 0.5}},
                      {{"name", "memory"}, {"calls", 30}, {"ms", memory_ms}, {"share", 0.5}}}}};
}

// With a kernel profile, each part of the measured step scales by its own ratio: compute kernels
// by peak FLOPs, memory kernels by bandwidth, and the device's idle time (the host launching
// kernels) not at all. The roofline's figure is still reported beside it.
TEST_F(Analysis, PredictTargetScalesTheProfiledKernelsByTheirOwnRatios) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"] = device_profile(9, 10, 400, 200);  // per step: 0.2 s compute, 0.1 s memory, so 0.1 s idle
  const ResultFile r = load_result(write("profiled.json", source));
  DeviceSpec target;
  target.name = "Four times the FLOPs and the bandwidth";
  target.fp32_tflops = 0.4;
  target.memory_gbps = 4000;
  const TargetPrediction p = predict_target(r, target, nullptr);
  EXPECT_EQ(p.method, "kernel profile");
  ASSERT_TRUE(p.source_parts && p.target_parts);
  EXPECT_NEAR(p.source_parts->held, 0.1, 1e-12);
  EXPECT_NEAR(p.target_parts->compute, 0.05, 1e-12);
  EXPECT_NEAR(p.target_parts->memory, 0.025, 1e-12);
  EXPECT_NEAR(p.target_parts->held, 0.1, 1e-12);
  EXPECT_NEAR(p.predicted_step_seconds, 0.175, 1e-12);
  EXPECT_EQ(p.bound, "host");  // the idle time is now the largest part
  EXPECT_NEAR(p.naive_step_seconds, 0.1, 1e-12);  // four times the peak: a quarter of the step
  // The roofline would scale the whole step, idle time included.
  EXPECT_NEAR(p.roofline_step_seconds, 0.1, 1e-12);
  EXPECT_NEAR(p.predicted_epoch_seconds, 10 * 0.175, 1e-12);
  // If the host's 0.4 s of launching bounds the step, faster kernels do not shorten it.
  ASSERT_TRUE(p.overlapped_step_seconds);
  EXPECT_NEAR(*p.overlapped_step_seconds, 0.4, 1e-12);

  // Scored against a run on the target: the errors of all three.
  json on_target = make_result("m", "h2", 0.2, 1, 10);
  on_target["spec"]["device"] = "cuda";
  const ResultFile actual = load_result(write("actual.json", on_target));
  const TargetPrediction scored = predict_target(r, target, &actual);
  EXPECT_NEAR(*scored.error_pct, -12.5, 1e-9);
  EXPECT_NEAR(*scored.roofline_error_pct, -50, 1e-9);
  EXPECT_NEAR(*scored.naive_error_pct, -50, 1e-9);
  EXPECT_NEAR(*scored.overlapped_error_pct, 100, 1e-9);
}

// Slower kernels on the target: the additive prediction adds them to the idle time, the overlapped
// one lets them fill it first, and only their excess over the measured step lengthens it.
TEST_F(Analysis, PredictTargetOverlapsSlowerKernelsWithTheHostsIdleTimeAsTheOtherHypothesis) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"] = device_profile(9, 10, 400, 200);  // per step: 0.2 s compute, 0.1 s memory, 0.1 s idle
  DeviceSpec slower_memory;
  slower_memory.name = "The same FLOPs, a quarter of the bandwidth";
  slower_memory.fp32_tflops = 0.1;
  slower_memory.memory_gbps = 250;
  const TargetPrediction p = predict_target(load_result(write("profiled.json", source)), slower_memory, nullptr);
  EXPECT_NEAR(p.predicted_step_seconds, 0.2 + 0.4 + 0.1, 1e-12);
  ASSERT_TRUE(p.overlapped_step_seconds);
  EXPECT_NEAR(*p.overlapped_step_seconds, 0.6, 1e-12);  // max(0.4 measured, 0.2 + 0.4 of kernels)
  DeviceSpec a_little_slower = slower_memory;
  a_little_slower.memory_gbps = 800;  // memory kernels 0.125 s: they fit in the idle time
  const TargetPrediction q = predict_target(load_result(write("profiled.json", source)), a_little_slower, nullptr);
  EXPECT_NEAR(*q.overlapped_step_seconds, 0.4, 1e-12);
  EXPECT_NEAR(q.predicted_step_seconds, 0.425, 1e-12);
}

// Dynamic padding: the profiled steps ran half the timed steps' tokens, so their kernels stand
// for twice their time in a timed step (the same split as the test above, from half the kernels).
TEST_F(Analysis, PredictTargetScalesTheProfiledKernelsToTheTimedStepsTokens) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"] = device_profile(9, 10, 200, 100);
  for (const int i : {8, 9}) {
    source["iterations"][i]["profiled"] = true;
    source["iterations"][i]["tokens"] = 64;  // the others ran 128
  }
  DeviceSpec target;
  target.name = "Four times the FLOPs and the bandwidth";
  target.fp32_tflops = 0.4;
  target.memory_gbps = 4000;
  const TargetPrediction p = predict_target(load_result(write("short-profile.json", source)), target, nullptr);
  ASSERT_TRUE(p.source_parts);
  EXPECT_NEAR(p.source_parts->compute, 0.2, 1e-12);
  EXPECT_NEAR(p.source_parts->memory, 0.1, 1e-12);
  EXPECT_NEAR(p.predicted_step_seconds, 0.175, 1e-12);

  // Results that do not say how many tokens a step ran keep the profiled steps' kernel time.
  for (auto& it : source["iterations"]) it.erase("tokens");
  const TargetPrediction unscaled = predict_target(load_result(write("no-tokens.json", source)), target, nullptr);
  EXPECT_NEAR(unscaled.source_parts->compute, 0.1, 1e-12);
}

// Kernels that add up to more than the mean step (streams overlapping, or steps the profiler
// slowed) give the split, not the time: the parts still add up to the measured step.
TEST_F(Analysis, PredictTargetKeepsTheMeasuredStepWhenKernelsOverlap) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"] = device_profile(10, 10, 450, 150);  // 0.6 s of kernels in a 0.4 s step
  DeviceSpec same;
  same.name = "The same GPU";
  same.fp32_tflops = 0.1;
  same.memory_gbps = 1000;
  const TargetPrediction p = predict_target(load_result(write("overlap.json", source)), same, nullptr);
  EXPECT_NEAR(p.source_parts->compute, 0.3, 1e-12);
  EXPECT_NEAR(p.source_parts->memory, 0.1, 1e-12);
  EXPECT_NEAR(p.source_parts->held, 0.0, 1e-12);
  EXPECT_NEAR(p.predicted_step_seconds, 0.4, 1e-12);  // the same GPU: the same step
}

// Without the source's bandwidth the memory kernels cannot be scaled: the roofline predicts, and a
// host profile (CPU operators) is no kernel split.
TEST_F(Analysis, PredictTargetFallsBackToTheRooflineWithoutAKernelSplit) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["profile"] = device_profile(9, 10, 400, 200);
  DeviceSpec target;
  target.name = "Test GPU";
  target.fp32_tflops = 0.2;
  target.memory_gbps = 2000;
  const TargetPrediction no_bandwidth = predict_target(load_result(write("nobw.json", source)), target, nullptr);
  EXPECT_EQ(no_bandwidth.method, "roofline");
  EXPECT_FALSE(no_bandwidth.source_parts);
  EXPECT_EQ(no_bandwidth.predicted_step_seconds, no_bandwidth.roofline_step_seconds);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"]["measures"] = "host operators, self time";
  EXPECT_EQ(predict_target(load_result(write("host.json", source)), target, nullptr).method, "roofline");
  // A device profile that caught no kernels (no CUPTI) splits nothing either.
  source["profile"] = device_profile(9, 10, 0, 0);
  source["profile"]["bounds"] = json::array();
  EXPECT_EQ(predict_target(load_result(write("empty.json", source)), target, nullptr).method, "roofline");
}

TEST_F(Analysis, LoadRejectsAKernelSplitItCannotRead) {
  const auto expect_error = [&](json profile, const std::string& fragment) {
    json source = make_result("m", "h", 0.4, 1, 10);
    source["profile"] = std::move(profile);
    try {
      load_result(write("bad.json", source));
      ADD_FAILURE() << "accepted a profile without " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  json profile = device_profile(9, 10, 400, 200);
  profile["bounds"][1]["name"] = "disk";
  expect_error(profile, "/profile/bounds/1/name");
  profile = device_profile(9, 10, 400, -1);
  expect_error(profile, "/profile/bounds/1/ms");
  profile = device_profile(9, 10, 400, 200);
  profile["steps"] = {10, 9};
  expect_error(profile, "/profile/steps/1");
  profile.erase("steps");
  expect_error(profile, "/profile/steps");
  profile = device_profile(9, 10, 400, 200);
  profile["bounds"] = "compute";
  expect_error(profile, "/profile/bounds");
  profile = device_profile(9, 10, 400, 200);
  profile["bounds"][0]["calls"] = -3;
  expect_error(profile, "/profile/bounds/0/calls");
}

// The kernels a profiled step launched: every bound's calls over the profiled steps, whatever the
// tokens (a shorter batch runs the same kernels); none where an entry does not count its calls.
TEST_F(Analysis, LoadCountsTheKernelsAProfiledStepLaunched) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["profile"] = device_profile(9, 10, 400, 200);  // 10 + 30 calls over 2 steps
  source["profile"]["bounds"].push_back({{"name", "communication"}, {"calls", 4}, {"ms", 1.0}, {"share", 0.0}});
  source["iterations"][8]["tokens"] = 64;
  const ResultFile r = load_result(write("counted.json", source));
  ASSERT_TRUE(r.kernel_launches_per_step);
  EXPECT_DOUBLE_EQ(*r.kernel_launches_per_step, 22.0);
  source["profile"]["bounds"][1].erase("calls");
  const ResultFile uncounted = load_result(write("uncounted.json", source));
  EXPECT_TRUE(uncounted.kernel_seconds_per_step);
  EXPECT_FALSE(uncounted.kernel_launches_per_step);
}

// A single-process eager CUDA run of `step_seconds` a step whose profile holds `compute_ms` and
// `memory_ms` of kernels over its last 2 steps, which launched 20 kernels each: what
// --target-host times a machine's host on.
json cuda_run(double step_seconds, double compute_ms, double memory_ms) {
  json run = make_result("other-model", "target-host", step_seconds, 1, 10);
  run["spec"]["device"] = "cuda:0";
  run["summary"]["peak_bytes_per_s"] = 1e12;
  run["profile"] = device_profile(9, 10, compute_ms, memory_ms);
  return run;
}

// The source of the predictions below: a 0.4 s step whose last 2 steps' profile holds `compute_ms`
// and `memory_ms` of kernels, with the bandwidth its memory kernels scale by.
json profiled_source(double compute_ms, double memory_ms) {
  json source = make_result("m", "h", 0.4, 1, 10);
  source["summary"]["peak_bytes_per_s"] = 1e12;
  source["profile"] = device_profile(9, 10, compute_ms, memory_ms);
  return source;
}

DeviceSpec gpu_spec(const std::string& name, double fp32_tflops, double memory_gbps) {
  DeviceSpec spec;
  spec.name = name;
  spec.fp32_tflops = fp32_tflops;
  spec.memory_gbps = memory_gbps;
  return spec;
}

// A step its host held lasts as long as its launching: the target's host, timed on runs on it
// (the median of their step over their launches), launches the source's kernels at its own pace,
// and the step is the larger of that and the target GPU's kernels.
TEST_F(Analysis, PredictTargetPacesTheStepByTheTargetsHost) {
  // 0.2 + 0.1 s of kernels: held 25 %, its host's.
  const ResultFile r = load_result(write("source.json", profiled_source(400, 200)));
  ASSERT_NEAR(*host_held_share(r), 0.25, 1e-12);
  const DeviceSpec target = gpu_spec("Four times the FLOPs and the bandwidth", 0.4, 4000);
  // Three runs on the target, each held by its host (0.1 s of kernels a step), whose 20 launches
  // a step took 0.2, 0.3 and 2 s: 10, 15 and 100 ms a launch, 15 the median.
  const ResultFile a = load_result(write("a.json", cuda_run(0.2, 100, 100)));
  const ResultFile b = load_result(write("b.json", cuda_run(0.3, 100, 100)));
  const ResultFile c = load_result(write("c.json", cuda_run(2.0, 100, 100)));
  const HostPace slow = measure_host_pace({&a, &b, &c});
  EXPECT_NEAR(slow.seconds_per_launch, 0.015, 1e-12);
  EXPECT_EQ(slow.from, (std::vector<std::string>{a.path, b.path, c.path}));
  ASSERT_EQ(slow.by_run.size(), 3u);
  EXPECT_NEAR(slow.by_run[2], 0.1, 1e-12);

  const TargetPrediction p = predict_target(r, target, nullptr, &slow);
  EXPECT_EQ(p.method, "kernel profile + target host");
  ASSERT_TRUE(p.launches_per_step && p.target_host_step_seconds && p.target_device_step_seconds);
  EXPECT_DOUBLE_EQ(*p.launches_per_step, 20.0);
  EXPECT_NEAR(*p.target_host_step_seconds, 0.3, 1e-12);
  EXPECT_NEAR(*p.target_device_step_seconds, 0.075, 1e-12);  // its kernels; the held time was the host's
  EXPECT_NEAR(p.predicted_step_seconds, 0.3, 1e-12);
  EXPECT_EQ(p.bound, "host");
  EXPECT_NEAR(*p.source_seconds_per_launch, 0.02, 1e-12);  // 0.4 s over 20 launches
  EXPECT_NEAR(p.predicted_epoch_seconds, 10 * 0.3, 1e-12);

  // A host quick enough leaves the GPU's kernels to set the step.
  const ResultFile quick = load_result(write("quick.json", cuda_run(0.02, 5, 5)));  // 1 ms a launch
  const HostPace quick_pace = measure_host_pace({&quick});
  const TargetPrediction fast = predict_target(r, target, nullptr, &quick_pace);
  EXPECT_NEAR(fast.predicted_step_seconds, 0.075, 1e-12);
  EXPECT_EQ(fast.bound, "compute");

  // Scored: its error, and the kernel profile's with the source's host beside it.
  json on_target = make_result("m", "h2", 0.25, 1, 10);
  on_target["spec"]["device"] = "cuda";
  const ResultFile actual = load_result(write("actual.json", on_target));
  const TargetPrediction scored = predict_target(r, target, &actual, &slow);
  EXPECT_NEAR(*scored.error_pct, 20, 1e-9);
  EXPECT_NEAR(*scored.additive_error_pct, -30, 1e-9);  // 0.175 s with the source's host
  EXPECT_FALSE(predict_target(r, target, &actual).additive_error_pct);
}

// A step the GPU bounds keeps the gaps between its kernels on the target: its held time is the
// GPU's, not its host's. The less the GPU bounded it, the less of that time counts as gaps, down
// to none where its host held it (kHostHeldShare), so the prediction moves smoothly across.
TEST_F(Analysis, PredictTargetWithTheTargetsHostKeepsAGpuBoundStepsGaps) {
  const DeviceSpec same = gpu_spec("The same GPU", 0.1, 1000);
  const ResultFile on_target = load_result(write("t.json", cuda_run(0.2, 100, 100)));
  const HostPace pace = measure_host_pace({&on_target});  // 10 ms a launch: 0.2 s for 20
  const auto predicted = [&](double compute_ms, double memory_ms) {
    return predict_target(load_result(write("source.json", profiled_source(compute_ms, memory_ms))), same, nullptr,
                          &pace);
  };
  const TargetPrediction busy = predicted(700, 60);  // 0.35 + 0.03 s of kernels: held 0.02 s, 5 %
  EXPECT_NEAR(*busy.target_device_step_seconds, 0.38 + 0.02 * 0.75, 1e-12);  // three quarters of it gaps
  EXPECT_NEAR(busy.predicted_step_seconds, 0.395, 1e-12);
  EXPECT_EQ(busy.bound, "compute");
  EXPECT_FALSE(busy.source_seconds_per_launch);  // its host did not hold it: its step does not time it
  const TargetPrediction idle = predicted(800, 0);  // no time held
  EXPECT_NEAR(idle.predicted_step_seconds, 0.4, 1e-12);
  // 19 % and 21 % held: 0.324 and 0.316 s of kernels, gaps of 5 % of 0.076 s and none.
  const TargetPrediction below = predicted(600, 48), above = predicted(600, 32);
  EXPECT_NEAR(below.predicted_step_seconds, 0.324 + 0.076 * 0.05, 1e-12);
  EXPECT_NEAR(above.predicted_step_seconds, 0.316, 1e-12);
  EXPECT_TRUE(above.source_seconds_per_launch);
}

// A data-parallel source keeps its all-reduce waits on the target's GPU, whichever host held it:
// they are the network's, not the host's.
TEST_F(Analysis, PredictTargetWithTheTargetsHostKeepsTheAllReduceWaits) {
  json source = profiled_source(300, 100);  // 0.15 + 0.05 s of kernels; held 0.2 s, 0.1 s the host's
  source["summary"]["comm_share"] = 0.25;   // 0.1 s a step waiting for all-reduces
  source["dist"] = {{"world_size", 2}};
  const ResultFile r = load_result(write("dp.json", source));
  EXPECT_NEAR(*host_held_share(r), 0.25, 1e-12);
  const DeviceSpec same = gpu_spec("The same GPU", 0.1, 1000);
  const ResultFile quick = load_result(write("quick.json", cuda_run(0.02, 5, 5)));  // 1 ms a launch
  const HostPace pace = measure_host_pace({&quick});
  const TargetPrediction p = predict_target(r, same, nullptr, &pace);
  EXPECT_NEAR(*p.target_host_step_seconds, 0.02, 1e-12);
  EXPECT_NEAR(*p.target_device_step_seconds, 0.3, 1e-12);  // kernels and all-reduce waits
  EXPECT_NEAR(p.predicted_step_seconds, 0.3, 1e-12);
}

// A run that cannot time its host's launching is refused by name, and so is a source whose step
// no host launches kernel by kernel, or whose launches are unknown.
TEST_F(Analysis, TargetHostRefusesRunsThatDoNotTimeTheirHost) {
  using testing::expect_input_error;
  const auto refused = [&](json run, const std::vector<std::string>& why) {
    const ResultFile bad = load_result(write("bad.json", run));
    expect_input_error([&] { measure_host_pace({&bad}); }, why);
  };
  const json good = cuda_run(0.2, 100, 100);
  json cpu = good;
  cpu["spec"]["device"] = "cpu";
  refused(cpu, {"bad.json", "ran on cpu"});
  json graphed = good;
  graphed["spec"]["train"]["cuda_graph"] = true;
  refused(graphed, {"bad.json", "CUDA graph (spec.train.cuda_graph)"});
  json parallel = good;
  parallel["dist"] = {{"world_size", 2}};
  refused(parallel, {"bad.json", "data-parallel (dist.world_size 2)"});
  json none_counted = good;
  for (auto& bound : none_counted["profile"]["bounds"]) bound["calls"] = 0;
  refused(none_counted, {"bad.json", "counted no kernel launches"});
  json unprofiled = good;
  unprofiled.erase("profile");
  refused(unprofiled, {"bad.json", "no kernel profile"});
  json uncounted = good;
  for (auto& bound : uncounted["profile"]["bounds"]) bound.erase("calls");
  refused(uncounted, {"bad.json", "counts its launches"});
  refused(cuda_run(0.2, 300, 92), {"bad.json", "waited for the host 2% of the step", "the GPU set its pace"});
  expect_input_error([] { measure_host_pace({}); }, {"--target-host"});

  const ResultFile on_target = load_result(write("t.json", good));
  const HostPace pace = measure_host_pace({&on_target});
  const DeviceSpec target = gpu_spec("Test GPU", 0.2, 2000);
  const json source = profiled_source(400, 200);
  json replayed = source;
  replayed["spec"]["train"]["cuda_graph"] = true;
  expect_input_error([&] { predict_target(load_result(write("graph.json", replayed)), target, nullptr, &pace); },
                     {"graph.json", "CUDA graph", "--target-host"});
  json no_profile = source;
  no_profile.erase("profile");
  expect_input_error([&] { predict_target(load_result(write("plain.json", no_profile)), target, nullptr, &pace); },
                     {"plain.json", "counts its launches"});
  json no_bandwidth = source;
  no_bandwidth["summary"].erase("peak_bytes_per_s");
  expect_input_error([&] { predict_target(load_result(write("nobw.json", no_bandwidth)), target, nullptr, &pace); },
                     {"nobw.json", "peak_bytes_per_s"});
}

// SDPA's kernels recompute attention's [S, S] scores in backward instead of storing them.
TEST_F(Analysis, FusedAttentionMovesFewerActivationBytes) {
  json eager = make_result("m", "h", 0.4, 1, 10);
  eager["spec"]["model"]["attention"] = "eager";
  json sdpa = eager;
  sdpa["spec"]["model"]["attention"] = "sdpa";
  EXPECT_GT(estimate_bytes_per_step(load_result(write("eager.json", eager))),
            estimate_bytes_per_step(load_result(write("sdpa.json", sdpa))));
  sdpa["model"]["arch"] = "xlnet";  // XLNet's attention is eager whatever the spec says
  EXPECT_EQ(estimate_bytes_per_step(load_result(write("eager.json", eager))),
            estimate_bytes_per_step(load_result(write("xlnet.json", sdpa))));
}

TEST(Hardware, FindsGpusByNameAndAsCudaReportsThem) {
  EXPECT_EQ(find_gpu("H100")->name, "H100 SXM");
  EXPECT_EQ(find_gpu("NVIDIA H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_EQ(find_gpu("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(find_gpu("NVIDIA H100 NVL")->name, "H100 NVL");
  EXPECT_EQ(find_gpu("NVIDIA H200")->name, "H200 SXM");
  EXPECT_EQ(find_gpu("NVIDIA H200 NVL")->name, "H200 NVL");
  EXPECT_EQ(find_gpu("NVIDIA A100-SXM4-80GB")->name, "A100 SXM 80GB");
  // The 40 GB cards had the 80 GB card's 2039 GB/s (found by review): 1555.
  EXPECT_EQ(find_gpu("NVIDIA A100-SXM4-40GB")->name, "A100 40GB");
  EXPECT_DOUBLE_EQ(find_gpu("NVIDIA A100-PCIE-40GB")->memory_gbps, 1555);
  EXPECT_DOUBLE_EQ(find_gpu("NVIDIA A100 80GB PCIe")->memory_gbps, 1935);
  EXPECT_DOUBLE_EQ(find_gpu("A100")->memory_gbps, 2039);
  EXPECT_EQ(find_gpu("NVIDIA A10")->name, "A10");
  EXPECT_EQ(find_gpu("Tesla V100-SXM2-16GB")->name, "V100 SXM2");
  EXPECT_EQ(find_gpu("NVIDIA GeForce RTX 3090")->name, "RTX 3090");
  EXPECT_FALSE(find_gpu("Radeon 7900").has_value());
  EXPECT_DOUBLE_EQ(peak_tflops(*find_gpu("V100"), "bf16"), 0.0);
  EXPECT_DOUBLE_EQ(peak_tflops(*find_gpu("T4"), "fp16"), 65.0);
}

TEST(Hardware, DeviceSpecFilesAreChecked) {
  testing::ScratchDir dir;
  const auto good = dir.write("g.json", R"({"name": "X", "fp32_tflops": 10, "fp16_tflops": 100, "memory_gbps": 500})");
  EXPECT_DOUBLE_EQ(read_device_spec(good).fp16_tflops, 100);
  const auto bad = dir.write("b.json", R"({"name": "X", "fp32_tflops": "ten", "memory_gbps": 500})");
  try {
    read_device_spec(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp32_tflops"), std::string::npos);
  }
  // A bandwidth of 0 would predict an infinite step; a missing tensor mode (0) is allowed.
  const auto no_bandwidth = dir.write("z.json", R"({"name": "X", "fp32_tflops": 10, "fp16_tflops": 0, "memory_gbps": 0})");
  try {
    read_device_spec(no_bandwidth);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("memory_gbps: expected a number from 1 to 1000000 (GB/s), got 0"), std::string::npos)
        << e.what();
  }
  // A slip of units would predict steps of nanoseconds or centuries; a result is not a device spec.
  const auto refused = [&](const std::string& name, const std::string& text, const std::string& fragment) {
    try {
      read_device_spec(dir.write(name, text));
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << name;
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << name << ": " << e.what();
    }
  };
  refused("tiny.json", R"({"name": "X", "fp32_tflops": 1e-300, "memory_gbps": 500})", "fp32_tflops: expected a number from 0.001");
  refused("flops.json", R"({"name": "X", "fp32_tflops": 67e12, "memory_gbps": 500})", "fp32_tflops");
  refused("bytes.json", R"({"name": "X", "fp32_tflops": 67, "memory_gbps": 3.35e12})", "memory_gbps");
  refused("mode.json", R"({"name": "X", "fp32_tflops": 67, "bf16_tflops": 1e9, "memory_gbps": 3350})", "bf16_tflops");
  refused("result.json", R"({"schema": "tbench.result/1", "summary": {}})", "a tbench result, not a device spec");
  refused("list.json", "[1, 2]", "expected a device spec object");
}

}  // namespace
}  // namespace tbench
