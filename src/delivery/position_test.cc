#include "delivery/position.h"

#include <gtest/gtest.h>

namespace icestream::delivery {
namespace {

TEST(PositionTest, SequenceNumbersOrderAsNumbers) {
  EXPECT_LT(CompareSequenceNumbers("9", "10"), 0);  // moto's tiny numbers: not lexical
  EXPECT_LT(CompareSequenceNumbers("2", "19"), 0);
  EXPECT_EQ(CompareSequenceNumbers("123", "123"), 0);
  EXPECT_GT(CompareSequenceNumbers("49600871682957036442365024926191073437251060580128653314",
                                   "49600871682957036442365024926191073437251060580128653313"),
            0);
  EXPECT_TRUE(IsSequenceNumber("0"));
  EXPECT_TRUE(IsSequenceNumber(std::string(129, '9')));
  EXPECT_FALSE(IsSequenceNumber(std::string(130, '9')));
  EXPECT_FALSE(IsSequenceNumber("01"));
  EXPECT_FALSE(IsSequenceNumber(""));
  EXPECT_FALSE(IsSequenceNumber("12a"));
}

TEST(PositionTest, PositionsOrderStartRecordsAndAggregateParts) {
  Position start;
  Position r10{"10", std::nullopt};
  Position r10_part{"10", 2};
  Position r10_part5{"10", 5};
  Position r9{"9", std::nullopt};
  EXPECT_TRUE(start < r9);
  EXPECT_TRUE(r9 < r10_part);
  EXPECT_TRUE(r10_part < r10_part5);
  EXPECT_TRUE(r10_part5 < r10);  // the whole record after any of its parts
  EXPECT_FALSE(r10 < r10);
  EXPECT_EQ(ComparePositions(start, Position{}), 0);
  EXPECT_EQ(PositionText(start), "at the start of the shard");
  EXPECT_EQ(PositionText(r10_part), "after 10#2");
}

}  // namespace
}  // namespace icestream::delivery
