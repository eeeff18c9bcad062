#include "harness/tools.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace harness {

std::string strip_ansi(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) i++;
      continue;
    }
    out += s[i];
  }
  return out;
}

IperfResult parse_iperf3(const std::string& json) {
  IperfResult r;
  std::string s = json;
  for (char& c : s)
    if (c == '\t') c = ' ';  // JSON allows tab indentation, YAML does not
  YAML::Node n;
  try {
    n = YAML::Load(s);
  } catch (const YAML::Exception& e) {
    r.error = "unparsable iperf3 output (" + std::string(e.what()) + ")";
    return r;
  }
  if (!n.IsMap()) {
    r.error = json.empty() ? "no iperf3 output" : "iperf3 output is not a JSON object";
    return r;
  }
  if (n["error"]) {
    r.error = n["error"].as<std::string>();
    return r;
  }
  try {
    YAML::Node end = n["end"];
    if (!end || !end.IsMap()) {
      r.error = "iperf3 output has no \"end\" section";
      return r;
    }
    bool udp = n["start"]["test_start"]["protocol"].as<std::string>("TCP") == "UDP";
    if (udp) {
      YAML::Node sum = end["sum"];
      r.gbps = sum["bits_per_second"].as<double>() / 1e9;
      r.lost_percent = sum["lost_percent"].as<double>(0);
      // The receiver's view when the server reported it.
      if (end["sum_received"]) r.gbps = end["sum_received"]["bits_per_second"].as<double>() / 1e9;
    } else {
      r.gbps = end["sum_received"]["bits_per_second"].as<double>() / 1e9;
      r.retransmits = end["sum_sent"]["retransmits"].as<long long>(0);
      YAML::Node streams = end["streams"];
      if (streams && streams.IsSequence() && streams.size() > 0 && streams[0]["sender"]["mean_rtt"])
        r.rtt_us = streams[0]["sender"]["mean_rtt"].as<double>();
    }
    if (YAML::Node cpu = end["cpu_utilization_percent"]) {
      r.cpu_host = cpu["host_total"].as<double>(0);
      r.cpu_remote = cpu["remote_total"].as<double>(0);
    }
  } catch (const YAML::Exception& e) {
    r.error = "iperf3 output lacks a field (" + std::string(e.what()) + ")";
    return r;
  }
  r.ok = true;
  return r;
}

SockperfResult parse_sockperf(const std::string& text) {
  SockperfResult r;
  std::istringstream in(strip_ansi(text));
  std::string line;
  bool have_p50 = false, no_valid = false;
  while (std::getline(in, line)) {
    auto at = line.find("---> percentile ");
    if (at != std::string::npos) {
      double pct = 0, val = 0;
      if (sscanf(line.c_str() + at, "---> percentile %lf = %lf", &pct, &val) == 2) {
        if (pct == 50.0) r.p50_us = val, have_p50 = true;
        else if (pct == 90.0) r.p90_us = val;
        else if (pct == 99.0) r.p99_us = val;
        else if (pct == 99.9) r.p999_us = val;
      }
      continue;
    }
    if ((at = line.find("---> <MAX> observation =")) != std::string::npos)
      r.max_us = strtod(line.c_str() + at + 25, nullptr);
    else if ((at = line.find("avg-latency=")) != std::string::npos)
      r.avg_us = strtod(line.c_str() + at + 12, nullptr);
    else if (line.find("No messages were received") != std::string::npos)
      r.error = "sockperf: no messages were received from the server";
    else if ((at = line.find("[Total Run] RunTime=")) != std::string::npos) {
      double secs = 0;
      unsigned long long sent = 0, got = 0;
      const char* t = line.c_str() + at;
      if (sscanf(t, "[Total Run] RunTime=%lf sec;", &secs) == 1) {
        const char* m = strstr(t, "ReceivedMessages=");
        const char* snt = strstr(t, "SentMessages=");
        if (m) got = strtoull(m + 17, nullptr, 10);
        if (snt) sent = strtoull(snt + 13, nullptr, 10);
        r.run_s = secs;
        r.received = got;
        r.sent = sent;
      }
    } else if (line.find("No valid observations found") != std::string::npos) {
      no_valid = true;
    }
  }
  // Ping-pong waits for each reply, so a run with too few for percentiles
  // still says how slow the round trips were.
  if (r.error.empty() && no_valid) {
    char b[200];
    if (r.received)
      snprintf(b, sizeof b,
               "sockperf: no valid observations: %llu round trips in %.1f s (%.0f us each on average), too few "
               "for percentiles",
               static_cast<unsigned long long>(r.received), r.run_s, r.run_s * 1e6 / static_cast<double>(r.received));
    else
      snprintf(b, sizeof b, "sockperf: no valid observations: no reply in %.1f s", r.run_s);
    r.error = b;
  }
  if (r.error.empty() && !have_p50) r.error = "sockperf output has no percentiles";
  r.ok = r.error.empty();
  return r;
}

}  // namespace harness
