// A private Open vSwitch with DPDK for one run, here or in a namespace: its
// database, sockets and logs in the run's directory, ovsdb-server and the
// DPDK build of ovs-vswitchd, a netdev bridge br0 with two type=dpdk ports
// (p0 and p1, OpenFlow ports 1 and 2) and the ct() firewall flows. The
// sweep's ovs-dpdk (af_packet ports) and RFC 2544's (memif ports) both
// start it; the lab's runs it over SSH on the DUT host (lab_dut.cc).
#pragma once

#include <string>
#include <vector>

#include "harness/tools.h"
#include "sdn/status.h"
#include "testbed/process.h"

namespace testbed {
class Netns;
}

namespace harness {

struct OvsSpec {
  std::string run_dir;           // database, sockets, logs
  const testbed::Netns* ns = nullptr;  // where its processes run; null: here
  std::string file_prefix;       // DPDK's (its hugepage files are removed at stop)
  std::string lcore_mask, pmd_mask;
  std::string dev0, dev1;        // the ports' dpdk-devargs
  int mtu = 0;                   // the ports' mtu_request; 0: OVS's default
};

class LocalOvs {
 public:
  ~LocalOvs() { stop(); }
  sdn::Status start(const OvsSpec& spec);
  void stop();
  // ovs-vsctl on its database; ovs-appctl to its vswitchd. `out`: the output.
  sdn::Status vsctl(std::vector<std::string> args, std::string* out = nullptr);
  sdn::Status appctl(std::vector<std::string> args, std::string* out = nullptr);
  sdn::Status cmd(const std::vector<std::string>& argv, std::string* out = nullptr);
  const std::string& run_dir() const { return spec_.run_dir; }

 private:
  OvsSpec spec_;
  std::vector<std::string> env_;
  testbed::Process db_, vs_;
};

}  // namespace harness
