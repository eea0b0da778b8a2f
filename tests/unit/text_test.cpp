// The shared text helpers: lists in messages and tables.
#include <gtest/gtest.h>

#include "tbench/text.hpp"

namespace tbench {
namespace {

TEST(Text, JoinPutsTheSeparatorBetweenNeighboursOnly) {
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(join({"a"}), "a");
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"", "b"}), ", b") << "an empty first item keeps its place";
  EXPECT_EQ(join({"x", "y"}, " | "), "x | y");
}

TEST(Text, JoinAsProseEndsWithAnd) {
  EXPECT_EQ(join_as_prose({}), "");
  EXPECT_EQ(join_as_prose({"RANK"}), "RANK");
  EXPECT_EQ(join_as_prose({"RANK", "WORLD_SIZE"}), "RANK and WORLD_SIZE");
  EXPECT_EQ(join_as_prose({"RANK", "WORLD_SIZE", "MASTER_ADDR"}), "RANK, WORLD_SIZE and MASTER_ADDR");
}

}  // namespace
}  // namespace tbench
