// Sha256 against FIPS 180-4's published test vectors, fed whole and in pieces.
#include "pipette/common/sha256.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace pipette {
namespace {

std::string Digest(std::string_view text) {
  Sha256 hash;
  hash.Update(text);
  return hash.HexDigest();
}

TEST(Sha256, PublishedVectors) {
  EXPECT_EQ(Digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Digest(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesOfAnySizeAndAFile) {
  const std::string text(1000, 'x');
  Sha256 pieces;
  for (std::size_t at = 0; at < text.size(); at += 7) pieces.Update(text.substr(at, 7));
  const std::string whole = Digest(text);
  EXPECT_EQ(pieces.HexDigest(), whole);
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "sha256-file").string();
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(*FileSha256(path), whole);
  const Result<std::string> missing = FileSha256(path + "-missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace pipette
