// Text that leaves the process on a line-oriented channel (the service
// manager's KEY=VALUE datagrams, log lines): a value taken from a config
// file or a client must not start a line of its own. Control bytes become
// C escapes (\n, \r, \t, \xNN); everything else is kept as it is.
#pragma once

#include <string>
#include <string_view>

namespace sdn {

inline std::string escape_control(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  static const char kHex[] = "0123456789abcdef";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) o += ch;
    else if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else {
      o += "\\x";
      o += kHex[c >> 4];
      o += kHex[c & 15];
    }
  }
  return o;
}

}  // namespace sdn
