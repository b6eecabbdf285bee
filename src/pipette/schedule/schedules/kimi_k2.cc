// Kimi-K2 (Moonshot AI, "Kimi K2: Open Agentic Intelligence", 2025, section 2.4 and Figure 7):
// interleaved 1F1B with one extra warmup microbatch, whose steady-state forward/backward pairs are
// emitted as overlapped (F;B) cells, as Megatron-LM's combined_1f1b_schedule_for_interleaved_
// pipelining runs them to hide the expert-parallel all-to-all. The +1 warmup guarantees the two
// halves of every cell are different microbatches. Each cell needs both inputs and costs F+B.
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/megatron_interleaved.h"

namespace pipette::schedules {

const ScheduleGenerator& KimiK2() {
  static const MegatronInterleavedGenerator generator(
      "kimi-k2", "interleaved 1F1B +1 warmup, steady pairs as overlapped (F;B) cells (Kimi K2)",
      kMegatronInterleavedConstraints, /*extra_warmup=*/1, /*overlap=*/true,
      /*pytorch_default=*/false);
  return generator;
}

}  // namespace pipette::schedules
