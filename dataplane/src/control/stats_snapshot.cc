#include "stats_snapshot.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dataplane/pipeline.h"

namespace dp {

bool ct_is_gauge(const std::string& n) { return n == "active" || n == "offloaded"; }
bool port_is_gauge(const std::string& n) { return n == "link_up"; }

std::string stats_text(const StatsSnapshot& s) {
  std::ostringstream o;
  o << "ok\n";
  auto pairs = [&](const StatsSnapshot::Counters& c) {
    for (const auto& [k, v] : c) o << " " << k << "=" << v;
  };
  for (const auto& w : s.workers) {
    o << "worker " << w.id << " lcore " << w.lcore << ":";
    pairs(w.counters);
    pairs(w.ratios);
    o << "\n";
  }
  o << "ports:";
  for (const auto& p : s.ports)
    for (const auto& [k, v] : p.counters) o << " " << p.name << "_" << k << "=" << v;
  pairs(s.host);
  o << "\ndrops:";
  pairs(s.drops);
  o << "\noverlay:";
  pairs(s.overlay);
  o << "\nct:";
  pairs(s.ct);
  o << "\noffload " << s.offload_provider << ":";
  pairs(s.offload);
  o << "\n";
  for (const auto& [k, v] : s.offload_notes) o << "offload " << k << ": " << v << "\n";
  return o.str();
}

nlohmann::json stats_json(const StatsSnapshot& s) {
  using nlohmann::json;
  auto obj = [](const StatsSnapshot::Counters& c) {
    json j = json::object();
    for (const auto& [k, v] : c) j[k] = v;
    return j;
  };
  json j;
  j["workers"] = json::array();
  for (const auto& w : s.workers) {
    json x = obj(w.counters);
    x["id"] = w.id;
    x["lcore"] = w.lcore;
    for (const auto& [k, v] : w.ratios) x[k] = v;
    j["workers"].push_back(x);
  }
  j["ports"] = json::object();
  for (const auto& p : s.ports) j["ports"][p.name] = obj(p.counters);
  j["host"] = obj(s.host);
  j["drops"] = obj(s.drops);
  j["overlay"] = obj(s.overlay);
  j["rules"] = json::array();
  for (const auto& r : s.rules)
    j["rules"].push_back({{"id", r.id}, {"table", r.table}, {"packets", r.packets}, {"bytes", r.bytes}});
  j["ct"] = obj(s.ct);
  j["offload"] = obj(s.offload);
  j["offload"]["provider"] = s.offload_provider;
  for (const auto& [k, v] : s.offload_notes) j["offload"]["notes"][k] = v;
  j["mempools"] = json::object();
  for (const auto& m : s.mempools)
    j["mempools"][m.name] = {{"size", m.size}, {"available", m.available}, {"in_use", m.in_use}};
  return j;
}

namespace {

// A label value: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

// Metric names keep [a-zA-Z0-9_]; anything else becomes '_'.
std::string metric(std::string n) {
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return n;
}

// Writes each family once (HELP, TYPE, then its samples). A family
// without a description gets a HELP that says so (lower case, no full stop:
// the system test's sentence check fails on it).
class Families {
 public:
  // dataplane_<name>, _total unless a gauge.
  void add(const std::string& name, bool gauge, const std::string& labels, const std::string& value,
           const std::string& help = "") {
    const std::string key = metric(name);
    add_raw("dataplane_" + key + (gauge ? "" : "_total"), gauge, labels, value,
            help.empty() ? metric_help(key) : help, key);
  }
  void add(const std::string& name, bool gauge, const std::string& labels, uint64_t v) {
    add(name, gauge, labels, std::to_string(v));
  }
  void add_raw(const std::string& full, bool gauge, const std::string& labels, const std::string& value,
               std::string help, const std::string& key) {
    if (help.empty()) help = "no description yet for " + key;
    auto it = index_.find(full);
    if (it == index_.end()) {
      it = index_.emplace(full, fams_.size()).first;
      fams_.push_back({full, gauge, help, {}});
    }
    fams_[it->second].samples += full + (labels.empty() ? "" : "{" + labels + "}") + " " + value + "\n";
  }
  std::string text() const {
    std::string o;
    for (const auto& f : fams_)
      o += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + (f.gauge ? " gauge\n" : " counter\n") + f.samples;
    return o;
  }

 private:
  struct Family {
    std::string name;
    bool gauge;
    std::string help, samples;
  };
  std::vector<Family> fams_;
  std::map<std::string, size_t> index_;
};

// A float sample value, shortest round trip.
std::string real(double v) {
  char b[64];
  auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

// Every family's description but the workers' (DP_WORKER_COUNTERS) and the
// overlay's (kTunnelHelp), which come from their counter lists.
const std::map<std::string, std::string>& descriptions() {
  static const std::map<std::string, std::string> d = [] {
    std::map<std::string, std::string> m = {
        // ports (rte_eth_stats, read on the control thread)
        {"port_rx_packets", "Packets the port received (rte_eth_stats ipackets)."},
        {"port_tx_packets", "Packets the port sent (rte_eth_stats opackets)."},
        {"port_rx_bytes", "Bytes the port received (rte_eth_stats ibytes)."},
        {"port_tx_bytes", "Bytes the port sent (rte_eth_stats obytes)."},
        {"port_rx_missed", "Packets the port dropped because no receive descriptor was free (rte_eth_stats imissed)."},
        {"port_rx_errors", "Erroneous packets the port received (rte_eth_stats ierrors)."},
        {"port_tx_errors", "Packets the port failed to send (rte_eth_stats oerrors)."},
        {"port_rx_nombuf", "Receive buffer allocation failures of the port (rte_eth_stats rx_nombuf)."},
        {"port_link_up", "Whether the port's link is up (1) or down (0)."},
        {"port_rx_ring_drops", "Packets the kernel dropped because the af_packet port's receive ring was full."},
        {"port_rx_rollover", "Packets the af_packet fanout rolled over to another queue's ring, which was less full."},
        {"kernel_ip_reasm_fails", "IPv4 reassembly failures of the kernel in the af_packet ports' namespace."},
        // the pipeline
        {"drops", "Packets the pipeline dropped, by reason (parse_* reasons: the packet did not parse)."},
        {"rule_packets", "Packets that hit the rule."},
        {"rule_bytes", "Bytes of the packets that hit the rule."},
        // conntrack, summed over the workers' shards
        {"ct_active", "Connections in the conntrack tables now."},
        {"ct_offloaded", "Connections the NIC handles now (offloaded)."},
        {"ct_lookups", "Packets looked up in conntrack."},
        {"ct_hits", "Conntrack lookups that found their connection."},
        {"ct_new", "New connections conntrack created."},
        {"ct_related", "Packets conntrack judged related to a known connection (ICMP errors)."},
        {"ct_untracked", "Packets that went on untracked because the table was full (full_policy: pass)."},
        {"ct_table_full", "Commits that found the conntrack table full."},
        {"ct_zone_limited", "Commits refused because their zone was at its connection limit."},
        {"ct_expired", "Connections that timed out."},
        {"ct_evicted", "Connections evicted to make room for new ones."},
        {"ct_closed", "TCP connections that closed (FIN or RST)."},
        {"ct_flushed", "Connections removed by ct flush."},
        {"ct_reopened", "Closed TCP connections that a new SYN reopened."},
        {"ct_events", "Conntrack events queued for the offload provider."},
        {"ct_events_dropped", "Conntrack events dropped because the event ring was full."},
        {"ct_events_deferred", "Conntrack events deferred to a later poll."},
        {"ct_hw_folds", "Offloaded connections whose NIC counters were folded back into conntrack."},
        {"ct_probes", "Conntrack lookups whose first candidate was another connection's (a signature collision), "
                      "looked up again in full."},
        {"ct_invalid", "Packets conntrack judged invalid, by reason."},
        // offload (the rte_flow provider, also on the NIC model)
        {"offload_installed", "Connections whose hardware rules are installed now."},
        {"offload_offloads", "Connections offloaded to the NIC."},
        {"offload_offloads_aso", "Connections offloaded with a CONNTRACK (ASO) object."},
        {"offload_offloads_flows", "Connections offloaded as exact flow rules."},
        {"offload_removed", "Offloaded connections whose hardware rules were removed."},
        {"offload_aged", "Offloaded connections the NIC reported aged out."},
        {"offload_closing", "Offloaded connections taken back to software because they were closing."},
        {"offload_revoked", "Offloads revoked because the rules changed."},
        {"offload_resyncs", "Offloaded connections whose state was synchronised back from the NIC."},
        {"offload_resyncs_liberal", "Resyncs that fell back to liberal TCP window checking."},
        {"offload_in_flight", "Hardware rule operations submitted and not yet completed."},
        {"offload_pending", "Offload operations waiting to be submitted."},
        {"offload_retries", "Offload operations that were retried."},
        {"offload_jobs_in_use", "Offload jobs in use now."},
        {"offload_jobs_limit", "Offload jobs available in all."},
        {"offload_backlog_drops", "Offload requests dropped because the backlog was full."},
        {"offload_hw_templates", "Hardware template tables created."},
        {"offload_shared_rules", "Hardware rules shared between connections."},
        {"offload_hw_max_counters", "Flow counters the NIC offers."},
        {"offload_domain_transfer", "Whether the rules go to the e-switch (transfer) domain (1) or to each port's NIC Rx (0)."},
        {"offload_conntrack_aso", "Whether connections are offloaded with CONNTRACK objects (1) or flow rules (0)."},
        {"offload_ct_ops_outstanding", "CONNTRACK object operations outstanding now."},
        {"offload_ct_ops_outstanding_max", "The most CONNTRACK object operations outstanding at once."},
        {"offload_ct_ops_limit", "The most CONNTRACK object operations allowed outstanding."},
        {"offload_engine_sws", "Whether the provider runs DV software steering (1) or hardware steering (0)."},
        {"offload_flow_queue_size", "Entries of each hardware flow queue."},
        {"offload_in_flight_limit", "The most hardware rule operations allowed in flight."},
        {"offload_resync_deferred", "Resyncs deferred to a later poll."},
        {"offload_aged_reports", "Aging reports the NIC delivered."},
        {"offload_aged_reports_stale", "Aging reports about connections already gone."},
        {"offload_rules_full", "Table-0 rules the NIC runs whole."},
        {"offload_rules_jump_ct", "Table-0 rules the NIC matches and sends to its conntrack stage."},
        {"offload_rules_mark", "Table-0 rules the NIC only marks for software."},
        {"offload_rules_software", "Table-0 rules left to software."},
        {"offload_failed", "Offload operations that failed, by reason."},
        {"offload_refused", "Connections the provider would not offload, by reason."},
        {"offload_nic_rx", "Packets the NIC model received."},
        {"offload_nic_forwarded", "Packets the NIC model forwarded itself."},
        {"offload_nic_dropped", "Packets the NIC model dropped by rule."},
        {"offload_nic_to_software", "Packets the NIC model passed to the software queues."},
        {"offload_nic_ct_invalid", "Packets the NIC model's conntrack judged invalid."},
        {"offload_nic_ct_changed", "Packets the NIC model's conntrack saw change a connection's state."},
        {"offload_nic_no_rx_flows", "Packets the NIC model received with no receive rules installed."},
        {"offload_nic_miss_dropped", "Packets the NIC model dropped on a table miss."},
        {"offload_nic_rewritten", "Packets the NIC model decapsulated, modified or encapsulated."},
        {"offload_nic_rss_off_port", "Packets the NIC model's RSS hashed on other fields than the port's own RSS."},
        {"offload_nic_rules_in_use", "Flow rules in use in the NIC model now."},
        {"offload_nic_ct_in_use", "CONNTRACK objects in use in the NIC model now."},
        {"offload_nic_ct_overruns", "CONNTRACK operations the NIC model could not queue."},
        {"offload_nic_counters_in_use", "Flow counters in use in the NIC model now."},
        {"offload_nic_ct_wqes_max", "The most CONNTRACK work queue entries outstanding in the NIC model at once."},
        {"offload_nic_refusals", "Rules the NIC model refused."},
        {"offload_info", "The offload provider, its domain and conntrack strategy (and why) in labels; always 1."},
        // the daemon
        {"build_info", "The daemon's version, git revision and DPDK version in labels; always 1."},
        {"mempool_size", "Objects (mbufs) the DPDK mempool holds in all."},
        {"mempool_available", "Objects (mbufs) free in the DPDK mempool, its per-lcore caches included."},
        {"mempool_in_use", "Objects (mbufs) of the DPDK mempool in use (on rings, in queues, in the workers)."},
    };
    auto seconds = [](std::string h) {
      if (h.rfind("TSC cycles", 0) == 0) h.replace(0, 10, "Seconds");
      return h;
    };
#define DP_HELP(name, what) \
  m[std::string("worker_") + (std::string(#name).ends_with("_cycles") ? std::string(#name).substr(0, std::string(#name).size() - 7) + "_seconds" : #name)] = seconds(what);
    DP_WORKER_COUNTERS(DP_HELP)
#undef DP_HELP
    for (int i = 0; i < static_cast<int>(Tunnel::kCount); i++)
      m[std::string("overlay_") + tunnel_name(static_cast<Tunnel>(i))] = kTunnelHelp[i];
    return m;
  }();
  return d;
}

}  // namespace

std::string metric_help(const std::string& family) {
  auto it = descriptions().find(family);
  return it == descriptions().end() ? "" : it->second;
}

std::string stats_prometheus(const StatsSnapshot& s) {
  Families f;
  if (!s.build.version.empty())
    f.add("build_info", true,
          "version=\"" + label(s.build.version) + "\",revision=\"" + label(s.build.revision) + "\",dpdk=\"" +
              label(s.build.dpdk) + "\"",
          1);
  for (const auto& w : s.workers) {
    const std::string l = "worker=\"" + std::to_string(w.id) + "\",lcore=\"" + std::to_string(w.lcore) + "\"";
    for (const auto& [k, v] : w.counters) {
      // TSC cycles in seconds (Prometheus' base unit); without the TSC's
      // rate (never, on a running daemon) they are left out, not mislabelled.
      if (k.ends_with("_cycles")) {
        if (s.tsc_hz > 0)
          f.add("worker_" + k.substr(0, k.size() - 7) + "_seconds", false, l, real(static_cast<double>(v) / s.tsc_hz));
        continue;
      }
      f.add("worker_" + k, false, l, v);
    }
  }
  for (const auto& p : s.ports) {
    const std::string l = "port=\"" + label(p.name) + "\"";
    for (const auto& [k, v] : p.counters) f.add("port_" + k, port_is_gauge(k), l, v);
  }
  for (const auto& [k, v] : s.host) f.add(k, false, "", v);
  for (const auto& [k, v] : s.drops) f.add("drops", false, "reason=\"" + label(k) + "\"", v);
  for (const auto& [k, v] : s.overlay) f.add("overlay_" + k, false, "", v);
  for (const auto& r : s.rules) {
    const std::string l = "rule=\"" + std::to_string(r.id) + "\",table=\"" + std::to_string(r.table) + "\"";
    f.add("rule_packets", false, l, r.packets);
    f.add("rule_bytes", false, l, r.bytes);
  }
  for (const auto& [k, v] : s.ct) {
    if (k.rfind("invalid_", 0) == 0) {
      f.add("ct_invalid", false, "reason=\"" + label(k.substr(8)) + "\"", v);
      continue;
    }
    f.add("ct_" + k, ct_is_gauge(k), "", v);
  }
  const std::string prov = "provider=\"" + label(s.offload_provider) + "\"";
  for (const auto& [k, v] : s.offload) {
    const bool g = s.offload_gauges.count(k) > 0;
    // failed_<reason>, refused_<reason>: one family each, the reason a label.
    if (k.rfind("failed_", 0) == 0 || k.rfind("refused_", 0) == 0) {
      const size_t u = k.find('_');
      f.add("offload_" + k.substr(0, u), false, prov + ",reason=\"" + label(k.substr(u + 1)) + "\"", v);
      continue;
    }
    f.add("offload_" + k, g, prov, v);
  }
  std::string info = prov;
  for (const auto& [k, v] : s.offload_notes) info += "," + metric(k) + "=\"" + label(v) + "\"";
  f.add("offload_info", true, info, 1);
  for (const auto& m : s.mempools) {
    const std::string l = "pool=\"" + label(m.name) + "\"";
    f.add("mempool_size", true, l, m.size);
    f.add("mempool_available", true, l, m.available);
    f.add("mempool_in_use", true, l, m.in_use);
  }
  // Prometheus' standard process metrics (client_golang's names and HELP).
  if (s.process.ok) {
    const StatsSnapshot::Process& p = s.process;
    f.add_raw("process_cpu_seconds_total", false, "", real(p.cpu_seconds),
              "Total user and system CPU time spent in seconds.", "");
    f.add_raw("process_resident_memory_bytes", true, "", std::to_string(p.resident_bytes),
              "Resident memory size in bytes.", "");
    f.add_raw("process_virtual_memory_bytes", true, "", std::to_string(p.virtual_bytes),
              "Virtual memory size in bytes.", "");
    f.add_raw("process_open_fds", true, "", std::to_string(p.open_fds), "Number of open file descriptors.", "");
    f.add_raw("process_max_fds", true, "", std::to_string(p.max_fds),
              "Maximum number of open file descriptors.", "");
    f.add_raw("process_start_time_seconds", true, "", real(p.start_time_seconds),
              "Start time of the process since unix epoch in seconds.", "");
  }
  return f.text();
}

StatsSnapshot::Process read_process() {
  StatsSnapshot::Process p;
  std::ifstream st("/proc/self/stat");
  std::string line;
  if (!std::getline(st, line)) return p;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return p;
  // Fields from 3 (state) on, after the command name in parentheses.
  std::istringstream in(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string x; in >> x;) f.push_back(x);
  if (f.size() < 22) return p;
  auto at = [&](int field) { return strtoull(f[static_cast<size_t>(field - 3)].c_str(), nullptr, 10); };
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const long page = sysconf(_SC_PAGESIZE);
  p.cpu_seconds = static_cast<double>(at(14) + at(15)) / tick;  // utime + stime
  p.virtual_bytes = at(23);
  p.resident_bytes = at(24) * static_cast<uint64_t>(page);
  uint64_t btime = 0;
  std::ifstream ps("/proc/stat");
  for (std::string k; ps >> k;) {
    if (k == "btime") {
      ps >> btime;
      break;
    }
    std::getline(ps, k);
  }
  if (!btime) return p;
  p.start_time_seconds = static_cast<double>(btime) + static_cast<double>(at(22)) / tick;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    p.open_fds++;
  if (p.open_fds) p.open_fds--;  // the directory iterator's own
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) p.max_fds = rl.rlim_cur;
  p.ok = true;
  return p;
}

}  // namespace dp
