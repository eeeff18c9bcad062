// Small result types shared by every component for control-path code: a Status or a value, never a mix
// of bool and exceptions. (std::expected arrives with C++23; this is its shape.)
#pragma once

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace sdn {

// What kind of failure a Status is, for callers that act on it (skip a
// device that is already gone, retry a busy peer); the message is for
// people. Branch on kinds, never on message text.
enum class ErrorKind : uint8_t {
  kNone,      // ok
  kFailed,    // anything not named below
  kInvalid,   // bad input: a config, a flag, a malformed reply
  kNotFound,  // the thing asked for is not there (ENOENT, ENODEV, ESRCH)
  kBusy,      // held by someone else now; may work later (EBUSY, EADDRINUSE)
  kTimeout,   // no answer in the time given
};

inline ErrorKind kind_of_errno(int e) {
  switch (e) {
    case ENOENT:
    case ENODEV:
    case ESRCH:
      return ErrorKind::kNotFound;
    case EBUSY:
    case EADDRINUSE:
    case EAGAIN:
      return ErrorKind::kBusy;
    case ETIMEDOUT:
      return ErrorKind::kTimeout;
    case EINVAL:
      return ErrorKind::kInvalid;
    default:
      return ErrorKind::kFailed;
  }
}

class Status {
 public:
  Status() = default;
  static Status error(std::string msg) { return Status(ErrorKind::kFailed, std::move(msg)); }
  static Status error(ErrorKind kind, std::string msg) {
    return Status(kind == ErrorKind::kNone ? ErrorKind::kFailed : kind, std::move(msg));
  }
  bool ok() const { return kind_ == ErrorKind::kNone; }
  explicit operator bool() const { return ok(); }
  ErrorKind kind() const { return kind_; }
  bool is(ErrorKind k) const { return kind_ == k; }
  const std::string& message() const { return msg_; }
  // The same kind with more said in front ("starting X: ...").
  Status context(const std::string& what) const { return ok() ? *this : Status(kind_, what + msg_); }

 private:
  Status(ErrorKind kind, std::string msg) : kind_(kind), msg_(std::move(msg)) {}
  ErrorKind kind_ = ErrorKind::kNone;
  std::string msg_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status err) : v_(std::move(err)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  const std::string& message() const { return std::get<1>(v_).message(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sdn

// Returns the Status of `expr` from the enclosing function when it failed.
#define SDN_TRY(expr)                                      \
  do {                                                     \
    if (::sdn::Status sdn_try_ = (expr); !sdn_try_) return sdn_try_; \
  } while (0)
