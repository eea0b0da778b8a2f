#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

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

// The t distribution's 97.5% quantile solved in mpmath at 30 digits (betainc's tail), fractional
// degrees of freedom included (Welch's and effective counts'): a table interpolated in 1/df gave
// 9.53 at 1.233 where the quantile is 8.22. (scipy's t.ppf agrees to 1e-8.)
TEST(StudentT, MatchesTheDistributionsQuantiles) {
  const std::pair<double, double> quantiles[] = {
      {1, 12.706204736174705},   {1.2333155318310782, 8.2236820762064938}, {1.5, 6.0166631044279319},
      {2, 4.3026527297494639},   {2.7, 3.3921483831737522},                {3, 3.1824463052837096},
      {7, 2.3646242515927853},   {10, 2.2281388519862747},                 {29.5, 2.0437249667721233},
      {60, 2.0002978220142605},  {1000, 1.9623390808264085},               {1e6, 1.959966356814107},
      {2e5, 1.9599758459667685}, {1e9, 1.9599639869123255}};  // the last two by Cornish-Fisher
  for (const auto& [df, t] : quantiles) EXPECT_NEAR(student_t_975(df), t, 1e-9) << "df " << df;
  EXPECT_EQ(student_t_975(0.5), student_t_975(1));  // under one degree of freedom counts as one
  EXPECT_NEAR(student_t_975(std::numeric_limits<double>::infinity()), 1.959963984540054, 1e-12);  // the normal's
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

// A drifting series: statsmodels 0.13's acf(x, nlags=1, fft=False)[1] is 0.3142023346, worth
// 12 (1 - rho) / (1 + rho) = 6.262028127 independent values; with the variance scaled by
// 11 / (12 - 12 / 6.262028127) and scipy's t.ppf(0.975, 5.262028127), the mean's interval is
// (0.8169536970, 0.8680463030), where independent values would give (0.82714440, 0.85785560).
// Bias-corrected, rho is (12 r + 1) / 9 = 0.5300475573, worth 3.685786945 values: the interval's
// half-width 0.0480589767 (numpy and scipy, the same formulas).
const std::vector<double> kDrifting = {0.80, 0.82, 0.81, 0.85, 0.84, 0.86, 0.83, 0.86, 0.88, 0.85, 0.87, 0.84};

TEST(Stats, Lag1AutocorrelationMatchesStatsmodels) {
  EXPECT_NEAR(lag1_autocorrelation(kDrifting).value_or(-2), 0.3142023346, 1e-9);
  EXPECT_NEAR(lag1_autocorrelation({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}).value_or(-2), -0.9166666667, 1e-9);  // alternating
  EXPECT_FALSE(lag1_autocorrelation({3, 3, 3, 3})) << "no spread";
  EXPECT_FALSE(lag1_autocorrelation({1, 2})) << "too few";
  // Ten steps of 0.1 s: their mean is an ulp off 0.1, so deviations all of that ulp would read as 0.9.
  EXPECT_FALSE(lag1_autocorrelation(std::vector<double>(10, 0.1))) << "no spread, whatever the rounding";
}

TEST(Stats, Lag1AutocorrelationLosesItsSmallSampleBias) {
  EXPECT_NEAR(bias_corrected_lag1(0.3142023346, 12), 0.5300475573, 1e-9);
  EXPECT_NEAR(bias_corrected_lag1(0.0, 20), 1.0 / 17, 1e-12);  // r runs low by 1/n where rho is 0
  EXPECT_DOUBLE_EQ(bias_corrected_lag1(0.9, 20), 1.0);          // 19/17, held to [-1, 1]
  EXPECT_DOUBLE_EQ(bias_corrected_lag1(-0.95, 20), -1.0);
  EXPECT_DOUBLE_EQ(bias_corrected_lag1(0.4, 3), 0.4);           // too few to correct
}

TEST(Stats, EffectiveCountIsTheAr1SampleSize) {
  EXPECT_NEAR(effective_count(12, 0.3142023346), 6.262028127, 1e-8);
  EXPECT_DOUBLE_EQ(effective_count(12, -0.9), 12.0);  // alternation loses nothing
  EXPECT_DOUBLE_EQ(effective_count(12, 0.0), 12.0);
  EXPECT_DOUBLE_EQ(effective_count(12, 0.99), 2.0);   // never under one degree of freedom
}

TEST(Stats, MeanIntervalCountsAnEffectiveNumberOfValues) {
  const Spread s = spread(kDrifting);
  const auto serial = mean_interval_95(s, effective_count(12, *lag1_autocorrelation(kDrifting)));
  ASSERT_TRUE(serial);
  EXPECT_NEAR(serial->low, 0.8169536970, 1e-4);
  EXPECT_NEAR(serial->high, 0.8680463030, 1e-4);
  const auto independent = mean_interval_95(s);
  ASSERT_TRUE(independent);
  EXPECT_NEAR(independent->low, 0.82714440, 1e-4);
  EXPECT_NEAR(independent->high, 0.85785560, 1e-4);
}

// The line's residuals worth a quarter as many independent points: its variance 4 times, and
// Student's t at effective - 2 degrees of freedom.
TEST(Stats, LineIntervalCountsAnEffectiveNumberOfPoints) {
  std::vector<double> x, y;
  for (int i = 0; i < 16; ++i) {
    x.push_back(i % 4);
    y.push_back(1.0 + 0.5 * (i % 4) + (i % 3 == 0 ? 0.1 : -0.05));
  }
  auto line = fit_line(x, y);
  ASSERT_TRUE(line);
  const auto independent = line->mean_interval_95_at(2.5);
  line->effective_count = 4 + 2;  // 16 points worth 6: t at 4 degrees of freedom, variance x 16/6
  const auto serial = line->mean_interval_95_at(2.5);
  ASSERT_TRUE(independent && serial);
  const double half = independent->high - line->at(2.5), serial_half = serial->high - line->at(2.5);
  EXPECT_NEAR(serial_half / half, student_t_975(4) / student_t_975(14) * std::sqrt(16.0 / 6.0), 1e-9);
}

// From 10 timed steps on, the steady step counts how alike neighbouring steps are (the steps
// about their mean, or a line's residuals); under 10 it takes them as independent, and
// alternating steps lose nothing.
TEST(SteadyStep, CountsNeighbouringStepsAlikeFromTenSteps) {
  const SteadyStep drifting = fit_steady_step(kDrifting, {}, false);
  ASSERT_TRUE(drifting.lag1_autocorrelation);
  EXPECT_NEAR(*drifting.lag1_autocorrelation, 0.5300475573, 1e-9);  // bias-corrected
  EXPECT_NEAR(drifting.effective_steps, 3.685786945, 1e-8);
  ASSERT_TRUE(drifting.half_ci95_at(0));
  EXPECT_NEAR(*drifting.half_ci95_at(0), 0.0480589767, 1e-4);
  const std::vector<double> nine(kDrifting.begin(), kDrifting.begin() + 9);
  const SteadyStep short_run = fit_steady_step(nine, {}, false);
  EXPECT_FALSE(short_run.lag1_autocorrelation);
  EXPECT_DOUBLE_EQ(short_run.effective_steps, 9.0);
  EXPECT_NEAR(*short_run.half_ci95_at(0), mean_interval_95(spread(nine))->high - spread(nine).mean, 1e-12);
  const SteadyStep alternating = fit_steady_step({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {}, false);
  EXPECT_DOUBLE_EQ(alternating.effective_steps, 12.0);
  const SteadyStep constant = fit_steady_step(std::vector<double>(12, 0.5), {}, false);
  ASSERT_TRUE(constant.lag1_autocorrelation);
  EXPECT_DOUBLE_EQ(*constant.lag1_autocorrelation, 0.0) << "no spread: the correction has nothing to move";
  EXPECT_DOUBLE_EQ(constant.effective_steps, 12.0);
  const SteadyStep rounded = fit_steady_step(std::vector<double>(12, 0.1), {}, false);  // mean an ulp off 0.1
  EXPECT_DOUBLE_EQ(rounded.lag1_autocorrelation.value_or(-2), 0.0);
  EXPECT_DOUBLE_EQ(rounded.effective_steps, 12.0);

  // A line: steps of two works in turn, their residuals drifting up then down.
  std::vector<double> flops, seconds;
  for (int i = 0; i < 12; ++i) {
    flops.push_back(i % 2 == 0 ? 1e9 : 2e9);
    seconds.push_back(0.1 + 2e-10 * flops.back() + (i < 6 ? 0.01 * i : 0.01 * (11 - i)));
  }
  const SteadyStep line = fit_steady_step(seconds, flops, true);
  ASSERT_EQ(line.model, "flops line");
  ASSERT_TRUE(line.lag1_autocorrelation);
  EXPECT_GT(*line.lag1_autocorrelation, 0.5);
  EXPECT_LT(line.effective_steps, 4.0);
  EXPECT_DOUBLE_EQ(line.line->effective_count, line.effective_steps);
}

// A short run's figures with one decimal read 0.1 s for 0.111 and ±0.0 s for a 16% spread (found
// by an audit): as many decimals as three significant digits need, one at least.
TEST(Stats, FiguresKeepTheirSignificantDigits) {
  EXPECT_EQ(format_significant(123.44), "123.4");
  EXPECT_EQ(format_significant(12.345), "12.3");
  EXPECT_EQ(format_significant(0.1113), "0.111");
  EXPECT_EQ(format_significant(0.018), "0.0180");
  EXPECT_EQ(format_significant(0.018, 2), "0.018");
  EXPECT_EQ(format_significant(-0.5), "-0.500");
  EXPECT_EQ(format_significant(0.0), "0.0");
  EXPECT_EQ(format_significant(1e-30), "0.000000000");  // at most 9 decimals
}

// llround past long long's range is undefined: a corrupt figure prints as a dash, not as "-30:-8".
TEST(Stats, DurationsPastAnyRunPrintAsADash) {
  EXPECT_EQ(format_duration(1e300), "-");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "-");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(format_duration(3600.0 * 1e6), "1000000:00:00");
}

TEST(Stats, DurationsAreQuotedAsMinutesAndSeconds) {
  EXPECT_EQ(format_duration(83.4), "01:23");
  EXPECT_EQ(format_duration(19 * 60 + 32), "19:32");
  EXPECT_EQ(format_duration(102 * 60 + 25), "1:42:25");
}

// A CPU smoke run's epoch lasts seconds or less: whole seconds would quote it as "00:00".
TEST(Stats, DurationsUnderTenSecondsKeepTheirFraction) {
  EXPECT_EQ(format_duration(0.2), "00:00.200");
  EXPECT_EQ(format_duration(0.0637), "00:00.064");
  EXPECT_EQ(format_duration(0.0), "00:00.000");
  EXPECT_EQ(format_duration(0.9996), "00:01.00");
  EXPECT_EQ(format_duration(5.432), "00:05.43");
  EXPECT_EQ(format_duration(9.996), "00:10");
  EXPECT_EQ(format_duration(10.4), "00:10");
}

}  // namespace tbench
