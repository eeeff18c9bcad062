#include "harness/tools.h"

#include <nlohmann/json.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include "sdn/json.h"

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

IperfResult parse_iperf3(const std::string& text) {
  IperfResult r;
  using nlohmann::json;
  json n = json::parse(text, nullptr, false);
  if (n.is_discarded()) {
    r.error = text.empty() ? "no iperf3 output" : "unparsable iperf3 output (not JSON, or cut short)";
    return r;
  }
  if (!n.is_object()) {
    r.error = "iperf3 output is not a JSON object";
    return r;
  }
  // iperf3 -J exits 0 with an "error" key on failures.
  if (n.contains("error")) {
    r.error = n["error"].is_string() ? n["error"].get<std::string>() : sdn::json_dump(n["error"]);
    r.server_busy = r.error.find("the server is busy") != std::string::npos;  // iperf3's words (iperf_error.c)
    return r;
  }
  const json* end = n.contains("end") && n["end"].is_object() ? &n["end"] : nullptr;
  if (!end) {
    r.error = "iperf3 output has no \"end\" section";
    return r;
  }
  // A number at a path, or the error naming what is missing.
  auto num = [&](const json& at, std::initializer_list<const char*> path, double* out) {
    const json* p = &at;
    std::string where = "end";
    for (const char* k : path) {
      where += std::string(".") + k;
      if (!p->is_object() || !p->contains(k)) {
        r.error = "iperf3 output lacks " + where;
        return false;
      }
      p = &(*p)[k];
    }
    if (!p->is_number()) {
      r.error = "iperf3 output: " + where + " is not a number";
      return false;
    }
    *out = p->get<double>();
    return true;
  };
  std::string protocol = "TCP";
  if (n.contains("start") && n["start"].contains("test_start") && n["start"]["test_start"].contains("protocol") &&
      n["start"]["test_start"]["protocol"].is_string())
    protocol = n["start"]["test_start"]["protocol"].get<std::string>();
  double bps = 0, v = 0;
  if (protocol == "UDP") {
    // The receiver's view when the server reported it.
    if (end->contains("sum_received")) {
      if (!num(*end, {"sum_received", "bits_per_second"}, &bps)) return r;
    } else if (!num(*end, {"sum", "bits_per_second"}, &bps)) {
      return r;
    }
    if (end->contains("sum") && (*end)["sum"].contains("lost_percent") && num(*end, {"sum", "lost_percent"}, &v))
      r.lost_percent = v;
  } else {
    if (!num(*end, {"sum_received", "bits_per_second"}, &bps)) return r;
    if ((*end).contains("sum_sent") && (*end)["sum_sent"].contains("retransmits") &&
        num(*end, {"sum_sent", "retransmits"}, &v))
      r.retransmits = static_cast<long long>(v);
    const json& streams = end->contains("streams") ? (*end)["streams"] : json();
    if (streams.is_array() && !streams.empty() && streams[0].contains("sender") &&
        streams[0]["sender"].contains("mean_rtt") && streams[0]["sender"]["mean_rtt"].is_number())
      r.rtt_us = streams[0]["sender"]["mean_rtt"].get<double>();
  }
  r.gbps = bps / 1e9;
  if (end->contains("cpu_utilization_percent")) {
    const json& cpu = (*end)["cpu_utilization_percent"];
    if (cpu.contains("host_total") && cpu["host_total"].is_number()) r.cpu_host = cpu["host_total"].get<double>();
    if (cpu.contains("remote_total") && cpu["remote_total"].is_number()) r.cpu_remote = cpu["remote_total"].get<double>();
  }
  r.error.clear();
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
    else if ((at = line.find("# dropped messages = ")) != std::string::npos)
      r.dropped = strtoll(line.c_str() + at + 21, nullptr, 10);
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
