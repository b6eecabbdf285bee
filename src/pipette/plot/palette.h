// The one palette every pipette figure uses: Okabe & Ito's eight colours, distinguishable with
// the common colour-vision deficiencies (Okabe, Ito 2008, "Color Universal Design"). Roles map
// event kinds and series to them in one place.
#pragma once

#include <array>
#include <cstdint>

namespace pipette::palette {

inline constexpr std::uint32_t kOrange = 0xE69F00;
inline constexpr std::uint32_t kSkyBlue = 0x56B4E9;
inline constexpr std::uint32_t kBluishGreen = 0x009E73;
inline constexpr std::uint32_t kYellow = 0xF0E442;
inline constexpr std::uint32_t kBlue = 0x0072B2;
inline constexpr std::uint32_t kVermillion = 0xD55E00;
inline constexpr std::uint32_t kReddishPurple = 0xCC79A7;
inline constexpr std::uint32_t kBlack = 0x000000;

// Series colours in order (line plots: one per schedule or run).
inline constexpr std::array<std::uint32_t, 8> kSeries = {
    kBlue, kOrange, kBluishGreen, kVermillion, kReddishPurple, kSkyBlue, kYellow, kBlack};

// gnuplot point types that read apart at a glance: filled square, circle, triangle, down triangle,
// diamond and pentagon, then the same shapes open.
inline constexpr std::array<int, 12> kMarkers = {5, 7, 9, 11, 13, 15, 4, 6, 8, 10, 12, 14};

struct SeriesStyle {
  std::uint32_t colour = kBlue;
  int point_type = 5;
};

// The style of series `index` (>= 0): colour index % 8 and a marker that advances with the colour
// and once more per round of eight, so the first 8 x 12 = 96 series all differ in their (colour,
// marker) pair.
constexpr SeriesStyle Series(int index) {
  const int n = static_cast<int>(kSeries.size());
  return {kSeries[static_cast<std::size_t>(index % n)],
          kMarkers[static_cast<std::size_t>((index % n + index / n) %
                                            static_cast<int>(kMarkers.size()))]};
}

// Timeline roles.
inline constexpr std::uint32_t kForward = kBlue;
inline constexpr std::uint32_t kBackward = kOrange;  // I and B
inline constexpr std::uint32_t kWeight = kBluishGreen;
inline constexpr std::uint32_t kCommunication = kBlack;
inline constexpr std::uint32_t kAllReduce = kReddishPurple;
inline constexpr std::uint32_t kOptimizer = kVermillion;

// `rgb` mixed halfway with white: the tint of a rank's second and later chunks.
constexpr std::uint32_t Tint(std::uint32_t rgb) {
  std::uint32_t out = 0;
  for (int shift : {16, 8, 0}) {
    const std::uint32_t c = (rgb >> shift) & 0xFF;
    out |= ((c + 0xFF + 1) / 2) << shift;
  }
  return out;
}

}  // namespace pipette::palette
