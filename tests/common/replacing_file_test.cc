// ReplacingFile: an output is written aside and moved over its path only when complete; without
// the commit the path keeps what it had (or stays absent) and nothing is left beside it.
#include "pipette/common/replacing_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace pipette {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test's temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() : path_(::testing::TempDir() + "replacing_file_" + std::to_string(getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // The names in the directory, sorted.
  std::string Names() const {
    std::set<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(path_)) {
      names.insert(e.path().filename().string());
    }
    std::string out;
    for (const std::string& n : names) out += n + ";";
    return out;
  }

 private:
  std::string path_;
};

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReplacingFile, WritesAsideKeepingTheExtensionAndMovesTheFileIntoPlaceOnCommit) {
  const TempDir dir;
  std::ofstream(dir / "fig.png") << "old";
  ReplacingFile file(dir / "fig.png");
  EXPECT_EQ(file.write_path(), dir / (".fig.partial-" + std::to_string(getpid()) + ".png"));
  std::ofstream(file.write_path()) << "new";
  EXPECT_EQ(Read(dir / "fig.png"), "old");  // a reader sees the old file until the commit
  ASSERT_TRUE(file.Commit().ok());
  EXPECT_EQ(Read(dir / "fig.png"), "new");
  EXPECT_EQ(dir.Names(), "fig.png;");
}

TEST(ReplacingFile, WithoutTheCommitThePathKeepsWhatItHadAndNothingIsLeftBeside) {
  const TempDir dir;
  std::ofstream(dir / "trace.json") << "complete";
  {
    ReplacingFile file(dir / "trace.json");
    std::ofstream(file.write_path()) << "half";
  }
  EXPECT_EQ(Read(dir / "trace.json"), "complete");
  EXPECT_EQ(dir.Names(), "trace.json;");
  {
    ReplacingFile file(dir / "new.json");
    std::ofstream(file.write_path()) << "half";
  }
  EXPECT_EQ(dir.Names(), "trace.json;");  // a new path stays absent
}

TEST(ReplacingFile, TheReplacedFilesPermissionsCarryOver) {
  const TempDir dir;
  std::ofstream(dir / "private.toml") << "old";
  ASSERT_EQ(chmod((dir / "private.toml").c_str(), 0600), 0);
  ReplacingFile file(dir / "private.toml");
  std::ofstream(file.write_path()) << "new";
  ASSERT_TRUE(file.Commit().ok());
  struct stat after {};
  ASSERT_EQ(stat((dir / "private.toml").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0600u);
  EXPECT_EQ(Read(dir / "private.toml"), "new");
}

// A FIFO, a device and a symbolic link (/dev/stdout is one, whatever standard output is; a link
// the user made is written through to its target, as before) are written in place.
TEST(ReplacingFile, APathThatIsNotARegularFileIsWrittenInPlace) {
  const TempDir dir;
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0600), 0);
  ReplacingFile fifo(dir / "pipe");
  EXPECT_EQ(fifo.write_path(), dir / "pipe");
  EXPECT_TRUE(fifo.Commit().ok());
  ReplacingFile out("/dev/stdout");
  EXPECT_EQ(out.write_path(), "/dev/stdout");
  ReplacingFile null("/dev/null");
  EXPECT_EQ(null.write_path(), "/dev/null");
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink(dir / "target.json", dir / "link.json");
  ReplacingFile link(dir / "link.json");
  EXPECT_EQ(link.write_path(), dir / "link.json");
  ReplacingFile long_name(dir / (std::string(240, 'n') + ".json"));
  EXPECT_EQ(long_name.write_path(), dir / (std::string(240, 'n') + ".json"));
}

TEST(ReplacingFile, ACommitThatCannotMoveTheFileIsAnIoErrorAndLeavesNothing) {
  const TempDir dir;
  fs::create_directories(dir / "figure.svg");  // a directory where the file should go
  ReplacingFile file(dir / "figure.svg");
  EXPECT_EQ(file.write_path(), dir / "figure.svg");  // not a regular file: in place
  ReplacingFile blocked(dir / "out.svg");
  std::ofstream(blocked.write_path()) << "x";
  fs::create_directories(dir / "out.svg");
  std::ofstream(dir / "out.svg/inside") << "x";  // rename over a non-empty directory fails
  const Status moved = blocked.Commit();
  EXPECT_EQ(moved.code(), StatusCode::kIoError);
  EXPECT_NE(moved.message().find("out.svg': cannot replace the file: "), std::string::npos)
      << moved.message();
  EXPECT_EQ(dir.Names(), "figure.svg;out.svg;");
}

}  // namespace
}  // namespace pipette
