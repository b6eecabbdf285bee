// The one rule that turns a Status into an exit code (cli/exit_code.h), and what ReportError
// prints.
#include "cli/exit_code.h"

#include <gtest/gtest.h>

#include <string>

namespace pipette::cli {
namespace {

TEST(ExitCode, UserInputIsTwoEverythingElseIsOne) {
  EXPECT_EQ(ExitCodeOf(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeOf(Status::InvalidArgument("-m = 0")), 2);
  EXPECT_EQ(ExitCodeOf(Status::NotFound("schedule 'x'")), 2);
  EXPECT_EQ(ExitCodeOf(Status::FailedPrecondition("deadlock")), 2);
  EXPECT_EQ(ExitCodeOf(Status::IoError("corrupt database")), 1);
  EXPECT_EQ(ExitCodeOf(Status::Internal("bug")), 1);
}

TEST(ExitCode, ReportErrorPrefixesTheCommandAndEscapesControlBytes) {
  testing::internal::CaptureStderr();
  const int code =
      ReportError("simulate", Status::InvalidArgument("--model = 'a\x1b[2Jb': unknown"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err, "pipette simulate: --model = 'a\\x1b[2Jb': unknown\n");
}

}  // namespace
}  // namespace pipette::cli
