// Every spec shipped in configs/ is valid as it is (GPU specs: valid up to the device check on a
// machine without CUDA).
#include <gtest/gtest.h>

#include <filesystem>

#include "tbench/errors.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

TEST(Configs, EveryShippedSpecValidates) {
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(TBENCH_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".json" && entry.path().extension() != ".yaml") continue;
    ++checked;
    try {
      const RunSpec spec = load_spec(entry.path().string(), {});
      const RunPlan plan = prepare_run(spec);
      EXPECT_GT(plan.steps.total_steps, 0) << entry.path();
      // What the run resolves (threads, `auto` choices) is no change of spec: a resumed sweep keeps it.
      EXPECT_EQ(join(spec_changes(spec.resolved, plan.spec.resolved)), "") << entry.path();
    } catch (const Error& e) {
      const bool needs_gpu = std::string(e.what()).find("no CUDA device is available") != std::string::npos;
      EXPECT_TRUE(needs_gpu && !torch::cuda::is_available()) << e.what();
    }
  }
  EXPECT_GE(checked, 10);
}

// A resumed sweep keeps a completed point only when spec_changes finds nothing between the spec
// the point asks for now and the one its result recorded.
TEST(SpecChanges, NamesChangedFieldsButNotTheRunsOwnChoicesOrBookkeeping) {
  const RunSpec spec = load_spec("", {"model=tiny-bert", "data.seq_len=16", "train.batch_size=4", "data.num_samples=8"});
  const RunPlan plan = prepare_run(spec);
  nlohmann::json recorded = plan.spec.resolved;
  EXPECT_EQ(join(spec_changes(spec.resolved, recorded)), "");
  recorded["name"] = "another";
  recorded["output"] = "elsewhere.json";
  recorded["train"].erase("warmup_steps");  // not recorded: written by an older tbench
  // A spec's sweep section grown between runs (a grid value added, then --resume) changes no
  // point: each point's own value is in its overrides. It was refused as a change.
  recorded["sweep"]["grid"] = {{"train.seed", {1}}};
  recorded["sweep"]["repeat"] = 3;
  recorded["sweep"]["out_dir"] = "results/first";
  EXPECT_EQ(join(spec_changes(spec.resolved, recorded)), "");

  recorded["train"]["lr"] = 1.0;
  recorded["threads"] = 7;                 // left open (0) by the spec: the run's own choice
  recorded["model"]["attention"] = "sdpa";  // left open (auto)
  EXPECT_EQ(join(spec_changes(spec.resolved, recorded)), "train.lr 1.0 -> 5e-05");

  // Asked for explicitly, a choice must match what the run chose.
  const RunSpec explicit_choices = load_spec("", {"model=tiny-bert", "data.seq_len=16", "train.batch_size=4",
                                                  "data.num_samples=8", "threads=3", "model.attention=eager"});
  EXPECT_EQ(join(spec_changes(explicit_choices.resolved, recorded), "; "),
            "model.attention \"sdpa\" -> \"eager\"; threads 7 -> 3; train.lr 1.0 -> 5e-05");
}

}  // namespace
}  // namespace tbench
