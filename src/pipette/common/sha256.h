// Sha256: the SHA-256 digest (FIPS 180-4) of a byte stream, fed in pieces of any size. It names
// the files a run was imported from (store/run_config.h, ImportedRunConfig), so that a run says
// exactly which traces it holds. Not for security. A plain value; not thread-safe.
//
// Example:
//   Sha256 hash;
//   hash.Update("ab");
//   hash.Update("c");
//   hash.HexDigest();  // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "pipette/common/status.h"

namespace pipette {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  // The digest of everything fed so far, as 64 lowercase hex digits. Ends the hash: call once.
  std::string HexDigest();

 private:
  void Block(const unsigned char* block);

  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes fed
};

// The SHA-256 of the file at `path`, read in pieces (bounded memory). IoError naming the path.
Result<std::string> FileSha256(const std::string& path);

}  // namespace pipette
