// The daemon's one YAML file: EAL, ports, workers, conntrack, offload, tables.
// Every error names the file, the line and the key. See configs/dataplane/.
#pragma once

#include <string>
#include <vector>

#include "ctrack/tracker.h"
#include "datapath/config.h"
#include "dataplane/offload_config.h"
#include "dataplane/overlay.h"
#include "dataplane/rules.h"
#include "features/ports/config.h"

namespace dp {

struct EalConfig {
  std::string file_prefix = "dataplane";
  bool no_huge = false;
  uint32_t memory_mb = 512;
  std::vector<std::string> extra;
  // Every field needs a restart (a reload compares them all: a new one is too).
  bool operator==(const EalConfig&) const = default;
};


struct Config {
  std::string file;
  EalConfig eal;
  std::vector<PortConfig> ports;
  WorkerConfig workers;
  ctrack::Config ct;
  OffloadConfig offload;
  OverlayConfig overlay;
  std::string control_socket;  // default /run/dataplane/<file_prefix>.sock
  int control_line = 0;
  std::string metrics_listen;  // Prometheus /metrics: "HOST:PORT" or "unix:/PATH"; empty: off
  int metrics_line = 0;
  int capacity_line = 0;
  std::vector<Rule> rules;
  PortNames port_names() const;

  // Command-line settings that override the file (kept for reloads).
  struct Cli {
    std::string file_prefix;
    bool no_huge = false;
    std::string log_level;  // for the dataplane.* rte_log types; empty: info
  } cli;
  // Applies `cli`; checks the prefix as eal.file_prefix is checked.
  Status apply_cli();
};

// Each worker's conntrack shard as the daemon creates it from `cfg`: the
// `conntrack:` section (each shard holds ct.capacity), with no offload
// event ring when no provider would read it. dataplane-bench builds its
// trackers with it too, so that it measures what the daemon runs.
ctrack::Config conntrack_shard_config(const Config& cfg);

// A DPDK file prefix: letters, digits, '-' and '_' (it names a directory).
Status check_file_prefix(const std::string& p);
// A control socket path: absolute, and fits sockaddr_un (107 bytes).
Status check_socket_path(const std::string& p);

// What the config asks of this host, checked before EAL init so that a
// config EAL or the allocator would refuse late (or the OOM killer would
// answer) fails with file:line: key instead: lcores this process may run
// on, conntrack memory against MemAvailable.
// With `notes` (--check): a dataplane that runs this very file (it holds
// the control socket's lock, and its --config is this file) is not in the
// way: the control socket and the metrics address it holds are not checked
// as free, and a note says so. Another dataplane on the control socket is
// an error. And the ports' devices must exist (net_af_packet's iface=, PCI
// addresses).
Status check_host(const Config& cfg, std::vector<std::string>* notes = nullptr);

Result<Config> load_config(const std::string& path);
// Same, from text (for tests); `name` is used in messages.
Result<Config> parse_config(const std::string& text, const std::string& name);
// One rule from a YAML flow mapping, as `dataplane-ctl rule add` sends it.
Result<Rule> parse_rule_yaml(const std::string& text, const PortNames& ports);

}  // namespace dp
