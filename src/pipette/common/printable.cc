#include "pipette/common/printable.h"

#include <fmt/core.h>

namespace pipette {
namespace {

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

std::string Escape(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (IsControl(byte) && !(keep_newlines && c == '\n')) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Escape(text, false); }

std::string PrintableLines(std::string_view message) { return Escape(message, true); }

}  // namespace pipette
