// `pipette report`: a study's page from a real database: the table has every run of the
// experiment with the keys that vary, every figure of the spec is inline SVG, predictions add the
// compare and errors figures and their error in both rows; refusals name the experiment. And the
// page in a real headless browser (Debian's chromium-headless-shell or chromium, installed by
// scripts/install-deps.sh --browser; the test is skipped, saying so, where neither is): every
// figure renders and the table has the runs' rows.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipette_runner.h"

namespace pipette::testing {
namespace {

std::size_t Count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// A simulated study of 4 points (1F1B and ZB-H1 at m = 4 and 8) with a bubble and a steptime
// figure (grouped by `steptime_x`, default m), swept into `db`.
void SweepStudy(const std::string& db, const std::string& steptime_x = "") {
  std::ofstream(ScratchDir() + "/report-study.toml") << R"(name = "report-study"
description = "Two schedules, two microbatch counts"
[fixed]
times = "F=1,I=1,W=1"
ideal-network = true
pp = 4
[axes]
schedule = ["1f1b", "zb-h1"]
m = [4, 8]
[[figures]]
kind = "bubble"
out = "report-bubble.png"
[[figures]]
kind = "steptime"
out = "report-steptime.png"
)" << (steptime_x.empty() ? "" : "x = \"" + steptime_x + "\"\n");
  const CommandResult sweep = Pipette("sweep report-study.toml --quiet --db " + db);
  // A figure the sweep cannot draw fails the sweep (exit 1) once its points have run.
  ASSERT_EQ(sweep.exit_code, steptime_x.empty() ? 0 : 1) << sweep.out << sweep.err;
}

TEST(ReportCli, TheStudysRunsAndEveryFigureInlineOnOnePage) {
  SweepStudy("report.db");
  const CommandResult r = Pipette("report --db report.db --out report-out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "report-out/index.html\n");
  const std::string html = ReadFile(ScratchDir() + "/report-out/index.html");
  EXPECT_TRUE(Contains(html, "<title>pipette report: report-study</title>"));
  EXPECT_TRUE(Contains(html, "<p>Two schedules, two microbatch counts</p>"));
  EXPECT_EQ(Count(html, "<tbody>"), 1u);
  EXPECT_EQ(Count(html, "<tr><td>"), 4u);  // one row per run
  // The keys that vary head their columns; those that do not (pp) do not.
  EXPECT_TRUE(Contains(html, "<th>schedule</th>"));
  EXPECT_TRUE(Contains(html, "<th>m</th>"));
  EXPECT_FALSE(Contains(html, "<th>pp</th>"));
  // 1F1B at p = 4, m = 4 with F = I = W = 1 ms: (4 + 3) x 3 ms = 21 ms, bubble 3/7.
  EXPECT_TRUE(Contains(html,
                       "<td class=\"text\">1f1b</td><td class=\"text\">4</td><td>21.000</td>"
                       "<td>0.4286</td>"))
      << html;
  EXPECT_EQ(Count(html, "<svg"), 2u);
  EXPECT_EQ(Count(html, "</svg>"), 2u);
  EXPECT_TRUE(Contains(html, "<figcaption>bubble: report-bubble.png</figcaption>"));
  EXPECT_TRUE(Contains(html, "<figcaption>steptime: report-steptime.png</figcaption>"));
  EXPECT_FALSE(Contains(html, "<script"));
  EXPECT_FALSE(Contains(html, "<?xml"));  // gnuplot's prolog is not inlined
  // Nothing but the page is left in the directory (the figures were drawn aside).
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(ScratchDir() + "/report-out")) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"index.html"});
}

TEST(ReportCli, PredictionsAddTheirErrorAndTheCompareAndErrorsFigures) {
  // A real run on the CPU engine (p = 1 runs without mpirun) and its prediction, one experiment.
  const CommandResult train =
      Pipette("train -p 1 -m 2 --steps 3 --quiet --db pred.db --experiment pred --format json");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const CommandResult sim =
      Pipette("simulate --costs-from 1 --db pred.db --experiment pred --quiet --format json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  CommandResult r = Pipette("report --db pred.db --out pred-out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string html = ReadFile(ScratchDir() + "/pred-out/index.html");
  EXPECT_EQ(Count(html, "<tr><td>"), 2u);
  EXPECT_EQ(Count(html, "<svg"), 2u);
  EXPECT_TRUE(Contains(html, "<figcaption>compare: every prediction</figcaption>"));
  EXPECT_TRUE(Contains(html, "<figcaption>errors: every prediction, by schedule</figcaption>"));
  // The error is in both rows: the prediction's and the measured run's ("+1.23%" or "-0.45%").
  EXPECT_EQ(Count(html, "%</td></tr>"), 2u) << html;
  // A second prediction of the same run (with means): the figures pair the run with its newest
  // prediction, and the measured row shows that one's error.
  ASSERT_EQ(Pipette("simulate --costs-from 1 --cost-statistic mean --db pred.db --experiment pred "
                    "--format json")
                .exit_code,
            0);
  r = Pipette("report --db pred.db --out pred-out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  html = ReadFile(ScratchDir() + "/pred-out/index.html");
  EXPECT_EQ(Count(html, "<tr><td>"), 3u);
  EXPECT_EQ(Count(html, "<svg"), 2u) << r.err;
  EXPECT_FALSE(Contains(html, "Not drawn"));
  const auto error_of = [&](int run) {  // the last cell of run `run`'s row
    const std::size_t row = html.find(fmt::format("<tr><td>{}</td>", run));
    const std::size_t end = html.find("</td></tr>", row);
    return html.substr(html.rfind("<td>", end) + 4, end - html.rfind("<td>", end) - 4);
  };
  EXPECT_EQ(error_of(1), error_of(3));
  EXPECT_NE(error_of(2), error_of(3));
}

TEST(ReportCli, AFigureThatCannotBeDrawnIsNamedOnThePage) {
  SweepStudy("bad-figure.db", "cluster");  // the steptime figure groups by a key the runs lack
  const CommandResult r = Pipette("report --db bad-figure.db --out bad-out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err,
                       "warning: figure 'steptime: report-steptime.png' not drawn: run 1: "
                       "its configuration has no key 'cluster'"))
      << r.err;
  const std::string html = ReadFile(ScratchDir() + "/bad-out/index.html");
  EXPECT_EQ(Count(html, "<svg"), 1u);
  EXPECT_TRUE(Contains(html,
                       "<li>steptime: report-steptime.png: run 1: its configuration has no "
                       "key &#39;cluster&#39;</li>"))
      << html;
}

TEST(ReportCli, RefusesAnUnknownExperimentOrAChoiceToMake) {
  SweepStudy("two.db");
  ASSERT_EQ(
      Pipette("simulate --times F=1 --ideal-network --db two.db --experiment other").exit_code, 0);
  CommandResult r = Pipette("report --db two.db --out two-out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err,
                       "--experiment: 'two.db' holds 2 experiments (report-study, other): "
                       "name the one to report"))
      << r.err;
  r = Pipette("report --db two.db --experiment nope --out two-out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err,
                       "--experiment = 'nope': no such experiment in 'two.db' (it has "
                       "report-study, other)"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/two-out/index.html"));
  r = Pipette("report --db two.db --experiment other --out two-out");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The browser Debian ships, headless: chromium-headless-shell, or chromium with --headless.
std::string Browser() {
  for (const char* name : {"chromium-headless-shell", "chromium"}) {
    if (std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0) {
      return name;
    }
  }
  return "";
}

TEST(ReportBrowser, EveryFigureRendersAndTheTableHasTheRuns) {
  const std::string browser = Browser();
  if (browser.empty()) {
    GTEST_SKIP() << "no headless browser (chromium-headless-shell or chromium): "
                    "`bash scripts/install-deps.sh --browser` installs Debian's";
  }
  SweepStudy("browser.db");
  ASSERT_EQ(Pipette("report --db browser.db --out browser-out").exit_code, 0);
  // The page as written, plus a script that measures it once rendered and writes what it found.
  const std::string dir = ScratchDir() + "/browser-out";
  std::string html = ReadFile(dir + "/index.html");
  const std::string probe = R"(<script>
const svgs = [...document.querySelectorAll('figure svg')];
const rendered = svgs.filter(s => { const r = s.getBoundingClientRect();
  return r.width > 200 && r.height > 100 && s.querySelectorAll('path, text').length > 10; });
const rows = document.querySelectorAll('#runs tbody tr').length;
document.body.insertAdjacentHTML('beforeend', '<pre id="probe">figures=' + svgs.length +
  ' rendered=' + rendered.length + ' rows=' + rows + '</pre>');
</script>
)";
  html.insert(html.rfind("</body>"), probe);
  std::ofstream(dir + "/probe.html") << html;
  const CommandResult r =
      Shell(browser + (browser == "chromium" ? " --headless" : "") +
            " --no-sandbox --disable-gpu --dump-dom file://" + dir + "/probe.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "<pre id=\"probe\">figures=2 rendered=2 rows=4</pre>")) << r.out;
}

}  // namespace
}  // namespace pipette::testing
