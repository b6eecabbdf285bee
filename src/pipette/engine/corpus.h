// The training data of the real engines (CPU and CUDA): a synthetic language with learnable
// structure, generated on the fly so every rank builds exactly the microbatches it needs without
// any data movement.
//
// The language is a second-order Markov chain over the vocabulary. Each token b has three
// possible successors (a hash of b picks them); which of them has probability 0.6, 0.3 and 0.1
// depends on the token a before b (a hash of the pair). A model that knows nothing pays ln(vocab)
// (4.16 nats for vocab 64); one that learns the successors of each token (a bigram table: embedding
// and head suffice) reaches ln 3 = 1.10; one that also looks back two tokens (attention) reaches
// the chain's entropy, 0.898 nats per token.
// The first two tokens of a sequence are uniform, so the first target cannot be predicted: the
// lowest mean loss over a sequence of T tokens is ((T-1) * 0.898 + ln(vocab)) / T, 1.000 for the
// tiny model (T = 32). Looking back two tokens needs attention. Sequence n of the corpus is a pure
// function of (vocab, n), so batches do not depend on the partition or the rank.
#pragma once

#include <cstdint>
#include <vector>

namespace pipette {

// One microbatch: `sequences` sequences of `seq` tokens and their next-token targets, both
// row-major (sequences x seq). The loss of every token is weighted by `loss_scale` (1 / the tokens
// of the whole global batch, so that gradients sum to those of the mean loss).
struct Batch {
  int sequences = 0;
  int seq = 0;
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> targets;
  float loss_scale = 1.0f;

  int num_tokens() const { return sequences * seq; }
};

// The chain's entropy rate in nats per token: the lowest mean loss a model can reach.
inline constexpr double kCorpusEntropy = 0.8979457248567798;

// Sequences first_sequence .. first_sequence + sequences - 1 of `seq` tokens each, with targets,
// weighted by `loss_scale`. REQUIRES: vocab >= 3, sequences >= 1, seq >= 1.
Batch MakeBatch(int vocab, std::int64_t first_sequence, int sequences, int seq, float loss_scale);

}  // namespace pipette
