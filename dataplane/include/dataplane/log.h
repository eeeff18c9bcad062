// Logging through DPDK's rte_log: one log type per part of the daemon
// (kLogTypeNames, default level info) and one stream for them and for
// DPDK's own types (EAL, the PMDs).
//
// The stream (log_open_stream, before rte_eal_init) writes each line once,
// to stderr: under systemd (JOURNAL_STREAM names stderr) with an sd-daemon(3)
// "<N>" prefix, N the syslog priority of the rte_log level (rte_log 1..8 =
// syslog 0..7), elsewhere as plain lines. Nothing goes to stdout or syslog:
// DPDK 22.11's own stream writes every line to both, which under systemd put
// each line in the journal twice, the stdout copy without its priority.
//
// Levels: `dataplane --log-level LEVEL` sets every dataplane.* type at
// start, EAL's `--log-level=dataplane.offload:debug` one of them, and
// `dataplane-ctl log-level TYPE LEVEL` any type (DPDK's too) at run time.
// Control path only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace dp {

enum class LogType { kControl, kOffload, kPipeline, kPorts, kWorker, kSystemd };
inline constexpr const char* kLogTypeNames[] = {
    "dataplane.control",   // start, stop, reload, control requests
    "dataplane.offload",   // the NIC: engine, domain, conntrack strategy, rte_flow
    "dataplane.pipeline",  // each compiled pipeline (rules, stages)
    "dataplane.ports",     // port set-up: RSS, promiscuous mode
    "dataplane.worker",    // the workers as the control loop sees them (stalls)
    "dataplane.systemd",   // the service manager: NOTIFY_SOCKET, watchdog
};

// Lines go out as "dataplane: <msg>" (or "dataplane: offload: <msg>").
// Level: RTE_LOG_ERR, RTE_LOG_WARNING, RTE_LOG_INFO, RTE_LOG_DEBUG.
void log_line(LogType t, uint32_t level, const std::string& msg);
// Sets every dataplane.* type's level.
void log_set_level(uint32_t level);
inline void log_info(LogType t, const std::string& m) { log_line(t, 7, m); }     // RTE_LOG_INFO
inline void log_warning(LogType t, const std::string& m) { log_line(t, 5, m); }  // RTE_LOG_WARNING
inline void log_error(LogType t, const std::string& m) { log_line(t, 4, m); }    // RTE_LOG_ERR

// The one stream (see above) as rte_log's, on fd 2. Call first in main.
void log_open_stream();
// A stream writing rte_log's lines to `fd`, "<N>"-prefixed when `journal`
// (the tests'; fclose frees it).
FILE* log_stream(int fd, bool journal);
// `fd` is the journal's stream: JOURNAL_STREAM=DEV:INO is fd's device and
// inode (systemd.exec(5)); a terminal or a file is not.
bool log_fd_is_journal(int fd);

// Run-time levels (dataplane-ctl log-level).
struct LogTypeLevel {
  std::string name;
  uint32_t level;  // rte_log's 1 (emerg) .. 8 (debug)
};
// Every registered rte_log type, DPDK's and the daemon's, by name.
std::vector<LogTypeLevel> log_types();
// "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug".
const char* log_level_name(uint32_t level);
// The names above, DPDK's spellings (emergency, critical, error) and
// rte_log's numbers 1..8; anything else an error naming them.
sdn::Result<uint32_t> log_parse_level(const std::string& s);
// Sets the level of the types whose name matches `type`: a name, or a glob
// (fnmatch, as EAL's --log-level=PATTERN:LEVEL). Returns the names set; a
// bad level or a type that matches nothing is an error and changes nothing.
sdn::Result<std::vector<std::string>> log_set_levels(const std::string& type, const std::string& level);

}  // namespace dp
