// ByteWriter and ByteReader: plain values, strings and vectors of trivially copyable values packed
// into a byte buffer and read back in the same order. How the real engines move variable-sized
// records (parameter names, tensors, traces) between the ranks of one run: the bytes come from a
// rank of the same binary, so the layout is the writer's. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace pipette {

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

}  // namespace pipette
