// The control socket's commands: one table, read by the daemon (each
// service registers a handler under a name below; the dispatcher refuses
// to start with a command missing or unknown), by dataplane-ctl --help and
// by the daemon's "unknown command" reply.
#pragma once

#include <string>
#include <string_view>

namespace dp {

struct CommandSpec {
  const char* name;  // one or two words; the longest name that starts the request is taken
  const char* args;  // usage of the arguments, "" for none
  const char* help;  // lines after the first are indented under it
};

inline constexpr CommandSpec kCommands[] = {
    {"rule add", "'{table: 1, priority: 200, match: \"ip_proto=tcp,tp_dst=22\", actions: drop}'",
     "add a rule (YAML, as in the config's tables)"},
    {"rule del", "ID", "remove rule ID"},
    {"rules", "", "list rules with hit counters"},
    {"ct list", "[ZONE]", "connections (all of them, streamed), then a total line"},
    {"ct flush", "[ZONE]", "remove connections"},
    {"reload", "",
     "re-read the config file: tables and conntrack timeouts; other\n"
     "changes are refused with the reason (README: Reload)"},
    {"stats", "",
     "workers, ports (packets, misses, errors, ring drops), drops by\n"
     "reason, conntrack, offload counters"},
    {"trace --live", "N [SECONDS]",
     "the next N packets (1..256) as the workers handle them: rules hit,\n"
     "ct state, flow cache or NIC stage, output or drop reason; waits up to\n"
     "SECONDS (1..50, default 10) and says how many came"},
    {"trace", "PACKET",
     "what the tables and conntrack would do with a packet (nothing changes):\n"
     "in_port=inside,tcp,10.0.0.1:1234>10.0.0.2:80,flags=S\n"
     "in_port=outside,udp,[fd00::2]:53>[fd00::1]:3333 | in_port=inside,icmp,10.0.0.1>10.0.0.2"},
    {"offload testpmd", "", "hardware rules as testpmd flow commands"},
    {"log-level", "[TYPE LEVEL]",
     "without arguments: the rte_log types (dataplane.control, .offload,\n"
     ".pipeline, .ports, .worker, .systemd; DPDK's lib.eal, pmd.*) and their\n"
     "levels; with them: set TYPE (a name or a glob, 'dataplane.*') to LEVEL:\n"
     "emerg alert crit err warning notice info debug, or 1..8 (rte_log's)"},
};

inline const CommandSpec* find_command(std::string_view name) {
  for (const CommandSpec& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

// "NAME ARGS"
inline std::string command_usage(const CommandSpec& c) {
  return *c.args ? std::string(c.name) + " " + c.args : std::string(c.name);
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
