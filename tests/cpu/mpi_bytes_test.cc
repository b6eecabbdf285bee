// ByteWriter and ByteReader (backends/cpu/mpi_bytes.h): what the CPU engine's gathers pack.
#include "cpu/mpi_bytes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipette::cpu {
namespace {

TEST(ByteReader, ReadsBackWhatTheWriterPacked) {
  ByteWriter writer;
  writer.Put(42);
  writer.PutString("stage.0");
  writer.PutVector(std::vector<double>{1.5, -2.0});
  ByteReader reader(writer.bytes());
  EXPECT_EQ(reader.Get<int>(), 42);
  EXPECT_EQ(reader.GetString(), "stage.0");
  std::vector<double> values{9.0};
  reader.AppendVector(values);
  EXPECT_EQ(values, (std::vector<double>{9.0, 1.5, -2.0}));
  EXPECT_TRUE(reader.done());
}

// A rank with no trace events sends an empty vector; appending it to an empty vector copied zero
// bytes to out.data() == nullptr, undefined behaviour that UBSan stops (pipette train failed in
// the sanitizer build).
TEST(ByteReader, AppendsAnEmptyVectorToAnEmptyOne) {
  ByteWriter writer;
  writer.PutVector(std::vector<double>{});
  writer.PutString("");
  writer.Put(7);
  ByteReader reader(writer.bytes());
  std::vector<double> values;
  reader.AppendVector(values);
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(reader.GetString(), "");
  EXPECT_EQ(reader.Get<int>(), 7);
  EXPECT_TRUE(reader.done());
}

}  // namespace
}  // namespace pipette::cpu
