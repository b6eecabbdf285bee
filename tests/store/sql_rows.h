// SqlRows: every row a query returns from a database file, read with a plain read-only SQLite
// connection (not pipette's), for tests that check what pipette wrote.
#pragma once

#include <sqlite3.h>

#include <string>

namespace pipette::testing {

// Every row `sql` returns from `path`, columns joined by '|' (NULL as "NULL"), rows ended by '\n'.
inline std::string SqlRows(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  std::string out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const unsigned char* t = sqlite3_column_text(stmt, c);
      out += (c ? "|" : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out += "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

}  // namespace pipette::testing
