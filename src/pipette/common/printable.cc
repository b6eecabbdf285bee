#include "pipette/common/printable.h"

#include <fmt/core.h>

namespace pipette {
namespace {

std::string Escape(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (IsControlByte(c) && !(keep_newlines && c == '\n')) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool IsControlByte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

std::string Printable(std::string_view text) { return Escape(text, false); }

std::string PrintableLines(std::string_view message) { return Escape(message, true); }

}  // namespace pipette
