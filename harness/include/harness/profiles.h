// The harness's vocabulary, written once: the DUT profiles and what each can
// do, the scenarios, the overlay's tunnels and the segmentation modes. The
// command line, the YAML, the lab inventory, make_dut() and the reports read
// these tables. A name is parsed into its type where it comes in (parse_*)
// and printed back with name() where it goes out (CSV, messages). What a
// scenario does (the bed, the DUT config, the traffic, the checks) is its
// Scenario (scenario.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

// With "overlay-nat" the server sits behind a tunnel the DUT terminates and
// the client is source-NATed (README: harness, Scenarios).
enum class ScenarioKind : uint8_t { kFirewall, kOverlayNat, kCount };
// The overlay-nat scenario's tunnel (--tunnel): VXLAN (RFC 7348, UDP 4789)
// or Geneve (RFC 8926, UDP 6081).
enum class Tunnel : uint8_t { kVxlan, kGeneve, kCount };
// The traffic's transport: TCP connections or UDP flows (--proto).
enum class Proto : uint8_t { kTcp, kUdp, kCount };
// How the endpoints hand TCP to the DUT: MTU-size frames as from a wire, or
// the host's TSO/GSO packets of up to 64 KB (kernel DUTs only).
enum class Segmentation : uint8_t { kWire, kHost, kCount };
// How a DUT's ports attach: net_af_packet on an interface, net_memif server
// sockets, or a PCI device.
enum class Attach : uint8_t { kAfPacket, kMemif, kPci, kCount };

std::string_view name(ScenarioKind s);
std::string_view name(Tunnel t);
std::string_view name(Proto p);
std::string_view name(Segmentation s);
std::string_view name(Attach a);
std::optional<ScenarioKind> parse_scenario(std::string_view s);
std::optional<Tunnel> parse_tunnel(std::string_view s);
std::optional<Proto> parse_proto(std::string_view s);
std::optional<Segmentation> parse_segmentation(std::string_view s);
// Every name of the enum, in order: {"firewall", "overlay-nat"}.
std::vector<std::string> scenario_names();
std::vector<std::string> tunnel_names();
std::vector<std::string> proto_names();
std::vector<std::string> segmentation_names();
// A comma-separated list of protos (sweep's --proto tcp,udp), each parsed
// once, in order: "" with *out set, or what is wrong with it (an empty list,
// or the bad value with the accepted ones); *out is left alone then.
std::string parse_proto_list(std::string_view list, std::vector<Proto>* out);
// "tcp, udp": the accepted names, for a message.
std::string accepted(const std::vector<std::string>& names);

// The dataplane config every run starts from unless given another, under
// the source tree; a scenario with its own (Scenario::dataplane_config_for)
// runs that one instead.
inline constexpr std::string_view kDefaultDataplaneConfig = "configs/dataplane/firewall.yaml";

template <typename E>
constexpr unsigned bit(E e) {
  return 1u << static_cast<unsigned>(e);
}

enum class DutKind : uint8_t {
  kDataplane,
  kOvsDpdk,
  kKernelCt,
  kTestpmdIo,
  kOvsDpdkOffload,
  kOvsKernelTc,
  kTestpmdRxonly,
};

// What a reader of the results takes a DUT for.
enum class DutRole : uint8_t {
  kSubject,  // the dataplane: every other DUT is compared with it
  kCeiling,  // testpmd-io: forwards without looking, so the bed's own ceiling
  kPeer,     // a stateful peer (OVS, the kernel)
  kTool,     // not offered as a DUT (testpmd-rxonly: a sink for the generator's own checks)
};

// One profile's capabilities, checked before anything starts.
struct DutProfile {
  DutKind kind;
  std::string_view name;
  std::string_view summary;
  DutRole role;
  unsigned scenarios;      // bit(ScenarioKind)
  unsigned tunnels;        // bit(Tunnel): the overlay-nat tunnels it terminates
  unsigned segmentations;  // bit(Segmentation)
  unsigned attaches;       // bit(Attach)
  bool tracker;            // keeps connection state: its entries are counted and sized
  bool needs_connectx;     // a ConnectX in switchdev mode on the DUT host (preconditions)
  bool offload_counted;    // counts the flows its NIC carries
};

std::span<const DutProfile> dut_profiles();
const DutProfile& profile(DutKind k);
// By name, the tools' too; null when there is none.
const DutProfile* find_dut(std::string_view name);
std::string_view name(DutKind k);
// The names offered as DUTs (--dut, YAML duts, a lab's profiles), in order.
std::vector<std::string> dut_names();
// The names of `kinds`, in that order (the default DUT lists).
std::vector<std::string> dut_names_of(std::initializer_list<DutKind> kinds);
// The profiles with `pred`, as "a, b and c" (for messages).
template <typename Pred>
std::string dut_list(Pred pred) {
  std::vector<std::string_view> v;
  for (const DutProfile& p : dut_profiles())
    if (p.role != DutRole::kTool && pred(p)) v.push_back(p.name);
  std::string o;
  for (size_t i = 0; i < v.size(); i++) o += std::string(i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") += v[i];
  return o;
}
// The one DUT of a role (kSubject, kCeiling).
std::string_view role_dut(DutRole r);

}  // namespace harness
