#include "pipette/common/bounded_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace pipette {
namespace {

// A file under the test's temporary directory holding `text`; removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_(::testing::TempDir() + "bounded_file_" + std::to_string(getpid()) + ".txt") {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(BoundedFile, ReadsAFileWithinTheLimit) {
  const TempFile file("a,b\nc\n");
  Result<std::string> text = ReadFileBounded(file.path(), 6, "schedule CSV");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "a,b\nc\n");
}

TEST(BoundedFile, RefusesAFileOverTheLimit) {
  const TempFile file("1234567");
  Result<std::string> text = ReadFileBounded(file.path(), 6, "model file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "model file '" + file.path() + "': 7 bytes, more than the limit of 6");
}

TEST(BoundedFile, MissingFileIsNotFoundInEitherWording) {
  Result<std::string> text = ReadFileBounded("/nonexistent/x.toml", 100, "sweep spec");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(text.status().message(), "sweep spec '/nonexistent/x.toml': no such file");
  text = ReadFileBounded("/nonexistent/x.toml", 100, "cluster file", MissingFile::kNotARegularFile);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(text.status().message(),
            "cluster file '/nonexistent/x.toml': not a regular file (or it does not exist)");
}

TEST(BoundedFile, DirectoryIsNotARegularFile) {
  const std::string dir = ::testing::TempDir();
  Result<std::string> text = ReadFileBounded(dir, 100, "model file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "model file '" + dir + "': not a regular file (a directory)");
}

TEST(BoundedFile, UnreadableFileIsAnIoError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const TempFile file("secret");
  std::filesystem::permissions(file.path(), std::filesystem::perms::none);
  Result<std::string> text = ReadFileBounded(file.path(), 100, "model file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kIoError);
  EXPECT_EQ(text.status().message().rfind("model file '" + file.path() + "': cannot be opened", 0),
            0u)
      << text.status().message();
}

}  // namespace
}  // namespace pipette
