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
  // /metrics only. The workers' *_cycles as seconds: cycles / tsc_hz.
  double tsc_hz = 0;
  struct Mempool {
    std::string name;
    uint64_t size = 0, available = 0, in_use = 0;  // objects (mbufs)
  };
  std::vector<Mempool> mempools;  // rte_mempool_walk, on the control thread
  // This process, from /proc/self (Prometheus' standard process_* names).
  struct Process {
    bool ok = false;
    double cpu_seconds = 0, start_time_seconds = 0;
    uint64_t resident_bytes = 0, virtual_bytes = 0, open_fds = 0, max_fds = 0;
  } process;
  struct Build {
    std::string version, revision, dpdk;
  } build;
};

// This process's CPU time, memory, fds and start time from /proc/self
// (ok = false when /proc cannot be read).
StatsSnapshot::Process read_process();

// The names that are levels (gauges) rather than counts.
bool ct_is_gauge(const std::string& name);
bool port_is_gauge(const std::string& name);

// `stats`'s text: "ok", then a line per worker, ports, drops, ct, offload.
std::string stats_text(const StatsSnapshot& s);
// One JSON object: {"workers": [...], "ports": {...}, "drops": {...}, "overlay": {...}, "rules": [...], "ct": {...},
// "offload": {...}}.
nlohmann::json stats_json(const StatsSnapshot& s);
// Prometheus text exposition format 0.0.4: dataplane_* with labels port,
// worker, reason, rule, table, pool; counters end in _total, the workers'
// cycles are *_seconds_total; process_* as Prometheus' client libraries
// name them; every family's HELP a sentence (metric_help()).
std::string stats_prometheus(const StatsSnapshot& s);
// The HELP of a family, by its name without "dataplane_" and "_total"
// (e.g. "port_rx_missed"); "" for a name without a description.
std::string metric_help(const std::string& family);

}  // namespace dp
