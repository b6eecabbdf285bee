// Subprocess: input through a pipe or /dev/null, both outputs captured without deadlock, exit
// codes and signals, a child that ignores its input, a program that does not exist, and a child
// killed with its owner.
#include "pipette/common/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace pipette {
namespace {

TEST(Subprocess, FeedsItsInputAndCapturesMoreOutputThanAPipeHolds) {
  std::string input;
  for (int k = 0; input.size() < (4 << 20); ++k) input += std::to_string(k) + "\n";
  Result<Subprocess> cat = Subprocess::Run("cat", {"cat"}, input);
  ASSERT_TRUE(cat.ok()) << cat.status().message();
  EXPECT_EQ(cat->Wait().code, 0);
  EXPECT_EQ(cat->out(), input);
  EXPECT_EQ(cat->err(), "");
}

TEST(Subprocess, WithoutInputReadsDevNull) {
  Result<Subprocess> cat = Subprocess::Run("cat", {"cat"});
  ASSERT_TRUE(cat.ok()) << cat.status().message();
  EXPECT_EQ(cat->Wait().code, 0);
  EXPECT_EQ(cat->out(), "");
}

TEST(Subprocess, ReportsTheExitCodeAndStandardError) {
  Result<Subprocess> sh = Subprocess::Run("sh", {"sh", "-c", "echo out; echo oops >&2; exit 3"});
  ASSERT_TRUE(sh.ok()) << sh.status().message();
  const ExitStatus exit = sh->Wait();
  EXPECT_EQ(exit.code, 3);
  EXPECT_EQ(exit.signal, 0);
  EXPECT_EQ(exit.Describe(), "exit 3");
  EXPECT_EQ(sh->out(), "out\n");
  EXPECT_EQ(sh->err(), "oops\n");
  EXPECT_EQ(sh->Wait().code, 3) << "a second Wait returns the same";
}

TEST(Subprocess, ReportsTheSignalThatKilledIt) {
  Result<Subprocess> sh = Subprocess::Run("sh", {"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(sh.ok()) << sh.status().message();
  const ExitStatus exit = sh->Wait();
  EXPECT_EQ(exit.code, -1);
  EXPECT_EQ(exit.signal, 9);
  EXPECT_EQ(exit.Describe(), "killed by signal 9 (Killed)");
}

TEST(Subprocess, AChildThatIgnoresItsInputDoesNotRaiseSigpipe) {
  Result<Subprocess> child = Subprocess::Run("true", {"true"}, std::string(4 << 20, 'x'));
  ASSERT_TRUE(child.ok()) << child.status().message();
  EXPECT_EQ(child->Wait().code, 0);
}

TEST(Subprocess, AMissingProgramIsAnIoErrorNamingIt) {
  Result<Subprocess> child = Subprocess::Start("pipette-no-such-program", {"x"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kIoError);
  EXPECT_EQ(child.status().message(),
            "cannot start pipette-no-such-program: No such file or directory");
}

TEST(Subprocess, DestroyingAnUnwaitedChildKillsIt) {
  const auto start = std::chrono::steady_clock::now();
  {
    Result<Subprocess> sleeper = Subprocess::Start("sleep", {"sleep", "1000"});
    ASSERT_TRUE(sleeper.ok()) << sleeper.status().message();
    EXPECT_FALSE(sleeper->done());
    EXPECT_EQ(sleeper->PollFds().size(), 2u);  // its standard output and error
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(100));
}

}  // namespace
}  // namespace pipette
