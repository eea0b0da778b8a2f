// End-to-end analysis: real runs at 1 and 2 threads, then report / compare / predict on them,
// and the HTML report rendered in headless Chromium.
#include <cmath>

#include <gtest/gtest.h>

#include <filesystem>

#include "support/cli.hpp"

namespace tbench {
namespace {

using testing::run_tbench;

class AnalysisCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScratchDir();
    for (int threads : {1, 2}) {
      auto spec = testing::tiny_spec(dir_->file("t" + std::to_string(threads) + ".json"));
      spec["threads"] = threads;
      spec["data"]["seq_len"] = 64;
      spec["timing"]["cpu_peak_probe"] = true;  // real runs' peaks: MFU and predict --target read them
      const auto path = dir_->write("spec" + std::to_string(threads) + ".json", spec.dump());
      const auto r = run_tbench("run -q " + path);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string result(int threads) { return dir_->file("t" + std::to_string(threads) + ".json"); }
  static testing::ScratchDir* dir_;
};

testing::ScratchDir* AnalysisCli::dir_ = nullptr;

// Another run of the same setting: `result` with every step `factor` times as long.
nlohmann::json with_steps_scaled(nlohmann::json result, double factor) {
  for (auto& it : result["iterations"]) it["seconds"] = it["seconds"].get<double>() * factor;
  return result;
}

TEST_F(AnalysisCli, CompareReportsTheRatioWithItsInterval) {
  const auto r = run_tbench("compare " + result(1) + " " + result(2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("B/A throughput"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("95% CI"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Settings that differ (A -> B):\n  threads: 1 -> 2\n"), std::string::npos) << r.out;
  // A second run of the same spec (its steps 4% faster), and not the run against itself: that
  // would score 1.000x, "no significant difference", for nothing.
  const std::string rerun = dir_->write("t1-again.json", with_steps_scaled(testing::read_json(result(1)), 0.96).dump());
  EXPECT_NE(run_tbench("compare " + result(1) + " " + rerun).out.find("Settings: the same spec"), std::string::npos);
  const auto itself = run_tbench("compare " + result(1) + " " + result(1));
  EXPECT_EQ(itself.exit_code, 2);
  EXPECT_NE(itself.err.find(result(1) + " is given twice"), std::string::npos) << itself.err;
  const auto against_vs = run_tbench("compare " + result(1) + " --vs " + result(1));
  EXPECT_EQ(against_vs.exit_code, 2) << against_vs.err;
  const auto j = nlohmann::json::parse(run_tbench("compare --json " + result(1) + " " + result(2)).out);
  EXPECT_EQ(j["differences"], nlohmann::json::parse(R"([{"field": "threads", "a": 1, "b": 2}])"));
  // A field an older result lacks is "(not recorded)", not a null it chose.
  auto older = testing::read_json(result(1));
  older["spec"]["train"].erase("cuda_graph");
  const std::string older_path = dir_->write("older.json", older.dump());
  const auto lacking = run_tbench("compare " + older_path + " " + result(1));
  EXPECT_NE(lacking.out.find("  train.cuda_graph: (not recorded) -> false\n"), std::string::npos) << lacking.out << lacking.err;
  const auto lacking_json = nlohmann::json::parse(run_tbench("compare --json " + older_path + " " + result(1)).out);
  EXPECT_EQ(lacking_json["differences"],
            nlohmann::json::parse(R"([{"field": "train.cuda_graph", "a": null, "b": false, "a_recorded": false}])"));
  EXPECT_GT(j["ratio"].get<double>(), 0);
  EXPECT_LE(j["ci95"][0].get<double>(), j["ratio"].get<double>());
  EXPECT_GE(j["ci95"][1].get<double>(), j["ratio"].get<double>());
  for (const char* side : {"a", "b"}) {  // what each side's steps were worth as independent ones
    const std::string s = side;
    EXPECT_GE(j[s + "_effective_steps"].get<double>(), 2) << j.dump();
    EXPECT_LE(j[s + "_effective_steps"].get<double>(), j[s + "_steps"].get<double>()) << j.dump();
    EXPECT_TRUE(j.contains(s + "_step_lag1_autocorrelation")) << j.dump();
    EXPECT_TRUE(j[s + "_device_idle_at_start_fraction"].is_null()) << "CPU runs have no host pace: " << j.dump();
  }
  // A CUDA side whose GPU waited for the host before most steps is named host-paced.
  auto paced = testing::read_json(result(2));
  paced["summary"]["device_idle_at_start_fraction"] = 0.95;
  const auto text = run_tbench("compare " + result(1) + " " + dir_->write("paced.json", paced.dump()));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("host-paced: the GPU had run all queued work before 95% of its steps began"),
            std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("host-paced"), text.out.rfind("host-paced")) << "only side B is: " << text.out;
  EXPECT_GT(text.out.find("host-paced"), text.out.find("\nB: ")) << "side B is: " << text.out;
  // A side whose CPU peak probes before and after its epochs lie far apart ran on a machine whose
  // speed moved: compare says so under that side.
  auto moved = testing::read_json(result(2));
  moved["summary"]["peak_probes_flops_per_s"] = {32e9, 64e9};
  const auto drifted = run_tbench("compare " + result(1) + " " + dir_->write("moved.json", moved.dump()));
  ASSERT_EQ(drifted.exit_code, 0) << drifted.err;
  const auto said = drifted.out.find("the machine's speed moved during the run: its CPU peak probes before and after "
                                     "the epochs gave 32.0 and 64.0 GFLOP/s, 100% apart");
  EXPECT_NE(said, std::string::npos) << drifted.out;
  EXPECT_GT(said, drifted.out.find("\nB: ")) << "side B's: " << drifted.out;
  auto steady_run = moved;
  steady_run["summary"]["peak_probes_flops_per_s"] = {60e9, 62e9};  // 3 % apart: nothing to say
  const auto steady = run_tbench("compare " + result(1) + " " + dir_->write("steady.json", steady_run.dump()));
  EXPECT_EQ(steady.out.find("probes before and after the epochs gave 60.0"), std::string::npos) << steady.out;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(run_tbench("compare --json " + result(1) + " " +
                                                    dir_->write("moved.json", moved.dump())).out)["b_peak_probe_spread"]
                       .get<double>(),
                   1.0);
}

// Repeats on each side (`A... --vs B...`): the interval from the runs' spread; the sides' runs are
// named, and runs that are not repeats of one setting are flagged. Without --vs, exactly two.
TEST_F(AnalysisCli, CompareTakesRepeatsOnEachSide) {
  // A second run of each setting: the same run 4% slower, as a drifting machine would give.
  const auto slower = [&](int threads) {
    return dir_->write("t" + std::to_string(threads) + "-slower.json",
                       with_steps_scaled(testing::read_json(result(threads)), 1.04).dump());
  };
  const std::string a2 = slower(1), b2 = slower(2);
  const auto r = run_tbench("compare --json " + result(1) + " " + a2 + " --vs " + result(2) + " " + b2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["a_runs"], 2);
  EXPECT_EQ(j["a_basis"], "repeats");
  EXPECT_EQ(j["b_files"].size(), 2u);
  EXPECT_NEAR(j["a_runs_cv_pct"].get<double>(), 100 * 0.04 / 2.04 * std::sqrt(2.0), 1e-6);
  EXPECT_TRUE(j["a_effective_steps"].is_null());
  ASSERT_TRUE(j["ci95"].is_array()) << r.out;
  const auto text = run_tbench("compare " + result(1) + " " + a2 + " --vs " + result(2) + " " + b2);
  EXPECT_NE(text.out.find("and 1 more run(s) of it"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the mean of 2 runs (their spread"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("repeat the runs"), std::string::npos) << text.out;  // the advice is for single runs
  EXPECT_NE(run_tbench("compare " + result(1) + " " + result(2)).out.find("repeat the runs"), std::string::npos);

  const auto mixed = run_tbench("compare " + result(1) + " " + result(2) + " --vs " + b2);
  EXPECT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("A's 2 runs differ in threads"), std::string::npos) << mixed.err;
  // Runs of another model are no repeats at all: their mean would be neither model's speed.
  auto other_model = testing::read_json(a2);
  other_model["model"]["name"] = "tiny-distilbert";
  const auto distil = dir_->write("t1-distil.json", other_model.dump());
  const auto unlike = run_tbench("compare " + result(1) + " " + distil + " --vs " + result(2) + " " + b2);
  EXPECT_EQ(unlike.exit_code, 2);
  EXPECT_NE(unlike.err.find("A's 2 runs train different work (they differ in model)"), std::string::npos)
      << unlike.err;
  const auto three = run_tbench("compare " + result(1) + " " + a2 + " " + result(2));
  EXPECT_EQ(three.exit_code, 2);
  EXPECT_NE(three.err.find("give two results (A B), or A's runs, then --vs and B's runs"), std::string::npos) << three.err;
  const auto one = run_tbench("compare " + result(1));
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("got 1 result(s) and no --vs"), std::string::npos) << one.err;
  EXPECT_EQ(run_tbench("compare " + result(1) + " --vs").exit_code, 2);
  // One run given twice is not two repeats: its copies have no spread.
  const auto twice = run_tbench("compare " + result(1) + " " + result(1) + " --vs " + result(2) + " " + b2);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("is given twice"), std::string::npos) << twice.err;
  // Nor is a copy of it under another name.
  const auto copy = dir_->write("t1-copy.json", testing::read_json(result(1)).dump());
  const auto copied = run_tbench("compare " + result(1) + " " + copy + " --vs " + result(2) + " " + b2);
  EXPECT_EQ(copied.exit_code, 2);
  EXPECT_NE(copied.err.find(copy + " holds the same run as " + result(1)), std::string::npos) << copied.err;
}

TEST_F(AnalysisCli, ReportRendersEveryFormat) {
  const std::string both = result(1) + " " + result(2);
  const auto table = run_tbench("report --by threads " + both);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("1 thread"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("2 threads"), std::string::npos) << table.out;
  EXPECT_NE(run_tbench("report --format markdown --by threads " + both).out.find("| **tiny-bert** |"), std::string::npos);
  EXPECT_NE(run_tbench("report --format csv --by threads " + both).out.find("tiny-bert,2 threads,1,"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(run_tbench("report --format json --by threads " + both).out)["rows"].size(), 2u);
  const auto bad = run_tbench("report --format pdf " + both);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--format"), std::string::npos);

  // -o: a new folder is made; a result it reads, or a folder, is refused before anything is written.
  const std::string written = dir_->file("tables/report.md");
  const auto to_file = run_tbench("report --format markdown --by threads -o " + written + " " + both);
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_NE(testing::read_text(written).find("| **tiny-bert** |"), std::string::npos);
  const std::string victim = dir_->write("victim.json", testing::read_text(result(1)));
  const auto onto_input = run_tbench("report " + victim + " -o " + victim);
  EXPECT_EQ(onto_input.exit_code, 2);
  EXPECT_NE(onto_input.err.find("a file this command reads"), std::string::npos) << onto_input.err;
  EXPECT_EQ(testing::read_text(victim), testing::read_text(result(1))) << "the result was overwritten";
  const auto onto_folder = run_tbench("report " + both + " -o " + dir_->file("tables"));
  EXPECT_EQ(onto_folder.exit_code, 2);
  EXPECT_NE(onto_folder.err.find("is a directory"), std::string::npos) << onto_folder.err;
  // A command that fails on bad input makes no folder for its output.
  const auto bad_input = run_tbench("report " + dir_->write("cut-short.json", "{") + " -o " + dir_->file("never/x.md"));
  EXPECT_EQ(bad_input.exit_code, 2) << bad_input.err;
  EXPECT_FALSE(std::filesystem::exists(dir_->file("never")));
}

std::string find_chromium() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

TEST_F(AnalysisCli, HtmlReportDrawsItsChartsInABrowser) {
  // The 2-thread run as a GPU run would write it: its cell also shows the power and energy.
  auto measured = testing::read_json(result(2));
  measured["summary"]["gpu_power_w_mean"] = 421.6;
  measured["summary"]["gpu_energy_j_per_sample"] = 1.234;
  const std::string with_power = dir_->write("t2-power.json", measured.dump());
  const std::string html = dir_->file("report.html");
  const auto r = run_tbench("report --format html --by threads -o " + html + " " + result(1) + " " + with_power);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no Chromium installed (scripts/test installs it); HTML not rendered";
  const std::string dom = dir_->file("dom.html");
  const std::string command = chromium + " --headless --no-sandbox --disable-gpu --disable-background-networking"
                              " --disable-component-update --disable-sync --no-first-run --user-data-dir=" +
                              dir_->file("profile") + " --dump-dom file://" + html + " > " + dom + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string rendered = testing::read_text(dom);
  EXPECT_NE(rendered.find("data-rendered=\"true\""), std::string::npos) << "the page's script did not finish";
  std::size_t charts = 0, bars = 0, series = 0;
  for (auto p = rendered.find("class=\"chart\""); p != std::string::npos; p = rendered.find("class=\"chart\"", p + 1)) ++charts;
  for (auto p = rendered.find("class=\"bar\""); p != std::string::npos; p = rendered.find("class=\"bar\"", p + 1)) ++bars;
  for (auto p = rendered.find("class=\"series\""); p != std::string::npos; p = rendered.find("class=\"series\"", p + 1)) ++series;
  EXPECT_EQ(charts, 3u);
  EXPECT_EQ(bars, 4u);    // 2 epoch-time bars + 2 speedup bars
  EXPECT_EQ(series, 2u);  // one throughput line per result
  EXPECT_NE(rendered.find("422 W, 1.23 J/sample"), std::string::npos) << "the measured cell shows its power";
  EXPECT_NE(rendered.find("x ("), std::string::npos) << "the speedup shows its interval";
  const auto first_cell = rendered.find("J/sample</td>");
  ASSERT_NE(first_cell, std::string::npos);
  EXPECT_EQ(rendered.find("J/sample</td>", first_cell + 1), std::string::npos) << "only the measured cell does";
}

TEST_F(AnalysisCli, PredictEpochsAndTarget) {
  const auto epochs = run_tbench("predict --epochs 4 --json " + result(2));
  ASSERT_EQ(epochs.exit_code, 0) << epochs.err;
  const auto j = nlohmann::json::parse(epochs.out);
  EXPECT_GT(j["epochs"]["predicted_seconds"].get<double>(), 0);
  const auto with_actual = run_tbench("predict --epochs 2 --actual " + result(1) + " " + result(2));
  ASSERT_EQ(with_actual.exit_code, 0) << with_actual.err;
  EXPECT_NE(with_actual.out.find("error"), std::string::npos);
  const auto self_scored = run_tbench("predict --epochs 2 --actual " + result(2) + " " + result(2));
  EXPECT_EQ(self_scored.exit_code, 2) << "scored against its own source: right by construction";
  const auto target = run_tbench("predict --target H100 " + result(2));
  ASSERT_EQ(target.exit_code, 0) << target.err;
  EXPECT_NE(target.out.find("H100 SXM"), std::string::npos);
  EXPECT_NE(target.out.find("naive peak-TFLOPS ratio"), std::string::npos);
  const auto unknown = run_tbench("predict --target Voodoo2 " + result(2));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--target"), std::string::npos);
}

// How long will fine-tuning take, from a few steps: a run that train.max_steps stops inside its
// first epoch predicts whole epochs, and the evaluation each epoch runs after its steps; scored
// against the whole 2-epoch run.
TEST_F(AnalysisCli, PredictEpochsFromAShortRunWithEvaluation) {
  auto spec = testing::tiny_spec(dir_->file("short.json"));
  spec["data"]["num_samples"] = 80;
  spec["data"]["eval_fraction"] = 0.2;
  spec["train"]["batch_size"] = 4;  // 16 steps an epoch
  spec["train"]["max_steps"] = 6;
  ASSERT_EQ(run_tbench("run -q " + dir_->write("short-spec.json", spec.dump())).exit_code, 0);
  spec["output"] = dir_->file("whole.json");
  spec["train"].erase("max_steps");
  ASSERT_EQ(run_tbench("run -q " + dir_->write("whole-spec.json", spec.dump())).exit_code, 0);
  const auto out = run_tbench("predict --epochs 2 --json --actual " + dir_->file("whole.json") + " " + dir_->file("short.json"));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto p = nlohmann::json::parse(out.out)["epochs"];
  EXPECT_TRUE(p["from_partial_epoch"].get<bool>());
  EXPECT_TRUE(p["naive_seconds"].is_null());
  EXPECT_GT(p["eval_seconds_per_epoch"].get<double>(), 0);
  EXPECT_NEAR(p["predicted_with_eval_seconds"].get<double>(),
              p["predicted_seconds"].get<double>() + 2 * p["eval_seconds_per_epoch"].get<double>(), 1e-9);
  EXPECT_GT(p["actual_with_eval_seconds"].get<double>(), p["actual_seconds"].get<double>());
  EXPECT_TRUE(p["with_eval_error_pct"].is_number());
  const auto text = run_tbench("predict --epochs 2 " + dir_->file("short.json"));
  EXPECT_NE(text.out.find("no epoch completed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("with evaluation"), std::string::npos) << text.out;
}

// A real run given a GPU's kernel profile (what timing.profile_steps writes on CUDA): predict
// --target splits the measured step, says which method predicted, and scores the roofline too.
// Without a kernel profile, a CUDA result's steps still say whether the host set their pace
// (summary.device_idle_at_start_fraction), and predict --target warns that the target's host, not
// its GPU, would set that part. A share outside [0, 1] is refused, naming the field.
TEST_F(AnalysisCli, PredictTargetSaysWhenTheHostSetThePace) {
  auto result_json = testing::read_json(result(2));
  result_json["summary"]["device_idle_at_start_fraction"] = 0.9;
  const auto paced = run_tbench("predict --target H200 " + dir_->write("paced.json", result_json.dump()));
  ASSERT_EQ(paced.exit_code, 0) << paced.err;
  EXPECT_NE(paced.out.find("the GPU had run all queued work before 90% of the steps began"), std::string::npos)
      << paced.out;
  EXPECT_NE(paced.out.find("train.cuda_graph takes the host out of the step"), std::string::npos) << paced.out;
  // A step already captured is told nothing about the graph.
  result_json["spec"]["train"]["cuda_graph"] = true;
  const auto graphed = run_tbench("predict --target H200 " + dir_->write("graphed.json", result_json.dump()));
  ASSERT_EQ(graphed.exit_code, 0) << graphed.err;
  EXPECT_NE(graphed.out.find("waiting for the host"), std::string::npos) << graphed.out;
  EXPECT_EQ(graphed.out.find("train.cuda_graph"), std::string::npos) << graphed.out;
  result_json["spec"]["train"]["cuda_graph"] = false;
  result_json["summary"]["device_idle_at_start_fraction"] = 0.1;
  const auto busy = run_tbench("predict --target H200 " + dir_->write("busy.json", result_json.dump()));
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  EXPECT_EQ(busy.out.find("waiting for the host"), std::string::npos) << busy.out;
  result_json["summary"]["device_idle_at_start_fraction"] = 1.5;
  const auto bad = run_tbench("predict --target H200 " + dir_->write("bad.json", result_json.dump()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/summary/device_idle_at_start_fraction"), std::string::npos) << bad.err;
}

// A run that stopped early is still read (its steps were measured), with a word on stderr; an
// actual that ran on another known GPU than the target is named.
TEST_F(AnalysisCli, AnalysisSaysWhenARunDidNotFinishOrRanElsewhere) {
  auto interrupted = testing::read_json(result(1));
  interrupted["summary"]["status"] = "interrupted";
  const auto path = dir_->write("interrupted.json", interrupted.dump());
  const auto report = run_tbench("report " + path);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("report: warning: " + path + ": the run was interrupted after "), std::string::npos)
      << report.err;
  // A finished run, nothing to say. (Its CPU peak probes left out: on a shared machine they may lie
  // far enough apart that report warns the machine's speed moved, which is not this test's case.)
  auto finished = testing::read_json(result(1));
  finished["summary"]["peak_probes_flops_per_s"] = nullptr;
  const auto quiet = run_tbench("report " + dir_->write("finished.json", finished.dump()));
  EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << quiet.err;
  // Epochs scored against a run on another host: read, and said.
  auto other_host = testing::read_json(result(1));
  other_host["env"]["host"] = "elsewhere";
  const auto moved = dir_->write("other-host.json", other_host.dump());
  const auto scored = run_tbench("predict --epochs 2 --actual " + moved + " " + result(1));
  EXPECT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_NE(scored.err.find("predict: warning: " + moved + " ran on host elsewhere"), std::string::npos) << scored.err;

  auto h100 = testing::read_json(result(2));
  h100["spec"]["device"] = "cuda";
  h100["env"]["cuda"] = {{"devices", {{{"name", "NVIDIA H100 80GB HBM3"}}}}};
  const auto on_h100 = dir_->write("on-h100.json", h100.dump());
  const auto elsewhere = run_tbench("predict --target H200 --actual " + on_h100 + " " + result(2));
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  EXPECT_NE(elsewhere.err.find("predict: warning: " + on_h100 + " ran on NVIDIA H100 80GB HBM3"), std::string::npos)
      << elsewhere.err;
  const auto same_gpu = run_tbench("predict --target H100 --actual " + on_h100 + " " + result(2));
  EXPECT_EQ(same_gpu.err.find(on_h100 + " ran on"), std::string::npos) << same_gpu.err;
  // A CPU result predicts a GPU with a word of caution: a CPU's efficiency says little of a GPU's.
  EXPECT_NE(same_gpu.err.find("predict: warning: " + result(2) + " ran on the CPU"), std::string::npos) << same_gpu.err;
}

TEST_F(AnalysisCli, PredictTargetFromAKernelProfile) {
  auto result_json = testing::read_json(result(2));
  const double step_ms = result_json["summary"]["step_ms"]["median"].get<double>();
  result_json["summary"]["peak_bytes_per_s"] = 3.35e12;
  result_json["spec"]["device"] = "cuda";  // --actual for --target is a GPU's run
  result_json["profile"] = {{"steps", {1, 2}}, {"measures", "device kernels"}, {"measured_ms", step_ms},
                            {"bounds", {{{"name", "compute"}, {"calls", 4}, {"ms", step_ms}, {"share", 1}}}}};
  const auto profiled = dir_->write("profiled.json", result_json.dump());
  // The same steps 20% faster, as run on the target.
  const auto actual = dir_->write("on-h200.json", with_steps_scaled(result_json, 1 / 1.2).dump());
  const auto out = run_tbench("predict --json --target H200 --actual " + actual + " " + profiled);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto target = nlohmann::json::parse(out.out)["target"];
  EXPECT_EQ(target["method"], "kernel profile");
  EXPECT_GT(target["source_step_parts"]["compute_seconds"].get<double>(), 0);
  EXPECT_GE(target["target_step_parts"]["held_seconds"].get<double>(), 0);
  EXPECT_TRUE(target["roofline_error_pct"].is_number());
  const auto text = run_tbench("predict --target H200 " + profiled);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("from the kernel profile"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("compute kernels"), std::string::npos) << text.out;
  // Kernels for about half of each of the 2 profiled steps (the median step's, against the mean):
  // the GPU waited for the host about half the step.
  EXPECT_NE(text.out.find("% of the measured step, waiting for the host"), std::string::npos) << text.out;
  // Kernels longer than the steps (scaled down to the measured step): the GPU never waited.
  result_json["profile"]["measured_ms"] = 1e6;
  result_json["profile"]["bounds"][0]["ms"] = 1e6;
  const auto busy = run_tbench("predict --target H200 " + dir_->write("busy.json", result_json.dump()));
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  EXPECT_EQ(busy.out.find("waiting for the host"), std::string::npos) << busy.out;
  result_json["profile"]["bounds"][0]["name"] = "tensor";
  const auto bad = run_tbench("predict --target H200 " + dir_->write("bad.json", result_json.dump()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/profile/bounds/0/name"), std::string::npos) << bad.err;
}

// --target-host times the target's host on a run there that its host held, and paces the step by
// it; a run the GPU held, or no --target, is refused (exit 2), and a run on another torch is
// warned of, since a launch's cost is the software's too.
TEST_F(AnalysisCli, PredictTargetWithTheTargetsHost) {
  auto result_json = testing::read_json(result(2));
  const double step_ms = result_json["summary"]["step_ms"]["median"].get<double>();
  result_json["summary"]["peak_bytes_per_s"] = 3.35e12;
  result_json["spec"]["device"] = "cuda";
  result_json["env"]["torch"] = "2.11.0";
  // Kernels for about half of each of the 2 profiled steps, 4 launches a step.
  result_json["profile"] = {{"steps", {1, 2}}, {"measures", "device kernels"}, {"measured_ms", step_ms},
                            {"bounds", {{{"name", "compute"}, {"calls", 8}, {"ms", step_ms}, {"share", 1}}}}};
  const auto source = dir_->write("source.json", result_json.dump());
  auto on_target = result_json;
  // A host half as fast: every step, and so every epoch, twice as long.
  for (auto& it : on_target["iterations"]) it["seconds"] = it["seconds"].get<double>() * 2;
  for (auto& epoch : on_target["epochs"]) epoch["seconds"] = epoch["seconds"].get<double>() * 2;
  const auto timing = dir_->write("on-target.json", on_target.dump());

  const auto json_out = run_tbench("predict --json --target H200 --target-host " + timing + " " + source);
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  const auto target = nlohmann::json::parse(json_out.out)["target"];
  EXPECT_EQ(target["method"], "kernel profile + target host");
  EXPECT_EQ(target["bound"], "host");
  EXPECT_EQ(target["target_host"]["results"], nlohmann::json::array({timing}));
  EXPECT_DOUBLE_EQ(target["target_host"]["launches_per_step"].get<double>(), 4.0);
  EXPECT_NEAR(target["target_host"]["seconds_per_launch"].get<double>(),
              2 * target["target_host"]["source_seconds_per_launch"].get<double>(), 1e-12);
  EXPECT_DOUBLE_EQ(target["predicted_step_seconds"].get<double>(), target["target_host"]["host_step_seconds"].get<double>());
  EXPECT_TRUE(json_out.err.empty()) << json_out.err;

  // A second run there, 1% faster (slower steps might no longer fit in its epochs).
  const auto timing_again = dir_->write("on-target-again.json", with_steps_scaled(on_target, 0.99).dump());
  const auto text = run_tbench("predict --target H200 --target-host " + timing + " --target-host " + timing_again + " " + source);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(the median of 2 runs on it: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("; the source's host "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("= max(that host launching 4 kernels"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("waiting for the host"), std::string::npos) << text.out;  // paced by the target's host

  auto other_torch = on_target;
  other_torch["env"]["torch"] = "1.13.1";
  const auto older = dir_->write("older-torch.json", other_torch.dump());
  const auto warned = run_tbench("predict --target H200 --target-host " + older + " " + source);
  ASSERT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_NE(warned.err.find("predict: warning: " + older + " ran on torch \"1.13.1\""), std::string::npos) << warned.err;

  auto gpu_bound = on_target;
  gpu_bound["profile"]["bounds"][0]["ms"] = 1e6;  // kernels through the whole step
  const auto busy = dir_->write("busy.json", gpu_bound.dump());
  const auto refused = run_tbench("predict --target H200 --target-host " + busy + " " + source);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find(busy + ": its GPU waited for the host 0% of the step"), std::string::npos) << refused.err;
  const auto no_target = run_tbench("predict --epochs 2 --target-host " + timing + " " + source);
  EXPECT_EQ(no_target.exit_code, 2);
  EXPECT_NE(no_target.err.find("--target-host requires --target"), std::string::npos) << no_target.err;
  // One file a --target-host: the source may follow it, and a second file needs its own flag.
  const auto source_after = run_tbench("predict --target-host " + timing + " " + source + " --target H200");
  ASSERT_EQ(source_after.exit_code, 0) << source_after.err;
  EXPECT_NE(source_after.out.find("the median of 1 run on it"), std::string::npos) << source_after.out;
  const auto two_files = run_tbench("predict " + source + " --target H200 --target-host " + timing + " " + timing);
  EXPECT_EQ(two_files.exit_code, 2) << two_files.out;
  // One run given twice is not two runs of the target's host.
  const auto twice = run_tbench("predict --target H200 --target-host " + timing + " --target-host " + timing + " " + source);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("is given twice"), std::string::npos) << twice.err;
}

}  // namespace
}  // namespace tbench
