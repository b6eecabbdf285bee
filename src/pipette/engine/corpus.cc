#include "pipette/engine/corpus.h"

namespace pipette {
namespace {

std::uint64_t Mix(std::uint64_t z) {  // SplitMix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The k-th allowed successor (k = 0, 1, 2) of token b: three distinct tokens per b.
int Successor(int vocab, int b, int k) {
  const std::uint64_t h = Mix(0x5eedULL + static_cast<std::uint64_t>(b));
  const int first = static_cast<int>(h % vocab);
  int step = 1 + static_cast<int>((h >> 32) % (vocab - 1));
  if ((2 * step) % vocab == 0) step = 1;  // keeps the three successors distinct
  return (first + k * step) % vocab;
}

// Which of b's successors is the likely one depends on the token a before b.
int Rotation(int a, int b) {
  return static_cast<int>(Mix(0xab5ULL + static_cast<std::uint64_t>(a) * 1000003ULL + b) % 3);
}

}  // namespace

Batch MakeBatch(int vocab, std::int64_t first_sequence, int sequences, int seq, float loss_scale) {
  Batch batch;
  batch.sequences = sequences;
  batch.seq = seq;
  batch.loss_scale = loss_scale;
  batch.tokens.resize(static_cast<std::size_t>(sequences) * seq);
  batch.targets.resize(batch.tokens.size());
  std::vector<int> text(seq + 1);
  for (int s = 0; s < sequences; ++s) {
    std::uint64_t state =
        Mix(0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(first_sequence + s + 1));
    auto next = [&] { return state = Mix(state + 0x9e3779b97f4a7c15ULL); };
    text[0] = static_cast<int>(next() % vocab);
    text[1] = static_cast<int>(next() % vocab);
    for (int t = 2; t <= seq; ++t) {
      const std::uint64_t u = next() % 10;  // 0-5: first successor, 6-8: second, 9: third
      const int k = u < 6 ? 0 : (u < 9 ? 1 : 2);
      text[t] = Successor(vocab, text[t - 1], (k + Rotation(text[t - 2], text[t - 1])) % 3);
    }
    for (int t = 0; t < seq; ++t) {
      batch.tokens[static_cast<std::size_t>(s) * seq + t] = text[t];
      batch.targets[static_cast<std::size_t>(s) * seq + t] = text[t + 1];
    }
  }
  return batch;
}

}  // namespace pipette
