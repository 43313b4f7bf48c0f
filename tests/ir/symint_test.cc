// aotgrad: tests of SymInt -- arithmetic, canonical equality, hints, printing and parsing.
#include "aotgrad/ir/symint.h"

#include <gtest/gtest.h>

#include <limits>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

SymInt parse(const std::string& s) {
  std::string err;
  auto v = parse_sym_expr(s, &err);
  EXPECT_TRUE(v.has_value()) << s << ": " << err;
  return v.value_or(SymInt(-12345));
}

std::string parse_error(const std::string& s) {
  std::string err;
  auto v = parse_sym_expr(s, &err);
  EXPECT_FALSE(v.has_value()) << s << " parsed as " << (v ? v->to_string() : "");
  return err;
}

TEST(SymInt, ConcreteArithmeticFolds) {
  SymInt a = 6, b = 4;
  EXPECT_TRUE((a + b).is_concrete());
  EXPECT_EQ((a + b).value(), 10);
  EXPECT_EQ((a - b).value(), 2);
  EXPECT_EQ((a * b).value(), 24);
  EXPECT_EQ((-a).value(), -6);
  EXPECT_EQ(product({2, 3, 4}).value(), 24);
  EXPECT_EQ(product({}).value(), 1);
  EXPECT_TRUE(a == 6);
  EXPECT_FALSE(a == 7);
}

TEST(SymInt, PythonFloorDivisionAndModulo) {
  EXPECT_EQ(floordiv(SymInt(7), 2).value(), 3);
  EXPECT_EQ(floordiv(SymInt(-7), 2).value(), -4);
  EXPECT_EQ(floordiv(SymInt(7), -2).value(), -4);
  EXPECT_EQ(mod(SymInt(-7), 2).value(), 1);
  EXPECT_EQ(mod(SymInt(7), -2).value(), -1);
  EXPECT_EQ(mod(SymInt(6), 3).value(), 0);
  EXPECT_THROW(floordiv(SymInt(1), 0), Error);
  EXPECT_THROW(mod(SymInt(1), 0), Error);
}

TEST(SymInt, OverflowIsAnErrorNotUndefinedBehaviour) {
  EXPECT_THROW(SymInt(kMax) + 1, Error);
  EXPECT_THROW(SymInt(kMin) - 1, Error);
  EXPECT_THROW(SymInt(kMax) * 2, Error);
  EXPECT_THROW(-SymInt(kMin), Error);
  // INT64_MIN / -1 and % -1 trap on x86 when computed naively.
  EXPECT_THROW(floordiv(SymInt(kMin), -1), Error);
  EXPECT_EQ(mod(SymInt(kMin), -1).value(), 0);
  SymInt s0 = SymInt::symbol("s0");
  EXPECT_THROW(s0 * kMax * 2, Error);
  EXPECT_THROW((s0 + kMax) + 1, Error);
  // A hint that overflows is no hint.
  SymInt big = SymInt::symbol("s9", kMax);
  EXPECT_FALSE((big * 2).hint().has_value());
}

TEST(SymInt, CanonicalEquality) {
  SymInt s0 = SymInt::symbol("s0"), s1 = SymInt::symbol("s1");
  EXPECT_TRUE(s0 * 2 == 2 * s0);
  EXPECT_TRUE(s0 + s1 == s1 + s0);
  EXPECT_TRUE((s0 + 1) * (s0 - 1) == s0 * s0 - 1);
  EXPECT_TRUE(s0 * s1 * s0 == s0 * s0 * s1);
  EXPECT_TRUE(s0 - s0 == 0);
  EXPECT_TRUE((s0 - s0).is_concrete());
  EXPECT_TRUE(s0 * 0 == 0);
  EXPECT_FALSE(s0 == s1);
  EXPECT_FALSE(s0 + 1 == s0);
  EXPECT_FALSE(s0 * 2 == s0 * 3);
  // Structural, not by hint: s0 with hint 3 is not the constant 3.
  SymInt h = SymInt::symbol("s0", 3);
  EXPECT_FALSE(h == 3);
  EXPECT_FALSE(h == SymInt(3));
  EXPECT_TRUE(h == s0);  // the same symbol name
  EXPECT_TRUE(h.known_eq(s0));
}

TEST(SymInt, Hints) {
  SymInt s0 = SymInt::symbol("s0", 5), s1 = SymInt::symbol("s1", 3);
  EXPECT_EQ((s0 * s1 + 1).hint(), 16);
  EXPECT_EQ(floordiv(s0, 2).hint(), 2);
  EXPECT_EQ(mod(s0, s1).hint(), 2);
  EXPECT_EQ(SymInt(7).hint(), 7);
  SymInt u = SymInt::symbol("u0");
  EXPECT_FALSE((u + s0).hint().has_value());
  EXPECT_EQ((u + s0).hint_or(-1), -1);
  EXPECT_FALSE(s0.is_concrete());
  EXPECT_FALSE(s0.maybe_value().has_value());
  EXPECT_THROW(s0.value(), Error);
}

TEST(SymInt, SymbolicDivision) {
  SymInt s0 = SymInt::symbol("s0");
  EXPECT_TRUE(floordiv(s0 * 4 + 8, 4) == s0 + 2);  // exact: every coefficient divisible
  EXPECT_TRUE(floordiv(s0, 1) == s0);
  EXPECT_TRUE(floordiv(s0, s0) == 1);
  EXPECT_TRUE(floordiv(s0, -1) == -s0);
  EXPECT_TRUE(mod(s0, 1) == 0);
  EXPECT_TRUE(mod(s0, -1) == 0);
  EXPECT_EQ(floordiv(s0, 2).to_string(), "(s0//2)");
  EXPECT_EQ(mod(s0, 3).to_string(), "(s0 % 3)");
  EXPECT_TRUE(floordiv(s0, 2) == floordiv(SymInt::symbol("s0"), 2));
  EXPECT_FALSE(floordiv(s0, 2) == floordiv(s0, 3));
  EXPECT_EQ(floordiv(floordiv(s0, 2), 2).to_string(), "((s0//2)//2)");
}

TEST(SymInt, Printing) {
  SymInt s0 = SymInt::symbol("s0"), s1 = SymInt::symbol("s1");
  EXPECT_EQ(SymInt(8).to_string(), "8");
  EXPECT_EQ(SymInt(-3).to_string(), "-3");
  EXPECT_EQ(s0.to_string(), "s0");
  EXPECT_EQ((s0 * 2).to_string(), "2*s0");
  EXPECT_EQ((3 - s0).to_string(), "-s0 + 3");
  EXPECT_EQ((s0 * -2 - 1).to_string(), "-2*s0 - 1");
  EXPECT_EQ((s0 * s1 + s0 + 1).to_string(), "s0*s1 + s0 + 1");  // sympy's order
  EXPECT_EQ((s0 * s0 - 1).to_string(), "s0**2 - 1");
  EXPECT_EQ((s0 * s0 * s1).to_string(), "s0**2*s1");
  EXPECT_EQ((s0 + kMin).to_string(), "s0 - 9223372036854775808");
  EXPECT_EQ(to_string(SymIntVector{4, s0}), "[4, s0]");
  EXPECT_EQ(to_string(SymIntVector{}), "[]");
  std::string out = "x";
  (s0 + 1).append_to(out);
  SymInt(42).append_to(out);
  EXPECT_EQ(out, "xs0 + 142");
}

TEST(SymInt, ParseExpressions) {
  SymInt s0 = SymInt::symbol("s0"), s1 = SymInt::symbol("s1");
  EXPECT_EQ(parse("42").value(), 42);
  EXPECT_EQ(parse("-7").value(), -7);
  EXPECT_EQ(parse("2*3 + 4").value(), 10);
  EXPECT_EQ(parse("7//2").value(), 3);
  EXPECT_EQ(parse("-7 % 3").value(), 2);
  EXPECT_TRUE(parse("s0") == s0);
  EXPECT_TRUE(parse("2*s0") == 2 * s0);
  EXPECT_TRUE(parse("s0*2") == 2 * s0);
  EXPECT_TRUE(parse("  s0 + 1 ") == s0 + 1);
  EXPECT_TRUE(parse("3 - s0") == 3 - s0);
  EXPECT_TRUE(parse("(s0 + 1)*(s0 - 1)") == s0 * s0 - 1);
  EXPECT_TRUE(parse("s0**2") == s0 * s0);
  EXPECT_TRUE(parse("-s0**2") == -(s0 * s0));  // ** binds tighter than unary minus
  EXPECT_TRUE(parse("2**3**2") == 512);        // and is right-associative
  EXPECT_TRUE(parse("s0//2") == floordiv(s0, 2));
  EXPECT_TRUE(parse("((s0//2))") == floordiv(s0, 2));
  EXPECT_TRUE(parse("s1 % 3") == mod(s1, 3));
  EXPECT_TRUE(parse("2*s0//2") == s0);
  EXPECT_TRUE(parse("--3") == 3);
  EXPECT_TRUE(parse("u0*s1") == SymInt::symbol("u0") * s1);
}

TEST(SymInt, PrintedFormsParseBack) {
  SymInt s0 = SymInt::symbol("s0"), s1 = SymInt::symbol("s1");
  for (const SymInt& v :
       {SymInt(0), SymInt(-5), s0, 2 * s0 + 1, s0 * s1 - s0, s0 * s0 * s1 - 7, floordiv(s0, 2) + 1,
        mod(s0 * 3, s1), floordiv(floordiv(s0, 2), 3), -s0 - s1}) {
    SymInt back = parse(v.to_string());
    EXPECT_TRUE(back == v) << v.to_string() << " parsed back as " << back.to_string();
    EXPECT_EQ(back.to_string(), v.to_string());
  }
}

TEST(SymInt, ParseErrors) {
  EXPECT_NE(parse_error("").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("s0 +").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("(s0").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("s0)").find("unexpected ')'"), std::string::npos);
  EXPECT_NE(parse_error("s0 $ 1").find("unexpected '$'"), std::string::npos);
  EXPECT_NE(parse_error("1234567890123456789012").find("too large"), std::string::npos);
  EXPECT_NE(parse_error("999999999999999999*999999999999999999").find("overflow"),
            std::string::npos);
  EXPECT_NE(parse_error("s0 // 0").find("division by zero"), std::string::npos);
  EXPECT_NE(parse_error("s0**s1").find("exponent"), std::string::npos);
  EXPECT_NE(parse_error("2**99").find("exponent"), std::string::npos);
  EXPECT_NE(parse_error("s0 ** 2 ** 2 ** 3").find("exponent"), std::string::npos);
  EXPECT_FALSE(parse_sym_expr("s0 * * 2").has_value());
  EXPECT_FALSE(parse_sym_expr("2 3").has_value());
  // No error string requested: still just nullopt.
  EXPECT_FALSE(parse_sym_expr("(((").has_value());
}

TEST(SymInt, DeepNestingIsRejectedWithoutCrashing) {
  std::string deep(100000, '(');
  deep += "s0";
  deep += std::string(100000, ')');
  EXPECT_NE(parse_error(deep).find("nests too deeply"), std::string::npos);
  EXPECT_NE(parse_error(std::string(100000, '-') + "1").find("nests too deeply"),
            std::string::npos);
  // Moderate nesting is fine.
  EXPECT_TRUE(parse(std::string(50, '(') + "s0" + std::string(50, ')')) == SymInt::symbol("s0"));
}

}  // namespace
}  // namespace aotgrad

namespace aotgrad {
namespace {

// A floordiv/mod of a sum prints with parentheses and parses back to the same expression.
TEST(SymIntText, FloorDivOfASumRoundTrips) {
  SymInt s1 = SymInt::symbol("s1");
  SymInt e = floordiv(s1 - 1, 2) + 1;
  EXPECT_EQ(e.to_string().find("(s1 - 1)//2") != std::string::npos, true) << e.to_string();
  auto parsed = parse_sym_expr(e.to_string());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, e);
  SymInt m = mod(s1 * SymInt::symbol("s2"), 3);
  auto pm = parse_sym_expr(m.to_string());
  ASSERT_TRUE(pm.has_value());
  EXPECT_EQ(*pm, m) << m.to_string();
}

}  // namespace
}  // namespace aotgrad
