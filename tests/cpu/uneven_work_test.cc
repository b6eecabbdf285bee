// Uneven work in the real engines' plan and the CPU engine's reference (no MPI): variable-length
// microbatches are prefixes of the same corpus sequences, a step's tokens and loss scale follow
// the lengths, messages are sized per microbatch, lengths beyond --seq-len are refused, and the
// unpipelined reference's loss is the mean over the step's tokens.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/gpt.h"
#include "cpu/reference.h"
#include "pipette/engine/rank_interpreter.h"
#include "pipette/engine/train_plan.h"
#include "pipette/engine/train_report.h"
#include "pipette/schedule/message.h"

namespace pipette::cpu {
namespace {

TrainOptions TinyOptions(const std::string& seqlens) {
  TrainOptions options;
  options.p = 2;
  options.m = 4;
  options.micro_batch_size = 2;
  options.microbatch_seqlens = seqlens;
  return options;
}

TEST(UnevenPlan, MicrobatchesArePrefixesAndTheStepCountsTheirTokens) {
  const TrainPlan even = PlanTraining(TinyOptions("")).value();
  const TrainPlan mixed = PlanTraining(TinyOptions("32,7,20,1")).value();
  EXPECT_EQ(even.microbatch_seqlens, (std::vector<int>{32, 32, 32, 32}));
  EXPECT_FALSE(even.variable_seqlens());
  EXPECT_TRUE(mixed.variable_seqlens());
  EXPECT_EQ(even.tokens_per_step(), 2 * 4 * 32);
  EXPECT_EQ(mixed.tokens_per_step(), 2 * (32 + 7 + 20 + 1));
  EXPECT_EQ(mixed.loss_weight_per_step(), (32 + 7 + 20 + 1) / 32.0);
  for (int mb = 0; mb < 4; ++mb) {
    const Batch full = MicrobatchOf(even, 1, 0, mb), part = MicrobatchOf(mixed, 1, 0, mb);
    const int s = mixed.microbatch_seqlens[mb];
    ASSERT_EQ(part.seq, s);
    ASSERT_EQ(part.sequences, 2);
    EXPECT_FLOAT_EQ(part.loss_scale, 1.0f / static_cast<float>(2 * 60));
    for (int q = 0; q < 2; ++q) {  // sequence q's first s tokens and targets
      for (int t = 0; t < s; ++t) {
        EXPECT_EQ(part.tokens[q * s + t], full.tokens[q * 32 + t]);
        EXPECT_EQ(part.targets[q * s + t], full.targets[q * 32 + t]);
      }
    }
  }
}

TEST(UnevenPlan, MessagesAreSizedPerMicrobatch) {
  const TrainPlan mixed = PlanTraining(TinyOptions("32,7,20,1")).value();
  const MessageSizes sizes = MessageSizesOf(mixed);
  // Stage 0 hands the hidden state (width 64, fp32) of each of the microbatch's tokens to stage 1.
  for (int mb = 0; mb < 4; ++mb) {
    const Action send_f = Action::Make(ActionKind::kSendForward, 0, mb);
    const std::int64_t want = 2LL * mixed.microbatch_seqlens[mb] * 64 * 4;
    EXPECT_EQ(sizes.Of(Action::Make(ActionKind::kRecvForward, 1, mb)), want) << mb;
    EXPECT_EQ(sizes.Of(send_f), want) << mb;
    EXPECT_EQ(sizes.Of(Action::Make(ActionKind::kSendBackward, 1, mb)), want) << mb;
  }
  EXPECT_TRUE(MessageSizesOf(PlanTraining(TinyOptions("")).value()).microbatch_scale.empty());
}

TEST(UnevenPlan, ALengthOutsideOneToSeqLenIsRefused) {
  EXPECT_EQ(PlanTraining(TinyOptions("32,33,8,8")).status().message(),
            "--microbatch-seqlens: microbatch 1 has length 33: must be in [1, 32] (--seq-len, the "
            "longest sequence the run is planned for)");
  TrainOptions options = TinyOptions("8,8,8,17");
  options.seq_len = 16;
  EXPECT_EQ(PlanTraining(options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(PlanTraining(TinyOptions("8,8,8")).ok());  // m = 4 lengths
}

TEST(UnevenPlan, RankSpeedsCoverEveryRank) {
  TrainOptions options = TinyOptions("");
  EXPECT_EQ(PlanTraining(options)->rank_speed, (std::vector<double>{1.0, 1.0}));
  EXPECT_FALSE(PlanTraining(options)->uneven_speed());
  options.rank_speed = "1=0.25";
  EXPECT_EQ(PlanTraining(options)->rank_speed, (std::vector<double>{1.0, 0.25}));
  EXPECT_TRUE(PlanTraining(options)->uneven_speed());
  options.rank_speed = "2=0.5";
  EXPECT_EQ(PlanTraining(options).status().code(), StatusCode::kInvalidArgument);
  options.rank_speed = "0=1.5";
  EXPECT_EQ(PlanTraining(options).status().message(),
            "--rank-speed 0=1.5: rank 0 at speed 1.5: a real engine can only slow a rank down "
            "(speed in (0, 1])");
}

// The model's mean loss over one batch (a forward pass).
double MeanLoss(const TrainPlan& plan, const Batch& batch) {
  ModuleChain model;
  for (const std::string& layer : LayerNames(plan.spec)) {
    model.Add(std::move(MakeModule(plan.spec, layer, 1).value()));
  }
  std::vector<Cache> caches;
  model.Forward(batch, Tensor(), caches);
  return caches.back().loss;
}

// Step 1's loss of the reference is the mean over the step's tokens: each microbatch's mean loss
// (computed alone) weighted by its tokens.
TEST(UnevenReference, TheLossIsTheMeanOverTheStepsTokens) {
  TrainOptions options = TinyOptions("32,7,20,1");
  options.steps = 1;
  const TrainPlan plan = PlanTraining(options).value();
  const ReferenceRun run = TrainReference(plan, options);
  double want = 0;
  for (int mb = 0; mb < 4; ++mb) {
    want += MeanLoss(plan, MicrobatchOf(plan, 0, 0, mb)) * plan.tokens_of(mb);
  }
  want /= static_cast<double>(plan.tokens_per_step());
  ASSERT_EQ(run.losses.size(), 1u);
  EXPECT_NEAR(run.losses[0], want, 1e-6 * want);
}

// Lengths all at seq_len are the even run, bit for bit.
TEST(UnevenReference, LengthsAllAtSeqLenAreTheEvenRun) {
  TrainOptions options = TinyOptions("");
  options.steps = 2;
  const ReferenceRun even = TrainReference(PlanTraining(options).value(), options);
  options.microbatch_seqlens = "32,32,32,32";
  const ReferenceRun listed = TrainReference(PlanTraining(options).value(), options);
  EXPECT_EQ(even.losses, listed.losses);
  EXPECT_EQ(even.final_params, listed.final_params);
}

}  // namespace
}  // namespace pipette::cpu
