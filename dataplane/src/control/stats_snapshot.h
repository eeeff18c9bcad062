// Every counter the daemon has, read once (workers' counters with relaxed
// loads, ports, drops by reason, rule hits, conntrack, offload) and written
// three ways from the same values: `stats` text, `stats` JSON
// (dataplane-ctl --json stats) and Prometheus's text exposition format
// (/metrics). Control path only.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dp {

struct StatsSnapshot {
  using Counters = std::vector<std::pair<std::string, uint64_t>>;
  struct Worker {
    unsigned id = 0, lcore = 0;
    Counters counters;  // WorkerStats::visit, cumulative
    Counters ratios;    // derived (cycles per packet, ...)
  };
  struct Port {
    std::string name;
    Counters counters;  // rx_packets, ..., link_up (a gauge), rx_ring_drops (af_packet)
  };
  struct RuleHit {
    uint32_t id = 0, table = 0;
    uint64_t packets = 0, bytes = 0;
  };
  std::vector<Worker> workers;
  std::vector<Port> ports;
  Counters host;     // kernel_ip_reasm_fails (af_packet ports)
  Counters drops;    // by reason: the pipeline's and parse_<reason>
  Counters overlay;  // vxlan_decap, vxlan_encap, nat_packets
  std::vector<RuleHit> rules;
  Counters ct;       // the trackers' Stats, summed over shards
  std::string offload_provider;
  Counters offload;
  std::set<std::string> offload_gauges;  // which of `offload` are levels, not counts
  std::vector<std::pair<std::string, std::string>> offload_notes;
};

// The names that are levels (gauges) rather than counts.
bool ct_is_gauge(const std::string& name);
bool port_is_gauge(const std::string& name);

// `stats`'s text: "ok", then a line per worker, ports, drops, ct, offload.
std::string stats_text(const StatsSnapshot& s);
// One JSON object: {"workers": [...], "ports": {...}, "drops": {...}, "overlay": {...}, "rules": [...], "ct": {...},
// "offload": {...}}.
nlohmann::json stats_json(const StatsSnapshot& s);
// Prometheus text exposition format 0.0.4: dataplane_* with labels port,
// worker, reason, rule, table; counters end in _total.
std::string stats_prometheus(const StatsSnapshot& s);

}  // namespace dp
