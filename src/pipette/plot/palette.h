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
