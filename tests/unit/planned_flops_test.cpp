// The FLOPs a run plans for its epochs (run/batch_flops.cpp): how many epochs it plans, and that a
// capped plan is the uncapped one's first epochs. That the figures equal what runs then count is
// tested end to end (DataCli.RunsRecordEachPlannedEpochsMeanFlopsPerStep).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tbench/data/data.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/run/batch_flops.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {
namespace {

// 64 samples of log-normal lengths up to 16 tokens, in steps of 8.
RunPlan tiny_plan(const std::vector<std::string>& overrides) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "spec.json", false);
  std::vector<std::string> all = {"data.num_samples=64", "data.seq_len=16", "train.batch_size=8",
                                  "data.lengths.distribution=lognormal", "data.lengths.mean=8", "data.lengths.std=4"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  apply_overrides(doc, all);
  return prepare_run(resolve_spec(doc));
}

std::vector<double> planned(const RunPlan& plan, const PlanningLimits& limits = {}) {
  return planned_epoch_step_train_flops(plan.spec, plan.model, plan.teacher ? &*plan.teacher : nullptr, *plan.data,
                                        sampler_options(plan.trainer, 1, 0), limits);
}

// Padded to each batch's longest, each epoch's batches pad to their own widths: 8 epochs planned,
// not all alike. A plan held to fewer sample visits is the same plan's first epochs, never none.
TEST(PlannedFlops, PlansEightEpochsOrAsManyAsTheLimitAffords) {
  const RunPlan plan = tiny_plan({"data.padding=longest"});
  const std::vector<double> all = planned(plan);
  ASSERT_EQ(all.size(), 8u);
  bool differ = false;
  for (const double epoch : all) {
    EXPECT_GT(epoch, 0);
    differ = differ || epoch != all.front();
  }
  EXPECT_TRUE(differ);
  const std::vector<double> three = planned(plan, {8, 3 * 64 + 10});
  ASSERT_EQ(three.size(), 3u);
  for (std::size_t i = 0; i < three.size(); ++i) EXPECT_DOUBLE_EQ(three[i], all[i]);
  const std::vector<double> one = planned(plan, {8, 10});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(one[0], all[0]);
  EXPECT_EQ(planned(plan, {2, 1'000'000}).size(), 2u);
}

// Padded to seq_len, a step's count is its samples' count: every epoch alike, one planned. Under
// model.unpad the real tokens count, so each epoch's batches again; sparse prediction's masks are
// drawn by the run alone: none.
TEST(PlannedFlops, PlansOneEpochWhereEveryEpochCountsAlikeAndNoneForSparsePrediction) {
  for (const auto& overrides : std::vector<std::vector<std::string>>{
           {"data.padding=max_length"},
           {"data.padding=max_length", "data.drop_last=false", "train.grad_accum_steps=3"},  // a partial last step
           {"data.padding=max_length", "model=tiny-xlnet", "train.dropout=false"},  // shared encodings: one a batch
           {"data.padding=max_length", "task=plm", "model=tiny-xlnet", "plm.mask_token_id=4"},
           {"data.padding=max_length", "task=distillation", "model=tiny-distilbert", "distillation.teacher=tiny-bert"}}) {
    SCOPED_TRACE(overrides.back());
    const RunPlan plan = tiny_plan(overrides);
    const std::vector<double> one = planned(plan);
    ASSERT_EQ(one.size(), 1u);
    PlanningLimits every_epoch;
    every_epoch.one_where_alike = false;
    const std::vector<double> all = planned(plan, every_epoch);
    ASSERT_EQ(all.size(), 8u);
    for (const double epoch : all) EXPECT_NEAR(epoch, one[0], 1e-12 * one[0]);
  }
  EXPECT_EQ(planned(tiny_plan({"data.padding=max_length", "model.unpad=true"})).size(), 8u);
  EXPECT_TRUE(planned(tiny_plan({"task=mlm", "mlm.sparse_prediction=true"})).empty());
}

}  // namespace
}  // namespace tbench
