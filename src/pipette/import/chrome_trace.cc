#include "pipette/import/chrome_trace.h"

#include <fmt/core.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <streambuf>

#include "pipette/common/sha256.h"

namespace pipette {
namespace {

// A stream over a gzip file, or a plain one (zlib reads those as they are).
class GzipBuffer : public std::streambuf {
 public:
  explicit GzipBuffer(gzFile file) : file_(file) {}
  bool failed() const { return failed_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_, sizeof buffer_);
    if (n <= 0) {
      int code = Z_OK;
      gzerror(file_, &code);
      failed_ = n < 0 || (code != Z_OK && code != Z_STREAM_END);
      return traits_type::eof();
    }
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  char buffer_[1 << 16];
  bool failed_ = false;
};

struct GzClose {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// "Forward 12" / "Backward 3": ScheduleGPipe's ranges.
bool IsGPipeRange(std::string_view name) {
  std::string_view digits;
  if (name.starts_with("Forward ")) digits = name.substr(8);
  if (name.starts_with("Backward ")) digits = name.substr(9);
  if (digits.empty()) return false;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsPipelineAnnotation(std::string_view name) {
  return name.starts_with("PP:") || name.starts_with("ProfilerStep#") ||
         name.starts_with("Optimizer.step#") || IsGPipeRange(name);
}

bool IsCommunication(std::string_view name) {
  return name.starts_with("gloo:") || name.starts_with("nccl:") || name.starts_with("c10d::");
}

// One element of traceEvents as far as pipette reads it.
struct RawEvent {
  std::string name, cat, ph;
  std::optional<std::int64_t> ts_ns;  // Kineto's ts (microseconds), exactly, in nanoseconds
  std::int64_t dur_ns = 0;
  std::int64_t tid = -1;
  std::int64_t correlation = 0;
};

// A JSON number as written: its value and, for a float, its text.
struct Number {
  double value = 0;
  std::string_view text;  // empty for an integer
};

// Microseconds as Kineto writes them (an integer, or a decimal with up to 3 digits after the
// point) in nanoseconds, exactly: a double would round ts since 1970 to a quarter microsecond.
// Other forms (exponents, more digits) through the double. nullopt beyond +-9e15 us.
std::optional<std::int64_t> MicrosToNanos(const Number& n) {
  if (!(std::abs(n.value) < 9e15)) return std::nullopt;
  const std::string_view t = n.text;
  const std::size_t point = t.find('.');
  if (t.empty() || point == std::string_view::npos ||
      t.find_first_of("eE") != std::string_view::npos || t.size() - point - 1 > 3) {
    return static_cast<std::int64_t>(std::llround(n.value * 1e3));
  }
  std::int64_t whole = 0, fraction = 0;
  const bool negative = t.front() == '-';
  const std::string_view digits = t.substr(negative ? 1 : 0, point - (negative ? 1 : 0));
  if (std::from_chars(digits.data(), digits.data() + digits.size(), whole).ec != std::errc()) {
    return static_cast<std::int64_t>(std::llround(n.value * 1e3));
  }
  std::string tail(t.substr(point + 1));
  tail.resize(3, '0');
  std::from_chars(tail.data(), tail.data() + 3, fraction);
  const std::int64_t ns = whole * 1000 + fraction;
  return negative ? -ns : ns;
}

// `n` as a whole number in [low, high], or nullopt.
std::optional<std::int64_t> WholeIn(const Number& n, double low, double high) {
  if (!(n.value >= low && n.value <= high) || n.value != std::floor(n.value)) return std::nullopt;
  return static_cast<std::int64_t>(n.value);
}

// The SAX handler: follows the path to traceEvents[i].{name, cat, ph, ts, dur, tid,
// args.correlation}, distributedInfo.{rank, world_size} and baseTimeNanoseconds; skips the rest.
class TraceHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit TraceHandler(ChromeTrace& out) : out_(out) {}

  bool saw_events() const { return saw_events_; }
  const std::string& error() const { return error_; }

  bool null() override { return Value(std::nullopt, nullptr); }
  bool boolean(bool) override { return Value(std::nullopt, nullptr); }
  bool number_integer(number_integer_t v) override {
    if (IsBaseTime()) base_ns_ = v;  // exact: a double would round nanoseconds since 1970
    return Value(Number{static_cast<double>(v), {}}, nullptr);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (IsBaseTime() && v <= static_cast<number_unsigned_t>(INT64_MAX)) {
      base_ns_ = static_cast<std::int64_t>(v);
    }
    return Value(Number{static_cast<double>(v), {}}, nullptr);
  }
  bool number_float(number_float_t v, const string_t& text) override {
    return Value(Number{v, text}, nullptr);
  }
  bool string(string_t& v) override { return Value(std::nullopt, &v); }
  bool binary(binary_t&) override { return Value(std::nullopt, nullptr); }

  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 3 && in_events_) event_ = RawEvent{};
    keys_.push_back("");
    return true;
  }
  bool key(string_t& k) override {
    keys_.back() = k;
    return true;
  }
  bool end_object() override {
    if (depth_ == 3 && in_events_) {
      ++events_;
      if (!Keep()) return false;
    }
    --depth_;
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && keys_.size() == 1 && keys_[0] == "traceEvents") {
      in_events_ = true;
      saw_events_ = true;
    }
    keys_.push_back("");
    return true;
  }
  bool end_array() override {
    if (depth_ == 2) in_events_ = false;
    --depth_;
    keys_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_ = fmt::format("not JSON at byte {}: {}", position, ex.what());
    return false;
  }

 private:
  bool IsBaseTime() const {
    return depth_ == 1 && !keys_.empty() && keys_.back() == "baseTimeNanoseconds";
  }

  // A scalar at the current path: a number (`number`) or a string (`text`).
  bool Value(std::optional<Number> number, const std::string* text) {
    if (keys_.empty()) return true;  // a document that is one scalar: no traceEvents
    const std::string& key = keys_.back();
    if (depth_ == 1) {
      if (key == "baseTimeNanoseconds" && text) {
        std::from_chars(text->data(), text->data() + text->size(), base_ns_);
      }
      return true;
    }
    if (depth_ == 2 && keys_[0] == "distributedInfo" && number &&
        (key == "rank" || key == "world_size")) {
      const std::optional<std::int64_t> whole = WholeIn(*number, 0, 1 << 24);
      if (!whole) {
        error_ =
            fmt::format("distributedInfo.{} = {}: not a rank count or index", key, number->value);
        return false;
      }
      (key == "rank" ? out_.rank : out_.world_size) = static_cast<int>(*whole);
      return true;
    }
    if (!in_events_) return true;
    if (depth_ == 3) {
      if (text && key == "name") event_.name = *text;
      if (text && key == "cat") event_.cat = *text;
      if (text && key == "ph") event_.ph = *text;
      if (key == "ts" && number) event_.ts_ns = MicrosToNanos(*number);
      if (key == "dur" && number) event_.dur_ns = MicrosToNanos(*number).value_or(-1);
      if (key == "tid" && number) event_.tid = WholeIn(*number, 0, 9e15).value_or(-1);
    } else if (depth_ == 4 && keys_[2] == "args" && key == "correlation" && number) {
      event_.correlation = WholeIn(*number, 1, 9e15).value_or(0);
    }
    return true;
  }

  // The event just read, kept when pipette needs it (times in seconds, not yet shifted by the
  // trace's base time).
  bool Keep() {
    const RawEvent& e = event_;
    if (e.ph != "X") return true;
    const bool gpu_side = e.cat == "kernel" || e.cat == "gpu_user_annotation" ||
                          e.cat == "gpu_memcpy" || e.cat == "gpu_memset";
    const bool pipeline = !gpu_side && IsPipelineAnnotation(e.name);
    const bool communication = !gpu_side && !pipeline && IsCommunication(e.name);
    const bool launch = (e.cat == "cuda_runtime" || e.cat == "cuda_driver") && e.correlation != 0;
    const bool kernel = e.cat == "kernel";
    if (!pipeline && !communication && !launch && !kernel) return true;
    if (!e.ts_ns) {
      error_ = fmt::format("event {} '{}' ({}) has no number ts", events_, e.name, e.cat);
      return false;
    }
    if (e.dur_ns < 0) {
      error_ = fmt::format("event {} '{}' ({}) has a negative or unreadable dur", events_, e.name,
                           e.cat);
      return false;
    }
    // Seconds from the trace's first kept event (exact nanoseconds before the conversion).
    if (!first_ns_) first_ns_ = *e.ts_ns;
    const double start = static_cast<double>(*e.ts_ns - *first_ns_) * 1e-9;
    const double end = static_cast<double>(*e.ts_ns + e.dur_ns - *first_ns_) * 1e-9;
    if (pipeline) out_.annotations.push_back({e.name, start, end, e.tid});
    if (communication) out_.communications.push_back({e.name, start, end, e.tid});
    if (launch) out_.launches.push_back({start, e.correlation});
    if (kernel) out_.kernels.push_back({start, end, e.correlation, e.name.starts_with("nccl")});
    return true;
  }

  ChromeTrace& out_;
  int depth_ = 0;
  std::vector<std::string> keys_;  // the key (or "") at each open container
  bool in_events_ = false, saw_events_ = false;
  RawEvent event_;
  std::int64_t events_ = 0;               // elements of traceEvents read
  std::optional<std::int64_t> first_ns_;  // the first kept event's ts
  std::int64_t base_ns_ = 0;
  std::string error_;

 public:
  // The absolute time (ns) of the kept events' time 0.
  std::int64_t origin_ns() const { return base_ns_ + first_ns_.value_or(0); }
};

}  // namespace

Result<ChromeTrace> ReadChromeTrace(const std::string& path) {
  std::unique_ptr<gzFile_s, GzClose> file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return Status::IoError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  GzipBuffer buffer(file.get());
  std::istream in(&buffer);
  ChromeTrace trace;
  trace.path = path;
  TraceHandler handler(trace);
  const bool parsed = nlohmann::json::sax_parse(in, &handler);
  if (buffer.failed()) {
    return Status::IoError(
        fmt::format("cannot read '{}': a damaged or truncated gzip stream", path));
  }
  if (!parsed) {
    return Status::InvalidArgument(
        fmt::format("'{}': not a Chrome trace: {}", path, handler.error()));
  }
  if (!handler.saw_events()) {
    return Status::InvalidArgument(fmt::format(
        "'{}': not a Chrome trace: no traceEvents array (torch.profiler's export_chrome_trace "
        "writes one)",
        path));
  }
  trace.origin_ns = handler.origin_ns();
  PIPETTE_ASSIGN_OR_RETURN(trace.sha256, FileSha256(path));
  return trace;
}

}  // namespace pipette
