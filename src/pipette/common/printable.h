// Printable: user input made safe to echo in a message. A value the user typed (an option, a file
// name, a CSV cell, a TOML string) can hold control bytes: an ESC that recolours or clears the
// terminal, a carriage return that overwrites the line, a newline that forges a second message
// line. Every such byte is written as \xHH (ESC as \x1b); every other byte, UTF-8 included, is
// kept. Pure functions.
//
// Example:
//   Status::NotFound(fmt::format("unknown schedule '{}'", Printable(name)));
#pragma once

#include <string>
#include <string_view>

namespace pipette {

// Whether `c` is a control byte: 0x00-0x1f or 0x7f (DEL).
bool IsControlByte(char c);

// Returns `text` with every control byte (0x00-0x1f and 0x7f) written as \xHH, newline included.
// Idempotent: the result holds no control byte, and backslashes are kept as they are.
std::string Printable(std::string_view text);

// Returns Printable(`message`) except that newlines stay: for a whole message, whose own line
// breaks are deliberate (its quoted values went through Printable() where they were quoted).
std::string PrintableLines(std::string_view message);

}  // namespace pipette
