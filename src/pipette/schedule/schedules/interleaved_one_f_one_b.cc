// Interleaved 1F1B (Narayanan et al. 2021) as PyTorch's ScheduleInterleaved1F1B and Megatron-LM's
// forward_backward_pipelining_with_interleaving: v chunks per rank in the loop layout, warmup
// 2(p-1-r) + (v-1)G forwards, then 1F1B over virtual microbatches (see megatron_interleaved.h).
// Without --group-size, G is PyTorch's m / rounds with rounds = max(1, floor(m/p)), so every
// (p, v, m) that PyTorch runs is accepted with PyTorch's order (p = 4, m = 10: G = 5; m < p: one
// round of G = m); that equals Megatron's default G = p whenever p divides m. With --group-size G
// the order and rules are Megatron-LM's for that G (--group-size p: Megatron's default).
// With per-chunk costs f and b: makespan (m*v + p-1)(f+b) when G divides m and G >= p. With v = 1
// the warmup is 2(p-1-r): exactly eager-1f1b (PyTorch and JaxPP behave the same), not 1f1b.
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/schedules/megatron_interleaved.h"

namespace pipette::schedules {

const ScheduleGenerator& InterleavedOneFOneB() {
  static const MegatronInterleavedGenerator generator(
      "interleaved-1f1b",
      "interleaved 1F1B, loop layout, warmup 2(p-1-r)+(v-1)G (PyTorch; Megatron-LM with "
      "--group-size)",
      "v >= 1 (default 2); v > 1: m % max(1, floor(m/p)) = 0 (PyTorch); --group-size G: "
      "p <= G <= m, m % G = 0 or >= p (Megatron-LM)",
      /*extra_warmup=*/0, /*overlap=*/false, /*pytorch_default=*/true);
  return generator;
}

}  // namespace pipette::schedules
