// Logging through DPDK's rte_log, one log type per part of the daemon:
// dataplane.control, dataplane.offload, dataplane.pipeline (default level
// info). `dataplane --log-level LEVEL` sets all three; EAL's own
// `--log-level=dataplane.offload:debug` one of them. Control path only.
#pragma once

#include <cstdint>
#include <string>

namespace dp {

enum class LogType { kControl, kOffload, kPipeline };

// Lines go out as "dataplane: <msg>" (or "dataplane: offload: <msg>").
// Level: RTE_LOG_ERR, RTE_LOG_WARNING, RTE_LOG_INFO, RTE_LOG_DEBUG.
void log_line(LogType t, uint32_t level, const std::string& msg);
// Sets all three types' level (after EAL init; --log-level does it at start).
void log_set_level(uint32_t level);
inline void log_info(LogType t, const std::string& m) { log_line(t, 7, m); }     // RTE_LOG_INFO
inline void log_warning(LogType t, const std::string& m) { log_line(t, 5, m); }  // RTE_LOG_WARNING
inline void log_error(LogType t, const std::string& m) { log_line(t, 4, m); }    // RTE_LOG_ERR

}  // namespace dp
