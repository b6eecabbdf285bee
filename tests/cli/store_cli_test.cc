// End-to-end tests of the experiment database through the pipette binary: concurrent creators of a
// new database (forced interleaving: the test holds the lock until every process waits for it),
// export refusing to overwrite the database, --db values that record nowhere, read commands that
// never write, one exit code for a corrupt database in every command, runs that cannot be recorded
// ending failed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pipette/store/experiment_db.h"
#include "pipette_runner.h"

extern char** environ;

namespace pipette {
namespace {

using pipette::testing::Contains;
using testing::CommandResult;
using testing::Pipette;
using testing::ReadFile;
using testing::ScratchDir;

std::string Fresh(const std::string& name) {
  const std::string path = ScratchDir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::remove(path + suffix);
  }
  return path;
}

// Starts `pipette args...` (paths in `args` absolute) with `env` added, standard output and error
// into `log`; returns its pid.
pid_t Start(const std::vector<std::string>& args, const std::vector<std::string>& env,
            const std::string& log) {
  std::vector<std::string> argv_text = {PIPETTE_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = env;
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  posix_spawn(&pid, PIPETTE_BINARY, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// The distinct pids listed in `path` (one per line).
std::set<std::string> PidsIn(const std::string& path) {
  std::istringstream lines(ReadFile(path));
  std::set<std::string> pids;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) pids.insert(line);
  }
  return pids;
}

// Four processes create and record into one new database at once. The test holds the write lock
// on the fresh file (as a creator switching it to WAL does) until all four provably wait for it
// (each appends its pid to the lock-wait file), then releases it: every run must be recorded.
TEST(StoreCli, ConcurrentCreatorsOfANewDatabaseAllRecord) {
  const std::string db = Fresh("shared.db");
  const std::string waits = Fresh("shared.waits");
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::vector<pid_t> children;
  for (int k = 0; k < 4; ++k) {
    children.push_back(Start({"simulate", "--db", db, "-m", "16", "--dp", "2", "--grad-reduce",
                              "analytic", "--format", "json"},
                             {"PIPETTE_TEST_LOCK_WAIT_FILE=" + waits},
                             ScratchDir() + "/shared." + std::to_string(k) + ".log"));
    ASSERT_GT(children.back(), 0);
  }
  // Until all four wait, or one has ended (it did not wait: the failure this test catches).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(50);
  bool one_ended = false;
  while (PidsIn(waits).size() < 4 && !one_ended && std::chrono::steady_clock::now() < deadline) {
    for (pid_t child : children) {
      siginfo_t info{};
      info.si_pid = 0;
      waitid(P_PID, child, &info, WEXITED | WNOHANG | WNOWAIT);
      one_ended |= info.si_pid != 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // poll without taking a core
  }
  EXPECT_EQ(PidsIn(waits).size(), 4u) << "not every creator waited for the lock";
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  for (std::size_t k = 0; k < children.size(); ++k) {
    int status = 0;
    waitpid(children[k], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "creator " << k << ": "
        << ReadFile(ScratchDir() + "/shared." + std::to_string(k) + ".log");
  }
  CommandResult runs = Pipette("runs --db shared.db --format json");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const auto json = nlohmann::json::parse(runs.out);
  ASSERT_EQ(json.size(), 4u) << runs.out;
  for (const auto& r : json) {
    EXPECT_EQ(r["status"], "ok");
    CommandResult chrome = Pipette("export --db shared.db --run " + r["id"].dump());
    ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
    int x = 0;
    const auto trace = nlohmann::json::parse(chrome.out);
    for (const auto& e : trace["traceEvents"]) x += e["ph"] == "X";
    EXPECT_EQ(x, 4 * 32 + 2 * 3 * 16 * 2 + 4) << "run " << r["id"];
  }
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// plot --out (and so a sweep's figures, drawn by pipette plot) overwrote the database with a PNG
// and exited 0; export --out naming a -journal file not yet there left JSON that SQLite took for a
// hot journal, and the database could no longer be read.
TEST(StoreCli, PlotAndExportNeverWriteOverTheDatabaseOrItsJournal) {
  Fresh("figure.db");
  ASSERT_EQ(Pipette("simulate --db figure.db --times F=1 --ideal-network").exit_code, 0);
  const std::string before = Bytes(ScratchDir() + "/figure.db");
  CommandResult plot = Pipette("plot timeline --db figure.db --out figure.db");
  EXPECT_EQ(plot.exit_code, 2) << plot.err;
  EXPECT_TRUE(Contains(plot.err, "pipette plot: --out = 'figure.db': is the database")) << plot.err;
  std::filesystem::remove(ScratchDir() + "/figure.db-journal");
  CommandResult journal = Pipette("export --db figure.db --out ./figure.db-journal");
  EXPECT_EQ(journal.exit_code, 2) << journal.err;
  EXPECT_TRUE(Contains(journal.err, "is the database's journal file")) << journal.err;
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/figure.db-journal"));
  EXPECT_EQ(Bytes(ScratchDir() + "/figure.db"), before);
  EXPECT_EQ(Pipette("runs --db figure.db").exit_code, 0);
}

TEST(StoreCli, ExportRefusesToOverwriteTheDatabaseAndSaysWhyItCannotWrite) {
  Fresh("export.db");
  ASSERT_EQ(Pipette("simulate --db export.db --times F=1 --ideal-network").exit_code, 0);
  std::filesystem::create_directories(ScratchDir() + "/sub");
  std::filesystem::remove(ScratchDir() + "/link.db");
  std::filesystem::create_symlink(ScratchDir() + "/export.db", ScratchDir() + "/link.db");
  const std::string before = Bytes(ScratchDir() + "/export.db");
  for (const std::string& out : std::vector<std::string>{"export.db", "./sub/../export.db",
                                                         "link.db", ScratchDir() + "/export.db"}) {
    CommandResult run = Pipette("export --db export.db --run last --out " + out);
    EXPECT_EQ(run.exit_code, 2) << out << ": " << run.err;
    EXPECT_TRUE(Contains(
        run.err, "pipette export: --out = '" + out + "': is the database (--db = 'export.db')"))
        << run.err;
  }
  // The database's own -wal file (while another connection keeps it).
  sqlite3* keep = nullptr;
  sqlite3_open((ScratchDir() + "/export.db").c_str(), &keep);
  sqlite3_exec(keep, "SELECT count(*) FROM runs", nullptr, nullptr, nullptr);
  if (std::filesystem::exists(ScratchDir() + "/export.db-wal")) {
    CommandResult wal = Pipette("export --db export.db --run last --out export.db-wal");
    EXPECT_EQ(wal.exit_code, 2) << wal.err;
    EXPECT_TRUE(Contains(wal.err, "is the database's wal file")) << wal.err;
  }
  sqlite3_close(keep);
  EXPECT_EQ(Bytes(ScratchDir() + "/export.db"), before);
  EXPECT_EQ(Pipette("runs --db export.db").exit_code, 0);

  CommandResult missing = Pipette("export --db export.db --run last --out nosuch/trace.json");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_TRUE(Contains(missing.err,
                       "pipette export: --out = 'nosuch/trace.json': cannot write: "
                       "No such file or directory"))
      << missing.err;
  CommandResult directory = Pipette("export --db export.db --run last --out sub");
  EXPECT_EQ(directory.exit_code, 2) << directory.err;  // refused while parsing, before any work
  EXPECT_TRUE(Contains(directory.err, "--out = 'sub': must name a file, not a directory"))
      << directory.err;
  CommandResult good = Pipette("export --db export.db --run last --out sub/trace.json");
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_TRUE(
      nlohmann::json::parse(ReadFile(ScratchDir() + "/sub/trace.json")).contains("traceEvents"));
}

// An unset $DB (--db ''), :memory: and file: URIs record nowhere: refused before any work, by
// every command that takes --db.
TEST(StoreCli, DbValuesThatRecordNowhereAreRefusedBeforeAnyWork) {
  for (const std::string db : {"''", ":memory:", "file:uri.db", "'file:uri.db?mode=memory'"}) {
    for (const std::string command : {"simulate --times F=1 --ideal-network", "runs", "export",
                                      "plot timeline", "sweep nosuch.toml", "train --steps 1"}) {
      CommandResult run = Pipette(command + " --db " + db);
      EXPECT_EQ(run.exit_code, 2) << command << " --db " << db << ": " << run.err;
      // '' is refused by the rule for every value (not empty), the others by --db's own check.
      EXPECT_TRUE(Contains(
          run.err, db == "''" ? "--db = '': must not be empty" : "must name a database file"))
          << command << ": " << run.err;
      EXPECT_FALSE(Contains(run.out, "recorded as run")) << run.out;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(ScratchDir() + "/file:uri.db"));
}

struct FileState {
  std::string bytes;
  struct timespec mtime {};
  bool operator==(const FileState& o) const {
    return bytes == o.bytes && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

FileState StateOf(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return {Bytes(path), st.st_mtim};
}

// The read commands with `db`, each expected to exit `code`.
void ExpectReadCommands(const std::string& db, int code, const std::string& message) {
  std::ofstream(ScratchDir() + "/ro.toml") << "[fixed]\ntimes = \"F=1\"\nideal-network = true\n";
  for (const std::string& command : std::vector<std::string>{
           "runs --db " + db, "runs --db " + db + " --format json", "export --db " + db,
           "export --db " + db + " --format csv", "plot timeline --out ro.svg --db " + db,
           "sweep ro.toml --dry-run --db " + db}) {
    CommandResult run = Pipette(command);
    EXPECT_EQ(run.exit_code, code) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, message)) << command << ": " << run.err;
  }
}

// Reading never writes: a read-only database is readable by every read command and left as it
// was; an empty file reads as an empty database and stays empty; a database of an older schema is
// an error and stays untouched.
TEST(StoreCli, ReadCommandsNeverWriteTheDatabase) {
  const std::string ro = Fresh("ro.db");
  ASSERT_EQ(Pipette("simulate --db ro.db --times F=1 --ideal-network").exit_code, 0);
  chmod(ro.c_str(), 0444);  // as root this does not stop writes: the file state check does
  const FileState before = StateOf(ro);
  ExpectReadCommands("ro.db", 0, "");
  EXPECT_TRUE(StateOf(ro) == before) << "a read command wrote the database";
  chmod(ro.c_str(), 0644);

  // An empty file is an empty database for every command (a writer creates the schema in it):
  // readers find no runs and leave it empty.
  const std::string empty = Fresh("empty.db");
  std::ofstream(empty).close();
  for (const std::string command : {"runs", "runs --format json", "sweep ro.toml --dry-run"}) {
    CommandResult run = Pipette(command + " --db empty.db");
    EXPECT_EQ(run.exit_code, 0) << command << ": " << run.err;
  }
  for (const std::string command : {"export", "export --format csv", "plot timeline --out e.svg"}) {
    CommandResult run = Pipette(command + " --db empty.db");
    EXPECT_EQ(run.exit_code, 2) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "the database has 0 finished runs"))
        << command << ": " << run.err;
  }
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);

  const std::string old = Fresh("old.db");
  { ASSERT_TRUE(ExperimentDb::Open(old, 1).ok()); }
  const FileState old_before = StateOf(old);
  ExpectReadCommands("old.db", 2, "`pipette runs --db old.db --repair` migrates it");
  EXPECT_TRUE(StateOf(old) == old_before) << "a read command migrated the database";
  CommandResult migrate = Pipette("runs --db old.db --repair");
  EXPECT_EQ(migrate.exit_code, 0) << migrate.err;
  EXPECT_EQ(Pipette("runs --db old.db").exit_code, 0);
}

// The names in `dir`.
std::set<std::string> Listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// A scratch tree another user can reach: /tmp/pipette_ro_PID (0755) holding a copy of the pipette
// binary (the build tree need not be traversable by that user) and `out/`, owned by uid 65534.
struct ForeignReaderTree {
  std::string base = "/tmp/pipette_ro_" + std::to_string(getpid());
  std::string binary = base + "/pipette";
  std::string out = base + "/out";

  ForeignReaderTree() {
    std::filesystem::remove_all(base);
    std::filesystem::create_directories(out);
    chmod(base.c_str(), 0755);
    EXPECT_EQ(chown(out.c_str(), 65534, 65534), 0);
    std::filesystem::copy_file(PIPETTE_BINARY, binary);
    chmod(binary.c_str(), 0755);
  }
  ~ForeignReaderTree() { std::filesystem::remove_all(base); }
  // `pipette args` run as uid/gid 65534 (nobody) in out/.
  CommandResult AsNobody(const std::string& args) const {
    return testing::Shell("cd " + out + " && setpriv --reuid=65534 --regid=65534 --clear-groups " +
                          binary + " " + args);
  }
  // A database of one run (2 ranks, 4 microbatches) at `path`, made by root.
  void MakeDatabase(const std::string& path) const {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    ASSERT_EQ(testing::Shell(binary + " simulate --times F=1,I=1,W=1 --ideal-network -p 2 -m 4 " +
                             "--db '" + path + "' >/dev/null")
                  .exit_code,
              0);
  }
};

// Every read command, as nobody, on `db`: they succeed with the values root reads from the same
// run (`ref_json`: root's Chrome trace), and leave `db`'s directory and bytes as they were.
void ExpectForeignReadsWork(const ForeignReaderTree& tree, const std::string& db,
                            const std::string& ref_json) {
  const std::string dir = std::filesystem::path(db).parent_path().string();
  const std::set<std::string> listing = Listing(dir);
  const std::string bytes = Bytes(db);
  const std::string quoted = "'" + db + "'";
  CommandResult runs = tree.AsNobody("runs --db " + quoted);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_TRUE(Contains(runs.out, "# 1 runs in " + db)) << runs.out;
  EXPECT_TRUE(Contains(runs.out, "     1  sim     ok")) << runs.out;
  CommandResult json = tree.AsNobody("runs --format json --db " + quoted);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto listed = nlohmann::json::parse(json.out);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["status"], "ok");
  EXPECT_EQ(listed[0]["config"]["m"], 4);
  CommandResult trace = tree.AsNobody("export --db " + quoted + " --out trace.json");
  EXPECT_EQ(trace.exit_code, 0) << trace.err;
  EXPECT_EQ(ReadFile(tree.out + "/trace.json"), ref_json);
  CommandResult csv = tree.AsNobody("export --format csv --db " + quoted);
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n");
  CommandResult plot = tree.AsNobody("plot timeline --out t.svg --db " + quoted);
  EXPECT_EQ(plot.exit_code, 0) << plot.err;
  EXPECT_GT(std::filesystem::file_size(tree.out + "/t.svg"), 1000u);
  // db merge reads its inputs as every read command does (it failed "attempt to write a readonly
  // database" on the 0555 directory).
  std::filesystem::remove(tree.out + "/merged.db");
  CommandResult merge = tree.AsNobody("db merge merged.db " + quoted);
  EXPECT_EQ(merge.exit_code, 0) << merge.err;
  CommandResult merged = tree.AsNobody("runs --db merged.db");
  EXPECT_TRUE(Contains(merged.out, "# 1 runs in merged.db")) << merged.out << merged.err;
  EXPECT_EQ(Listing(dir), listing) << "a read left files in " << dir;
  EXPECT_EQ(Bytes(db), bytes);
}

// Another user reads a database it cannot write. In a directory it cannot write (0555, database
// 0444) reading failed ("not a pipette database: attempt to write a readonly database": WAL needs
// a -shm file it could not create); in one it can write, it left -wal/-shm files of its own, which
// stop the owner's writes. Now both are read without locks or files (immutable).
TEST(StoreCli, AnotherUserReadsADatabaseItCannotWrite) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run pipette as uid 65534 (nobody)";
  if (testing::Shell("setpriv --reuid=65534 --regid=65534 --clear-groups true").exit_code != 0) {
    GTEST_SKIP() << "setpriv cannot drop to uid 65534 here";
  }
  const ForeignReaderTree tree;
  // The URI of an immutable open percent-encodes the path: '?', '#' and '%' are plain there.
  const std::string ro_dir = tree.base + "/ro dir?#%41";
  const std::string ro = ro_dir + "/x.db", rw = tree.base + "/rw/x.db";
  const std::string ref = tree.base + "/ref/x.db";
  tree.MakeDatabase(ro);
  std::filesystem::create_directories(tree.base + "/rw");
  std::filesystem::create_directories(tree.base + "/ref");
  std::filesystem::copy_file(ro, rw);
  std::filesystem::copy_file(ro, ref);
  CommandResult root =
      testing::Shell(tree.binary + " export --db " + ref + " --out " + ref + ".json");
  ASSERT_EQ(root.exit_code, 0) << root.err;
  const std::string trace = ReadFile(ref + ".json");
  ASSERT_TRUE(trace.ends_with(R"("otherData":{"run_id":1,"engine":"sim"}})")) << trace;
  chmod(ro.c_str(), 0444);
  chmod(ro_dir.c_str(), 0555);
  chmod((tree.base + "/rw").c_str(), 0777);  // rw/x.db stays 0644, root's
  ExpectForeignReadsWork(tree, ro, trace);
  ExpectForeignReadsWork(tree, rw, trace);
}

// The Chrome trace was one nlohmann document of every event (about 2 KB per event at peak):
// exporting these 500,000 events took 1.05 GB (max RSS), failed under a 1,000,000 KB address-space
// limit ("internal error: std::bad_alloc") and aborted under this test's 500,000 KB (exit 134: the
// document's destructor allocates). It streams now, event by event, in about 85 MB (120 MB of
// address space). A failed write is an error, not a silent exit 0.
TEST(StoreCli, LargeExportStreamsInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit";
#endif
  const std::string db = Fresh("large.db"), json = ScratchDir() + "/large.json";
  ASSERT_EQ(Pipette("simulate -p 4 -m 25000 --ideal-network --times F=1,I=1,W=1 --trace full "
                    "--db large.db > /dev/null")
                .exit_code,
            0);
  CommandResult run = testing::Shell(std::string("ulimit -v 500000 && ") + PIPETTE_BINARY +
                                     " export --db large.db --out large.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string text = ReadFile(json);
  std::filesystem::remove(json);
  EXPECT_TRUE(text.starts_with(
      R"({"traceEvents":[{"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0"}},)"))
      << text.substr(0, 100);
  EXPECT_TRUE(text.ends_with(
      R"("args":{"step":0,"instr_id":99999,"stage":3,"chunk":0,"microbatch":24999,"bytes":0}}],)"
      R"("displayTimeUnit":"ms","otherData":{"run_id":1,"engine":"sim"}})"))
      << text.substr(text.size() - std::min<std::size_t>(text.size(), 200));
  std::size_t complete = 0, metadata = 0;
  for (std::size_t at = text.find(R"("ph":")"); at != std::string::npos;
       at = text.find(R"("ph":")", at + 1)) {
    complete += text.compare(at + 6, 1, "X") == 0;
    metadata += text.compare(at + 6, 1, "M") == 0;
  }
  EXPECT_EQ(complete, 500'000u);  // 4 ranks x 25,000 x (F, B) + 3 links x 25,000 x 2 x (send, recv)
  EXPECT_EQ(metadata, 22u);       // 4 x (process_name, sort_index) + 14 named threads

  CommandResult full = Pipette("export --db large.db > /dev/full");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.err, "pipette export: standard output: cannot write: No space left on device\n");
}

// A file of garbage is an I/O failure (exit 1) in every command that opens a database, and is left
// as it was.
TEST(StoreCli, ACorruptDatabaseIsExitOneInEveryCommand) {
  const std::string garbage = Fresh("garbage.db");
  std::ofstream(garbage) << std::string(4096, 'x');
  std::ofstream(ScratchDir() + "/g.toml") << "[fixed]\ntimes = \"F=1\"\nideal-network = true\n";
  for (const std::string command :
       {"runs", "runs --repair", "export", "plot timeline --out g.svg", "plot bubble --out g.svg",
        "simulate --times F=1 --ideal-network", "simulate", "sweep g.toml",
        "sweep g.toml --dry-run", "train --steps 1"}) {
    CommandResult run = Pipette(command + " --db garbage.db");
    EXPECT_EQ(run.exit_code, 1) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "--db = 'garbage.db'")) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "not a database")) << command << ": " << run.err;
  }
  EXPECT_EQ(Bytes(garbage), std::string(4096, 'x'));

  // A database whose header and schema are intact but whose other pages are garbage: the first
  // query that reads them fails ("malformed"), and that is exit 1 too, never an empty answer.
  const std::string malformed = Fresh("malformed.db");
  ASSERT_EQ(Pipette("simulate --db malformed.db --times F=1 --ideal-network").exit_code, 0);
  std::string bytes = Bytes(malformed);
  const std::size_t page =
      (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
  ASSERT_GT(bytes.size(), page);
  for (std::size_t k = page; k < bytes.size(); ++k) bytes[k] = 'Z';
  std::ofstream(malformed, std::ios::binary) << bytes;
  for (const std::string command :
       {"runs", "runs --repair", "export", "plot timeline --out g.svg", "sweep g.toml --dry-run",
        "sweep g.toml", "simulate --times F=1 --ideal-network", "train --steps 1"}) {
    CommandResult run = Pipette(command + " --db malformed.db");
    EXPECT_EQ(run.exit_code, 1) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "malformed")) << command << ": " << run.err;
  }
}

// A run whose rows cannot be written (a trigger stands in for a full disk) ends `failed` with the
// reason, not `running` until a repair.
TEST(StoreCli, ARunThatCannotBeRecordedEndsFailedWithTheReason) {
  const std::string path = Fresh("full.db");
  { ASSERT_TRUE(ExperimentDb::Open(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TRIGGER full BEFORE INSERT ON metrics BEGIN "
                         "SELECT RAISE(ABORT, 'the disk is full'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  for (const std::string command : {"simulate --times F=1 --ideal-network", "train --steps 1"}) {
    CommandResult run = Pipette(command + " --db full.db");
    EXPECT_EQ(run.exit_code, 1) << command << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "the disk is full")) << run.err;
  }
  Result<ExperimentDb> read = ExperimentDb::OpenReadOnly(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  Result<std::vector<RunRecord>> runs = read->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  for (const RunRecord& r : *runs) {
    EXPECT_EQ(r.status, kRunFailed) << "run " << r.id << " (" << r.engine << ")";
    EXPECT_TRUE(Contains(r.error, "recording the run failed:")) << r.error;
    EXPECT_TRUE(Contains(r.error, "the disk is full")) << r.error;
  }
}

// A run whose loss stops being finite is a result: every step's loss and time is recorded (a NaN
// loss as SQL NULL), with the step it diverged at, and the run is ok (before schema 6 the NOT NULL
// metric failed the whole recording and lost every measurement). The fault hook makes the weights
// NaN at step 1, as a diverged run's become: no learning rate diverges at the same step on every
// build (--lr 1.5 did here only through a NaN-making GELU, not in the sanitizer build).
TEST(StoreCli, ADivergedTrainingRunIsRecordedWithTheStepItDivergedAt) {
  const std::string path = Fresh("diverged.db");
  const std::string nan_at_step_1 = "PIPETTE_FAULT_RANK=0 PIPETTE_FAULT=nan PIPETTE_FAULT_STEP=1 ";
  CommandResult run =
      testing::Shell(nan_at_step_1 + PIPETTE_BINARY + " train --steps 3 --db diverged.db");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.out, "      2       nan")) << run.out;
  EXPECT_TRUE(Contains(run.out, "      3       nan")) << run.out;
  EXPECT_TRUE(Contains(run.out, "# the loss is not finite from step 2 on: the run diverged"))
      << run.out;
  Result<ExperimentDb> db = ExperimentDb::OpenReadOnly(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  Result<RunData> data = db->LoadRun(1, /*with_events=*/true);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(data->run.status, kRunOk);
  EXPECT_TRUE(std::isfinite(data->Metric("loss[0]", NAN)));
  EXPECT_GT(data->Metric("loss[0]", NAN), 1.0);
  EXPECT_TRUE(std::isnan(data->Metric("loss[1]", 0)));
  EXPECT_TRUE(std::isnan(data->Metric("final_loss", 0)));
  EXPECT_EQ(data->Metric("loss_nonfinite_from", -1), 1);
  for (const char* name : {"step_times_s[0]", "step_times_s[1]", "step_times_s[2]"}) {
    EXPECT_GT(data->Metric(name, 0), 0) << name;
  }
  EXPECT_FALSE(data->events.empty());
  CommandResult json =
      testing::Shell(nan_at_step_1 + PIPETTE_BINARY + " train --steps 3 --no-db --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  ASSERT_TRUE(parsed.contains("losses") && parsed.contains("loss_nonfinite_from")) << json.out;
  EXPECT_TRUE(parsed.at("losses").at(0).is_number()) << json.out;
  EXPECT_TRUE(parsed.at("losses").at(1).is_null()) << json.out;
  EXPECT_EQ(parsed.at("loss_nonfinite_from"), 1) << json.out;
}

// A creator killed while it makes a new database leaves no database at all (killing it 20-30 ms
// in left an empty or table-less file that `runs` and `db merge` refused while `simulate` adopted
// it): the database is built aside and linked into place. The hook kills it after the build and
// before the link, the latest moment it can leave anything; the next creator removes what it left.
TEST(StoreCli, ACreatorKilledBeforeItsDatabaseIsCompleteLeavesNoDatabase) {
  const std::string dir = ScratchDir() + "/killed_creator";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CommandResult killed = Pipette("--version > /dev/null; PIPETTE_FAULT_KILL_BEFORE_LINK=1 " +
                                 std::string(PIPETTE_BINARY) +
                                 " simulate --times F=1 --ideal-network --db " + dir + "/k.db");
  EXPECT_NE(killed.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/k.db"));
  CommandResult runs = Pipette("runs --db " + dir + "/k.db");
  EXPECT_EQ(runs.exit_code, 2) << runs.err;
  CommandResult merge = Pipette("db merge " + dir + "/m.db " + dir + "/k.db");
  EXPECT_EQ(merge.exit_code, 2) << merge.err;
  EXPECT_TRUE(Contains(merge.err, "no such file")) << merge.err;
  ASSERT_EQ(Pipette("simulate --times F=1 --ideal-network --db " + dir + "/k.db").exit_code, 0);
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"k.db"}));
  std::filesystem::remove_all(dir);
}

// An output that names nothing or would block is refused before any work: `--out ''` wrote nothing
// and exited 0; a FIFO no process reads blocked forever. A FIFO with a reader is written.
TEST(StoreCli, OutputsThatNameNothingOrWouldBlockAreRefused) {
  ASSERT_EQ(Pipette("simulate --times F=1 --ideal-network -p 2 -m 2 --db out.db").exit_code, 0);
  const std::string fifo = Fresh("nobody_reads.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"export --db out.db --out ''", "pipette export: --out = '': must not be empty"},
      {"plot timeline --db out.db --out ''", "pipette plot: --out = '': must not be empty"},
      {"export --db out.db --out nobody_reads.fifo",
       "--out = 'nobody_reads.fifo': is a FIFO that no process reads"},
      {"export --db out.db --out /tmp", "--out = '/tmp': must name a file, not a directory"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult run = testing::Shell("timeout 20 " + std::string(PIPETTE_BINARY) + " " + args);
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, message)) << args << ": " << run.err;
  }
  // With a reader (this test, which opens the FIFO before the command starts), the FIFO is an
  // output like any other.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  CommandResult read = testing::Shell("timeout 20 " + std::string(PIPETTE_BINARY) +
                                      " export --db out.db --format csv --out nobody_reads.fifo");
  EXPECT_EQ(read.exit_code, 0) << read.err;
  std::string text(256, '\0');
  const ssize_t got = ::read(reader, text.data(), text.size());
  close(reader);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  EXPECT_EQ(text, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  std::filesystem::remove(fifo);
}

// Past `ulimit -f` a write fails with EFBIG (SIGXFSZ is ignored) and the command says so: it used
// to die by the signal with no message, leaving its run `running`.
TEST(StoreCli, AFileSizeLimitIsAnErrorAndTheRunEndsFailed) {
  const std::string db = Fresh("limited.db");
  ASSERT_EQ(Pipette("simulate --times F=1 --ideal-network -p 2 -m 2 --db limited.db").exit_code, 0);
  CommandResult run =
      testing::Shell("ulimit -f 200 && " + std::string(PIPETTE_BINARY) +
                     " simulate --model gpt2-124m -p 8 -m 256 --db limited.db > /dev/null");
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(Contains(run.err, "disk I/O error")) << run.err;
  Result<ExperimentDb> read = ExperimentDb::OpenReadOnly(db);
  ASSERT_TRUE(read.ok()) << read.status().message();
  Result<std::vector<RunRecord>> runs = read->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ(runs->back().status, kRunFailed);
  EXPECT_TRUE(Contains(runs->back().error, "recording the run failed")) << runs->back().error;
  CommandResult exported = testing::Shell("ulimit -f 64 && " + std::string(PIPETTE_BINARY) +
                                          " export --db limited.db --run 1 --out limited.json");
  EXPECT_EQ(exported.exit_code, 0) << exported.err;  // small enough
  CommandResult big = testing::Shell("ulimit -f 8 && " + std::string(PIPETTE_BINARY) +
                                     " schedule 1f1b -p 8 -m 256 --format csv > limited.csv");
  EXPECT_EQ(big.exit_code, 1) << big.err;
  EXPECT_TRUE(Contains(big.err, "pipette schedule: cannot write standard output")) << big.err;
}

// An export or figure is written aside and moved into place when complete: one that fails half-way
// (here past `ulimit -f`, a 500 KB trace against 64 KB) leaves the file that was there, and nothing
// beside it (it used to leave the first 64 KB of the trace under the name).
TEST(StoreCli, AnExportThatFailsHalfWayLeavesThePreviousFile) {
  const std::string dir = ScratchDir() + "/half_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(
      Pipette("simulate --times F=1 --ideal-network -p 8 -m 64 --db " + dir + "/h.db").exit_code,
      0);
  std::ofstream(dir + "/trace.json") << "the previous export";
  CommandResult failed =
      testing::Shell("ulimit -f 64 && " + std::string(PIPETTE_BINARY) + " export --db " + dir +
                     "/h.db --run 1 --out " + dir + "/trace.json");
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_TRUE(Contains(failed.err, "trace.json': cannot write: File too large")) << failed.err;
  EXPECT_EQ(ReadFile(dir + "/trace.json"), "the previous export");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(Contains(entry.path().filename().string(), ".partial-")) << entry.path();
  }
  // Without the limit the same export replaces the file whole.
  ASSERT_EQ(Pipette("export --db " + dir + "/h.db --run 1 --out " + dir + "/trace.json").exit_code,
            0);
  EXPECT_GT(ReadFile(dir + "/trace.json").size(), 100'000u);
}

}  // namespace
}  // namespace pipette
