// The config's YAML readers, shared by config.cc (the top-level dispatch)
// and each feature's section parser (features/<name>/config.cc,
// datapath/config.cc, offload/config.cc): every error names the file, the
// line and the key ("file:line: key 'a.b': ..."). Control path only.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <set>
#include <string>

#include "config_section.h"
#include "sdn/number.h"

// (SDN_TRY, sdn/status.h, returns a failed Status from the caller.)
namespace dp::conf {

// Where a YAML node came from, for messages: "file:line: key 'a.b': ...".
struct Ctx {
  const std::string& file;
  Status err(const YAML::Node& n, const std::string& key, const std::string& msg) const {
    int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
    return Status::error(file + ":" + std::to_string(line) + ": key '" + key + "': " + msg);
  }
};

inline Status check_keys(const Ctx& c, const YAML::Node& map, const std::string& path,
                         const std::set<std::string>& known) {
  if (!map.IsMap()) return c.err(map, path, "expected a mapping");
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (!known.count(k)) {
      std::string all;
      for (const auto& s : known) all += (all.empty() ? "" : ", ") + s;
      return c.err(it->first, path.empty() ? k : path + "." + k, "unknown key (known: " + all + ")");
    }
  }
  return {};
}

// Decimal, or hexadecimal after 0x. A leading zero is refused: C reads
// 0755 as octal, YAML 1.1 too, YAML 1.2 as decimal; a port MTU of 01000
// must not quietly become 512.
template <typename T>
Status parse_uint(const Ctx& c, const YAML::Node& n, const std::string& full, T* out, uint64_t lo, uint64_t hi) {
  if (!n.IsScalar()) return c.err(n, full, "expected a number");
  if (hi > (1ull << 53)) return c.err(n, full, "internal: a range past 2^53 is not exact as a double");
  double v = 0;
  if (Status st = sdn::parse_number(n.Scalar(), true, static_cast<double>(lo), static_cast<double>(hi), &v); !st)
    return c.err(n, full, st.message());
  *out = static_cast<T>(v);
  return {};
}

template <typename T>
Status get_uint(const Ctx& c, const YAML::Node& map, const std::string& key, const std::string& path, T* out,
                uint64_t lo, uint64_t hi) {
  YAML::Node n = map[key];
  if (!n) return {};
  return parse_uint(c, n, path.empty() ? key : path + "." + key, out, lo, hi);
}

inline Status get_bool(const Ctx& c, const YAML::Node& map, const std::string& key, const std::string& path,
                       bool* out) {
  YAML::Node n = map[key];
  if (!n) return {};
  std::string full = path.empty() ? key : path + "." + key;
  if (!n.IsScalar()) return c.err(n, full, "expected true or false");
  const std::string& s = n.Scalar();
  if (s == "true" || s == "yes" || s == "on") *out = true;
  else if (s == "false" || s == "no" || s == "off") *out = false;
  else return c.err(n, full, "'" + s + "' is not true or false");
  return {};
}

inline Status get_str(const Ctx& c, const YAML::Node& map, const std::string& key, const std::string& path,
                      std::string* out, bool required = false) {
  YAML::Node n = map[key];
  std::string full = path.empty() ? key : path + "." + key;
  if (!n) return required ? c.err(map, full, "is required") : Status();
  if (!n.IsScalar() || n.Scalar().empty()) return c.err(n, full, "expected a non-empty string");
  *out = n.Scalar();
  return {};
}

}  // namespace dp::conf
