// libFuzzer target: the sweep spec parser (pipette sweep SPEC.toml), then what the sweep does next
// with a parsed spec: check its keys against the command's options, expand its points and write
// each point's key and child arguments and which figures select it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/printable.h"
#include "pipette/study/sweep_spec.h"

namespace {

// A subset of `pipette simulate`'s options (sweep_command.cc reads them from CLI11): enough for
// every key of the committed corpus and for the rules that depend on flags and short names.
std::vector<pipette::SweepOption> SimulateOptions() {
  std::vector<pipette::SweepOption> options;
  for (auto names : std::vector<std::vector<std::string>>{{"schedule", "s"},
                                                          {"pp", "p"},
                                                          {"microbatches", "m"},
                                                          {"v"},
                                                          {"times"},
                                                          {"model"},
                                                          {"cluster"},
                                                          {"nodes"},
                                                          {"dp"},
                                                          {"tp"},
                                                          {"latency-us"},
                                                          {"efficiency"},
                                                          {"dtype"},
                                                          {"seq-len"},
                                                          {"micro-batch-size"},
                                                          {"db"},
                                                          {"format"}}) {
    options.push_back({names, false});
  }
  options.push_back({{"ideal-network"}, true});
  options.push_back({{"recompute"}, true});
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pipette::Result<pipette::SweepSpec> spec = pipette::ParseSweepSpec(text, "fuzz.toml");
  if (!spec.ok()) return 0;
  static const std::vector<pipette::SweepOption> options = SimulateOptions();
  (void)pipette::CheckSweepOptions(*spec, options);
  for (const pipette::SweepPoint& point : pipette::ExpandPoints(*spec)) {
    if (point.key != pipette::PointKey(point.settings)) std::abort();
    // No control byte reaches a child's argument or a point key (a NUL would cut both short).
    const auto has_control = [](std::string_view s) {
      return std::any_of(s.begin(), s.end(), pipette::IsControlByte);
    };
    if (has_control(point.key)) std::abort();
    for (const std::string& argument : pipette::PointArguments(point)) {
      if (has_control(argument)) std::abort();
    }
    for (const pipette::SweepFigure& figure : spec->figures) {
      (void)pipette::FigureSelects(figure, point);
    }
  }
  return 0;
}
