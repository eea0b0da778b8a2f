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

TEST(Stats, DurationsAreQuotedAsMinutesAndSeconds) {
  EXPECT_EQ(format_duration(83.4), "01:23");
  EXPECT_EQ(format_duration(19 * 60 + 32), "19:32");
  EXPECT_EQ(format_duration(102 * 60 + 25), "1:42:25");
  EXPECT_EQ(format_duration(0.2), "00:00");
}

}  // namespace tbench
