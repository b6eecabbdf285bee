// End-to-end tests of how the commands check their input before they do any work, and of what
// their messages say: --latency-us in microseconds, --times, empty strings, --seed, counts derived
// from user input that must not overflow, a CSV schedule's p and m, control bytes in messages,
// --size as given, gnuplot's reason, and the JSON of the largest accepted schedule.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipette/common/printable.h"
#include "pipette/schedule/costs.h"
#include "pipette_runner.h"

namespace {

using pipette::testing::CommandResult;
using pipette::testing::Contains;
using pipette::testing::Pipette;
using pipette::testing::ScratchDir;
using pipette::testing::Shell;

bool Exists(const std::string& name) { return std::filesystem::exists(ScratchDir() + "/" + name); }

// Writes `text` to `name` in the scratch directory.
void Write(const std::string& name, const std::string& text) {
  std::ofstream(ScratchDir() + "/" + name) << text;
}

// Writes the compute-only CSV of `schedule_args` (e.g. "1f1b -p 2 -m 6") to `name`.
void WriteCsvSchedule(const std::string& name, const std::string& schedule_args) {
  CommandResult csv = Pipette("schedule " + schedule_args + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  Write(name, csv.out);
}

TEST(Printable, EscapesEveryControlByteAndKeepsTheRest) {
  EXPECT_EQ(pipette::Printable("\x1b[31mred\x7f\r\n\t\x01"),
            "\\x1b[31mred\\x7f\\x0d\\x0a\\x09\\x01");
  EXPECT_EQ(pipette::Printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(pipette::Printable("caf\xc3\xa9 \\x1b"), "caf\xc3\xa9 \\x1b");  // UTF-8, backslash kept
  EXPECT_EQ(pipette::Printable(pipette::Printable("\x1b")), "\\x1b");       // idempotent
  EXPECT_EQ(pipette::PrintableLines("one\ntwo\x1b"), "one\ntwo\\x1b");
}

// -1, nan and inf were accepted without --ideal-network and, with it, left a failed run behind
// with a message in seconds. Now: exit 2, the message in microseconds, no database written.
TEST(Validation, LatencyUsIsCheckedInMicrosecondsBeforeAnythingIsRecorded) {
  // nan and inf are refused by the rule for every number (decimal notation, finite), quoted.
  const std::pair<const char*, const char*> values[] = {{"-1", "-1"}, {"2e12", "2000000000000"}};
  for (const char* command :
       {"simulate", "simulate --ideal-network", "simulate --ideal-network --times F=1,I=1,W=1"}) {
    for (const auto& [value, shown] : values) {
      std::filesystem::remove(ScratchDir() + "/latency.db");
      const std::string args = std::string(command) + " --latency-us " + value + " --db latency.db";
      CommandResult run = Pipette(args);
      EXPECT_EQ(run.exit_code, 2) << args;
      EXPECT_EQ(run.err, "pipette simulate: --latency-us = " + std::string(shown) +
                             ": must be a number of microseconds in [0, 1e+12]\n")
          << args;
      EXPECT_FALSE(Exists("latency.db")) << args;
    }
    for (const char* value : {"nan", "inf", "-inf"}) {
      const std::string args = std::string(command) + " --latency-us " + value + " --db latency.db";
      CommandResult run = Pipette(args);
      EXPECT_EQ(run.exit_code, 2) << args;
      EXPECT_TRUE(Contains(run.err, "pipette simulate: --latency-us = '" + std::string(value) +
                                        "': must be a number in decimal notation"))
          << args << ": " << run.err;
      EXPECT_FALSE(Exists("latency.db")) << args;
    }
  }
}

// A sweep point with a bad latency is the child's bad input: filed invalid, no run recorded.
TEST(Validation, SweepPointWithABadLatencyIsInvalidAndRecordsNoRun) {
  Write("latency.toml", R"(name = "latency"
[fixed]
ideal-network = true
pp = 2
m = 2
[axes]
latency-us = [-1.0, 5.0]
)");
  CommandResult sweep = Pipette("sweep latency.toml --db sweep.db");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_TRUE(Contains(sweep.out, "invalid            1")) << sweep.out;
  EXPECT_TRUE(Contains(sweep.out, "failed             0")) << sweep.out;
  CommandResult runs = Pipette("runs --db sweep.db --format json");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const auto json = nlohmann::json::parse(runs.out);
  ASSERT_EQ(json.size(), 1u) << runs.out;
  EXPECT_EQ(json[0]["status"], "ok") << runs.out;
}

// The parser behind --times (and a sweep's `times`): each key once, the whole value read.
TEST(ParseStageCost, RefusesARepeatedKeyAndBytesAfterANul) {
  const pipette::Result<pipette::StageCost> twice =
      pipette::ParseStageCost("W=3,F=1,W=2", "--times");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "--times W=2: W is given twice (first W=3); give each of F, I, W once");
  const pipette::Result<pipette::StageCost> nul =
      pipette::ParseStageCost(std::string("F=1\0junk", 8), "--times");
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.status().message(), "--times F='1\\x00junk': must be a number in [0, 1e+12]");
  const pipette::Result<pipette::StageCost> fine = pipette::ParseStageCost("W=3,F=2", "--times");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->f, 2);
  EXPECT_EQ(fine->i, 1);  // the default
  EXPECT_EQ(fine->w, 3);
}

TEST(Validation, TimesRefusesARepeatedKey) {
  for (const char* command :
       {"schedule 1f1b -p 2 -m 2", "simulate --ideal-network --no-db -p 2 -m 2"}) {
    CommandResult run = Pipette(std::string(command) + " --times F=1,I=1,F=2");
    EXPECT_EQ(run.exit_code, 2) << command;
    EXPECT_TRUE(Contains(run.err,
                         "--times F=2: F is given twice (first F=1); give each of F, I, W "
                         "once"))
        << run.err;
  }
}

// An empty value (an unset shell variable) was taken as "not given" (--times) or looked up as a
// name; now every such option refuses it before any work, naming the option.
TEST(Validation, EmptyStringsAreRefusedNamingTheOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"simulate --times '' --db empty.db", "--times"},
      {"simulate --ideal-network --times '' --db empty.db", "--times"},
      {"simulate --schedule '' --db empty.db", "--schedule"},
      {"simulate --model '' --db empty.db", "--model"},
      {"simulate --cluster '' --db empty.db", "--cluster"},
      {"simulate --dtype '' --db empty.db", "--dtype"},
      {"schedule 1f1b -p 2 -m 2 --times ''", "--times"},
      {"partition --model '' --pp 2", "--model"},
      {"partition --model gpt3-1.3b --pp 2 --schedule ''", "--schedule"},
      {"partition --model gpt3-1.3b --pp 2 --cluster ''", "--cluster"},
      {"train --model '' --db empty.db", "--model"},
      {"train --schedule '' --db empty.db", "--schedule"},
  };
  for (const auto& [args, option] : cases) {
    std::filesystem::remove(ScratchDir() + "/empty.db");
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_TRUE(Contains(run.err, std::string(option) +
                                      " = '': must not be empty (leave the option out to get its "
                                      "default)"))
        << args << " -> " << run.err;
    EXPECT_FALSE(Exists("empty.db")) << args;
  }
}

// CLI11 read "-1" into the unsigned seed as 2^64 - 1 (and "0x10" as 16) and trained with it.
TEST(Validation, SeedIsAWholeDecimalNumber) {
  for (const char* seed : {"-1", "0x10", "18446744073709551616", "1.5", "+3", "' 7'"}) {
    CommandResult run = Pipette(std::string("train --steps 1 --no-db --seed ") + seed);
    EXPECT_EQ(run.exit_code, 2) << seed;
    // Refused by the rule for every number (decimal digits, 64 bits) or by --seed's own check.
    EXPECT_TRUE(Contains(run.err, "--seed = '") || Contains(run.err, "--seed: ")) << run.err;
    EXPECT_TRUE(Contains(run.err, "must be a whole number")) << seed << " -> " << run.err;
  }
  CommandResult largest =
      Pipette("train --steps 1 --no-db --format json --seed 18446744073709551615");
  EXPECT_EQ(largest.exit_code, 0) << largest.err;
}

// partition's default -m was 2 * pp in int: --pp 2147483647 reported "-m = -2". train multiplied
// -p by --dp in int before either was checked.
TEST(Validation, CountsDerivedFromTheInputDoNotOverflow) {
  CommandResult partition = Pipette("partition --model gpt3-1.3b --pp 2147483647");
  EXPECT_EQ(partition.exit_code, 2);
  EXPECT_EQ(partition.err,
            "pipette partition: --pp = 2147483647: more than the limit of 16384 pipeline ranks\n");
  // (in int, 2147483647 * 4096 wraps to -4096, and the single-process check was skipped)
  CommandResult train = Pipette("train -p 2147483647 --dp 4096 --no-db");
  EXPECT_EQ(train.exit_code, 2);
  EXPECT_TRUE(Contains(train.err, "-p 2147483647 --dp 4096 needs 8796093018112 processes"))
      << train.err;
  const std::pair<const char*, const char*> limits[] = {
      {"schedule interleaved-1f1b -p 16384 -v 131072 -m 2147483647",
       "p*v*m = 16384*131072*2147483647: more than the limit of 16000000 chunks"},
      {"simulate --ideal-network --times F=1 --no-db --pp 2147483647 -m 2147483647",
       "-p = 2147483647: more than the limit of 16384 pipeline ranks"},
      {"partition --model gpt3-1.3b --pp 8 --dp 2147483647 --tp 2147483647", "more than 2^63"},
  };
  for (const auto& [args, message] : limits) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_TRUE(Contains(run.err, message)) << args << " -> " << run.err;
  }
}

// The file has p = 2 and m = 6; simulate's defaults (p = 4, m = 8) and partition's default m
// (2 * pp) used to contradict it.
TEST(Validation, CsvScheduleTakesPAndMFromTheFile) {
  WriteCsvSchedule("p2m6.csv", "1f1b -p 2 -m 6");
  CommandResult times =
      Pipette("simulate --schedule csv:p2m6.csv --ideal-network --times F=1 --no-db --format json");
  ASSERT_EQ(times.exit_code, 0) << times.err;
  auto json = nlohmann::json::parse(times.out);
  EXPECT_EQ(json["p"], 2);
  EXPECT_EQ(json["m"], 6);
  CommandResult model = Pipette("simulate --schedule csv:p2m6.csv --no-db --format json");
  ASSERT_EQ(model.exit_code, 0) << model.err;
  json = nlohmann::json::parse(model.out);
  EXPECT_EQ(json["pp"], 2);
  EXPECT_EQ(json["m"], 6);
  CommandResult partition =
      Pipette("partition --model gpt3-1.3b --pp 2 --schedule csv:p2m6.csv --format json");
  EXPECT_EQ(partition.exit_code, 0) << partition.err;
  // partition too: --pp was required and -v defaulted to 1 against a file with v = 2.
  WriteCsvSchedule("p2v2m4.csv", "interleaved-1f1b -p 2 -v 2 -m 4");
  CommandResult interleaved =
      Pipette("partition --model gpt3-1.3b --schedule csv:p2v2m4.csv --format json");
  ASSERT_EQ(interleaved.exit_code, 0) << interleaved.err;
  json = nlohmann::json::parse(interleaved.out);
  EXPECT_EQ(json["rank_memory_bytes"].size(), 2u) << interleaved.out;  // p = 2
  EXPECT_EQ(json["stages"].size(), 4u) << interleaved.out;             // p * v = 4
  EXPECT_EQ(json["stages"][2]["rank"], 0) << interleaved.out;          // rank 0's second chunk
  CommandResult no_pp = Pipette("partition --model gpt3-1.3b");
  EXPECT_EQ(no_pp.exit_code, 2);
  EXPECT_EQ(no_pp.err, "pipette partition: missing --pp P (or a --schedule csv:FILE)\n");
  // A given count that disagrees names both.
  const std::pair<const char*, const char*> disagree[] = {
      {"simulate --schedule csv:p2m6.csv -p 3 --no-db",
       "-p = 3 disagrees with csv:p2m6.csv, which has p = 2"},
      {"simulate --schedule csv:p2m6.csv -m 8 --ideal-network --times F=1 --no-db",
       "-m = 8 disagrees with csv:p2m6.csv, which has m = 6"},
      {"partition --model gpt3-1.3b --schedule csv:p2v2m4.csv -v 1",
       "-v = 1 disagrees with csv:p2v2m4.csv, which has v = 2"},
  };
  for (const auto& [args, message] : disagree) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_TRUE(Contains(run.err, message)) << args << " -> " << run.err;
  }
}

// pipette train's defaults (p = 1, m = 8) used to contradict a CSV schedule with m = 6.
TEST(Validation, TrainTakesACsvSchedulesPAndMFromTheFile) {
  WriteCsvSchedule("p1m6.csv", "1f1b -p 1 -m 6");
  CommandResult run = Pipette("train --schedule csv:p1m6.csv --steps 1 --no-db --format json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["p"], 1);
  EXPECT_EQ(json["m"], 6);
  CommandResult mismatch = Pipette("train --schedule csv:p1m6.csv -m 8 --steps 1 --no-db");
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_TRUE(Contains(mismatch.err, "-m = 8 disagrees with csv:p1m6.csv, which has m = 6"))
      << mismatch.err;
}

// A terminal escape in a value is echoed as \x1b, whoever writes the message (a command, the
// library, CLI11's parser).
TEST(Validation, ControlBytesInInputAreEscapedInMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {"schedule \"$(printf '\\033[31mred')\" -p 2 -m 2", "unknown schedule '\\x1b[31mred'"},
      {"schedule 1f1b -p \"$(printf '2\\033[2J')\" -m 2", "2\\x1b[2J"},
      {"schedule 1f1b -p 2 -m 2 --times \"$(printf 'F=1\\033[2J')\"", "F='1\\x1b[2J'"},
      {"schedule \"csv:$(printf 'x\\033[2J\\ny.csv')\"", "x\\x1b[2J\\x0ay.csv"},
      {"simulate --no-db --model \"$(printf '\\033[2J')\"", "\\x1b[2J"},
      {"train --no-db --seed \"$(printf '1\\033[2J')\"", "1\\x1b[2J"},
  };
  for (const auto& [args, escaped] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_EQ(run.err.find('\x1b'), std::string::npos) << args << " -> " << run.err;
    EXPECT_TRUE(Contains(run.err, escaped)) << args << " -> " << pipette::Printable(run.err);
  }
}

// --size 0x0 used to be reported as "0x700" (the figure's default height filled in).
TEST(Validation, PlotSizeIsReportedAsGiven) {
  ASSERT_EQ(Pipette("simulate --ideal-network --times F=1 --db plot.db").exit_code, 0);
  for (const char* size : {"0x0", "50x50", "1200x99999999999", "1200x"}) {
    CommandResult run = Pipette(std::string("plot bubble --db plot.db --size ") + size);
    EXPECT_EQ(run.exit_code, 2) << size;
    EXPECT_TRUE(Contains(run.err, std::string("pipette plot: --size = '") + size +
                                      "': must be WIDTHxHEIGHT in pixels, each in [100, 10000]"))
        << run.err;
  }
}

// gnuplot echoes the failing script line first; its reason used to come third.
TEST(Validation, PlotFailureSaysGnuplotsReasonOnTheFirstLine) {
  if (Shell("gnuplot --version").exit_code != 0) GTEST_SKIP() << "gnuplot is not installed";
  ASSERT_EQ(Pipette("simulate --ideal-network --times F=1 --db gnuplot.db").exit_code, 0);
  CommandResult run = Pipette("plot timeline --db gnuplot.db --out no/such/dir/t.png");
  EXPECT_EQ(run.exit_code, 1);
  const std::string first = run.err.substr(0, run.err.find('\n'));
  EXPECT_TRUE(Contains(first,
                       "pipette plot: gnuplot failed (exit 1): cannot open file; output "
                       "not changed (line "))
      << run.err;
  EXPECT_TRUE(Contains(first, "system error: No such file or directory")) << run.err;
}

// The JSON report was one document holding every action (about 390 bytes per action at peak), and
// destroying it allocates inside a noexcept destructor: out of memory, `schedule 1f1b -p 1 -m
// 16000000 --format json` aborted (exit 134). The action lists now stream. 6 million actions under
// a 700 MB address-space limit: the old writer aborted (or failed) below about 1.1 GB; this one
// needs under 500 MB.
TEST(Validation, LargeScheduleJsonStreamsInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit";
#endif
  const std::string path = ScratchDir() + "/large.json";
  CommandResult run = Shell(std::string("ulimit -v 700000 && ") + PIPETTE_BINARY +
                            " schedule 1f1b -p 1 -m 2000000 --format json > large.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string json = pipette::testing::ReadFile(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(json.starts_with(
      R"({"schedule":"1f1b","p":1,"v":1,"m":2000000,"placement":[0],"ranks":[["0F0","0B0",)"))
      << json.substr(0, 100);
  EXPECT_TRUE(json.ends_with(
      R"("0F1999999","0B1999999"]],"makespan":6000000.0,"bubble_ratio":0.0,"busy":[6000000.0],)"
      R"("peak_activations":[1]})"
      "\n"));
  std::size_t forwards = 0;
  for (std::size_t at = json.find("\"0F"); at != std::string::npos;
       at = json.find("\"0F", at + 1)) {
    ++forwards;
  }
  EXPECT_EQ(forwards, 2'000'000u);
}

}  // namespace

// Options that had no effect in a combination were taken with exit 0; each is refused naming the
// option that excludes it (or the one it needs). Numbers are decimal: CLI11 alone read "0x10" as
// 16, "010" as octal 8 and '' as 0.
TEST(Validation, OptionsWithNoEffectAndNumbersNotInDecimalAreRefused) {
  ASSERT_EQ(Pipette("simulate --times F=1 --ideal-network --db combos.db").exit_code, 0);
  const std::pair<const char*, const char*> cases[] = {
      {"simulate --times F=1 --ideal-network --model gpt2-124m --no-db",
       "--times excludes --model"},
      {"simulate --times F=1 --ideal-network --zero 1 --no-db", "--times excludes --zero"},
      {"simulate --times F=1 --ideal-network --recompute --no-db", "excludes"},
      {"simulate --cost-statistic mean --no-db", "--cost-statistic requires --costs-from"},
      {"simulate --db x.db --no-db", "--db excludes --no-db"},
      {"export --db combos.db --step 1", "--step = 1: applies only with --format csv"},
      {"plot timeline --db combos.db --x m",
       "--x = 'm': applies only to the bubble, steptime and errors"},
      {"plot bubble --db combos.db --colour-by model",
       "--colour-by = 'model': applies only to the compare figure, not to bubble"},
      {"runs --db combos.db --all-hosts", "--all-hosts requires --repair"},
      {"train --tolerance 0.1 --no-db", "--tolerance requires --verify"},
      {"train --trace-steps 1 --trace none --no-db",
       "--trace-steps = 1: --trace none records no instruction"},
      {"calibrate --list --repeats 3 --db combos.db", "excludes"},
      {"simulate -p 0x10 --no-db", "--pp = '0x10': must be a whole number in decimal digits"},
      {"simulate -m 010 --no-db",
       "--microbatches = '010': must be a whole number in decimal digits"},
      {"simulate -p '' --no-db", "--pp = '': must not be empty"},
      {"simulate --efficiency nan --no-db", "--efficiency = 'nan': must be a number in decimal"},
      {"simulate --grad-bucket-params 99999999999999999999999999 --no-db",
       "--grad-bucket-params = '99999999999999999999999999': must be a whole number in"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = Pipette(args);
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, message)) << args << " -> " << run.err;
  }
}

// A CSV schedule bypassed the limit of 16,384 pipeline ranks (16,385 and 40,000 were accepted).
TEST(Validation, ACsvScheduleIsHeldToTheRankLimit) {
  {
    std::ofstream csv(ScratchDir() + "/ranks16385.csv");
    for (int r = 0; r < 16385; ++r) csv << r << "F0," << r << "B0\n";
  }
  for (const char* command : {"schedule csv:ranks16385.csv",
                              "simulate --schedule "
                              "csv:ranks16385.csv --times F=1 "
                              "--ideal-network --no-db"}) {
    CommandResult run = Pipette(command);
    EXPECT_EQ(run.exit_code, 2) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err,
                         "csv:ranks16385.csv: 16385 ranks (lines): more than the limit "
                         "of 16384 pipeline ranks"))
        << command << ": " << run.err;
  }
}

// `schedule 1f1b -p 16384 -m 976` passed every limit and took 33 s and 5.0 GB: the report's memory
// is estimated first (about 310 bytes per chunk for text, 200 for json) and refused past 2 GB.
TEST(Validation, AScheduleReportTooLargeForMemoryIsRefusedWithTheEstimate) {
  CommandResult text = Pipette("schedule 1f1b -p 16384 -m 976");
  EXPECT_EQ(text.exit_code, 2) << text.err;
  EXPECT_TRUE(Contains(text.err,
                       "-p 16384 -v 1 -m 976: 15990784 chunks; the text report would "
                       "need about 5.0 GB"))
      << text.err;
  CommandResult json = Pipette("schedule 1f1b -p 16384 -m 976 --format json");
  EXPECT_EQ(json.exit_code, 2) << json.err;
  EXPECT_TRUE(Contains(json.err, "the json report would need about 3.2 GB")) << json.err;
  EXPECT_EQ(Pipette("schedule 1f1b -p 4096 -m 61 --format csv > /dev/null").exit_code, 0);
}

// CLI11's own parse errors read like every other error: "pipette COMMAND: ", the option once.
TEST(Validation, ParseErrorsNameTheCommandLikeEveryOtherError) {
  CommandResult db = Pipette("simulate --db ''");
  EXPECT_EQ(db.exit_code, 2);
  EXPECT_TRUE(db.err.rfind("pipette simulate: --db = '': must not be empty", 0) == 0) << db.err;
  CommandResult unknown = Pipette("bogus");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(unknown.err.rfind("pipette: The following argument was not expected: bogus", 0) == 0)
      << unknown.err;
  CommandResult train = Pipette("train --seed=-1 --no-db");
  EXPECT_EQ(train.exit_code, 2);
  EXPECT_TRUE(train.err.rfind("pipette train: --seed = '-1': must be a whole number", 0) == 0)
      << train.err;
}

// --times bypassed the bound on single durations (1e12 ms was recorded as a 5e12 ms step), and a
// --latency-us without --ideal-network was silently ignored (the cluster's links set latency).
TEST(Validation, TimesAreBoundedAndLatencyNeedsTheIdealNetwork) {
  std::filesystem::remove(ScratchDir() + "/bounded.db");
  CommandResult huge =
      Pipette("simulate -p 2 -m 4 --ideal-network --times F=1e12,I=1,W=1 --db bounded.db");
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_EQ(huge.err,
            "pipette simulate: --times F=1e+12: one chunk's F would take 1e+09 s; a single "
            "duration must lie in [0, 1e+06] s (about 11.6 days)\n");
  CommandResult ignored = Pipette("simulate -p 2 -m 4 --latency-us 5 --db bounded.db");
  EXPECT_EQ(ignored.exit_code, 2) << ignored.err;
  EXPECT_EQ(ignored.err,
            "pipette simulate: --latency-us = 5: applies only with --ideal-network; on a cluster "
            "every link's latency is the cluster's (--cluster)\n");
  EXPECT_FALSE(Exists("bounded.db"));
  CommandResult largest =
      Pipette("simulate -p 2 -m 4 --ideal-network --times F=1e9,I=1,W=1 --no-db --format json");
  EXPECT_EQ(largest.exit_code, 0) << largest.err;
}

// Standard output escapes control bytes too: a --db with an escape sequence was echoed raw in
// "# recorded as run 1 in ..." and in the header of pipette runs.
TEST(Validation, ControlBytesInADatabasePathAreEscapedOnStandardOutput) {
  const std::string db = "\"$(printf 'c\\033[31m.db')\"";
  std::filesystem::remove(ScratchDir() + "/c\x1b[31m.db");
  CommandResult simulate = Pipette("simulate -p 2 -m 2 --ideal-network --times F=1 --db " + db);
  ASSERT_EQ(simulate.exit_code, 0) << simulate.err;
  EXPECT_TRUE(Contains(simulate.out, "# recorded as run 1 in c\\x1b[31m.db\n")) << simulate.out;
  CommandResult runs = Pipette("runs --db " + db);
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_TRUE(Contains(runs.out, "# 1 runs in c\\x1b[31m.db\n")) << runs.out;
  EXPECT_FALSE(Contains(simulate.out + runs.out, "\x1b"));
  std::filesystem::remove(ScratchDir() + "/c\x1b[31m.db");
}

// A --peer-timeout of 1e-320 passed "> 0", and the watchdog then ended MPI_Init with exit 3.
TEST(Validation, PeerTimeoutHasAFloorAndIsCheckedBeforeTheWatchdogStarts) {
  CommandResult tiny = Pipette("train --peer-timeout 1e-320 --no-db");
  EXPECT_EQ(tiny.exit_code, 2) << tiny.err;
  EXPECT_EQ(tiny.err, "pipette train: --peer-timeout 1e-320: must be in [0.1, 1e6] seconds\n");
}

// The engines' own options: the CPU engine computes in fp32 and runs one process per rank; the
// CUDA engine needs a build with it and a GPU (refused like any other precondition, exit 2,
// naming what the machine has, before anything is recorded).
TEST(Validation, EngineOptionsNameTheEngineAndTheRule) {
  CommandResult bf16 = Pipette("train --dtype bf16 --no-db");
  EXPECT_EQ(bf16.exit_code, 2) << bf16.err;
  EXPECT_EQ(bf16.err,
            "pipette train: --dtype bf16: the cpu engine computes in fp32 (bf16 needs --engine "
            "cuda)\n");
  CommandResult virtual_cpu = Pipette("train --virtual-ranks --no-db");
  EXPECT_EQ(virtual_cpu.exit_code, 2) << virtual_cpu.err;
  EXPECT_TRUE(Contains(virtual_cpu.err, "--virtual-ranks: the cpu engine runs one MPI process"))
      << virtual_cpu.err;
  CommandResult dtype = Pipette("train --engine cuda --dtype fp8 --no-db");
  EXPECT_EQ(dtype.exit_code, 2) << dtype.err;
  CommandResult version = Pipette("--version");
  if (Contains(version.out, "cuda engine    built")) {  // checked before the GPU is looked for
    CommandResult replicas = Pipette("train --engine cuda --virtual-ranks -p 2 --dp 2 --no-db");
    EXPECT_EQ(replicas.exit_code, 2) << replicas.err;
    EXPECT_EQ(replicas.err,
              "pipette train: --dp 2 with --virtual-ranks: virtual ranks run one replica (--dp 1) "
              "on one GPU\n");
  }
  EXPECT_FALSE(Exists("pipette.db"));
}

TEST(Validation, TheCudaEngineWithoutAGpuSaysWhatTheMachineHas) {
  CommandResult version = Pipette("--version");
  ASSERT_EQ(version.exit_code, 0);
  CommandResult run = Pipette("train --engine cuda --virtual-ranks -p 2 --steps 1 --no-db");
  if (Contains(version.out, "cuda engine    not built")) {
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(Contains(run.err, "--engine cuda: this build has no CUDA engine")) << run.err;
    return;
  }
  ASSERT_TRUE(Contains(version.out, "cuda engine    built (CUDA ")) << version.out;
  if (run.exit_code == 0) GTEST_SKIP() << "this machine has a GPU: the engine ran";
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(Contains(run.err, "pipette train: --engine cuda: this machine has no CUDA device"))
      << run.err;
}

// Output that cannot be written is an I/O failure, not a success (issue 34, item 7): a full
// device as standard output makes the command exit 1 and say why, whatever it was printing.
TEST(Validation, AStandardOutputThatCannotBeWrittenIsExit1) {
  for (const std::string args :
       {"schedule 1f1b -p 2 -m 4", "schedule --list", "models", "clusters",
        "simulate --times F=1,I=1,W=1 --ideal-network --no-db", "--version", "--help"}) {
    const CommandResult run = Shell(std::string(PIPETTE_BINARY) + " " + args + " >/dev/full");
    EXPECT_EQ(run.exit_code, 1) << args << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "cannot write standard output: No space left on device"))
        << args << ": " << run.err;
  }
  const CommandResult ok = Pipette("schedule 1f1b -p 2 -m 4 >/dev/null");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
}
