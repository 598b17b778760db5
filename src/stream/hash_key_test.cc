#include "stream/hash_key.h"

#include <gtest/gtest.h>

namespace icestream::stream {
namespace {

// Vectors from aws-api.md §C.2.
TEST(HashKeyTest, Md5Vectors) {
  EXPECT_EQ(ToDecimal(PartitionKeyHash("a")), "16955237001963240173058271559858726497");
  EXPECT_EQ(ToDecimal(PartitionKeyHash("pk1")), "329398341438914906102347661116985167824");
  EXPECT_EQ(ToDecimal(PartitionKeyHash("\xc3\xa9")), "136732923097551493579404309126273812335");
}

TEST(HashKeyTest, EvenSplitMatchesAws) {
  auto one = EvenSplit(1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].start, 0u);
  EXPECT_EQ(one[0].end, kUint128Max);
  auto two = EvenSplit(2);
  EXPECT_EQ(ToDecimal(two[0].end), "170141183460469231731687303715884105727");
  EXPECT_EQ(ToDecimal(two[1].start), "170141183460469231731687303715884105728");
  auto three = EvenSplit(3);
  EXPECT_EQ(ToDecimal(three[0].end), "113427455640312821154458202477256070484");
  EXPECT_EQ(ToDecimal(three[1].end), "226854911280625642308916404954512140969");
  EXPECT_EQ(three[2].end, kUint128Max);
  auto four = EvenSplit(4);
  EXPECT_EQ(ToDecimal(four[0].end), "85070591730234615865843651857942052863");
  EXPECT_EQ(ToDecimal(four[1].end), "170141183460469231731687303715884105727");
  EXPECT_EQ(ToDecimal(four[2].end), "255211775190703847597530955573826158591");
  for (size_t n : {1, 2, 3, 5, 7, 16, 1000}) {
    auto r = EvenSplit(n);
    EXPECT_EQ(r.front().start, 0u);
    EXPECT_EQ(r.back().end, kUint128Max);
    for (size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i].start, r[i - 1].end + 1);
  }
}

}  // namespace
}  // namespace icestream::stream
