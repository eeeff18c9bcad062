// Traffic tools: iperf3 and sockperf command lines and their output parsers.
#pragma once

#include <string>
#include <vector>

#include "sdn/status.h"

namespace harness {

struct IperfResult {
  bool ok = false;
  std::string error;        // iperf3's own "error" key, or why the output was unusable
  double gbps = 0;          // received throughput
  long long retransmits = 0;
  double cpu_host = 0, cpu_remote = 0;  // percent
  double rtt_us = 0;        // TCP mean RTT of the sender, 0 for UDP
  double lost_percent = 0;  // UDP
  bool server_busy = false;  // iperf3's "the server is busy running a test": try again later
};

// Parses `iperf3 -J` output. iperf3 exits 0 even on errors: the "error" key decides.
IperfResult parse_iperf3(const std::string& json);

struct SockperfResult {
  bool ok = false;
  std::string error;
  double avg_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
  double run_s = 0;                        // [Total Run]: seconds, messages sent and replies received
  unsigned long long sent = 0, received = 0;
  long long dropped = -1;  // messages without a reply (-1: the output did not say)
};

// Parses sockperf ping-pong or under-load output (ANSI colour codes stripped).
SockperfResult parse_sockperf(const std::string& text);

std::string strip_ansi(const std::string& s);

}  // namespace harness
