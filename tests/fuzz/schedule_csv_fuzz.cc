// libFuzzer target: the schedule CSV parser (pipette simulate/train --schedule FILE.csv), then what
// those commands do next with a parsed schedule: validate it, lower it to per-rank programs and
// evaluate them; and a valid schedule must survive a round trip through ToComputeCsv.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipette/schedule/costs.h"
#include "pipette/schedule/evaluate.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/schedule/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pipette::Result<pipette::Schedule> schedule = pipette::ParseComputeCsv(text, "fuzz");
  if (!schedule.ok() || !pipette::Validate(*schedule).ok()) return 0;
  pipette::Result<pipette::Program> program = pipette::Lower(*schedule);
  if (!program.ok()) std::abort();  // Lower() accepts every valid schedule
  const auto costs = pipette::Costs::Uniform(program->num_stages(), {});
  if (!pipette::Evaluate(*program, costs, {.p2p_latency = 0.5, .record_timeline = true}).ok()) {
    std::abort();  // a lowered valid schedule never deadlocks
  }
  pipette::Result<pipette::Schedule> again =
      pipette::ParseComputeCsv(pipette::ToComputeCsv(*schedule), "fuzz");
  if (!again.ok() || again->ranks != schedule->ranks) std::abort();
  return 0;
}
