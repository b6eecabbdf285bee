// Interleaved 1F1B (Narayanan et al. 2021) as Megatron-LM's forward_backward_pipelining_with_
// interleaving and PyTorch's ScheduleInterleaved1F1B: v chunks per rank in the loop layout, warmup
// 2(p-1-r) + (v-1)G forwards, then 1F1B over virtual microbatches (see megatron_interleaved.h).
// With per-chunk costs f and b: makespan (m*v + p-1)(f+b) when G divides m. With v = 1 the warmup
// is 2(p-1-r): exactly eager-1f1b (PyTorch and JaxPP behave the same), not Megatron's 1f1b.
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/megatron_interleaved.h"

namespace pipette::schedules {

const ScheduleGenerator& InterleavedOneFOneB() {
  static const MegatronInterleavedGenerator generator(
      "interleaved-1f1b",
      "interleaved 1F1B, loop layout, warmup 2(p-1-r)+(v-1)G (Megatron-LM; PyTorch)",
      /*extra_warmup=*/0, /*overlap=*/false);
  return generator;
}

}  // namespace pipette::schedules
