// Sweep specs: parsing, validation messages, the cartesian product's order, point keys and the
// command line of a point.
#include "pipette/study/sweep_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipette {
namespace {

constexpr const char* kExample = R"(
name = "bubble-p8"
description = "Bubble ratio against microbatches"
command = "simulate"
[fixed]
times = "F=1,I=1,W=1"
ideal-network = true
latency-us = 2.5
[axes]
schedule = ["gpipe", "1f1b"]
pp = [8]
m = [8, 16]
[[figures]]
kind = "bubble"
out = "bubble-p8.png"
[[figures]]
kind = "timeline"
out = "one.png"
where = { schedule = "1f1b", m = 8 }
)";

SweepSpec Parse(const std::string& text, const std::string& path = "experiments/study.toml") {
  Result<SweepSpec> spec = ParseSweepSpec(text, path);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? *spec : SweepSpec{};
}

// The error message of parsing `text`, which must fail.
std::string ParseError(const std::string& text) {
  Result<SweepSpec> spec = ParseSweepSpec(text, "experiments/bad.toml");
  EXPECT_FALSE(spec.ok());
  return spec.ok() ? "" : spec.status().message();
}

std::vector<std::string> Keys(const std::vector<SweepPoint>& points) {
  std::vector<std::string> keys;
  for (const SweepPoint& p : points) keys.push_back(p.key);
  return keys;
}

// simulate's options as far as these tests need them.
std::vector<SweepOption> SimulateOptions() {
  return {{{"schedule"}, false}, {{"pp", "p"}, false},      {{"microbatches", "m"}, false},
          {{"times"}, false},    {{"ideal-network"}, true}, {{"latency-us"}, false},
          {{"recompute"}, true}, {{"db"}, false},           {{"trace"}, false}};
}

TEST(SweepSpec, ParsesTheExampleInFileOrder) {
  const SweepSpec spec = Parse(kExample);
  EXPECT_EQ(spec.name, "bubble-p8");
  EXPECT_EQ(spec.description, "Bubble ratio against microbatches");
  EXPECT_EQ(spec.command, "simulate");
  ASSERT_EQ(spec.fixed.size(), 3u);
  EXPECT_EQ(spec.fixed[0].key, "times");
  EXPECT_EQ(spec.fixed[0].value.text, "F=1,I=1,W=1");
  EXPECT_EQ(spec.fixed[1].key, "ideal-network");
  EXPECT_EQ(spec.fixed[1].value.kind, SweepValue::Kind::kBool);
  EXPECT_EQ(spec.fixed[2].value.text, "2.5");
  ASSERT_EQ(spec.axes.size(), 3u);
  EXPECT_EQ(spec.axes[0].keys, std::vector<std::string>{"schedule"});
  EXPECT_EQ(spec.axes[1].keys, std::vector<std::string>{"pp"});
  EXPECT_EQ(spec.axes[2].keys, std::vector<std::string>{"m"});
  EXPECT_EQ(spec.axes[2].values.size(), 2u);
  ASSERT_EQ(spec.figures.size(), 2u);
  EXPECT_EQ(spec.figures[0].kind, "bubble");
  EXPECT_EQ(spec.figures[0].out, "bubble-p8.png");
  EXPECT_TRUE(spec.figures[0].where.empty());
  EXPECT_EQ(spec.figures[1].where.size(), 2u);
  EXPECT_EQ(spec.text, kExample);
}

TEST(SweepSpec, NameDefaultsToTheFileStemAndOutToNameAndKind) {
  const SweepSpec spec =
      Parse("[axes]\nm = [4]\n[[figures]]\nkind = \"memory\"\n", "experiments/memory-p8.toml");
  EXPECT_EQ(spec.name, "memory-p8");
  EXPECT_EQ(spec.command, "simulate");
  ASSERT_EQ(spec.figures.size(), 1u);
  EXPECT_EQ(spec.figures[0].out, "memory-p8-memory.png");
}

TEST(SweepSpec, ExpandsTheCartesianProductWithTheFirstAxisSlowest) {
  const SweepSpec spec = Parse(kExample);
  EXPECT_EQ(Keys(ExpandPoints(spec)),
            (std::vector<std::string>{
                "ideal-network=true;latency-us=2.5;m=8;pp=8;schedule=gpipe;times=F=1,I=1,W=1",
                "ideal-network=true;latency-us=2.5;m=16;pp=8;schedule=gpipe;times=F=1,I=1,W=1",
                "ideal-network=true;latency-us=2.5;m=8;pp=8;schedule=1f1b;times=F=1,I=1,W=1",
                "ideal-network=true;latency-us=2.5;m=16;pp=8;schedule=1f1b;times=F=1,I=1,W=1"}));
}

TEST(SweepSpec, LinkedKeysVaryTogether) {
  const SweepSpec spec = Parse(
      "[fixed]\ntp = 8\n[axes]\n\"pp,dp\" = [[8, 16], [16, 8], [32, 4]]\nschedule = [\"1f1b\"]\n");
  ASSERT_EQ(spec.axes.size(), 2u);
  EXPECT_EQ(spec.axes[0].keys, (std::vector<std::string>{"pp", "dp"}));
  EXPECT_EQ(Keys(ExpandPoints(spec)), (std::vector<std::string>{"dp=16;pp=8;schedule=1f1b;tp=8",
                                                                "dp=8;pp=16;schedule=1f1b;tp=8",
                                                                "dp=4;pp=32;schedule=1f1b;tp=8"}));
  EXPECT_TRUE(CheckSweepOptions(
                  spec, {{{"pp"}, false}, {{"dp"}, false}, {{"tp"}, false}, {{"schedule"}, false}})
                  .ok());
  EXPECT_EQ(ParseError("[axes]\n\"pp,dp\" = [[8, 16], [16]]\n"),
            "experiments/bad.toml:2: [axes] \"pp,dp\" = [ [ 8, 16 ], [ 16 ] ]: each entry needs 2 "
            "values, one per key ([ 16 ] is not)");
  EXPECT_NE(ParseError("[axes]\n\"pp,dp\" = [8, 16]\n").find("(8 is not)"), std::string::npos);
  EXPECT_NE(ParseError("[axes]\n\"pp,dp\" = 8\n").find("linked keys take a non-empty list"),
            std::string::npos);
  EXPECT_NE(ParseError("[axes]\npp = [4]\n\"pp,dp\" = [[8, 16]]\n")
                .find("'pp' is in two axes; a key varies in one axis"),
            std::string::npos);
}

TEST(SweepSpec, WithoutAxesThereIsOnePoint) {
  const SweepSpec spec = Parse("[fixed]\nschedule = \"zb-h1\"\nm = 12\n");
  EXPECT_EQ(Keys(ExpandPoints(spec)), std::vector<std::string>{"m=12;schedule=zb-h1"});
  EXPECT_EQ(ExpandPoints(Parse("")).size(), 1u);
}

TEST(SweepSpec, PointKeyIsSortedAndIndependentOfOrder) {
  const std::vector<SweepSetting> a = {{"schedule", {SweepValue::Kind::kString, "1f1b"}},
                                       {"m", {SweepValue::Kind::kInteger, "8"}},
                                       {"pp", {SweepValue::Kind::kInteger, "8"}}};
  const std::vector<SweepSetting> b = {a[2], a[0], a[1]};
  EXPECT_EQ(PointKey(a), "m=8;pp=8;schedule=1f1b");
  EXPECT_EQ(PointKey(b), PointKey(a));
}

TEST(SweepSpec, NumbersHaveOneCanonicalForm) {
  const SweepSpec spec = Parse("[axes]\nlatency-us = [0, 0.5, 2000.0, 1e-3]\n");
  EXPECT_EQ(Keys(ExpandPoints(spec)),
            (std::vector<std::string>{"latency-us=0", "latency-us=0.5", "latency-us=2000",
                                      "latency-us=0.001"}));
}

TEST(SweepSpec, PointArgumentsAttachValuesAndTurnBooleansIntoFlags) {
  const SweepSpec spec = Parse(
      "[fixed]\nideal-network = true\nrecompute = false\nschedule = \"1f1b\"\n"
      "[axes]\nm = [8]\nlatency-us = [-1]\n");
  const std::vector<SweepPoint> points = ExpandPoints(spec);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(
      PointArguments(points[0]),
      (std::vector<std::string>{"--ideal-network", "--latency-us=-1", "-m8", "--schedule=1f1b"}));
}

TEST(SweepSpec, AnEmptyStringLeavesTheOptionOutButStaysInTheKey) {
  const SweepSpec spec =
      Parse("[fixed]\nschedule = \"1f1b\"\n[axes]\nrank-speed = [\"\", \"2=0.5\"]\n");
  const std::vector<SweepPoint> points = ExpandPoints(spec);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(PointArguments(points[0]), (std::vector<std::string>{"--schedule=1f1b"}));
  EXPECT_EQ(points[0].key, "rank-speed=;schedule=1f1b");
  EXPECT_EQ(PointArguments(points[1]),
            (std::vector<std::string>{"--rank-speed=2=0.5", "--schedule=1f1b"}));
}

TEST(SweepSpec, WhereSelectsPointsBySettings) {
  const SweepSpec spec = Parse(kExample);
  const std::vector<SweepPoint> points = ExpandPoints(spec);
  const SweepFigure& all = spec.figures[0];
  const SweepFigure& one = spec.figures[1];
  std::vector<bool> selected;
  for (const SweepPoint& p : points) selected.push_back(FigureSelects(one, p));
  EXPECT_EQ(selected, (std::vector<bool>{false, false, true, false}));
  for (const SweepPoint& p : points) EXPECT_TRUE(FigureSelects(all, p));
  const SweepSpec listed =
      Parse("[axes]\nm = [4, 8, 12]\n[[figures]]\nkind = \"bubble\"\nwhere = { m = [4, 12] }\n");
  selected.clear();
  for (const SweepPoint& p : ExpandPoints(listed)) {
    selected.push_back(FigureSelects(listed.figures[0], p));
  }
  EXPECT_EQ(selected, (std::vector<bool>{true, false, true}));
}

TEST(SweepSpec, UnknownTopLevelKeyNamesFileLineKeyAndTheKeysAllowed) {
  EXPECT_EQ(ParseError("name = \"x\"\nsteps = 3\n"),
            "experiments/bad.toml:2: unknown key 'steps' (a sweep spec has name, description, "
            "command, predict, calibration, fit, fixed, axes or figures)");
}

TEST(SweepSpec, PredictionsBelongToMeasuredPoints) {
  EXPECT_EQ(ParseError("predict = true\n"),
            "experiments/bad.toml:1: predict = true: only measured points (command = \"train\") "
            "have a prediction; this spec's command is \"simulate\"");
  EXPECT_EQ(ParseError("command = \"train\"\ncalibration = \"latest\"\n"),
            "experiments/bad.toml:2: calibration = \"latest\": applies to predictions; set "
            "predict = true");
  const SweepSpec spec = *ParseSweepSpec(
      "command = \"train\"\npredict = true\ncalibration = \"3\"\n[fixed]\nmodel = \"tiny\"\n",
      "experiments/fidelity.toml");
  EXPECT_TRUE(spec.predict);
  EXPECT_EQ(spec.calibration, "3");
}

TEST(SweepSpec, AxisMustBeANonEmptyListOfScalars) {
  EXPECT_EQ(ParseError("[axes]\nm = 8\n"),
            "experiments/bad.toml:2: [axes] m = 8: an axis must be a list of values, e.g. [8]");
  EXPECT_EQ(ParseError("[axes]\nm = []\n"),
            "experiments/bad.toml:2: [axes] m = []: needs at least one value (an empty axis "
            "selects nothing)");
  EXPECT_NE(ParseError("[axes]\nm = [[1, 2]]\n").find("must be a string, number or boolean"),
            std::string::npos);
  EXPECT_NE(ParseError("[axes]\nm = [8, 8]\n").find("lists 8 twice"), std::string::npos);
}

// A NUL would cut the child's argument and the point key short; no option takes a control byte.
TEST(SweepSpec, ControlBytesInStringsAreRejectedNamingTheKey) {
  EXPECT_EQ(ParseError("[fixed]\nschedule = \"1f1b\\u0000x\"\n"),
            "experiments/bad.toml:2: [fixed] schedule: byte 5 is the control byte 0x00; strings "
            "may not contain control bytes (they become command-line arguments and point keys)");
  EXPECT_NE(ParseError("[axes]\nschedule = [\"1f1b\", \"gpipe\\u0000\"]\n")
                .find("[axes] schedule: byte 6 is the control byte 0x00"),
            std::string::npos);
  EXPECT_NE(ParseError("[fixed]\ntimes = \"F=1\\tI=1\"\n").find("control byte 0x09"),
            std::string::npos);
  // Strings the TOML reader reads itself are refused there, like every file's strings.
  EXPECT_NE(
      ParseError("name = \"a\\u001bb\"\n").find("name = 'a\\x1bb': a control byte at position 2"),
      std::string::npos);
  EXPECT_NE(ParseError("[[figures]]\nkind = \"bubble\"\nout = \"a\\u0000.png\"\n")
                .find("out = 'a\\x00.png': a control byte at position 2"),
            std::string::npos);
  // The message itself carries no raw control byte.
  const std::string message = ParseError("[fixed]\nschedule = \"\\u0000\"\n");
  EXPECT_EQ(message.find('\0'), std::string::npos);
}

TEST(SweepSpec, KeyInBothFixedAndAxesIsRejected) {
  EXPECT_EQ(ParseError("[fixed]\nm = 8\n[axes]\nm = [8, 16]\n"),
            "experiments/bad.toml:4: [axes] m = [ 8, 16 ]: 'm' is also in [fixed] (= 8); a key is "
            "either fixed or an axis");
}

TEST(SweepSpec, FixedValuesAreScalars) {
  EXPECT_NE(ParseError("[fixed]\nm = [8]\n").find("[fixed] m = [ 8 ]: must be one value"),
            std::string::npos);
  EXPECT_NE(ParseError("[fixed]\nschedule = \"a;b\"\n").find("may not contain ';'"),
            std::string::npos);
  EXPECT_NE(ParseError("[fixed]\nPP = 8\n").find("[fixed] key 'PP': must be an option name"),
            std::string::npos);
}

TEST(SweepSpec, UnknownCommandAndFigureKindAreRejected) {
  EXPECT_EQ(ParseError("command = \"schedule\"\n"),
            "experiments/bad.toml:1: command = \"schedule\": a sweep runs simulate or train "
            "(simulated points, or measured ones on a real engine under mpirun)");
  EXPECT_EQ(ParseError("[[figures]]\nkind = \"pie\"\n"),
            "experiments/bad.toml:2: figures[0].kind = \"pie\": unknown figure kind (pipette plot "
            "draws timeline, bubble, memory, compare, steptime or errors)");
  EXPECT_NE(ParseError("[[figures]]\nkind = \"bubble\"\ntitle = \"x\"\n")
                .find("figures[0].title: unknown key (a figure has kind, out, where, x, colour_by "
                      "or marker_by)"),
            std::string::npos);
  EXPECT_EQ(ParseError("[[figures]]\nkind = \"bubble\"\ncolour_by = \"model\"\n"),
            "experiments/bad.toml:3: figures[0].colour_by = \"model\": applies only to kind = "
            "\"compare\"");
  EXPECT_EQ(ParseError("[[figures]]\nkind = \"compare\"\ncolour_by = \"m\"\nmarker_by = \"m\"\n"),
            "experiments/bad.toml:4: figures[0].marker_by = \"m\": already its colour_by; a figure "
            "encodes two different keys (or \"none\")");
}

TEST(SweepSpec, ACompareFigureNamesItsColourAndMarkerKeys) {
  const SweepSpec spec = Parse(
      "[axes]\nm = [4]\n[[figures]]\nkind = \"compare\"\ncolour_by = \"model\"\n"
      "marker_by = \"m\"\n[[figures]]\nkind = \"errors\"\nx = \"model\"\n");
  ASSERT_EQ(spec.figures.size(), 2u);
  EXPECT_EQ(spec.figures[0].colour_by, "model");
  EXPECT_EQ(spec.figures[0].marker_by, "m");
  EXPECT_EQ(spec.figures[1].kind, "errors");
  EXPECT_EQ(spec.figures[1].x, "model");
  EXPECT_EQ(spec.figures[1].colour_by, "");
}

TEST(SweepSpec, FigureWhereMustNameASettingAndTimelineOnePoint) {
  EXPECT_NE(ParseError("[axes]\nm = [4]\n[[figures]]\nkind = \"bubble\"\nwhere = { pp = 4 }\n")
                .find("figures[0].where.pp: 'pp' is neither in [fixed] nor in [axes]"),
            std::string::npos);
  EXPECT_NE(ParseError("[axes]\nm = [4, 8]\n[[figures]]\nkind = \"timeline\"\n")
                .find("kind = \"timeline\" draws one run, but its where selects 2 points"),
            std::string::npos);
  EXPECT_NE(ParseError("[axes]\nm = [4]\n[[figures]]\nkind = \"bubble\"\nwhere = { m = 5 }\n")
                .find("figures[0].where selects no point"),
            std::string::npos);
  EXPECT_NE(ParseError("[[figures]]\nkind = \"bubble\"\n[[figures]]\nkind = \"bubble\"\n")
                .find("figures[1].out = \"bad-bubble.png\": another figure draws the same file"),
            std::string::npos);
}

TEST(SweepSpec, TomlSyntaxErrorNamesLineAndColumn) {
  EXPECT_EQ(ParseError("[axes]\nm = [8,\n").rfind("experiments/bad.toml:", 0), 0u);
}

TEST(SweepSpec, LoadOfAMissingFileIsNotFound) {
  Result<SweepSpec> spec = LoadSweepSpec("/nonexistent/study.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(spec.status().message(), "sweep spec '/nonexistent/study.toml': no such file");
}

TEST(SweepSpec, OptionsMustExistOnceWithTheRightKindOfValue) {
  EXPECT_TRUE(CheckSweepOptions(Parse(kExample), SimulateOptions()).ok());
  auto error = [](const std::string& text) {
    Status s = CheckSweepOptions(Parse(text, "s.toml"), SimulateOptions());
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  EXPECT_EQ(error("[axes]\nmodels = [\"a\"]\n"),
            "s.toml: [axes] models: simulate has no option --models (see pipette simulate "
            "--help)");
  EXPECT_EQ(error("[fixed]\ndb = \"x.db\"\n"),
            "s.toml: [fixed] db: the sweep sets --db on every point itself (use pipette sweep's "
            "own --db; the experiment is the spec's name)");
  EXPECT_EQ(error("[fixed]\nideal-network = \"yes\"\n"),
            "s.toml: [fixed] ideal-network = yes: --ideal-network is a flag; write true or false");
  EXPECT_EQ(error("[axes]\npp = [4, true]\n"),
            "s.toml: [axes] pp = true: --pp takes a value, not true/false");
  EXPECT_EQ(error("[fixed]\nm = 8\n[axes]\nmicrobatches = [8]\n"),
            "s.toml: [axes] microbatches: names the same option as 'm'; set it once");
}

// A train point runs on pp (or p) times dp processes; what it does not set is train's default 1,
// and a value that is no whole number in [1, 2^20] counts as 1 (the child refuses the point).
TEST(SweepSpec, TrainProcessesArePipelineRanksTimesReplicas) {
  auto processes = [](const std::string& text) {
    return TrainProcesses(ExpandPoints(Parse("command = \"train\"\n" + text)).front());
  };
  EXPECT_EQ(processes(""), 1);
  EXPECT_EQ(processes("[fixed]\npp = 4\n"), 4);
  EXPECT_EQ(processes("[fixed]\np = 2\ndp = 3\n"), 6);
  EXPECT_EQ(processes("[fixed]\ndp = 2\n"), 2);
  EXPECT_EQ(processes("[fixed]\npp = 0\ndp = 2\n"), 2);
  EXPECT_EQ(processes("[fixed]\npp = \"two\"\ndp = 2\n"), 2);
  EXPECT_EQ(processes("[fixed]\npp = 2097152\n"), 1);
  EXPECT_EQ(processes("[fixed]\npp = 1024\ndp = 2048\n"), 1);  // 2^21 in all
  EXPECT_EQ(Parse("command = \"train\"\n").command, "train");
}

}  // namespace
}  // namespace pipette
