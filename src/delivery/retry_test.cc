// The retry policy: which failures are retried, retried for the grace, or fail a channel;
// and the backoff's bounds.
#include "delivery/retry.h"

#include <gtest/gtest.h>

#include "delivery/delivery_store.h"

namespace icestream::delivery {
namespace {

TEST(ClassifyFailure, AFencedWriteIsRetriedWhateverContextItCarries) {
  Status fenced = Fenced("this worker no longer holds shard:a of channel c");
  EXPECT_EQ(ClassifyFailure(fenced), FailureKind::kRetry);
  // On its way up the status gains context; the subcode, not the text, decides.
  EXPECT_EQ(ClassifyFailure(fenced.WithContext("table commit").WithContext("batch")),
            FailureKind::kRetry);
  // A refusal of the destination that merely mentions the word is not a fence.
  EXPECT_EQ(ClassifyFailure(FailedPrecondition("fenced: AccessDenied")), FailureKind::kGrace);
}

TEST(ClassifyFailure, MissingThingsGetTheGraceCallerErrorsFailAtOnce) {
  EXPECT_EQ(ClassifyFailure(NotFound("NoSuchBucket")), FailureKind::kGrace);
  EXPECT_EQ(ClassifyFailure(FailedPrecondition("AccessDenied")), FailureKind::kGrace);
  EXPECT_EQ(ClassifyFailure(InvalidArgument("bad key template")), FailureKind::kPermanent);
  EXPECT_EQ(ClassifyFailure(AlreadyExists("table of another channel")), FailureKind::kPermanent);
  EXPECT_TRUE(IsPermanent(InvalidArgument("x")));
  for (const Status& st : {Unavailable("503"), Throttled("SlowDown"), Conflict("lost race"),
                           IOError("EIO"), UnknownOutcome("timeout")}) {
    EXPECT_EQ(ClassifyFailure(st), FailureKind::kRetry) << st.ToString();
  }
}

TEST(RetryDelay, StaysWithinHalfToOneAndAHalfOfTheDoubledBaseAndUnderTheCap) {
  for (int failures = 1; failures <= 30; ++failures) {
    int shift = std::min(failures - 1, 20);
    int64_t base = std::min<int64_t>(5000, int64_t{100} << shift);
    for (uint64_t r : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, ~uint64_t{0}}) {
      int64_t d = RetryDelayMs(failures, 100, 5000, r);
      EXPECT_GE(d, base / 2) << failures;
      EXPECT_LE(d, std::min<int64_t>(5000, base * 3 / 2)) << failures;
    }
  }
  EXPECT_GE(RetryDelayMs(1, 0, 0, 7), 1);  // never zero: a retry loop must not spin
}

}  // namespace
}  // namespace icestream::delivery
