// A lab inventory (configs/harness/lab.example.yaml): the client, server and
// DUT hosts the harness drives over SSH, their data-plane interfaces and
// addresses, CPUs per tool, the link speed, and the DUT profiles the DUT host
// can run. `harness run --lab FILE` measures on it; `harness testbed up
// --inventory FILE` writes one for the namespace testbed (sshd in each
// namespace), so the lab path is exercised end to end on one machine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/ssh.h"
#include "sdn/status.h"

namespace harness {

struct LabHost {
  SshHost ssh;
  std::string interface;                     // client, server: the data-plane interface
  std::string address;                       // client, server: its IPv4 address
  std::map<std::string, std::string> cpus;   // tool (iperf3, sockperf, harness-conns) -> taskset CPU list
};

struct LabDutHost {
  SshHost ssh;
  std::vector<std::string> interfaces;  // client side, server side
  std::vector<std::string> profiles;    // DUT profiles this host can run
  // The dataplane profile, as installed on the DUT host.
  std::string dataplane_config;          // its config file there
  std::string dataplane_program = "dataplane";
  std::string dataplane_ctl = "dataplane-ctl";
  std::string hw_check;                  // PCI address for `dataplane --hw-check` first; empty: none
};

struct Inventory {
  std::string path;
  LabHost client, server;
  LabDutHost dut;
  double link_gbps = 0;  // 0: not given (the report then has no line rate)
  int mtu = 1500;
  std::string harness_conns = "harness-conns";  // on the client and server hosts
  std::vector<SshHost> ssh_hosts() const { return {client.ssh, server.ssh, dut.ssh}; }
};

// Reads and checks an inventory. Errors name file:line and the key.
sdn::Result<Inventory> load_inventory(const std::string& path);

// Writes an inventory (for the namespace testbed's).
sdn::Status write_inventory(const Inventory& inv, const std::string& path);

}  // namespace harness
