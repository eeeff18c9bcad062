// The control socket's commands: one table, read by the daemon (each
// service registers a handler under a name below; the dispatcher refuses
// to start with a command missing or unknown), by dataplane-ctl --help and
// by the daemon's "unknown command" reply.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "sdn/number.h"

namespace dp {

// A command's arguments, typed: what the daemon's dispatcher checks before
// any handler runs (and dataplane-ctl before it sends), the usage line and
// its ranges, all from this one declaration.
enum class ArgKind : uint8_t {
  kNone,  // (no argument here)
  kUint,  // a number within lo..hi, read as every number is (sdn/number.h)
  kWord,  // one word
  kRest,  // the rest of the request, whatever it holds (YAML, a packet)
};

struct ArgSpec {
  const char* name = nullptr;  // as the usage shows it
  ArgKind kind = ArgKind::kNone;
  bool optional = false;       // may be left out (and then every one after it)
  bool with_previous = false;  // given exactly when the one before it is
  uint64_t lo = 0, hi = 0;     // kUint: its range
  uint64_t dflt = 0;           // kUint, optional: its value when left out (outside lo..hi: none; see given)
};

constexpr ArgSpec uint_arg(const char* n, uint64_t lo, uint64_t hi) { return {n, ArgKind::kUint, false, false, lo, hi, 0}; }
constexpr ArgSpec opt_uint(const char* n, uint64_t lo, uint64_t hi, uint64_t dflt) {
  return {n, ArgKind::kUint, true, false, lo, hi, dflt};
}
inline constexpr uint64_t kNoDefault = ~uint64_t{0};
constexpr ArgSpec rest_arg(const char* n) { return {n, ArgKind::kRest}; }
constexpr ArgSpec opt_word(const char* n) { return {n, ArgKind::kWord, true}; }
constexpr ArgSpec and_word(const char* n) { return {n, ArgKind::kWord, true, true}; }

inline constexpr size_t kMaxArgs = 2;

struct CommandSpec {
  const char* name;           // one or two words; the longest name that starts the request is taken
  ArgSpec args[kMaxArgs];     // in order
  const char* help;           // lines after the first are indented under it
};

// A command's arguments as parsed (index = ArgSpec's).
struct CommandArgs {
  bool given[kMaxArgs] = {};
  uint64_t num[kMaxArgs] = {};  // kUint (its default when not given)
  std::string str[kMaxArgs];    // kWord, kRest
};

inline constexpr CommandSpec kCommands[] = {
    {"rule add", {rest_arg("'{table: 1, priority: 200, match: \"ip_proto=tcp,tp_dst=22\", actions: drop}'")},
     "add a rule (YAML, as in the config's tables)"},
    {"rule del", {uint_arg("ID", 0, 0xFFFFFFFF)}, "remove rule ID"},
    {"rules", {}, "list rules with hit counters"},
    {"ct list", {opt_uint("ZONE", 0, 65535, kNoDefault)}, "connections (all of them, streamed), then a total line; ZONE: only that zone's"},
    {"ct flush", {opt_uint("ZONE", 0, 65535, kNoDefault)}, "remove connections (of every zone, or of ZONE)"},
    {"reload", {},
     "re-read the config file: tables and conntrack timeouts; other\n"
     "changes are refused with the reason (README: Reload)"},
    {"stats", {},
     "workers, ports (packets, misses, errors, ring drops), drops by\n"
     "reason, conntrack, offload counters"},
    {"trace --live", {uint_arg("N", 1, 256), opt_uint("SECONDS", 1, 50, 10)},
     "the next N packets (1..256) as the workers handle them: rules hit,\n"
     "ct state, flow cache or NIC stage, output or drop reason; waits up to\n"
     "SECONDS (1..50, default 10) and says how many came"},
    {"trace", {rest_arg("PACKET")},
     "what the tables and conntrack would do with a packet (nothing changes):\n"
     "in_port=inside,tcp,10.0.0.1:1234>10.0.0.2:80,flags=S\n"
     "in_port=outside,udp,[fd00::2]:53>[fd00::1]:3333 | in_port=inside,icmp,10.0.0.1>10.0.0.2"},
    {"offload testpmd", {}, "hardware rules as testpmd flow commands"},
    {"log-level", {opt_word("TYPE"), and_word("LEVEL")},
     "without arguments: the rte_log types (dataplane.control, .offload,\n"
     ".pipeline, .ports, .worker, .systemd; DPDK's lib.eal, pmd.*) and their\n"
     "levels; with them: set TYPE (a name or a glob, 'dataplane.*') to LEVEL:\n"
     "emerg alert crit err warning notice info debug, or 1..8 (rte_log's)"},
};

constexpr const CommandSpec* find_command(std::string_view name) {
  for (const CommandSpec& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

// "NAME ARGS": optional arguments in brackets, one given with the one
// before it inside that one's ("[TYPE LEVEL]").
inline std::string command_usage(const CommandSpec& c) {
  std::string u = c.name;
  for (size_t i = 0; i < kMaxArgs && c.args[i].kind != ArgKind::kNone; i++) {
    const ArgSpec& a = c.args[i];
    const bool joins = i + 1 < kMaxArgs && c.args[i + 1].with_previous;
    if (a.with_previous) continue;  // written with the one before it
    std::string w = a.name;
    if (joins) w += std::string(" ") + c.args[i + 1].name;
    u += " " + (a.optional ? "[" + w + "]" : w);
  }
  return u;
}

// The numbers' ranges, for a usage error: " (N 1..256, SECONDS 1..50, default 10)".
inline std::string command_ranges(const CommandSpec& c) {
  std::string r;
  for (const ArgSpec& a : c.args) {
    if (a.kind != ArgKind::kUint) continue;
    r += (r.empty() ? " (" : ", ") + std::string(a.name) + " " + std::to_string(a.lo) + ".." + std::to_string(a.hi);
    if (a.optional && a.dflt >= a.lo && a.dflt <= a.hi) r += ", default " + std::to_string(a.dflt);
  }
  return r.empty() ? r : r + ")";
}

// Reads `text` (the request after the command's name) as `c`'s arguments:
// "" and *out filled, or why not ("N: '0' is out of range 1..256").
inline std::string parse_command_args(const CommandSpec& c, std::string_view text, CommandArgs* out) {
  *out = CommandArgs{};
  size_t at = 0;
  auto skip = [&] {
    while (at < text.size() && isspace(static_cast<unsigned char>(text[at]))) at++;
  };
  for (size_t i = 0; i < kMaxArgs && c.args[i].kind != ArgKind::kNone; i++) {
    const ArgSpec& a = c.args[i];
    skip();
    const bool absent = at == text.size() || (a.with_previous && i > 0 && !out->given[i - 1]);
    if (absent) {
      if (a.with_previous && i > 0 && out->given[i - 1]) return std::string(a.name) + " missing";
      if (!a.optional && !a.with_previous) return std::string(a.name) + " missing";
      out->num[i] = a.dflt;
      continue;
    }
    if (a.kind == ArgKind::kRest) {
      size_t end = text.size();
      while (end > at && isspace(static_cast<unsigned char>(text[end - 1]))) end--;
      out->str[i] = std::string(text.substr(at, end - at));
      out->given[i] = true;
      at = text.size();
      continue;
    }
    const size_t b = at;
    while (at < text.size() && !isspace(static_cast<unsigned char>(text[at]))) at++;
    out->str[i] = std::string(text.substr(b, at - b));
    out->given[i] = true;
    if (a.kind == ArgKind::kUint) {
      double v = 0;
      if (sdn::Status s = sdn::parse_number(out->str[i], true, static_cast<double>(a.lo), static_cast<double>(a.hi), &v);
          !s)
        return std::string(a.name) + ": " + s.message();
      out->num[i] = static_cast<uint64_t>(v);
    }
  }
  skip();
  if (at < text.size()) {
    size_t e = at;
    while (e < text.size() && !isspace(static_cast<unsigned char>(text[e]))) e++;
    return "'" + std::string(text.substr(at, e - at)) + "': more than the command takes";
  }
  return "";
}

// The commands, one per entry, help aligned at column 24.
inline std::string commands_help() {
  std::string o;
  for (const CommandSpec& c : kCommands) {
    std::string u = "  " + command_usage(c);
    u += u.size() < 24 ? std::string(24 - u.size(), ' ') : "\n" + std::string(24, ' ');
    for (const char* h = c.help; *h; h++) {
      u += *h;
      if (*h == '\n') u += std::string(24, ' ');
    }
    o += u + "\n";
  }
  return o;
}

}  // namespace dp
