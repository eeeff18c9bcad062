// A private Open vSwitch for one DUT session, on its DutHost (a namespace
// here or a lab's DUT host): its database, sockets and logs in the host's
// work directory, ovsdb-server and ovs-vswitchd, a bridge br0 with two
// ports (p0 and p1, OpenFlow ports 1 and 2) and the ct() firewall flows.
// overlay-nat: OVS's userspace tunnelling instead: br-phy holds p1 and the
// local VTEP's address on its internal (tap) port, br-int holds p0 and a
// vxlan or geneve port toward the remote VTEP, and ct(nat) flows translate
// the VM.
// Every OVS profile (ovs-dpdk on af_packet, memif or PCI ports,
// ovs-dpdk-offload, ovs-kernel-tc) starts it here.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "harness/dut.h"
#include "sdn/status.h"

namespace harness {

struct OvsSpec {
  DutHost* host = nullptr;
  std::string log_dir;           // here: the programs' output
  bool dpdk = true;              // netdev bridge with type=dpdk ports; else the kernel datapath
  bool hw_offload = false;       // other_config:hw-offload=true (and tc-policy=none on the kernel datapath)
  bool pci = false;               // a port is a PCI device (else EAL gets --no-pci)
  std::string file_prefix;       // DPDK's (noted on the host, removed by its undo)
  std::string lcore_mask, pmd_mask;  // empty: OVS's defaults
  std::array<std::string, 2> ports;  // dpdk: the ports' devargs; kernel: interface names
  int mtu = 0;                   // the ports' mtu_request; 0: OVS's default
  const Overlay* overlay = nullptr;  // the overlay-nat scenario's bridges and flows, with its tunnel port
};

class Ovs {
 public:
  ~Ovs() { stop(); }
  sdn::Status start(const OvsSpec& spec);
  void stop();
  // ovs-vsctl on its database; ovs-appctl to its vswitchd. `out`: the output.
  sdn::Status vsctl(std::vector<std::string> args, std::string* out = nullptr);
  sdn::Status appctl(std::vector<std::string> args, std::string* out = nullptr);
  bool running() { return vs_.pid() > 0 && vs_.running(); }
  pid_t pid() const { return vs_.pid(); }  // ovs-vswitchd's, on a local host
  const std::string& log() const { return log_; }

 private:
  sdn::Status cmd(std::vector<std::string> argv, std::string* out = nullptr,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
  sdn::Result<std::string> vswitchd();
  sdn::Status firewall_bridge();
  sdn::Status overlay_bridges();
  std::vector<std::string> dpdk_port(const std::string& bridge, int i) const;
  OvsSpec spec_;
  std::string run_, log_;
  Job db_, vs_;
};

}  // namespace harness
