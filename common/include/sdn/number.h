// A number from a flag or a YAML scalar, the one way every part reads them:
// decimal (integers also 0x hex), finite, within lo..hi. A leading zero is
// refused (C and yaml-cpp read 010 as octal 8), and so are nan and inf,
// which pass any `v < lo || v > hi` check.
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>

#include "sdn/status.h"

namespace sdn {

// Whole numbers in full (a range's 4294967295, not 4.29497e+09).
inline std::string number_text(double v) {
  char b[32];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) snprintf(b, sizeof b, "%.0f", v);
  else snprintf(b, sizeof b, "%g", v);
  return b;
}

inline Status parse_number(const std::string& s, bool integer, double lo, double hi, double* out) {
  const std::string q = "'" + s + "'";
  const size_t d = s.size() > 1 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const bool hex = integer && s.size() > d + 2 && s[d] == '0' && (s[d + 1] == 'x' || s[d + 1] == 'X');
  if (!hex && s.size() > d + 1 && s[d] == '0' && isdigit(static_cast<unsigned char>(s[d + 1])))
    return Status::error(ErrorKind::kInvalid, q + ": a leading zero is ambiguous (octal?); write the decimal number" +
                                                  std::string(integer ? ", or 0x for hex" : ""));
  if (s.empty() || isspace(static_cast<unsigned char>(s[0]))) return Status::error(ErrorKind::kInvalid, q + " is not a number");
  char* end = nullptr;
  double v;
  if (integer) {
    errno = 0;
    long long i = strtoll(s.c_str(), &end, hex ? 16 : 10);
    if (*end || errno == ERANGE) return Status::error(ErrorKind::kInvalid, q + " is not a number");
    v = static_cast<double>(i);
  } else {
    v = strtod(s.c_str(), &end);
    if (*end) return Status::error(ErrorKind::kInvalid, q + " is not a number");
    if (!std::isfinite(v)) return Status::error(ErrorKind::kInvalid, q + " is not a finite number");
  }
  if (!(v >= lo && v <= hi))
    return Status::error(ErrorKind::kInvalid, q + " is out of range " + number_text(lo) + ".." + number_text(hi));
  *out = v;
  return {};
}

}  // namespace sdn
