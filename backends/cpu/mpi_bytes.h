// Byte packing and byte gathers over MPI: how the CPU engine moves variable-sized records
// (parameter names, tensors, traces) between ranks. ByteWriter appends plain values and strings to
// a buffer; ByteReader reads them back in the same order (the data came from a rank of the same
// binary, so the layout is the writer's). The gathers are collectives: every rank of `comm` calls
// them. Not thread-safe; call from the rank's MPI thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pipette/common/status.h"

namespace pipette::cpu {

class ByteWriter {
 public:
  void PutBytes(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  template <typename T>
  void Put(const T& value) {
    PutBytes(&value, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put(static_cast<std::uint64_t>(s.size()));
    PutBytes(s.data(), s.size());
  }
  // Appends a vector of trivially copyable values, count first.
  template <typename T>
  void PutVector(const std::vector<T>& values) {
    Put(static_cast<std::uint64_t>(values.size()));
    PutBytes(values.data(), values.size() * sizeof(T));
  }
  const std::vector<char>& bytes() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<char>& bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool done() const { return p_ >= end_; }
  template <typename T>
  T Get() {
    T value;
    std::memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto n = Get<std::uint64_t>();
    std::string s(p_, p_ + n);
    p_ += n;
    return s;
  }
  void GetBytes(void* out, std::size_t n) {
    if (n == 0) return;  // `out` may be null (an empty vector's data()): memcpy's is undefined
    std::memcpy(out, p_, n);
    p_ += n;
  }
  // Appends a vector written by ByteWriter::PutVector to `out`.
  template <typename T>
  void AppendVector(std::vector<T>& out) {
    const auto n = Get<std::uint64_t>();
    const std::size_t at = out.size();
    out.resize(at + n);
    GetBytes(out.data() + at, n * sizeof(T));
  }

 private:
  const char* p_;
  const char* end_;
};

// Gathers every rank's bytes of `comm` on its rank 0 (empty elsewhere), one vector per rank.
// Internal when the total exceeds MPI's int counts (2 GiB); every rank gets the same answer.
Result<std::vector<std::vector<char>>> GatherBytes(const std::vector<char>& mine, MPI_Comm comm);

// Every rank's bytes on every rank.
std::vector<std::vector<char>> AllGatherBytes(const std::vector<char>& mine, MPI_Comm comm);

}  // namespace pipette::cpu
