// The range check CLI11 runs while parsing (cli/option_checks.h: InRange, AtLeast): a value outside
// the range is refused with the project's "--OPTION = VALUE: rule (why)" and exit 2, a value inside
// or not given passes, and a value that is no whole number is CLI11's conversion error.
#include "cli/option_checks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipette/common/exit_code.h"

namespace pipette::cli {
namespace {

struct Parsed {
  int code = 0;  // ReportParseError's, or 0 when the line parsed
  std::string err;
  int value = 0;
};

Parsed Parse(std::vector<std::string> args) {
  CLI::App app{"test"};
  Parsed parsed;
  parsed.value = 5;
  app.add_option("--n", parsed.value)->check(InRange(1, 10, "a reason"));
  app.add_option("--k", parsed.value)->check(AtLeast(0));
  args.insert(args.begin(), "test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    parsed.code = ReportParseError(app, e, "probe");
  }
  parsed.err = testing::internal::GetCapturedStderr();
  return parsed;
}

TEST(InRange, RefusesAValueOutsideWithTheOptionTheValueTheRuleAndWhy) {
  const Parsed low = Parse({"--n", "0"});
  EXPECT_EQ(low.code, kExitBadInput);
  EXPECT_EQ(low.err.substr(0, low.err.find('\n')),
            "pipette probe: --n = 0: must be in [1, 10] (a reason)");
  EXPECT_NE(Parse({"--n=11"}).err.find("--n = 11: must be in [1, 10] (a reason)"),
            std::string::npos);
  // CLI11 alone reads hexadecimal too ("0x20" as 32): numbers are decimal, quoted as given.
  EXPECT_NE(
      Parse({"--n", "0x20"}).err.find("--n = '0x20': must be a whole number in decimal digits"),
      std::string::npos);
  EXPECT_NE(Parse({"--n", "011"})
                .err.find("--n = '011': must be a whole number in decimal digits, "
                          "without leading zeros"),
            std::string::npos);  // CLI11 alone reads it as octal 9
  EXPECT_NE(Parse({"--n", "12"}).err.find("--n = 12: must be in [1, 10]"), std::string::npos);
  const Parsed negative = Parse({"--k", "-1"});
  EXPECT_EQ(negative.code, kExitBadInput);
  EXPECT_NE(negative.err.find("--k = -1: must be at least 0\n"), std::string::npos) << negative.err;
}

TEST(InRange, PassesTheBoundsAndLeavesANonNumberToCLI11) {
  for (const char* ok : {"1", "10", "7"}) {
    const Parsed p = Parse({"--n", ok});
    EXPECT_EQ(p.code, 0) << ok << ": " << p.err;
    EXPECT_EQ(p.value, std::stoi(ok));
  }
  EXPECT_EQ(Parse({}).value, 5);  // nothing given: the default stands
  const Parsed word = Parse({"--n", "many"});
  EXPECT_EQ(word.code, kExitBadInput);
  EXPECT_EQ(word.err.find("must be in"), std::string::npos) << word.err;
  EXPECT_NE(word.err.find("--n"), std::string::npos) << word.err;
}

}  // namespace
}  // namespace pipette::cli
