#include "pipette/import/chrome_trace.h"

#include <fmt/core.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
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

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// "Forward 12" / "Backward 3": ScheduleGPipe's ranges.
bool IsGPipeRange(std::string_view name) {
  std::string_view digits;
  if (StartsWith(name, "Forward ")) digits = name.substr(8);
  if (StartsWith(name, "Backward ")) digits = name.substr(9);
  if (digits.empty()) return false;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsPipelineAnnotation(std::string_view name) {
  return StartsWith(name, "PP:") || StartsWith(name, "ProfilerStep#") ||
         StartsWith(name, "Optimizer.step#") || IsGPipeRange(name);
}

bool IsCommunication(std::string_view name) {
  return StartsWith(name, "gloo:") || StartsWith(name, "nccl:") || StartsWith(name, "c10d::");
}

// One element of traceEvents as far as pipette reads it.
struct RawEvent {
  std::string name, cat, ph;
  std::optional<double> ts;  // microseconds
  double dur = 0;
  std::int64_t tid = -1;
  std::int64_t correlation = 0;
};

// The SAX handler: follows the path to traceEvents[i].{name, cat, ph, ts, dur, tid,
// args.correlation}, distributedInfo.{rank, world_size} and baseTimeNanoseconds; skips the rest.
class TraceHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit TraceHandler(ChromeTrace& out) : out_(out) {}

  bool saw_events() const { return saw_events_; }
  std::int64_t base_ns() const { return base_ns_; }
  const std::string& error() const { return error_; }

  bool null() override { return Value(std::nullopt, nullptr); }
  bool boolean(bool) override { return Value(std::nullopt, nullptr); }
  bool number_integer(number_integer_t v) override {
    if (IsBaseTime()) base_ns_ = v;  // exact: a double would round nanoseconds since 1970
    return Value(static_cast<double>(v), nullptr);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (IsBaseTime()) base_ns_ = static_cast<std::int64_t>(v);
    return Value(static_cast<double>(v), nullptr);
  }
  bool number_float(number_float_t v, const string_t&) override { return Value(v, nullptr); }
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
  bool IsBaseTime() const { return depth_ == 1 && keys_.back() == "baseTimeNanoseconds"; }

  // A scalar at the current path: a number (`number`) or a string (`text`).
  bool Value(std::optional<double> number, const std::string* text) {
    const std::string& key = keys_.back();
    if (depth_ == 1) {
      if (key == "baseTimeNanoseconds" && text) base_ns_ = std::atoll(text->c_str());
      return true;
    }
    if (depth_ == 2 && keys_[0] == "distributedInfo" && number) {
      if (key == "rank") out_.rank = static_cast<int>(*number);
      if (key == "world_size") out_.world_size = static_cast<int>(*number);
      return true;
    }
    if (!in_events_) return true;
    if (depth_ == 3) {
      if (text && key == "name") event_.name = *text;
      if (text && key == "cat") event_.cat = *text;
      if (text && key == "ph") event_.ph = *text;
      if (key == "ts" && number) event_.ts = number;
      if (number && key == "dur") event_.dur = *number;
      if (number && key == "tid") event_.tid = static_cast<std::int64_t>(*number);
    } else if (depth_ == 4 && keys_[2] == "args" && key == "correlation" && number) {
      event_.correlation = static_cast<std::int64_t>(*number);
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
    if (!e.ts) {
      error_ = fmt::format("event '{}' ({}) has no number ts", e.name, e.cat);
      return false;
    }
    const double start = *e.ts * 1e-6, end = (*e.ts + e.dur) * 1e-6;
    if (pipeline) out_.annotations.push_back({e.name, start, end, e.tid});
    if (communication) out_.communications.push_back({e.name, start, end, e.tid});
    if (launch) out_.launches.push_back({start, e.correlation});
    if (kernel) out_.kernels.push_back({start, end, e.correlation, StartsWith(e.name, "nccl")});
    return true;
  }

  ChromeTrace& out_;
  int depth_ = 0;
  std::vector<std::string> keys_;  // the key (or "") at each open container
  bool in_events_ = false, saw_events_ = false;
  RawEvent event_;
  std::int64_t base_ns_ = 0;
  std::string error_;
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
  trace.base_ns = handler.base_ns();
  PIPETTE_ASSIGN_OR_RETURN(trace.sha256, FileSha256(path));
  return trace;
}

}  // namespace pipette
