#include <gtest/gtest.h>

#include "tbench/timing/stats.hpp"

namespace tbench {

TEST(Stats, PercentilesInterpolateLikeNumpy) {
  const std::vector<double> v = {4, 1, 3, 2, 5};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 10), 1.4);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4.6);
  EXPECT_DOUBLE_EQ(percentile({7}, 90), 7.0);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0.0);
}

TEST(Stats, SpreadHasSampleStdev) {
  const Spread s = spread({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.count, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.stdev, 2.138089935, 1e-9);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(spread({3}).stdev, 0.0);
}

TEST(StudentT, MatchesTables) {
  EXPECT_NEAR(student_t_975(1), 12.706, 1e-3);
  EXPECT_NEAR(student_t_975(7), 2.365, 1e-3);
  EXPECT_NEAR(student_t_975(10), 2.228, 1e-3);
  EXPECT_NEAR(student_t_975(60), 2.000, 2e-3);
  EXPECT_NEAR(student_t_975(1e6), 1.960, 1e-3);
}

// mean +- t(n - 1) s / sqrt(n): scipy's t.interval(0.95, 7, 5, 2.138089935 / sqrt(8)) is
// (3.21251, 6.78749); one value gives no interval.
TEST(Stats, MeanIntervalIsStudentsT) {
  const auto interval = mean_interval_95(spread({2, 4, 4, 4, 5, 5, 7, 9}));
  ASSERT_TRUE(interval);
  EXPECT_NEAR(interval->low, 3.21251, 1e-3);
  EXPECT_NEAR(interval->high, 6.78749, 1e-3);
  EXPECT_FALSE(mean_interval_95(spread({3})));
  const auto constant = mean_interval_95(spread({3, 3, 3}));
  ASSERT_TRUE(constant);
  EXPECT_DOUBLE_EQ(constant->low, 3.0);
  EXPECT_DOUBLE_EQ(constant->high, 3.0);
}

// Noisy step times against their GFLOP: statsmodels 0.13's OLS(y, add_constant(x)).fit() gives
// intercept 0.0723394495, slope 2.24770642e-10 and scale 0.00113486239, and get_prediction's
// mean_ci at 1.9 GFLOP (0.46978635, 0.52902099) and at 3.5 GFLOP, beyond the points,
// (0.7903029, 0.9277705): wider away from the points' mean.
TEST(Stats, LineFitAndItsIntervalMatchStatsmodels) {
  const std::vector<double> gflop = {1.0, 2.0, 1.5, 3.0, 2.5, 1.2, 2.8, 2.2};
  const std::vector<double> seconds = {0.31, 0.52, 0.39, 0.74, 0.70, 0.33, 0.66, 0.57};
  std::vector<double> flops;
  for (const double g : gflop) flops.push_back(g * 1e9);
  const auto line = fit_line(flops, seconds);
  ASSERT_TRUE(line);
  EXPECT_NEAR(line->intercept, 0.0723394495, 1e-9);
  EXPECT_NEAR(line->slope, 2.24770642e-10, 1e-18);
  EXPECT_NEAR(line->residual_variance, 0.00113486239, 1e-10);
  const auto near = line->mean_interval_95_at(1.9e9);
  ASSERT_TRUE(near);
  EXPECT_NEAR(near->low, 0.46978635, 2e-5);
  EXPECT_NEAR(near->high, 0.52902099, 2e-5);
  const auto far = line->mean_interval_95_at(3.5e9);
  ASSERT_TRUE(far);
  EXPECT_NEAR(far->low, 0.7903029, 2e-5);
  EXPECT_NEAR(far->high, 0.9277705, 2e-5);
  EXPECT_NEAR((far->low + far->high) / 2, line->at(3.5e9), 1e-12);
}

// Two points make a line with no interval; one point, or one x for all, no line.
TEST(Stats, LineFitNeedsTwoXsAndThreePointsForAnInterval) {
  const auto two = fit_line({1, 3}, {2, 6});
  ASSERT_TRUE(two);
  EXPECT_DOUBLE_EQ(two->slope, 2.0);
  EXPECT_DOUBLE_EQ(two->intercept, 0.0);
  EXPECT_FALSE(two->mean_interval_95_at(2));
  EXPECT_FALSE(fit_line({1}, {2}));
  EXPECT_FALSE(fit_line({2, 2, 2}, {1, 2, 3}));
}

TEST(Stats, DurationsAreQuotedAsMinutesAndSeconds) {
  EXPECT_EQ(format_duration(83.4), "01:23");
  EXPECT_EQ(format_duration(19 * 60 + 32), "19:32");
  EXPECT_EQ(format_duration(102 * 60 + 25), "1:42:25");
  EXPECT_EQ(format_duration(0.2), "00:00");
}

}  // namespace tbench
