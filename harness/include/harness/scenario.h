// A scenario's behaviour, once: what it builds on the namespace testbed, the
// dataplane config it runs, what its traffic needs (iperf3 servers' JSON,
// harness-gen's flags), what it refuses, and the evidence each row carries
// (Col::overlay_check). The sweep, the RFC 2544 mode, the bed and the DUT
// profiles ask the run's Scenario instead of comparing its kind. The kinds,
// names and tunnels are in profiles.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/profiles.h"
#include "harness/results.h"
#include "sdn/status.h"

namespace harness {

struct Bed;
class Transport;

// overlay-nat's tunnel as every side builds it: the remote VTEP on the
// testbed's server, the kernel-ct DUT's local VTEP, OVS's tunnel port, the
// dataplane's overlay section and harness-gen's frames.
struct Overlay {
  Tunnel tunnel;
  std::string_view link_type;  // `ip link add ... type T` and OVS's Interface type
  std::string_view device;     // the VTEP's kernel device (the server's; kernel-ct's own)
  std::string_view label;      // in the rows' evidence: "VXLAN", "Geneve"
  uint16_t udp_port;           // IANA: 4789, 6081
  uint32_t vni;
  int overhead;                // outer bytes before the inner frame (Ethernet, IPv4, UDP, the tunnel's 8)
  bool binds_underlay;         // the kernel device takes `local` and `dev` (VXLAN; Geneve routes instead)
  std::string_view kernel_config;     // what a kernel needs for the device (CONFIG_VXLAN, CONFIG_GENEVE)
  std::string_view dataplane_config;  // the dataplane's config under the source tree
};

// `ip link add` for a VTEP device: the overlay's device with `mac`, toward
// `remote`; VXLAN also binds `local` and the underlay device `dev` (the
// kernel's geneve device has neither: the route to `remote` picks them).
std::vector<std::string> vtep_link_argv(const Overlay& o, const std::string& mac, const std::string& local,
                                        const std::string& remote, const std::string& dev);

class Scenario {
 public:
  virtual ~Scenario() = default;
  virtual ScenarioKind kind() const = 0;
  std::string_view name() const { return harness::name(kind()); }
  // The overlay's tunnel, or null when there is none (the firewall).
  virtual const Overlay* overlay() const { return nullptr; }

  // The testbed: what the server side gets once client -- dut -- server
  // are linked (the firewall: its address on s0; overlay-nat: the remote
  // VTEP and the overlay's routes).
  virtual sdn::Status build_bed(Bed& b) const = 0;
  // The dataplane config a run uses when it was given `given` (the default
  // firewall.yaml gives way to the scenario's own).
  virtual std::string dataplane_config_for(const std::string& given, const std::string& source_dir) const = 0;
  // Why a run of this scenario cannot be made, or "": the RFC 2544 mode with
  // `proto`, and a lab inventory's hosts.
  virtual std::string refuse_rfc2544(Proto /*proto*/) const { return ""; }
  virtual std::string refuse_lab() const { return ""; }

  // What its raw output directories are named after a DUT's name ("" for
  // the firewall, "-overlay-nat", "-overlay-nat-geneve").
  virtual std::string dir_suffix() const { return ""; }

  // Traffic: the iperf3 servers write their JSON (the sweep's check reads
  // the peer each test came from), and harness-gen's flags.
  virtual bool server_json() const { return false; }
  virtual std::vector<std::string> gen_args() const { return {}; }

  // Evidence. A row that makes no check says this.
  virtual std::string_view no_check() const = 0;
  // A sweep row's base value (throughput rows replace it with their check).
  virtual std::string_view base_check() const { return no_check(); }
  // The sweep: the server side's counters before a throughput run, then the
  // row's check after it (server_logs: each iperf3 server's JSON). A failed
  // check makes an ok row an error naming it.
  using Counts = std::pair<long long, long long>;
  virtual sdn::Result<Counts> before_run(Transport& /*tr*/) const { return Counts{0, 0}; }
  virtual void check_run(Transport& /*tr*/, const sdn::Result<Counts>& /*before*/,
                         const std::vector<std::string>& /*server_logs*/, Row& r) const {
    r[Col::overlay_check] = no_check();
  }
  // A throughput cell's summary of its repetitions' checks.
  virtual void summarize(const std::vector<Row>& /*reps*/, Row& /*base*/) const {}
  // The RFC 2544 mode: harness-gen's JSON for `conns` connections.
  virtual void check_gen(const nlohmann::json& g, int conns, Row& r) const;
};

// The scenario of `kind`, with `tunnel` when it has one (the firewall has
// none and ignores it). One instance each, for the program's life.
const Scenario& scenario_of(ScenarioKind kind, Tunnel tunnel = Tunnel::kVxlan);
// The overlay of `tunnel`.
const Overlay& overlay_of(Tunnel tunnel);

}  // namespace harness
