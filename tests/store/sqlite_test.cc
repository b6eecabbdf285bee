// The SQLite layer under ExperimentDb and db merge: one error code for a failed prepare, open and
// step (IoError naming what failed), statements reused across runs, transactions that roll back
// unless committed, and the immutable URI of a read-only open.
#include "pipette/store/sqlite.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace pipette::sqlite {
namespace {

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "pipette_sqlite_" + std::to_string(getpid()) + "_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix);
  return path;
}

Connection OpenWithTable(const std::string& path) {
  Connection db = Connection::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  EXPECT_TRUE(db.OpenStatus("test").ok());
  EXPECT_TRUE(db.Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)").ok());
  return db;
}

std::vector<std::string> Names(const Connection& db) {
  Statement s(db.get(), "SELECT name FROM t ORDER BY k");
  EXPECT_TRUE(s.status("names").ok());
  std::vector<std::string> names;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) names.push_back(s.Text(0));
  EXPECT_TRUE(s.Done(rc, "names").ok());
  return names;
}

// The one code ExperimentDb and db merge both give (they share this layer): before it, the
// experiment database called a failed prepare Internal and db merge IoError. IoError: a prepare
// reads the schema from the file, so a corrupt or foreign database fails here, not only a bug.
TEST(SqliteStatement, AFailedPrepareIsAnIoErrorNamingWhatFailed) {
  const Connection db = OpenWithTable(FreshPath("prepare"));
  const Statement syntax(db.get(), "SELEC name FROM t");
  const Status bad = syntax.status("list names");
  EXPECT_EQ(bad.code(), StatusCode::kIoError);
  EXPECT_EQ(bad.message(), "list names: near \"SELEC\": syntax error");
  const Statement missing(db.get(), "SELECT name FROM no_such_table");
  EXPECT_EQ(missing.status("read").code(), StatusCode::kIoError);
  EXPECT_EQ(missing.status("read").message(), "read: no such table: no_such_table");
}

TEST(SqliteStatement, RunResetsForReuseAndAFailedStepIsAnIoError) {
  const Connection db = OpenWithTable(FreshPath("run"));
  Statement insert(db.get(), "INSERT INTO t(name) VALUES (?)");
  ASSERT_TRUE(insert.status("insert").ok());
  EXPECT_TRUE(insert.Bind(1, "a").Run("insert a").ok());
  EXPECT_TRUE(insert.Bind(1, std::string("b")).Run("insert b").ok());
  const Status again = insert.Bind(1, "a").Run("insert a again");
  EXPECT_EQ(again.code(), StatusCode::kIoError);
  EXPECT_EQ(again.message(), "insert a again: UNIQUE constraint failed: t.name");
  EXPECT_EQ(Names(db), (std::vector<std::string>{"a", "b"}));
}

TEST(SqliteTransaction, RollsBackUnlessCommitted) {
  const Connection db = OpenWithTable(FreshPath("transaction"));
  {
    Transaction tx(db.get());
    ASSERT_TRUE(tx.Begin().ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t(name) VALUES ('dropped')").ok());
  }
  EXPECT_TRUE(Names(db).empty());
  {
    Transaction tx(db.get());
    ASSERT_TRUE(tx.Begin().ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t(name) VALUES ('kept')").ok());
    ASSERT_TRUE(tx.Commit().ok());
  }
  EXPECT_EQ(Names(db), (std::vector<std::string>{"kept"}));
}

TEST(SqliteConnection, AFailedOpenIsAnIoErrorNamingWho) {
  const Connection db = Connection::Open(::testing::TempDir() + "no/such/dir/x.db",
                                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  EXPECT_NE(db.open_rc(), SQLITE_OK);
  const Status s = db.OpenStatus("--db = 'x.db'");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), "--db = 'x.db': cannot open: unable to open database file");
  EXPECT_TRUE(Connection().OpenStatus("none").ok());
}

TEST(SqliteConnection, MovingHandsOverTheHandle) {
  Connection a = OpenWithTable(FreshPath("move"));
  sqlite3* handle = a.get();
  Connection b = std::move(a);
  EXPECT_EQ(b.get(), handle);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(Names(b).empty());
}

TEST(ImmutableUri, IsAbsoluteAndPercentEncodesEveryByteTheUriParserReads) {
  EXPECT_EQ(ImmutableUri("/tmp/a b?#%.db"), "file:///tmp/a%20b%3F%23%25.db?immutable=1");
  EXPECT_EQ(ImmutableUri("/d/x_y-z~.db"), "file:///d/x_y-z~.db?immutable=1");
}

}  // namespace
}  // namespace pipette::sqlite
