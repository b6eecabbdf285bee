// Interleaved 1F1B with one extra warmup microbatch: Megatron-LM's order when
// overlap_moe_expert_parallel_comm adds 1 to every rank's warmup (get_pp_rank_microbatches), the
// "VPP + 1 warmup" of the Kimi K2 report, with forward and backward kept as separate cells. The
// extra forward makes each steady pair's F and B belong to different microbatches even on the last
// stage, so they are independent; the ideal makespan is that of interleaved-1f1b and each rank
// holds one more chunk of activations.
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/megatron_interleaved.h"

namespace pipette::schedules {

const ScheduleGenerator& InterleavedOneFOneBPlusOne() {
  static const MegatronInterleavedGenerator generator(
      "interleaved-1f1b-plus-one",
      "interleaved 1F1B with one extra warmup forward per rank (Megatron-LM EP-overlap)",
      kMegatronInterleavedConstraints, /*extra_warmup=*/1, /*overlap=*/false,
      /*pytorch_default=*/false);
  return generator;
}

}  // namespace pipette::schedules
