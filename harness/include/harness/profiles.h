// The harness's vocabulary, written once: the DUT profiles and what each can
// do, the scenarios and the segmentation modes. The command line, the YAML,
// the lab inventory, make_dut() and the reports read these tables. A name
// is parsed into its type where it comes in (parse_*) and printed back with
// name() where it goes out (CSV, messages).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

// With "overlay-nat" the server sits behind a VXLAN tunnel the DUT
// terminates and the client is source-NATed (README: harness, Scenarios).
enum class Scenario : uint8_t { kFirewall, kOverlayNat, kCount };
// How the endpoints hand TCP to the DUT: MTU-size frames as from a wire, or
// the host's TSO/GSO packets of up to 64 KB (kernel DUTs only).
enum class Segmentation : uint8_t { kWire, kHost, kCount };
// How a DUT's ports attach: net_af_packet on an interface, net_memif server
// sockets, or a PCI device.
enum class Attach : uint8_t { kAfPacket, kMemif, kPci, kCount };

std::string_view name(Scenario s);
std::string_view name(Segmentation s);
std::string_view name(Attach a);
std::optional<Scenario> parse_scenario(std::string_view s);
std::optional<Segmentation> parse_segmentation(std::string_view s);
// Every name of the enum, in order: {"firewall", "overlay-nat"}.
std::vector<std::string> scenario_names();
std::vector<std::string> segmentation_names();

// What a scenario asks of the bed, the dataplane and the rows.
struct ScenarioProfile {
  Scenario id;
  // The dataplane's config for it, under the source tree: a run given the
  // default config (firewall.yaml) runs the scenario's own.
  std::string_view dataplane_config;
  // The server behind a VXLAN tunnel the DUT terminates: the bed builds the
  // remote VTEP and every throughput row checks the tunnel carried it.
  bool overlay;
  // Col::overlay_check where no check is made.
  std::string_view no_check;
};
const ScenarioProfile& profile(Scenario s);
// The dataplane config a run of `s` uses when it was given `given`.
std::string dataplane_config_for(Scenario s, const std::string& given, const std::string& source_dir);

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
  unsigned scenarios;      // bit(Scenario)
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
