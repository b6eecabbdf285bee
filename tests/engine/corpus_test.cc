#include "pipette/engine/corpus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace pipette {
namespace {

TEST(Corpus, TargetsAreTheNextTokensAndBatchesAreReproducible) {
  const Batch a = MakeBatch(64, 10, 3, 32, 0.5f);
  const Batch b = MakeBatch(64, 11, 2, 32, 0.5f);  // sequences 11 and 12 again
  ASSERT_EQ(a.tokens.size(), 96u);
  for (int s = 0; s < 3; ++s) {
    for (int t = 0; t + 1 < 32; ++t) EXPECT_EQ(a.targets[s * 32 + t], a.tokens[s * 32 + t + 1]);
  }
  for (int i = 0; i < 64; ++i) EXPECT_EQ(a.tokens[32 + i], b.tokens[i]);
  EXPECT_EQ(a.loss_scale, 0.5f);
}

// The empirical conditional entropy of the next token given the two before it approaches the
// chain's entropy rate (0.898 nats), and given one token it is clearly higher: the language needs
// attention over two positions to be learned well.
TEST(Corpus, EntropyRateMatchesTheChain) {
  const int vocab = 16;
  const Batch batch = MakeBatch(vocab, 0, 4000, 32, 1.0f);
  std::map<std::pair<int, int>, std::map<int, int>> two;
  std::map<int, std::map<int, int>> one;
  for (int s = 0; s < batch.sequences; ++s) {
    for (int t = 1; t < batch.seq; ++t) {
      const int i = s * batch.seq + t;
      two[{batch.tokens[i - 1], batch.tokens[i]}][batch.targets[i]]++;
      one[batch.tokens[i]][batch.targets[i]]++;
    }
  }
  auto entropy = [](const auto& table) {
    double h = 0, n = 0;
    for (const auto& [context, counts] : table) {
      double total = 0;
      for (const auto& [token, c] : counts) total += c;
      for (const auto& [token, c] : counts) h -= c * std::log(c / total);
      n += total;
    }
    return h / n;
  };
  EXPECT_NEAR(entropy(two), kCorpusEntropy, 0.02);
  EXPECT_GT(entropy(one), kCorpusEntropy + 0.1);
}

}  // namespace
}  // namespace pipette
