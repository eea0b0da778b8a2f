// End-to-end: the built binary on tiny specs, and the files it writes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <filesystem>
#include <thread>

#include "support/cli.hpp"
#include "support/json_schema.hpp"
#include "tbench/embedded.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/models/safetensors.hpp"

namespace tbench {
namespace {

using testing::run_tbench;
using testing::ScratchDir;

class Cli : public ::testing::Test {
 protected:
  ScratchDir dir;
  std::string spec_path(const nlohmann::json& spec, const std::string& name = "spec.json") {
    return dir.write(name, spec.dump(2));
  }
};

TEST_F(Cli, RunWritesAResultThatMatchesTheSchema) {
  const std::string out = dir.file("out/tiny.json");
  auto spec = testing::tiny_spec(out);
  spec["timing"]["cpu_peak_probe"] = true;  // the default
  const auto r = run_tbench("run --quiet " + spec_path(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, out + "\n");  // stdout: just the result path

  const auto result = testing::read_json(out);
  const auto violations = testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);

  // Filled with measured values.
  EXPECT_EQ(result["summary"]["status"], "completed");
  EXPECT_EQ(result["iterations"].size(), 8u);
  EXPECT_EQ(result["epochs"].size(), 2u);
  EXPECT_EQ(result["summary"]["warmup_steps"], 1);
  EXPECT_EQ(result["summary"]["timed_steps"], 7);
  EXPECT_GT(result["summary"]["samples_per_s"].get<double>(), 0);
  EXPECT_EQ(result["spec"]["train"]["grad_accum_steps"], 1);  // resolved: defaults filled
  EXPECT_EQ(result["spec"]["train"]["cuda_graph"], false);     // unset: what the run used
  EXPECT_EQ(result["spec"]["threads"], 1);
  EXPECT_EQ(result["env"]["cpu"]["torch_threads"], 1);
  // cpu.allocator defaults to the cache, and the cache served the repeated steps.
  EXPECT_EQ(result["spec"]["cpu"]["allocator"], "caching");
  EXPECT_EQ(result["env"]["cpu"]["allocator"]["kind"], "caching");
  EXPECT_GT(result["env"]["cpu"]["allocator"]["hits"].get<int64_t>(), 0);
  EXPECT_EQ(result["model"]["name"], "tiny-bert");
  EXPECT_GT(result["summary"]["peak_rss_bytes"].get<int64_t>(), 0);
  // A CPU's peak is probed before the timed epochs and again after them; the best counts.
  const auto& probes = result["summary"]["peak_probes_flops_per_s"];
  ASSERT_EQ(probes.size(), 2u) << probes;
  EXPECT_DOUBLE_EQ(result["summary"]["peak_flops_per_s"].get<double>(),
                   std::max(probes[0].get<double>(), probes[1].get<double>()));
  EXPECT_NE(result["summary"]["peak_source"].get<std::string>().find("before and after the timed epochs"),
            std::string::npos);

  // The stream holds the same iterations, one JSON object per line.
  std::istringstream stream(testing::read_text(dir.file("out/tiny.iterations.jsonl")));
  std::string line;
  std::size_t lines = 0;
  while (std::getline(stream, line)) {
    EXPECT_EQ(nlohmann::json::parse(line), result["iterations"][lines]);
    ++lines;
  }
  EXPECT_EQ(lines, 8u);

  // Step times add up to no more than their epoch.
  for (const auto& epoch : result["epochs"]) {
    double sum = 0;
    for (const auto& it : result["iterations"]) {
      if (it["epoch"] == epoch["epoch"]) sum += it["seconds"].get<double>();
    }
    EXPECT_LE(sum, epoch["seconds"].get<double>());
  }
}

// The source tree's commit, as git names it now; empty where the tree is not a git checkout.
std::string source_commit() {
  std::string commit;
  if (FILE* git = popen(("git -C '" + std::string(TBENCH_SOURCE_DIR) + "' rev-parse --short=12 HEAD 2>/dev/null").c_str(), "r")) {
    char buffer[64] = {};
    if (std::fgets(buffer, sizeof buffer, git)) commit = buffer;
    pclose(git);
  }
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == ' ')) commit.pop_back();
  return commit;
}

// A run whose loss turns non-finite fails (exit 4); its result, with that step's loss as null
// (JSON has no NaN), still meets the schema, and the analysis commands read it.
TEST_F(Cli, ADivergedRunsResultMeetsTheSchema) {
  const std::string out = dir.file("diverged.json");
  auto spec = testing::tiny_spec(out);
  spec["train"]["lr"] = 1e30;
  const auto r = run_tbench("run --quiet " + spec_path(spec));
  ASSERT_EQ(r.exit_code, 4) << r.err;
  const auto result = testing::read_json(out);
  EXPECT_EQ(result["summary"]["status"], "failed");
  bool null_loss = false;
  for (const auto& it : result["iterations"]) null_loss = null_loss || it["loss"].is_null();
  EXPECT_TRUE(null_loss) << "no step recorded the non-finite loss";
  const auto violations = testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(run_tbench("report " + out).exit_code, 0);
}

// A step whose record cannot be written (the stream's disk full; here --fail-at-step's observer)
// is kept in the result and counted in its epoch: the epoch record left it out while the
// iterations held it (found by an audit).
TEST_F(Cli, AStepWhoseRecordFailsIsCountedInItsEpoch) {
  const std::string out = dir.file("fail.json");
  const auto r = run_tbench("run --quiet --fail-at-step 3 " + spec_path(testing::tiny_spec(out)));
  ASSERT_EQ(r.exit_code, 4) << r.err;
  const auto result = testing::read_json(out);
  ASSERT_EQ(result["iterations"].size(), 3u);
  ASSERT_EQ(result["epochs"].size(), 1u);
  EXPECT_EQ(result["epochs"][0]["steps"], 3);
  int64_t samples = 0;
  for (const auto& it : result["iterations"]) samples += it["samples"].get<int64_t>();
  EXPECT_EQ(result["epochs"][0]["samples"], samples);
}

// `--version` and every result name the revision the binary was built from, recorded at build
// time (not when CMake last ran): the commit, "-dirty" if tracked files differed from it.
TEST_F(Cli, VersionAndResultsNameTheRevisionBuilt) {
  const auto version = run_tbench("--version");
  ASSERT_EQ(version.exit_code, 0) << version.err;
  const std::string out = dir.file("tiny.json");
  ASSERT_EQ(run_tbench("run --quiet " + spec_path(testing::tiny_spec(out))).exit_code, 0);
  const std::string recorded = testing::read_json(out)["env"]["tbench"]["git"];
  EXPECT_EQ(version.out, "tbench " + std::string(TBENCH_VERSION) + " (git " + recorded + ")\n");
  const std::string commit = source_commit();
  if (commit.empty()) {
    EXPECT_EQ(recorded, "unknown");
  } else {
    // The tests run on the binary built from this tree (ctest after the build).
    EXPECT_TRUE(recorded == commit || recorded == commit + "-dirty") << recorded << " vs " << commit;
  }
}

// model.sparse_last_layer trains the same network: without dropout (whose draws it would change)
// the losses match the full layer's step by step, on BERT and on XLNet (whose head reads the last
// token); each step's FLOPs leave out all but one position of the last layer.
TEST_F(Cli, SparseLastLayerTrainsTheSameClassifierWithFewerFlops) {
  for (const std::string model : {"tiny-bert", "tiny-xlnet"}) {
    SCOPED_TRACE(model);
    const auto run = [&](bool sparse) {
      const std::string out = dir.file(model + (sparse ? "-sparse.json" : "-full.json"));
      auto spec = testing::tiny_spec(out);
      spec["model"] = {{"name", model}, {"sparse_last_layer", sparse}};
      spec["train"]["dropout"] = false;
      const auto r = run_tbench("run -q " + spec_path(spec, model + (sparse ? "-sparse-spec.json" : "-spec.json")));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      return testing::read_json(out);
    };
    const nlohmann::json full = run(false), sparse = run(true);
    EXPECT_TRUE(testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), sparse).empty());
    EXPECT_EQ(sparse["spec"]["model"]["sparse_last_layer"], true);
    EXPECT_EQ(full["spec"]["model"]["sparse_last_layer"], false);
    const double full_flops = full["model"]["train_flops_per_sample"], sparse_flops = sparse["model"]["train_flops_per_sample"];
    EXPECT_LT(sparse_flops, full_flops);
    EXPECT_GT(sparse_flops, 0.5 * full_flops);  // one of tiny's two layers, most of it
    ASSERT_EQ(full["iterations"].size(), sparse["iterations"].size());
    for (std::size_t i = 0; i < full["iterations"].size(); ++i) {
      const auto &a = full["iterations"][i], &b = sparse["iterations"][i];
      EXPECT_NEAR(b["loss"].get<double>(), a["loss"].get<double>(), 1e-4 * a["loss"].get<double>()) << "step " << i;
      EXPECT_DOUBLE_EQ(b["train_flops"].get<double>() / b["samples"].get<double>(), sparse_flops) << "step " << i;
    }
  }
}

// model.unpad on samples of mixed lengths (max_length padding): without dropout the losses are the
// padded model's step for step (tiny-xlnet's with its left padding), and each step's FLOPs leave out
// the per-token work of its padding and, attending sample by sample on the CPU, the padding's scores.
TEST_F(Cli, UnpaddedTokensTrainTheSameClassifierWithoutThePaddingsWork) {
  for (const std::string model : {"tiny-bert", "tiny-xlnet"}) {
    SCOPED_TRACE(model);
    const auto run = [&](bool unpad) {
      const std::string out = dir.file(model + (unpad ? "-unpadded.json" : "-padded.json"));
      auto spec = testing::tiny_spec(out);
      spec["model"] = {{"name", model}, {"unpad", unpad}};
      spec["train"]["dropout"] = false;
      spec["data"]["lengths"] = {{"distribution", "uniform"}, {"min", 4}};
      const auto r = run_tbench("run -q " + spec_path(spec, model + (unpad ? "-unpadded-spec.json" : "-spec.json")));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      return testing::read_json(out);
    };
    const nlohmann::json padded = run(false), unpadded = run(true);
    EXPECT_TRUE(testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), unpadded).empty());
    EXPECT_EQ(unpadded["spec"]["model"]["unpad"], true);
    const double per_token = per_token_train_flops(shipped_model_config(model));
    const double seq_len = unpadded["spec"]["data"]["seq_len"], mean_length = unpadded["data"]["lengths"]["mean"];
    ASSERT_LT(mean_length, seq_len - 1);
    // A sample's work at the padded width, as HF does it (the padded run, without dropout, counts
    // tiny-xlnet's encodings once per batch: Cli.XlnetWithoutDropoutCountsOneCopyOfTheEncodingsPerBatch).
    const double padded_sample = model_cost(shipped_model_config(model), 2, static_cast<int64_t>(seq_len)).train_flops_per_sample;
    const double per_sample = padded_sample - (seq_len - mean_length) * per_token;
    EXPECT_LT(unpadded["model"]["train_flops_per_sample"].get<double>(), per_sample - 1.0);
    ASSERT_EQ(padded["iterations"].size(), unpadded["iterations"].size());
    for (std::size_t i = 0; i < padded["iterations"].size(); ++i) {
      const auto &a = padded["iterations"][i], &b = unpadded["iterations"][i];
      EXPECT_NEAR(b["loss"].get<double>(), a["loss"].get<double>(), 1e-4 * a["loss"].get<double>()) << "step " << i;
      const double padding = b["tokens"].get<double>() - b["real_tokens"].get<double>();
      EXPECT_GT(padding, 0) << "step " << i;
      const double without_padding = b["samples"].get<double>() * padded_sample - padding * per_token;
      // Sample by sample on the CPU: fewer scores too (ModelCost.*AttentionBySample*).
      EXPECT_LT(b["train_flops"].get<double>(), without_padding - 1.0) << "step " << i;
    }
  }
}

// XLNet trained without dropout projects the distances' encodings once for the batch, where HF (and
// a run with dropout, each sample drawing its own) projects them per sample: each step's FLOPs
// count the copies it made, (samples - 1) x 2 h^2 x 2S x layers x 3 fewer.
TEST_F(Cli, XlnetWithoutDropoutCountsOneCopyOfTheEncodingsPerBatch) {
  const auto run = [&](bool dropout) {
    const std::string out = dir.file(dropout ? "xlnet-dropout.json" : "xlnet-eval.json");
    auto spec = testing::tiny_spec(out);
    spec["model"] = "tiny-xlnet";
    spec["train"]["dropout"] = dropout;
    const auto r = run_tbench("run -q " + spec_path(spec, dropout ? "xlnet-dropout-spec.json" : "xlnet-eval-spec.json"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return testing::read_json(out);
  };
  const nlohmann::json with = run(true), without = run(false);
  const ModelConfig c = shipped_model_config("tiny-xlnet");
  const double h = static_cast<double>(c.hidden_size), s = with["spec"]["data"]["seq_len"];
  ASSERT_GT(c.hidden_dropout, 0.0);
  ASSERT_EQ(with["iterations"].size(), without["iterations"].size());
  for (std::size_t i = 0; i < with["iterations"].size(); ++i) {
    const auto &a = with["iterations"][i], &b = without["iterations"][i];
    const double samples = a["samples"];
    const double copies = (samples - 1) * 2 * h * h * 2 * s * static_cast<double>(c.num_layers) * 3;
    EXPECT_NEAR(a["train_flops"].get<double>() - b["train_flops"].get<double>(), copies, 1.0) << "step " << i;
  }
  const double batch = with["spec"]["train"]["batch_size"];
  const double per_sample_copy = 2 * h * h * 2 * s * static_cast<double>(c.num_layers) * 3;
  EXPECT_NEAR(with["model"]["train_flops_per_sample"].get<double>() - without["model"]["train_flops_per_sample"].get<double>(),
              (batch - 1) / batch * per_sample_copy, 1.0);
}

// timing.profile_steps: the run's last steps run under the profiler, are marked and left out of
// the summary; the result sums them, the trace lies beside it, and the profiler's own start and
// stop stay out of the timing check.
TEST_F(Cli, ProfiledStepsAreSummedTracedAndLeftOutOfTheTiming) {
  const std::string out = dir.file("prof.json");
  auto spec = testing::tiny_spec(out);
  spec["timing"]["profile_steps"] = 2;
  const auto r = run_tbench("run --quiet " + spec_path(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto result = testing::read_json(out);
  const auto violations = testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  EXPECT_EQ(result["summary"]["profiled_steps"], 2);
  EXPECT_EQ(result["summary"]["timed_steps"], 5);  // 8 steps, 1 warm-up, 2 profiled
  for (const auto& it : result["iterations"]) {
    const int64_t step = it["global_step"];
    EXPECT_EQ(it.value("profiled", false), step == 7 || step == 8) << it.dump();
  }
  const auto& profile = result["profile"];
  EXPECT_EQ(profile["steps"], nlohmann::json::array({7, 8}));
  EXPECT_FALSE(result["epochs"][0].contains("profiler_seconds"));
  EXPECT_NEAR(result["epochs"][1]["profiler_seconds"].get<double>() * 1e3, profile["overhead_ms"].get<double>(), 1e-6);
  // Left in, the profiler's start and stop (tens of ms) would be most of these tiny epochs' gap;
  // the 2% margin itself is too tight to hold on a loaded machine for epochs of ~25 ms.
  const auto& check = result["summary"]["timing_check"];
  EXPECT_LT(check["epoch_seconds"].get<double>() - check["step_seconds"].get<double>(),
            0.5 * profile["overhead_ms"].get<double>() / 1e3)
      << check;
  EXPECT_EQ(profile["measures"], "host operators, self time");
  EXPECT_GT(profile["measured_ms"].get<double>(), 0);
  // Self times cannot add up to more than the host's wall time over the profiled steps... on
  // each thread; LibTorch's intra-op threads are not recorded as operators, so one bound holds.
  EXPECT_LE(profile["measured_ms"].get<double>(), profile["wall_ms"].get<double>() * 1.05);
  ASSERT_FALSE(profile["top"].empty());
  // Every operator of the step keeps its name, so report --profile sorts all of it into kinds.
  double named_ms = 0;
  for (const auto& entry : profile["top"]) named_ms += entry["ms"].get<double>();
  EXPECT_NEAR(named_ms, profile["measured_ms"].get<double>(), 1e-9 * profile["measured_ms"].get<double>());
  bool saw_gemm = false;
  for (const auto& c : profile["categories"]) saw_gemm = saw_gemm || (c["name"] == "gemm" && c["ms"].get<double>() > 0);
  EXPECT_TRUE(saw_gemm) << profile.dump(1);
  // report --profile tables it by kind of work, and its kinds add up to the profile's time a step.
  const auto table = run_tbench("report --profile --by name " + out);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("host operators, self time"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("gemm"), std::string::npos) << table.out;
  const auto rows = nlohmann::json::parse(run_tbench("report --profile --format json " + out).out)["rows"];
  double kinds_ms = 0;
  for (const auto& row : rows) kinds_ms += row["ms_per_step"].get<double>();
  EXPECT_NEAR(kinds_ms, profile["measured_ms"].get<double>() / 2, 1e-9 * profile["measured_ms"].get<double>());
  EXPECT_EQ(run_tbench("report --profile --scaling " + out).exit_code, 2) << "one table at a time";
  // The trace needs a LibTorch built with Kineto (pip's); Debian's records the events without it
  // and the result says why there is no trace.
  if (profile["trace"].is_null()) {
    EXPECT_NE(profile["trace_error"].get<std::string>().find("Kineto"), std::string::npos) << profile.dump(1);
  } else {
    EXPECT_EQ(profile["trace"], dir.file("prof.trace.json"));
    EXPECT_FALSE(testing::read_json(dir.file("prof.trace.json"))["traceEvents"].empty());
  }

  // A trace is a result file too: not overwritten without --force.
  if (!profile["trace"].is_null()) {
    std::filesystem::remove(out);
    std::filesystem::remove(dir.file("prof.iterations.jsonl"));
    EXPECT_EQ(run_tbench("run --quiet " + spec_path(spec)).exit_code, 3);
  }

  // A window that leaves no step to time, or does not fit in the last epoch (4 steps), is refused
  // before training, naming the field.
  for (const int steps : {7, 5}) {
    spec["timing"]["profile_steps"] = steps;
    const auto refused = run_tbench("run --quiet --force " + spec_path(spec, "too-many.json"));
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("timing.profile_steps: " + std::to_string(steps)), std::string::npos) << refused.err;
  }
}

TEST_F(Cli, ExistingResultNeedsForce) {
  const std::string out = dir.file("tiny.json");
  const std::string spec = spec_path(testing::tiny_spec(out));
  ASSERT_EQ(run_tbench("run -q " + spec).exit_code, 0);
  const auto before = testing::read_text(out);
  const auto refused = run_tbench("run -q " + spec);
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(testing::read_text(out), before);
  EXPECT_EQ(run_tbench("run -q --force " + spec).exit_code, 0);
}

// timing.mllog: the run's events as MLPerf's logger writes them, beside the result and named in
// it: init, then the run, a block of one epoch each with its evaluation, and the samples trained.
// An existing log is not overwritten without --force, like the result.
TEST_F(Cli, MllogRecordsTheRunAsMlperfsLoggerWould) {
  const std::string out = dir.file("m.json");
  auto spec = testing::tiny_spec(out);
  spec["timing"]["mllog"] = true;
  spec["data"]["eval_fraction"] = 0.25;
  const std::string path = spec_path(spec);
  const auto r = run_tbench("run -q " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto result = testing::read_json(out);
  const std::string log = dir.file("m.mllog");
  EXPECT_EQ(result["files"]["mllog"], log);
  const auto violations = testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), result);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);

  const auto events = testing::read_mllog(log);
  ASSERT_FALSE(events.empty());
  std::map<std::string, int> count;
  std::map<std::string, nlohmann::json> last;
  for (const auto& e : events) {
    count[e["key"]] += 1;
    last[e["key"]] = e;
  }
  EXPECT_EQ(events.front()["key"], "init_start");
  EXPECT_EQ(events.back()["key"], "run_stop");
  EXPECT_EQ(events.back()["metadata"]["status"], "success");
  for (const char* key : {"init_start", "init_stop", "run_start", "run_stop", "trained_samples"}) {
    EXPECT_EQ(count[key], 1) << key;
  }
  for (const char* key : {"block_start", "epoch_start", "epoch_stop", "tracked_stats", "eval_start", "eval_stop",
                          "eval_accuracy", "block_stop"}) {
    EXPECT_EQ(count[key], 2) << key;
  }
  int64_t samples = 0;
  for (const auto& it : result["iterations"]) samples += it["samples"].get<int64_t>();
  EXPECT_EQ(last["trained_samples"]["value"], samples);
  EXPECT_EQ(last["global_batch_size"]["value"], 8);
  EXPECT_EQ(last["max_sequence_length"]["value"], 16);
  EXPECT_EQ(last["seed"]["value"], 7);
  EXPECT_EQ(last["train_samples"]["value"], 24);
  EXPECT_EQ(last["eval_samples"]["value"], 8);
  EXPECT_EQ(last["tbench_result"]["value"], out);
  EXPECT_DOUBLE_EQ(last["eval_accuracy"]["value"].get<double>(), result["epochs"][1]["eval"]["accuracy"].get<double>());
  EXPECT_DOUBLE_EQ(last["tracked_stats"]["value"]["throughput"].get<double>(),
                   result["epochs"][1]["samples_per_s"].get<double>());
  // The run's interval holds every epoch's.
  const int64_t run_start = last["run_start"]["time_ms"], run_stop = last["run_stop"]["time_ms"];
  for (const auto& e : events) {
    if (e["key"] == "epoch_start" || e["key"] == "epoch_stop") {
      EXPECT_GE(e["time_ms"].get<int64_t>(), run_start);
      EXPECT_LE(e["time_ms"].get<int64_t>(), run_stop);
    }
  }

  std::filesystem::remove(out);
  std::filesystem::remove(dir.file("m.iterations.jsonl"));
  const auto refused = run_tbench("run -q " + path);
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find(log + ": a result already exists here"), std::string::npos) << refused.err;
}

// An error after training that stops the result being made (here the parameters asked for
// cannot be written: their folder is a file) is the MLPerf log's last word too.
TEST_F(Cli, AnErrorAfterTrainingEndsTheMllogWithItsOwnWords) {
  const std::string out = dir.file("e.json");
  auto spec = testing::tiny_spec(out);
  spec["timing"]["mllog"] = true;
  const std::string not_a_folder = dir.write("file", "x");
  const auto r = run_tbench("run -q " + spec_path(spec) + " --dump-params " + not_a_folder + "/params");
  ASSERT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.exit_code, 1) << "an internal error: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto events = testing::read_mllog(dir.file("e.mllog"));
  ASSERT_FALSE(events.empty());
  const auto& stop = events.back();
  EXPECT_EQ(stop["key"], "run_stop");
  EXPECT_EQ(stop["metadata"]["status"], "aborted");
  const std::string error = stop["metadata"]["tbench_error"];
  EXPECT_NE(error.find(not_a_folder + "/params"), std::string::npos) << error;
  EXPECT_NE(r.err.find(error), std::string::npos) << "the log and the output differ: " << r.err;
}

TEST_F(Cli, YamlSpecWithOverrides) {
  const std::string out = dir.file("y.json");
  const std::string spec = dir.write("spec.yaml",
                                     "model: tiny-distilbert\n"
                                     "data: {num_samples: 16, seq_len: 8}\n"
                                     "train: {batch_size: 4}\n"
                                     "threads: 1\n"
                                     "output: " + out + "\n");
  const auto r = run_tbench("run -q " + spec + " --set train.batch_size=8 --set precision=bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto result = testing::read_json(out);
  EXPECT_EQ(result["spec"]["train"]["batch_size"], 8);
  EXPECT_EQ(result["spec"]["precision"], "bf16");
  EXPECT_EQ(result["iterations"].size(), 2u);
}

TEST_F(Cli, PlainLogLinesWhenNotATerminal) {
  auto spec = testing::tiny_spec(dir.file("p.json"));
  const auto r = run_tbench("run " + spec_path(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("epoch 1/2 step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("samples/s"), std::string::npos) << r.err;
}

// timing.cpu_peak_probe false: no probe before or after the epochs, so no peak and no MFU, and
// the result says why; `predict --target` cannot calibrate from it and says so.
TEST_F(Cli, ARunToldNotToProbeTheCpuPeakHasNoMfuAndSaysWhy) {
  const std::string out = dir.file("unprobed.json");
  auto spec = testing::tiny_spec(out);
  spec["timing"]["cpu_peak_probe"] = false;
  const auto r = run_tbench("run " + spec_path(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("probing the CPU's peak"), std::string::npos) << r.err;
  const auto result = testing::read_json(out);
  EXPECT_TRUE(testing::schema_violations(nlohmann::json::parse(embedded::result_schema()), result).empty());
  const auto& summary = result["summary"];
  EXPECT_EQ(summary["status"], "completed");
  EXPECT_TRUE(summary["peak_flops_per_s"].is_null()) << summary.dump();
  EXPECT_TRUE(summary["peak_probes_flops_per_s"].is_null()) << summary.dump();
  EXPECT_TRUE(summary["mfu"].is_null()) << summary.dump();
  EXPECT_EQ(summary["peak_source"], "not probed (timing.cpu_peak_probe is false)");
  EXPECT_GT(summary["train_flops_per_s"].get<double>(), 0);  // the model's rate is still measured
  const auto predicted = run_tbench("predict --target H100 " + out);
  EXPECT_EQ(predicted.exit_code, 2);
  EXPECT_NE(predicted.err.find(out + ": summary.peak_flops_per_s: unknown (not probed (timing.cpu_peak_probe is false))"),
            std::string::npos)
      << predicted.err;
}

TEST_F(Cli, InterruptStillWritesTheMeasuredSteps) {
  auto spec = testing::tiny_spec(dir.file("i.json"));
  spec["timing"]["cpu_peak_probe"] = true;  // the probe before the epochs
  spec["timing"]["mllog"] = true;
  spec["data"]["num_samples"] = 800000;  // one epoch of 100000 steps: would run for hours
  const std::string path = spec_path(spec);
  const pid_t child = fork();
  if (child == 0) {
    execl(TBENCH_BINARY, TBENCH_BINARY, "run", "-q", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until steps are streaming, then Ctrl-C.
  const std::string stream = dir.file("i.iterations.jsonl");
  for (int i = 0; i < 600 && (!std::filesystem::exists(stream) || std::filesystem::file_size(stream) < 2000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(child, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto result = testing::read_json(dir.file("i.json"));
  EXPECT_EQ(result["summary"]["status"], "interrupted");
  EXPECT_GT(result["iterations"].size(), 0u);
  EXPECT_FALSE(result["epochs"].back()["complete"].get<bool>());
  ASSERT_EQ(result["spec"]["timing"]["cpu_peak_probe"], true);
  // Stopped on request: the peak is not probed again on the way out.
  EXPECT_EQ(result["summary"]["peak_probes_flops_per_s"].size(), 1u);
  // The MLPerf log stops the epoch it was in and ends the run as aborted, saying why.
  const auto events = testing::read_mllog(dir.file("i.mllog"));
  std::vector<std::string> tail;
  for (std::size_t i = events.size() - std::min<std::size_t>(5, events.size()); i < events.size(); ++i) {
    tail.push_back(events[i]["key"]);
  }
  ASSERT_EQ(tail, (std::vector<std::string>{"epoch_stop", "tracked_stats", "block_stop", "trained_samples", "run_stop"}));
  EXPECT_EQ(events[events.size() - 5]["metadata"]["complete"], false);
  EXPECT_EQ(events.back()["metadata"]["status"], "aborted");
  EXPECT_EQ(events.back()["metadata"]["tbench_status"], "interrupted");
}

// Ctrl-C after the last step (here during the CPU peak's second probe): the probe stops, the
// result is written whole and completed, and the exit code still says the user asked to stop.
TEST_F(Cli, InterruptAfterTrainingStillWritesTheWholeResult) {
  auto spec = testing::tiny_spec(dir.file("a.json"));
  spec["timing"]["cpu_peak_probe"] = true;
  spec["timing"]["mllog"] = true;
  const std::string err = dir.file("a.err");
  const pid_t child = testing::spawn_tbench({"run", spec_path(spec)}, {}, dir.file("a.out"), err);
  const auto probing = [&] { return testing::read_text(err).find("probing the CPU's peak again") != std::string::npos; };
  for (int i = 0; i < 6000 && !probing(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!probing()) {
    kill(child, SIGKILL);
    testing::wait_for_exit(child, 10);
    FAIL() << "the run never reached its second probe: " << testing::read_text(err);
  }
  kill(child, SIGINT);
  EXPECT_EQ(testing::wait_for_exit(child, 60), 130) << testing::read_text(err);
  EXPECT_NE(testing::read_text(err).find("interrupted after the training had completed"), std::string::npos)
      << testing::read_text(err);
  const auto result = testing::read_json(dir.file("a.json"));
  EXPECT_EQ(result["summary"]["status"], "completed");
  EXPECT_TRUE(result["epochs"].back()["complete"].get<bool>());
  EXPECT_EQ(result["summary"]["peak_probes_flops_per_s"].size(), 1u) << "the second probe was not stopped";
  EXPECT_EQ(testing::read_mllog(dir.file("a.mllog")).back()["metadata"]["status"], "success");
}

TEST_F(Cli, ValidateChecksWithoutRunning) {
  const std::string out = dir.file("never.json");
  const auto ok = run_tbench("validate " + spec_path(testing::tiny_spec(out)));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find(": ok"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto printed = run_tbench("validate --print " + spec_path(testing::tiny_spec(out)));
  EXPECT_EQ(nlohmann::json::parse(printed.out)["train"]["max_grad_norm"], 1.0);
  const auto folder = run_tbench("validate " + dir.file(""));
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("is a directory; give a spec file"), std::string::npos) << folder.err;
  // --fields lists every spec's fields: a spec or an override beside it would be silently ignored.
  EXPECT_EQ(run_tbench("validate --fields").exit_code, 0);
  for (const std::string& extra : {spec_path(testing::tiny_spec(out)), std::string("--set train.lr=1"), std::string("--print")}) {
    const auto both = run_tbench("validate --fields " + extra);
    EXPECT_EQ(both.exit_code, 2) << extra;
    EXPECT_NE(both.err.find("excludes --fields"), std::string::npos) << both.err;
  }
}

struct BadRun {
  std::string name;
  std::string args;  // after "validate"/"run", {spec} replaced by a spec file
  nlohmann::json patch;
  std::string expected;  // the field the message must name
};

class CliBadInput : public Cli, public ::testing::WithParamInterface<BadRun> {};

TEST_P(CliBadInput, ExitsTwoNamingTheField) {
  const BadRun& c = GetParam();
  auto spec = testing::tiny_spec(dir.file("bad.json"));
  spec.merge_patch(c.patch);
  std::string args = c.args;
  const auto at = args.find("{spec}");
  if (at != std::string::npos) args.replace(at, 6, spec_path(spec));
  for (const char* command : {"validate ", "run -q "}) {
    const auto r = run_tbench(command + args);
    EXPECT_EQ(r.exit_code, 2) << command << args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("frame #"), std::string::npos) << "no stack traces for bad input: " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.json")));
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliBadInput,
    ::testing::Values(
        BadRun{"unknown_key", "{spec}", {{"trian", 1}}, "trian"},
        BadRun{"unknown_placeholder_in_o", "{spec} -o 'out/{bogus}.json'", nlohmann::json::object(),
               "-o out/{bogus}.json: output: "},
        BadRun{"unknown_model", "{spec}", {{"model", "bert-base-cassed"}}, "did you mean 'bert-base-cased'"},
        BadRun{"unknown_log_level", "{spec} --log-level bogus", nlohmann::json::object(), "--log-level"},
        BadRun{"seq_too_long", "{spec}", {{"data", {{"seq_len", 4096}}}}, "data.seq_len"},
        BadRun{"cuda_without_gpu", "{spec}", {{"device", "cuda:3"}}, "device"},
        BadRun{"missing_spec", "/nonexistent/spec.json", nlohmann::json::object(), "/nonexistent/spec.json"},
        BadRun{"bad_override", "{spec} --set train.lr=fast", nlohmann::json::object(), "train.lr"},
        BadRun{"mllog_not_a_flag", "{spec}", {{"timing", {{"mllog", "yes"}}}}, "timing.mllog"},
        BadRun{"cpu_peak_probe_not_a_flag", "{spec} --set timing.cpu_peak_probe=sometimes", nlohmann::json::object(),
               "timing.cpu_peak_probe"},
        BadRun{"bad_model_config", "{spec} --set model=" TBENCH_TEST_DATA "/bad_config.json", nlohmann::json::object(), "model_type"},
        BadRun{"unknown_option", "{spec} --frobnicate", nlohmann::json::object(), "frobnicate"}),
    [](const auto& info) { return info.param.name; });

TEST_F(Cli, ModelsListsShippedModelsWithCounts) {
  const auto r = run_tbench("models");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("bert-base-cased"), std::string::npos);
  EXPECT_NE(r.out.find("108,310,272"), std::string::npos);
  const auto j = nlohmann::json::parse(run_tbench("models --json").out);
  EXPECT_GE(j.size(), 9u);
  for (const auto& row : j) {  // XLNet's pre-training head is its permutation LM: lm_loss.bias on the base
    if (row["name"] == "tiny-xlnet") {
      EXPECT_EQ(row["masked_lm_params"], row["base_params"].get<int64_t>() + 1000);
      EXPECT_TRUE(row["max_seq_len"].is_null()) << "relative positions take any length";
    }
    if (row["name"] == "bert-base-cased") {
      EXPECT_EQ(row["max_seq_len"], 512);
    }
    if (row["name"] == "roberta-base") {
      EXPECT_EQ(row["max_seq_len"], 512) << "514 positions, less pad + 1";
    }
  }
  // A length past a model's positions is marked; a length of 0 or past 2^20 is refused.
  const auto longer = run_tbench("models --seq-len 1024");
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  EXPECT_NE(longer.out.find("* takes at most max_seq_len positions"), std::string::npos) << longer.out;
  EXPECT_EQ(run_tbench("models --seq-len 128").out.find("* takes at most"), std::string::npos);  // the tiny ones: 128
  EXPECT_EQ(run_tbench("models --seq-len 0").exit_code, 2);
  EXPECT_EQ(run_tbench("models --seq-len 99999999999999999999").exit_code, 2);
}

TEST_F(Cli, EnvAndSchemaPrintJson) {
  const auto env = nlohmann::json::parse(run_tbench("env").out);
  EXPECT_TRUE(env.contains("torch"));
  EXPECT_GE(env["cpu"]["logical_cores"].get<int>(), 1);
  EXPECT_EQ(nlohmann::json::parse(run_tbench("schema").out)["title"], "tbench result");
}

}  // namespace
}  // namespace tbench

namespace tbench {
namespace {

TEST_F(Cli, SavedWeightsLoadIntoTheNextRun) {
  auto spec = testing::tiny_spec(dir.file("first.json"));
  spec["model"] = {{"name", "tiny-bert"}, {"save_weights", dir.file("w/model.safetensors")}};
  ASSERT_EQ(run_tbench("run -q " + spec_path(spec, "a.json")).exit_code, 0);
  const auto first = testing::read_json(dir.file("first.json"));
  EXPECT_EQ(first["files"]["weights"], dir.file("w/model.safetensors"));

  // Load them, train with lr 0 (weights unchanged), save again: the same tensors come back.
  auto again = testing::tiny_spec(dir.file("second.json"));
  again["model"] = {{"name", "tiny-bert"}, {"weights", dir.file("w")}, {"save_weights", dir.file("w2.safetensors")}};
  again["train"]["lr"] = 0.0;
  const auto r = run_tbench("run " + spec_path(again, "b.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("loaded"), std::string::npos) << r.err;
  const SafetensorsFile saved(dir.file("w/model.safetensors")), reloaded(dir.file("w2.safetensors"));
  ASSERT_EQ(saved.entries().size(), reloaded.entries().size());
  for (const auto& [name, entry] : saved.entries()) {
    EXPECT_TRUE(torch::equal(saved.tensor(name), reloaded.tensor(name))) << name;
  }

  dir.write("w/model.safetensors", "garbage");
  const auto bad = run_tbench("run -q --force " + spec_path(again, "b.json"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("model.weights"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tbench
