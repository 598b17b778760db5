// The failure messages of the Status assertions (status_assertions.h).
#include "common/testing/status_assertions.h"

#include <string>

namespace icestream::testing {

::testing::AssertionResult IsOk(const char* expr_text, const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr_text << " failed: " << s.ToString();
}

::testing::AssertionResult IsNotOk(const char* expr_text, const Status& s) {
  if (!s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr_text << " succeeded; expected an error";
}

::testing::AssertionResult HasCode(const char* code_text, const char* expr_text, StatusCode code,
                                   const Status& s) {
  if (s.code() == code) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << expr_text << ": expected " << StatusCodeName(code) << " (" << code_text << "), got ";
  if (s.ok()) return failure << "OK";
  return failure << s.ToString();
}

}  // namespace icestream::testing
