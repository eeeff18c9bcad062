// Small result types shared by every component for control-path code: a Status or a value, never a mix
// of bool and exceptions. (std::expected arrives with C++23; this is its shape.)
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace sdn {

class Status {
 public:
  Status() = default;
  static Status error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string msg) : failed_(true), msg_(std::move(msg)) {}
  bool failed_ = false;
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
