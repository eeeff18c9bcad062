#include "harness/profiles.h"

#include <array>

namespace harness {

namespace {

constexpr std::array<std::string_view, 2> kScenarios{"firewall", "overlay-nat"};
constexpr std::array<std::string_view, 2> kTunnels{"vxlan", "geneve"};
constexpr std::array<std::string_view, 2> kProtos{"tcp", "udp"};
constexpr std::array<std::string_view, 2> kSegmentations{"wire", "host"};
constexpr std::array<std::string_view, 3> kAttaches{"af_packet", "memif", "pci"};
static_assert(kScenarios.size() == static_cast<size_t>(ScenarioKind::kCount));
static_assert(kTunnels.size() == static_cast<size_t>(Tunnel::kCount));
static_assert(kProtos.size() == static_cast<size_t>(Proto::kCount));
static_assert(kSegmentations.size() == static_cast<size_t>(Segmentation::kCount));
static_assert(kAttaches.size() == static_cast<size_t>(Attach::kCount));

constexpr unsigned kAllPorts = bit(Attach::kAfPacket) | bit(Attach::kMemif) | bit(Attach::kPci);
constexpr unsigned kFirewall = bit(ScenarioKind::kFirewall);
constexpr unsigned kBothScenarios = kFirewall | bit(ScenarioKind::kOverlayNat);
// The tunnels of overlay-nat: the dataplane's overlay.vxlan and
// overlay.geneve, OVS's userspace vxlan and geneve tunnel ports, the
// kernel's vxlan and geneve devices. None where the scenario is not built.
constexpr unsigned kBothTunnels = bit(Tunnel::kVxlan) | bit(Tunnel::kGeneve), kNoTunnel = 0;
constexpr unsigned kWire = bit(Segmentation::kWire);
constexpr unsigned kBothSegmentations = kWire | bit(Segmentation::kHost);

// Index = DutKind. The order is the order names are offered in.
constexpr DutProfile kProfiles[] = {
    {DutKind::kDataplane, "dataplane", "this project's daemon", DutRole::kSubject, kBothScenarios, kBothTunnels, kWire,
     kAllPorts, true, false, true},
    {DutKind::kOvsDpdk, "ovs-dpdk", "Open vSwitch's userspace datapath with ct()", DutRole::kPeer, kBothScenarios,
     kBothTunnels, kWire, kAllPorts, true, false, false},
    {DutKind::kKernelCt, "kernel-ct", "the Linux kernel: a router with nftables ct state", DutRole::kPeer,
     kBothScenarios, kBothTunnels, kBothSegmentations, bit(Attach::kAfPacket), true, false, false},
    {DutKind::kTestpmdIo, "testpmd-io", "dpdk-testpmd forwarding without looking (the bed's ceiling)",
     DutRole::kCeiling, kFirewall, kNoTunnel, kWire, kAllPorts, false, false, false},
    {DutKind::kOvsDpdkOffload, "ovs-dpdk-offload", "OVS-DPDK with hw-offload=true on ConnectX representors",
     DutRole::kPeer, kFirewall, kNoTunnel, kWire, kAllPorts, true, true, true},
    {DutKind::kOvsKernelTc, "ovs-kernel-tc", "kernel OVS with TC flower offload on ConnectX representors",
     DutRole::kPeer, kFirewall, kNoTunnel, kBothSegmentations, bit(Attach::kAfPacket), true, true, true},
    {DutKind::kTestpmdRxonly, "testpmd-rxonly", "dpdk-testpmd receiving only (the generator's tests)",
     DutRole::kTool, kFirewall, kNoTunnel, kWire, kAllPorts, false, false, false},
};


template <size_t N>
std::vector<std::string> all(const std::array<std::string_view, N>& a) {
  return {a.begin(), a.end()};
}

template <typename E, size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& a, std::string_view s) {
  for (size_t i = 0; i < N; i++)
    if (a[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

std::string_view name(ScenarioKind s) { return kScenarios[static_cast<size_t>(s)]; }
std::string_view name(Tunnel t) { return kTunnels[static_cast<size_t>(t)]; }
std::string_view name(Proto p) { return kProtos[static_cast<size_t>(p)]; }
std::string_view name(Segmentation s) { return kSegmentations[static_cast<size_t>(s)]; }
std::string_view name(Attach a) { return kAttaches[static_cast<size_t>(a)]; }
std::optional<ScenarioKind> parse_scenario(std::string_view s) { return parse<ScenarioKind>(kScenarios, s); }
std::optional<Tunnel> parse_tunnel(std::string_view s) { return parse<Tunnel>(kTunnels, s); }
std::optional<Proto> parse_proto(std::string_view s) { return parse<Proto>(kProtos, s); }
std::optional<Segmentation> parse_segmentation(std::string_view s) { return parse<Segmentation>(kSegmentations, s); }
std::vector<std::string> scenario_names() { return all(kScenarios); }
std::vector<std::string> tunnel_names() { return all(kTunnels); }
std::vector<std::string> proto_names() { return all(kProtos); }
std::vector<std::string> segmentation_names() { return all(kSegmentations); }

std::string accepted(const std::vector<std::string>& names) {
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  return all;
}

std::string parse_proto_list(std::string_view list, std::vector<Proto>* out) {
  std::vector<Proto> v;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view x = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (x.empty()) continue;
    const std::optional<Proto> p = parse_proto(x);
    if (!p) return "unknown value '" + std::string(x) + "' (one of: " + accepted(proto_names()) + ")";
    v.push_back(*p);
  }
  if (v.empty()) return "names nothing (one or more of: " + accepted(proto_names()) + ")";
  *out = std::move(v);
  return "";
}

std::span<const DutProfile> dut_profiles() { return kProfiles; }

const DutProfile& profile(DutKind k) {
  static_assert([] {
    for (size_t i = 0; i < std::size(kProfiles); i++)
      if (static_cast<size_t>(kProfiles[i].kind) != i) return false;
    return true;
  }(), "kProfiles is indexed by DutKind");
  return kProfiles[static_cast<size_t>(k)];
}

const DutProfile* find_dut(std::string_view n) {
  for (const DutProfile& p : kProfiles)
    if (p.name == n) return &p;
  return nullptr;
}

std::string_view name(DutKind k) { return profile(k).name; }

std::vector<std::string> dut_names() {
  std::vector<std::string> v;
  for (const DutProfile& p : kProfiles)
    if (p.role != DutRole::kTool) v.emplace_back(p.name);
  return v;
}

std::vector<std::string> dut_names_of(std::initializer_list<DutKind> kinds) {
  std::vector<std::string> v;
  for (DutKind k : kinds) v.emplace_back(name(k));
  return v;
}

std::string_view role_dut(DutRole r) {
  for (const DutProfile& p : kProfiles)
    if (p.role == r) return p.name;
  return {};
}

}  // namespace harness
