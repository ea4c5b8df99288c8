// Tests for core/include/loom/core/error.h and str_cat.h: the exception hierarchy and the
// LOOM_CHECK family.

#include "loom/core/error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace loom {
namespace {

template <typename E>
void expect_is_loom_error() {
  static_assert(std::is_base_of_v<Error, E>);
  static_assert(std::is_base_of_v<std::runtime_error, E>);
  try {
    throw E("boom");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "boom");
    EXPECT_NE(dynamic_cast<const E*>(&e), nullptr);
    return;
  }
  ADD_FAILURE() << "not caught as loom::Error";
}

TEST(ErrorTest, EverySubclassIsALoomError) {
  expect_is_loom_error<ValueError>();
  expect_is_loom_error<TypeError>();
  expect_is_loom_error<IndexError>();
  expect_is_loom_error<DeviceError>();
  expect_is_loom_error<NotImplementedError>();
  expect_is_loom_error<RegistrationError>();
  expect_is_loom_error<PluginError>();
  try {
    throw SchemaParseError("bad schema", 3);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "bad schema");
  }
  try {
    throw TypeError("x");
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "x");
  }
}

TEST(ErrorTest, SubclassesAreDistinct) {
  EXPECT_THROW(
      {
        try {
          throw TypeError("t");
        } catch (const ValueError&) {
          FAIL() << "a TypeError was caught as ValueError";
        }
      },
      TypeError);
}

TEST(ErrorTest, SchemaParseErrorCarriesTheColumn) {
  const SchemaParseError e("foo(Tensor x -> Tensor\n            ^", 13);
  EXPECT_EQ(e.column(), 13);
  EXPECT_NE(std::string(e.what()).find('^'), std::string::npos);
}

int checked_div(int a, int b) {
  LOOM_CHECK(b != 0, "checked_div: division of ", a, " by zero");
  return a / b;
}

TEST(ErrorTest, LoomCheckThrowsValueErrorWithTheConcatenatedMessage) {
  EXPECT_EQ(checked_div(6, 3), 2);
  try {
    checked_div(7, 0);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "checked_div: division of 7 by zero");
  }
}

TEST(ErrorTest, LoomCheckTThrowsTheGivenType) {
  auto f = [](bool ok) { LOOM_CHECK_T(IndexError, ok, "index ", 5, " out of range"); };
  EXPECT_NO_THROW(f(true));
  try {
    f(false);
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "index 5 out of range");
  }
}

TEST(ErrorTest, ACheckWithoutMessageNamesTheCondition) {
  const int n = 3;
  try {
    LOOM_CHECK(n == 4);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Expected n == 4 to be true, but got false");
  }
  try {
    LOOM_CHECK_T(TypeError, n < 0);
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_STREQ(e.what(), "Expected n < 0 to be true, but got false");
  }
}

TEST(ErrorTest, LoomThrowAlwaysThrows) {
  EXPECT_THROW(LOOM_THROW(NotImplementedError, "no kernel for ", std::string("add")),
               NotImplementedError);
}

TEST(ErrorTest, ConditionIsEvaluatedOnceAndMessageOnlyOnFailure) {
  int evaluated = 0, formatted = 0;
  auto cond = [&] { return ++evaluated > 0; };
  auto piece = [&] {
    ++formatted;
    return std::string("x");
  };
  LOOM_CHECK(cond(), piece());
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(formatted, 0);
  EXPECT_THROW(LOOM_CHECK(!cond(), piece()), ValueError);
  EXPECT_EQ(evaluated, 2);
  EXPECT_EQ(formatted, 1);
}

TEST(ErrorTest, CheckWorksInAnUnbracedIfElse) {
  // The do { } while (0) wrapper: the macro is one statement.
  bool reached_else = false;
  if (false)
    LOOM_CHECK(false, "never");
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(StrCatTest, MixesStringKindsAndNumbers) {
  const std::string_view sv = "view";
  const std::string s = "string";
  EXPECT_EQ(str_cat(sv, "/", s, "/", "chars", "/", 42, "/", int64_t{-7}, "/", 2.5),
            "view/string/chars/42/-7/2.5");
  std::string out = "a";
  str_append(&out, sv, 1, std::string_view());
  EXPECT_EQ(out, "aview1");
  EXPECT_EQ(str_cat(), "");
  // A std::string_view message piece goes into LOOM_CHECK too.
  try {
    LOOM_CHECK(false, "op ", sv);
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "op view");
  }
}

}  // namespace
}  // namespace loom
