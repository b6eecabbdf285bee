// Status and Result<T>: recoverable errors as values.
//
// A Status is either OK or carries a code and a message written for the user: it names the
// offending key, the value and the rule that was broken ("-m = 0: every schedule needs at least one
// microbatch"). Result<T> holds either a T or a non-OK Status (GCC 12 has no std::expected).
// Both are plain values: copyable, movable, no shared state, safe to hand across threads.
//
// Example:
//   Result<int> ParsePositive(std::string_view key, int value) {
//     if (value <= 0) return Status::InvalidArgument(fmt::format("{} = {}: must be >= 1", key,
//     value)); return value;
//   }
//   PIPETTE_ASSIGN_OR_RETURN(int m, ParsePositive("-m", raw));
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace pipette {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the user's input breaks a rule (bad value, violated constraint)
  kNotFound,            // a named thing (schedule, file, key) does not exist
  kFailedPrecondition,  // the input is well-formed but cannot be processed (e.g. a deadlock)
  kIoError,             // reading or writing a file failed
  kInternal,            // a bug in pipette
};

// Returns the lower-case name of `code` ("invalid argument", ...).
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status NotFound(std::string message) {
    return Status(StatusCode::kNotFound, std::move(message));
  }
  static Status FailedPrecondition(std::string message) {
    return Status(StatusCode::kFailedPrecondition, std::move(message));
  }
  static Status IoError(std::string message) {
    return Status(StatusCode::kIoError, std::move(message));
  }
  static Status Internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }

  // A status rebuilt from its parts, e.g. one another process sent. kOk ignores the message.
  static Status FromCode(StatusCode code, std::string message) {
    return code == StatusCode::kOk ? Status() : Status(code, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "`context`: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "Result needs a value or a non-OK status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  // Returns OK when a value is held, the error otherwise.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }  // `T x = *F();` moves, not copies
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace pipette

#define PIPETTE_CONCAT_INNER_(a, b) a##b
#define PIPETTE_CONCAT_(a, b) PIPETTE_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define PIPETTE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::pipette::Status pipette_status_ = (expr);        \
    if (!pipette_status_.ok()) return pipette_status_; \
  } while (false)

// Evaluates `rexpr` (a Result<T>); on error returns its Status, otherwise moves the value into
// `lhs` (a declaration such as `auto x` or an existing variable).
#define PIPETTE_ASSIGN_OR_RETURN(lhs, rexpr) \
  PIPETTE_ASSIGN_OR_RETURN_IMPL_(PIPETTE_CONCAT_(pipette_result_, __LINE__), lhs, rexpr)
#define PIPETTE_ASSIGN_OR_RETURN_IMPL_(result, lhs, rexpr) \
  auto result = (rexpr);                                   \
  if (!result.ok()) return result.status();                \
  lhs = std::move(result).value()
