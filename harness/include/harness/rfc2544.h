// `harness run --mode rfc2544`: the DUTs measured at their own limit over
// net_memif with harness-gen (stateful TCP, RFC 2544 zero-loss search,
// latency at 10/50/90 % of the found rate), rows in DIR/rfc2544.csv.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "harness/profiles.h"
#include "harness/scenario.h"
#include "sdn/status.h"

namespace harness {

struct Rfc2544Config {
  std::vector<int> frames{64, 512, 1518};
  std::vector<int> conns{1000, 100000};
  std::vector<std::string> duts = dut_names_of({DutKind::kDataplane, DutKind::kTestpmdIo, DutKind::kOvsDpdk});
  // Each DUT in each: the firewall (the default) or overlay-nat (harness-gen
  // --overlay: the server side is a VTEP behind the DUT's source NAT, VXLAN
  // or Geneve by `tunnel`).
  std::vector<ScenarioKind> scenarios{ScenarioKind::kFirewall};
  Tunnel tunnel = Tunnel::kVxlan;
  double trial_s = 2;
  double loss = 0;  // fraction allowed at the zero-loss rate
  Proto proto = Proto::kTcp;  // or UDP: flows set up by a datagram each way (no churn)
  double churn_s = 2;  // per cell, connections opened and closed after the trials (0: none; TCP only)
  int churn_conns = 500000;  // at most this many per cell (the trackers get room for them)
  long long tracker_capacity = 0;  // 0: each DUT's tracker sized to fit; else exactly this
  int repeat = 1;
  bool resume = false;  // out_dir holds a killed run: measure only the cells it lacks
  std::string out_dir, source_dir, build_dir, dataplane_config;
};

// Returns the number of error rows.
sdn::Result<int> run_rfc2544(const Rfc2544Config& cfg, const std::atomic<bool>& stop);

}  // namespace harness
