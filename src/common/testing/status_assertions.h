// gtest assertions on Status and Result<T> that print the status when they fail.
//
//   ASSERT_OK(expr)                  expr (a Status or a Result<T>) is OK
//   ASSERT_OK_AND_ASSIGN(lhs, expr)  expr is an OK Result<T>; its value is moved into lhs
//                                    (a declaration such as `auto x` or an existing variable)
//   ASSERT_STATUS(kCode, expr)       expr failed with StatusCode::kCode
//   ASSERT_NOT_OK(expr)              expr failed, with any code (damaged-input loops where the
//                                    code depends on where the damage falls)
// Each has an EXPECT_ twin (except ASSERT_OK_AND_ASSIGN, which must stop the test), and every
// one takes `<< "more context"` like gtest's own assertions. Arrow's arrow/testing/gtest_util.h
// (ASSERT_OK, ASSERT_RAISES) is the model.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "common/status.h"

namespace icestream::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// Predicate formatters for gtest's {ASSERT,EXPECT}_PRED_FORMAT{1,2}: on failure the message
// names the expression and prints the status it returned.
::testing::AssertionResult IsOk(const char* expr_text, const Status& s);
::testing::AssertionResult IsNotOk(const char* expr_text, const Status& s);
::testing::AssertionResult HasCode(const char* code_text, const char* expr_text, StatusCode code,
                                   const Status& s);

template <typename T>
::testing::AssertionResult IsOk(const char* expr_text, const Result<T>& r) {
  return IsOk(expr_text, r.status());
}
template <typename T>
::testing::AssertionResult IsNotOk(const char* expr_text, const Result<T>& r) {
  return IsNotOk(expr_text, r.status());
}
template <typename T>
::testing::AssertionResult HasCode(const char* code_text, const char* expr_text, StatusCode code,
                                   const Result<T>& r) {
  return HasCode(code_text, expr_text, code, r.status());
}

// ASSERT_OK_AND_ASSIGN's formatter: names the expression that made the result rather than the
// temporary holding it.
struct IsOkFrom {
  const char* expr_text;
  template <typename S>
  ::testing::AssertionResult operator()(const char*, const S& s) const {
    return IsOk(expr_text, StatusOf(s));
  }
};

}  // namespace icestream::testing

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::icestream::testing::IsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::icestream::testing::IsOk, expr)
#define ASSERT_NOT_OK(expr) ASSERT_PRED_FORMAT1(::icestream::testing::IsNotOk, expr)
#define EXPECT_NOT_OK(expr) EXPECT_PRED_FORMAT1(::icestream::testing::IsNotOk, expr)
#define ASSERT_STATUS(code, expr) \
  ASSERT_PRED_FORMAT2(::icestream::testing::HasCode, ::icestream::StatusCode::code, expr)
#define EXPECT_STATUS(code, expr) \
  EXPECT_PRED_FORMAT2(::icestream::testing::HasCode, ::icestream::StatusCode::code, expr)

#define ICESTREAM_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, rexpr)        \
  auto tmp = (rexpr);                                               \
  ASSERT_PRED_FORMAT1(::icestream::testing::IsOkFrom{#rexpr}, tmp); \
  lhs = std::move(tmp).value()

#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ICESTREAM_ASSERT_OK_AND_ASSIGN_IMPL(ICESTREAM_CONCAT(icestream_result_, __LINE__), lhs, rexpr)
