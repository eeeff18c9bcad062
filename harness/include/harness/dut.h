// Devices under test. One profile per DUT (dataplane, testpmd-io, ovs-dpdk,
// ovs-dpdk-offload, ovs-kernel-tc, kernel-ct), written once against two
// parameters:
// - where it runs (DutHost): a namespace of the testbed on this machine, or
//   a lab's DUT host over SSH;
// - how its two ports attach (DutPort): net_af_packet on an interface,
//   net_memif server sockets, or a PCI device.
// The sweep (af_packet on the testbed), the lab (its DUT host's ports) and
// the RFC 2544 mode (memif) all start their DUTs through make_dut().
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/preconditions.h"
#include "harness/profiles.h"
#include "harness/scenario.h"
#include "harness/ssh.h"
#include "sdn/status.h"
#include "testbed/process.h"

namespace testbed {
class Netns;
}

namespace harness {

// Where a DUT's programs run. Everything a profile does on its host goes
// through here, so that one profile serves this machine and a lab host.
class DutHost {
 public:
  virtual ~DutHost() = default;
  // For messages: "the DUT namespace", "the DUT host root@10.0.0.9".
  virtual std::string describe() const = 0;
  // This machine: DPDK telemetry sockets of its programs can be read here.
  virtual bool local() const = 0;
  // A directory on the host for the DUT's own files (OVS's database).
  virtual std::string work_dir() const = 0;
  // Runs argv to completion; its output in *out. A non-zero exit is an error
  // carrying the output.
  virtual sdn::Status run(const std::vector<std::string>& argv, std::string* out = nullptr,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30)) = 0;
  // Starts a program that runs until stopped, its output into `log` (a file
  // here). A graceful one is stopped by TERM, up to 10 s, then KILL (a DPDK
  // program gives its ports and hugepages back).
  virtual sdn::Result<Job> spawn(const std::vector<std::string>& argv, const std::string& log, bool graceful) = 0;
  // A sysctl (`net.ipv4.ip_forward`) in the DUT's network namespace, or with
  // `host_wide` in the host's own (nf_conntrack_max is one value per kernel).
  virtual sdn::Result<long long> read_sysctl(const std::string& key, bool host_wide) = 0;
  // Sets it, noting the value before for undo().
  virtual sdn::Status set_sysctl(const std::string& key, long long value, bool host_wide) = 0;
  // Notes a DPDK file prefix or an nft table ("inet harness") for undo().
  virtual sdn::Status note_dpdk_prefix(const std::string& prefix) = 0;
  virtual sdn::Status note_nft_table(const std::string& family_and_name) = 0;
  // Undoes what was noted: sysctls as they were, DPDK files, nft tables.
  // (On a lab host a killed run's next run does it too.)
  virtual void undo() = 0;
  // Writes `content` to `path` on the host.
  sdn::Status write_file(const std::string& path, const std::string& content);
  // Runs commands for gather_host_facts().
  HostRunner runner();
};

// The testbed's DUT namespace (null: this machine's own); `work_dir` here.
std::unique_ptr<DutHost> local_host(const testbed::Netns* ns, std::string work_dir);
// Host "dut" of an SSH session.
std::unique_ptr<DutHost> ssh_host(SshSession& ssh);

// What harness runs on this machine that are gone (killed with -9) left:
// the testbed's sweep (namespaces, links, DPDK hugepage files and runtime
// dirs, the dataplane's control sockets and locks: Testbed::sweep_stale),
// and the host-wide sysctls their DUTs changed (nf_conntrack_max), put back.
// At a run's start and in `testbed down`; how many objects it removed or put
// back.
sdn::Result<int> sweep_dead_runs();

struct DutPort {
  Attach attach = Attach::kAfPacket;
  std::string name;  // the interface, the memif socket path, or the PCI address
};

// What a profile needs besides its host: ports, CPUs and files.
struct DutSite {
  DutHost* host = nullptr;
  std::array<DutPort, 2> ports;  // [0] faces the client, [1] the server
  int mtu = 1500;
  // The DPDK profiles' CPUs: the main (control) lcore and the one forwarding
  // lcore (testpmd's forwarding core, OVS's PMD thread; the dataplane's
  // worker with `place_dataplane`, else its config's own workers).
  int main_lcore = 0, fwd_lcore = 1;
  bool place_dataplane = false;
  std::string dir;         // here: logs
  std::string prefix_tag;  // DPDK file prefixes: TAG + "dp-" + pid ("harness-", "harness-lab-")
  // Tracker entries to make room for at start (0: the profile's default),
  // raised to that, or with `exact` set to it (a table made too small on
  // purpose); make_room() can still raise it where the DUT allows that live.
  long long tracker_room = 0;
  bool tracker_room_exact = false;
  // The dataplane: its programs on the host, and its config. With
  // `config_as_is` (a lab host's config names its own ports) the config is
  // checked there (--check, and --hw-check when `hw_check` names a profile)
  // and used unchanged; else it is read here and written to `dir` with the
  // site's ports, lcores and tracker room.
  std::string dataplane = "dataplane", dataplane_ctl = "dataplane-ctl";
  std::string dataplane_config;
  bool config_as_is = false;
  std::string hw_check;
  std::string source_dir;  // its git revision goes in the version
  // kernel-ct on the testbed: the DUT namespace is made a router with proxy
  // ARP for these endpoints (a lab's DUT host is set up as one already).
  std::string router_client_ip, router_server_ip;
  // With overlay-nat the DUT terminates the bed's tunnel (its overlay():
  // VXLAN or Geneve) and source-NATs the client (SweepConfig::scenario).
  const Scenario* scenario = &scenario_of(ScenarioKind::kFirewall);
  Segmentation segmentation = Segmentation::kWire;
};

// DPDK devargs of a port (af_packet with frames for the MTU, a memif server,
// or the PCI address).
std::string port_devargs(const DutPort& p, int index, int mtu);

struct LinkCount {
  long long rx_bytes = 0, rx_packets = 0, tx_bytes = 0, tx_packets = 0;
};

class Dut {
 public:
  virtual ~Dut() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  // Starts it on its site; the caller checks the path through it.
  virtual sdn::Status start() = 0;
  // Stops what start() started and undoes what it changed on the host. Safe
  // to call twice.
  virtual void stop() = 0;
  // The tracker's entries now; -1 when it cannot be read or there is none
  // (no_tracker() says which).
  virtual long long ct_entries() { return -1; }
  virtual long long offloaded() { return -1; }
  // Why ct_entries() has no figure when the DUT has no tracker at all.
  virtual std::string no_tracker() const { return ""; }
  // Makes room in the tracker for `conns` connections and says what it set;
  // called after start(). A DUT whose limit is fixed at start did it there
  // (DutSite::tracker_room).
  virtual sdn::Result<std::string> make_room(long long /*conns*/) { return std::string("no tracker to size"); }
  // The DUT's own drop counters, cumulative, by name (the sweep reports what
  // each run added). Policy drops are named "policy:...".
  virtual sdn::Result<std::map<std::string, long long>> drops() {
    return sdn::Status::error("this DUT reports no drop counters");
  }
  // What its drop counters cannot see, said next to them.
  virtual std::string drops_blind_spot() const { return ""; }
  // The bytes and frames each of its links carried, cumulative, by link name
  // (the kernel's counters of its ports' interfaces: what arrived at the DUT
  // and what it sent, whatever it forwards with). An error says why there are
  // none (memif or PCI ports: the kernel does not see their frames).
  virtual sdn::Result<std::map<std::string, LinkCount>> link_counts() {
    return sdn::Status::error("this DUT's links are not counted");
  }
  // Its drops split in two where every port faces a generator (memif):
  // frames it dropped itself (`own`) and its transmits that failed because
  // the generator did not drain (`gen`).
  struct DropSplit {
    long long own = 0, gen = 0;
  };
  virtual sdn::Result<DropSplit> drop_split() { return sdn::Status::error("this DUT's drop counters are not read"); }
  // Its forwarding threads' time on a CPU and waiting for one (ns,
  // cumulative; the kernel's schedstat of the threads pinned to the site's
  // forwarding lcore): a trial in which the forwarding thread waited for its
  // CPU (other programs on its core) did not see the DUT's own limit.
  struct CpuTime {
    long long run_ns = 0, wait_ns = 0;
  };
  virtual sdn::Result<CpuTime> forwarding_cpu() { return sdn::Status::error("this DUT's threads are not read"); }
  // Receive queues a generator needs per port: as many as the DUT sends on.
  virtual int gen_rx_queues() const { return 1; }
  // Still there: its programs running, its host answering.
  virtual sdn::Status alive() { return {}; }
};

// The profile `name` (profiles.h) on `site`, refused when the site asks for
// what the profile cannot do (a scenario, a segmentation mode, a port
// kind). Its preconditions on the host (a ConnectX in switchdev mode for
// the offload profiles) are checked by start().
sdn::Result<std::unique_ptr<Dut>> make_dut(const std::string& name, const DutSite& site);

// Tracker entries a DUT gets beyond the connections it must hold
// (--background-conns K, --mode rfc2544's K): the sweep's own.
inline constexpr long long kRoomHeadroom = 16384;

}  // namespace harness
