// The overlay through the real pipeline: VXLAN decap and encap (RFC 7348)
// with source NAT on the same connections, as a cloud host's DPU runs them
// between a VM and the wire. Encapsulated frames are compared byte for byte
// with scapy's VXLAN layer (tests/vxlan_golden.py, run with Debian's python).
#include <gtest/gtest.h>
#include <random>
#include <sstream>
#include <fstream>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <nlohmann/json.hpp>

#include "ctrack/frame.h"
#include "dataplane/steer.h"
#include "features/overlay/tunnel.h"
#include "features/tunnels.h"
#include "pipeline_fixture.h"
#include "test_main.h"
#include "testbed/process.h"

namespace dp {
namespace {

using ctrack::FrameSpec;

constexpr int kVm = 0, kWire = 1, kDrop = -1;

// The VM's side is port vm; the wire (underlay) carries VNI 100 to the
// remote VTEP 192.0.2.2. New connections from the VM are source-NATed to
// the floating address 203.0.113.7.
std::string overlay_yaml(const std::string& wire_mtu = "1500") {
  return R"Y(eal: {file_prefix: ov, no_huge: true}
ports:
  - {name: vm, devargs: "net_af_packet0,iface=a"}
  - {name: wire, devargs: "net_af_packet1,iface=b", mtu: )Y" +
         wire_mtu + R"Y(}
overlay:
  vxlan:
    local: 192.0.2.1
    port: wire
    mac: "02:00:00:00:01:01"
    ttl: 32
    vnis: [100, 200]
    remotes:
      - {ip: 192.0.2.2, mac: "02:00:00:00:02:02"}
tables:
  0:
    - {priority: 100, match: "in_port=vm,eth_type=ipv4", actions: "ct(zone=1,table=1)"}
    - {priority: 100, match: "in_port=wire,tun_id=100,eth_type=ipv4", actions: "ct(zone=1,table=1)"}
    - {priority: 0, match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=vm,ct_state=+trk+new",
       actions: "ct(commit,zone=1,nat(src=203.0.113.7)),encap(vxlan,vni=100,remote=192.0.2.2),output:wire"}
    - {priority: 100, match: "in_port=vm,ct_state=+trk+est", actions: "encap(vxlan,vni=100,remote=192.0.2.2),output:wire"}
    - {priority: 100, match: "in_port=wire,ct_state=+trk+est", actions: "output:vm"}
    - {priority: 0, match: "", actions: "drop"}
)Y";
}

std::string hex(const std::vector<uint8_t>& v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : v) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < s.size(); i += 2) v.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return v;
}

// scapy's frame: the outer headers `outer` around `inner`.
std::vector<uint8_t> scapy_vxlan(const nlohmann::json& outer, const std::vector<uint8_t>& inner) {
  nlohmann::json spec = nlohmann::json::array({{{"outer", outer}, {"inner_hex", hex(inner)}}});
  auto r = testbed::run_capture({"/usr/bin/python3", std::string(SOURCE_ROOT) + "/dataplane/tests/vxlan_golden.py",
                                 spec.dump()});
  EXPECT_TRUE(r.ok() && r->status == 0) << (r.ok() ? r->output : r.message());
  if (!r.ok()) return {};
  std::string line = r->output.substr(0, r->output.find('\n'));
  return unhex(line);
}

// The remote VTEP's frame to this one.
nlohmann::json from_remote(uint32_t vni = 100) {
  return {{"smac", "02:00:00:00:02:02"}, {"dmac", "02:00:00:00:01:01"}, {"src", "192.0.2.2"},
          {"dst", "192.0.2.1"},          {"sport", 51000},              {"vni", vni}};
}

FrameSpec vm_tcp(uint8_t flags, uint32_t seq, uint32_t ack) {
  FrameSpec s;
  s.src = "10.0.0.5";
  s.dst = "198.51.100.20";
  s.sport = 40000;
  s.dport = 443;
  s.tcp_flags = flags;
  s.seq = seq;
  s.ack = ack;
  return s;
}

// The server's SYN-ACK to `syn`, to the floating address (as it comes back in the tunnel).
FrameSpec synack_of(const FrameSpec& syn) {
  FrameSpec synack = syn;
  std::swap(synack.src, synack.dst);
  std::swap(synack.sport, synack.dport);
  synack.dst = "203.0.113.7";
  synack.tcp_flags = ctrack::kSyn | ctrack::kAck;
  synack.seq = 900;
  synack.ack = 101;
  return synack;
}

// What left on the wire: the encap's outer headers before the (translated) inner frame.
std::vector<uint8_t> on_wire(const Fixture& f, const Verdict& v) {
  std::vector<uint8_t> w(kVxlanOverhead);
  f.pl->write_encap(w.data(), v.encap, static_cast<uint32_t>(f.last.size()), v.encap_sport);
  w.insert(w.end(), f.last.begin(), f.last.end());
  return w;
}

TEST(Overlay, EncapsulatedNatFramesEqualScapys) {
  Fixture f(overlay_yaml());
  FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
  Verdict v = f.send(kVm, build_frame(syn));
  ASSERT_EQ(v.out_port, kWire);
  ASSERT_NE(v.encap, 0);
  EXPECT_GE(v.encap_sport, 49152);
  FrameSpec inner = syn;
  inner.src = "203.0.113.7";  // source NAT, port kept
  nlohmann::json outer = {{"smac", "02:00:00:00:01:01"}, {"dmac", "02:00:00:00:02:02"}, {"src", "192.0.2.1"},
                          {"dst", "192.0.2.2"},          {"sport", v.encap_sport},      {"vni", 100},
                          {"ttl", 32},                   {"df", true}};
  EXPECT_EQ(hex(on_wire(f, v)), hex(scapy_vxlan(outer, build_frame(inner))));

  // The reply comes back in the tunnel, to the floating address: decapsulated
  // (the worker strips the outer headers) and translated back to the VM.
  FrameSpec synack = vm_tcp(ctrack::kSyn | ctrack::kAck, 900, 101);
  std::swap(synack.src, synack.dst);
  std::swap(synack.sport, synack.dport);
  synack.dst = "203.0.113.7";
  Verdict r = f.send(kWire, scapy_vxlan(from_remote(), build_frame(synack)));
  ASSERT_EQ(r.out_port, kVm);
  EXPECT_EQ(r.strip, kVxlanOverhead);
  EXPECT_EQ(r.encap, 0);
  FrameSpec to_vm = synack;
  to_vm.dst = "10.0.0.5";
  EXPECT_EQ(hex(std::vector<uint8_t>(f.last.begin() + r.strip, f.last.end())), hex(build_frame(to_vm)));

  // Established, both ways, a few times: the flow cache's paths encapsulate too,
  // with the flow's one source port.
  for (int i = 0; i < 5; i++) {
    FrameSpec a = vm_tcp(ctrack::kAck, 101, 901);
    a.ip_id = static_cast<uint16_t>(10 + i);
    Verdict va = f.send(kVm, build_frame(a));
    ASSERT_EQ(va.out_port, kWire) << i;
    EXPECT_EQ(va.encap_sport, v.encap_sport);
    FrameSpec aw = a;
    aw.src = "203.0.113.7";
    EXPECT_EQ(hex(on_wire(f, va)), hex(scapy_vxlan(outer, build_frame(aw)))) << i;
    FrameSpec b = synack;
    b.tcp_flags = ctrack::kAck;
    b.seq = 901;
    b.ack = 101;
    EXPECT_EQ(f.send(kWire, scapy_vxlan(from_remote(), build_frame(b))).out_port, kVm) << i;
  }
  EXPECT_GT(f.st.cache_hits, 0u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kVxlanEncap)], 6u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kVxlanDecap)], 6u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kNat)], 12u);
  // A tunnelled connection stays in software (the NIC's rules would see the outer headers).
  f.ct->for_each(f.now, [&](const ctrack::ConnInfo& c) { EXPECT_FALSE(c.offloaded); });
}

// The flow cache takes an encapsulated hit's source port from its
// conntrack lookup's hash (in the cache's zone, and by zone0_hash_fix as
// in zone 0): the port the tables gave the flow's first packet
// (encap_sport of its tuple), in any zone, both ways of the NAT.
TEST(Overlay, CachedHitsInAnyZoneKeepTheFlowsSourcePort) {
  for (const char* zone : {"", "zone=1,", "zone=7,", "zone=4097,", "zone=65535,"}) {
    SCOPED_TRACE(zone);
    std::string y = overlay_yaml();
    for (size_t p; (p = y.find("zone=1,")) != std::string::npos;) y.replace(p, 7, "ZONE");
    for (size_t p; (p = y.find("ZONE")) != std::string::npos;) y.replace(p, 4, zone);
    Fixture f(y);
    for (int flow = 0; flow < 8; flow++) {
      FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
      syn.sport = static_cast<uint16_t>(41000 + flow);
      Verdict v = f.send(kVm, build_frame(syn));
      ASSERT_EQ(v.out_port, kWire);
      ctrack::Parsed pp;
      const std::vector<uint8_t> sf = build_frame(syn);
      ASSERT_EQ(static_cast<int>(ctrack::parse_packet(sf.data(), static_cast<uint32_t>(sf.size()), 0, &pp)), 0);
      EXPECT_EQ(v.encap_sport, encap_sport(pp.ct.key));
      FrameSpec synack = synack_of(syn);
      ASSERT_EQ(f.send(kWire, scapy_vxlan(from_remote(), build_frame(synack))).out_port, kVm);
      const uint64_t hits = f.st.cache_hits;
      for (int i = 0; i < 3; i++) {
        FrameSpec a = syn;
        a.tcp_flags = ctrack::kAck;
        a.seq = 101;
        a.ack = 901;
        Verdict va = f.send(kVm, build_frame(a));
        ASSERT_EQ(va.out_port, kWire);
        EXPECT_EQ(va.encap_sport, v.encap_sport) << "flow " << flow << " packet " << i;
      }
      EXPECT_GT(f.st.cache_hits, hits) << "the flow cache judged none of them";
    }
  }
}

// zone0_hash_fix: a canonical tuple's hash in any zone, XORed with the
// zone's fix, is its hash in zone 0 (random tuples of both families).
TEST(Overlay, AZonesHashFixGivesTheZoneZeroHash) {
  if (!ctrack::detail::kHashAffine) GTEST_SKIP() << "this build's conntrack hash is not CRC32C (" << ctrack::detail::kHashImpl << ")";
  std::mt19937 rng(33);
  for (int i = 0; i < 20000; i++) {
    ctrack::Key k{};
    k.family = i % 4 ? 4 : 6;
    for (int j = 0; j < (k.family == 4 ? 4 : 16); j++) {
      k.src[j] = static_cast<uint8_t>(rng());
      k.dst[j] = static_cast<uint8_t>(rng());
    }
    k.sport = static_cast<uint16_t>(rng());
    k.dport = static_cast<uint16_t>(rng());
    k.proto = static_cast<uint8_t>(i % 3 ? 6 : 17);
    k.zone = static_cast<uint16_t>(i % 5 ? rng() : i % 2);
    bool canon;
    const uint32_t h = ctrack::hash_canonical(k, &canon);
    ASSERT_EQ(encap_sport_of_hash(h ^ zone0_hash_fix(k.zone)), encap_sport(k)) << i << " zone " << k.zone;
  }
}

// Hits of one burst in two conntrack groups (the flows to 8443 take a
// first ct() that commits, the others one that does not): each
// encapsulated packet keeps its own flow's source port, whatever else the
// burst holds.
TEST(Overlay, CachedHitsInSeveralGroupsKeepTheirOwnSourcePorts) {
  std::string y = overlay_yaml();
  for (size_t p; (p = y.find("zone=1,")) != std::string::npos;) y.erase(p, 7);
  const size_t t0 = y.find("  0:\n");
  ASSERT_NE(t0, std::string::npos);
  y.insert(t0 + 5,
           "    - {priority: 200, match: \"in_port=vm,eth_type=ipv4,ip_proto=tcp,tp_dst=8443\", "
           "actions: \"ct(commit,table=1)\"}\n");
  Fixture f(y);
  std::vector<std::vector<uint8_t>> burst;
  std::vector<uint16_t> want;
  for (int flow = 0; flow < 8; flow++) {
    FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
    syn.sport = static_cast<uint16_t>(42000 + flow);
    if (flow % 2) syn.dport = 8443;
    Verdict v = f.send(kVm, build_frame(syn));
    ASSERT_EQ(v.out_port, kWire) << flow;
    ctrack::Parsed sent;  // the SYN as it left (translated or not)
    ASSERT_EQ(static_cast<int>(ctrack::parse_packet(f.last.data(), static_cast<uint32_t>(f.last.size()), 0, &sent)), 0);
    FrameSpec synack = synack_of(syn);
    char to[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, sent.ct.key.src, to, sizeof to);
    synack.dst = to;
    synack.dport = sent.ct.key.sport;
    ASSERT_EQ(f.send(kWire, scapy_vxlan(from_remote(), build_frame(synack))).out_port, kVm) << flow;
    FrameSpec a = syn;
    a.tcp_flags = ctrack::kAck;
    a.seq = 101;
    a.ack = 901;
    for (int i = 0; i < 2; i++) ASSERT_EQ(f.send(kVm, build_frame(a)).out_port, kWire) << flow;
    burst.push_back(build_frame(a));
    want.push_back(v.encap_sport);
  }
  const uint64_t hits = f.st.cache_hits;
  std::vector<Verdict> vs = f.send_burst(kVm, burst);
  ASSERT_EQ(f.st.cache_hits - hits, burst.size()) << "every packet of the burst a hit";
  for (size_t i = 0; i < vs.size(); i++) {
    ASSERT_EQ(vs[i].out_port, kWire) << i;
    EXPECT_EQ(vs[i].encap_sport, want[i]) << "flow " << i;
  }
}

// A rule set with a tunnel port and encap() runs the tunnel stages.
TEST(Overlay, TunnelStagesRunOnlyWithATunnel) {
  Fixture f(overlay_yaml());
  std::vector<std::string> got = stage_names_of(*f.pl);
  EXPECT_EQ(got, (std::vector<std::string>{"rx_tunnels+flow_cache", "tables", "paths+egress_encaps"}));
}

TEST(Overlay, BadOuterHeadersAreCountedByReason) {
  Fixture f(overlay_yaml());
  auto count = [&](DropWhy w) { return f.st.drop[static_cast<int>(w)]; };
  const std::vector<uint8_t> inner = build_frame(vm_tcp(ctrack::kSyn, 1, 0));
  nlohmann::json no_i = from_remote();
  no_i["flags"] = 0;
  EXPECT_EQ(f.send(kWire, scapy_vxlan(no_i, inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kVxlanHeader), 1u);
  EXPECT_EQ(f.send(kWire, scapy_vxlan(from_remote(300), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kVxlanVni), 1u);
  std::vector<uint8_t> cut = scapy_vxlan(from_remote(), inner);
  cut.resize(14 + 20 + 8 + 4);
  EXPECT_EQ(f.send(kWire, cut).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kVxlanTrunc), 1u);
  // A bare VXLAN header (no inner Ethernet): truncated too.
  std::vector<uint8_t> empty = scapy_vxlan(from_remote(), {});
  EXPECT_EQ(f.send(kWire, empty).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kVxlanTrunc), 2u);
  // A fragment of a VXLAN datagram: not reassembled here.
  std::vector<uint8_t> frag = scapy_vxlan(from_remote(), inner);
  frag[14 + 6] |= 0x20;  // MF
  EXPECT_EQ(f.send(kWire, frag).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kVxlanHeader), 2u);
  // VNI 200 is this host's, but no rule takes it: the tables drop it.
  EXPECT_EQ(f.send(kWire, scapy_vxlan(from_remote(200), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kRule), 1u);
  // Not VXLAN (another UDP port): a plain packet to the tables, which drop it.
  nlohmann::json other = from_remote();
  other["dport"] = 4790;
  EXPECT_EQ(f.send(kWire, scapy_vxlan(other, inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kRule), 2u);
  EXPECT_EQ(f.ct->stats().active, 0u);
}

// Issue 28 items 5, 13, 14. A UDP flow from the VM is live; its reply in
// the tunnel reaches the VM only from a configured remote, to our MAC, with
// a good outer checksum and outer lengths that hold the whole inner packet.
// A VLAN-tagged full-size frame (1500-byte outer IP) crosses as the
// untagged one does. With any_remote: true, another source is taken.
namespace {
FrameSpec vm_udp(size_t payload = 20) {
  FrameSpec s;
  s.proto = IPPROTO_UDP;
  s.src = "10.0.0.5";
  s.dst = "198.51.100.20";
  s.sport = 40000;
  s.dport = 5000;
  s.payload = payload;
  return s;
}
FrameSpec reply_udp(size_t payload = 20) {  // to the floating address
  FrameSpec r = vm_udp(payload);
  r.src = "198.51.100.20";
  r.dst = "203.0.113.7";
  r.sport = 5000;
  r.dport = 40000;
  return r;
}
void outer_ip_sum(std::vector<uint8_t>& f, size_t ip = 14) {
  f[ip + 10] = f[ip + 11] = 0;
  uint32_t s = 0;
  for (size_t i = 0; i < 20; i += 2) s += static_cast<uint32_t>(f[ip + i] << 8 | f[ip + i + 1]);
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  f[ip + 10] = static_cast<uint8_t>(~s >> 8);
  f[ip + 11] = static_cast<uint8_t>(~s);
}
}  // namespace

TEST(Overlay, DecapOnlyFromRemotesToOurMacWithWholeOuterHeaders) {
  Fixture f(overlay_yaml());
  auto count = [&](DropWhy w) { return f.st.drop[static_cast<int>(w)]; };
  ASSERT_EQ(f.send(kVm, build_frame(vm_udp())).out_port, kWire);
  const std::vector<uint8_t> inner = build_frame(reply_udp());
  ASSERT_EQ(f.send(kWire, scapy_vxlan(from_remote(), inner)).out_port, kVm) << "the good reply";
  // From an address that is not a remote VTEP.
  nlohmann::json stranger = from_remote();
  stranger["src"] = "192.0.2.99";
  EXPECT_EQ(f.send(kWire, scapy_vxlan(stranger, inner)).out_port, kDrop) << "decapsulated from a stranger";
  EXPECT_EQ(count(DropWhy::kVxlanRemote), 1u);
  // To another host's MAC.
  nlohmann::json other_mac = from_remote();
  other_mac["dmac"] = "02:00:00:00:09:09";
  EXPECT_EQ(f.send(kWire, scapy_vxlan(other_mac, inner)).out_port, kDrop) << "decapsulated for another MAC";
  EXPECT_EQ(count(DropWhy::kVxlanMac), 1u);
  other_mac["dmac"] = "06:00:00:00:01:01";  // (and one that differs in its first four bytes only)
  EXPECT_EQ(f.send(kWire, scapy_vxlan(other_mac, inner)).out_port, kDrop) << "decapsulated for another MAC";
  EXPECT_EQ(count(DropWhy::kVxlanMac), 2u);
  // A wrong outer IPv4 checksum.
  std::vector<uint8_t> bad = scapy_vxlan(from_remote(), inner);
  bad[14 + 10] ^= 0x5a;
  EXPECT_EQ(f.send(kWire, bad).out_port, kDrop) << "decapsulated with a bad outer checksum";
  EXPECT_EQ(count(DropWhy::kVxlanHeader), 1u);
  // Outer IP and UDP lengths that end 10 bytes into the inner IP header
  // (the frame's bytes go on): the inner packet is only what they hold.
  std::vector<uint8_t> cut = scapy_vxlan(from_remote(), inner);
  const uint16_t iplen = 20 + 8 + 8 + 14 + 10, ulen = iplen - 20;
  cut[14 + 2] = static_cast<uint8_t>(iplen >> 8), cut[14 + 3] = static_cast<uint8_t>(iplen);
  cut[34 + 4] = static_cast<uint8_t>(ulen >> 8), cut[34 + 5] = static_cast<uint8_t>(ulen);
  outer_ip_sum(cut);
  const uint64_t parse0 = f.st.parse_drop[static_cast<int>(ctrack::Drop::kTruncIp)];
  EXPECT_EQ(f.send(kWire, cut).out_port, kDrop) << "an inner packet past the outer datagram was delivered";
  EXPECT_EQ(f.st.parse_drop[static_cast<int>(ctrack::Drop::kTruncIp)], parse0 + 1);
  // An outer IPv4 header with options (IHL 6: a NOP and an End of options
  // list, padded): decapsulated as without them (udp_tunnel_outer's general
  // path); with a wrong checksum, or from a stranger, dropped by reason.
  auto with_options = [&](const nlohmann::json& outer) {
    std::vector<uint8_t> o = scapy_vxlan(outer, inner);
    const uint8_t opt[4] = {0x01, 0x00, 0x00, 0x00};
    o.insert(o.begin() + 34, opt, opt + 4);
    o[14] = 0x46;
    const uint16_t tot = static_cast<uint16_t>(net::get16(o.data() + 16) + 4);
    o[16] = static_cast<uint8_t>(tot >> 8), o[17] = static_cast<uint8_t>(tot);
    net::ipv4_set_checksum(o.data() + 14, 24);
    return o;
  };
  EXPECT_EQ(f.send(kWire, with_options(from_remote())).out_port, kVm) << "outer IP options";
  std::vector<uint8_t> bad_opt = with_options(from_remote());
  bad_opt[14 + 21] ^= 0x10;  // (an option byte: the checksum covers it)
  EXPECT_EQ(f.send(kWire, bad_opt).out_port, kDrop) << "outer IP options with a bad checksum";
  EXPECT_EQ(count(DropWhy::kVxlanHeader), 2u);
  EXPECT_EQ(f.send(kWire, with_options(stranger)).out_port, kDrop) << "outer IP options from a stranger";
  EXPECT_EQ(count(DropWhy::kVxlanRemote), 2u);
  // A full-size reply (outer IP 1500 bytes), untagged and VLAN-tagged.
  const std::vector<uint8_t> big = build_frame(reply_udp(1500 - 50 - 28));
  std::vector<uint8_t> plain = scapy_vxlan(from_remote(), big);
  ASSERT_EQ(plain.size(), 14u + 1500u);
  EXPECT_EQ(f.send(kWire, plain).out_port, kVm) << "the untagged full-size frame";
  std::vector<uint8_t> tagged = plain;
  const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x07};
  tagged.insert(tagged.begin() + 12, tag, tag + 4);
  EXPECT_EQ(f.send(kWire, tagged).out_port, kVm) << "the VLAN-tagged full-size frame";
  EXPECT_EQ(count(DropWhy::kRxOversize), 0u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kVxlanDecap)], 4u) << "decap counts only what it delivers";

  // any_remote: true takes the stranger.
  std::string yaml = overlay_yaml();
  yaml.replace(yaml.find("    remotes:"), 0, "    any_remote: true\n");
  Fixture g(yaml);
  ASSERT_EQ(g.send(kVm, build_frame(vm_udp())).out_port, kWire);
  EXPECT_EQ(g.send(kWire, scapy_vxlan(stranger, inner)).out_port, kVm) << "any_remote: true";
}

// Issue 28 item 6: with the shipped overlay-nat.yaml, a VM that sends the
// reply side's tuple (as if it were the server answering itself) is
// dropped, not translated back and tunnelled out with its private address.
TEST(Overlay, ShippedConfigDropsReplyTuplesFromTheVms) {
  std::ifstream in(std::string(SOURCE_ROOT) + "/configs/dataplane/overlay-nat.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  Fixture f(ss.str());
  const int vm = 0, wire = 1;  // inside, outside
  FrameSpec q = vm_udp();
  ASSERT_EQ(f.send(vm, build_frame(q)).out_port, wire);
  nlohmann::json remote = from_remote();
  ASSERT_EQ(f.send(wire, scapy_vxlan(remote, build_frame(reply_udp()))).out_port, vm);
  FrameSpec fake = reply_udp();  // the reply's tuple, from the VM's side
  EXPECT_EQ(f.send(vm, build_frame(fake)).out_port, kDrop) << "a reply-direction packet from a VM left";
  FrameSpec fake2 = q;  // the reply to the client as it reaches it, sent by the client
  std::swap(fake2.src, fake2.dst);
  std::swap(fake2.sport, fake2.dport);
  EXPECT_EQ(f.send(vm, build_frame(fake2)).out_port, kDrop);
  EXPECT_EQ(f.send(vm, build_frame(q)).out_port, wire) << "the VM's own direction still leaves";
}

TEST(Overlay, EncapBeyondTheWireMtuIsDroppedNotSent) {
  Fixture f(overlay_yaml("1400"));
  FrameSpec big = vm_tcp(ctrack::kSyn, 1, 0);
  // The outer IPv4 packet is the inner one plus 50 bytes (inner Ethernet,
  // VXLAN, UDP, IPv4): one byte over the wire's 1400.
  big.payload = 1400 - 50 - 40 + 1;
  EXPECT_EQ(f.send(kVm, build_frame(big)).out_port, kDrop);
  EXPECT_EQ(f.st.drop[static_cast<int>(DropWhy::kEncapMtu)], 1u);
  big.payload--;
  big.sport++;
  EXPECT_EQ(f.send(kVm, build_frame(big)).out_port, kWire);
}

// The remote VTEP's outer headers (vxlan_frame's `outer`), one source port per call's value.
FrameSpec remote_outer(uint16_t sport = 51000) {
  FrameSpec o;
  memcpy(o.src_mac, "\x02\x00\x00\x00\x02\x02", 6);
  memcpy(o.dst_mac, "\x02\x00\x00\x00\x01\x01", 6);
  o.src = "192.0.2.2";
  o.dst = "192.0.2.1";
  o.sport = sport;
  return o;
}

// A connection a decapsulated packet starts stays in software (the NIC
// would see its outer headers, not the connection): the tracker never
// offers it, while one the VM starts (its replies decapsulated) is
// offered once established. Plain TCP without options: the parse's fast
// lane on the inner frame must mark it as the full parse does.
TEST(Overlay, ADecapsulatedConnectionIsNeverOfferedToTheNic) {
  std::string yaml = overlay_yaml();
  yaml.replace(yaml.find("    - {priority: 100, match: \"in_port=wire,ct_state=+trk+est\""), 0,
               "    - {priority: 100, match: \"in_port=wire,ct_state=+trk+new\", actions: \"ct(commit,zone=1),output:vm\"}\n");
  Fixture f(yaml, 4096, ctrack::FullPolicy::kDrop, 64);
  ctrack::Event ev[4];
  // Started from the wire, in the tunnel: SYN, the VM's SYN-ACK, ACK.
  FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
  std::swap(syn.src, syn.dst);
  std::swap(syn.sport, syn.dport);
  FrameSpec synack = syn;
  std::swap(synack.src, synack.dst);
  std::swap(synack.sport, synack.dport);
  synack.tcp_flags = ctrack::kSyn | ctrack::kAck;
  synack.seq = 900;
  synack.ack = 101;
  FrameSpec ack = syn;
  ack.tcp_flags = ctrack::kAck;
  ack.seq = 101;
  ack.ack = 901;
  ASSERT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(syn))).out_port, kVm);
  ASSERT_EQ(f.send(kVm, build_frame(synack)).out_port, kWire);
  ASSERT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(ack))).out_port, kVm);
  ack.payload = 100;
  ASSERT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(ack))).out_port, kVm);
  EXPECT_EQ(f.ct->poll_events(ev, 4), 0u) << "a connection a decapsulated packet started was offered to the NIC";
  // The control: the VM starts one (translated, encapsulated), its replies come decapsulated.
  FrameSpec vsyn = vm_tcp(ctrack::kSyn, 100, 0);
  vsyn.sport = 40001;
  ASSERT_EQ(f.send(kVm, build_frame(vsyn)).out_port, kWire);
  ASSERT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(synack_of(vsyn)))).out_port, kVm);
  FrameSpec vack = vm_tcp(ctrack::kAck, 101, 901);
  vack.sport = 40001;
  ASSERT_EQ(f.send(kVm, build_frame(vack)).out_port, kWire);
  ASSERT_EQ(f.ct->poll_events(ev, 4), 1u) << "the VM's connection, established, is offered";
  EXPECT_EQ(ev[0].type, ctrack::EventType::kEstablished);
}

// The egress MTU bounds a decapsulated packet's inner IP packet, not the
// outer one it came in: an inner packet of exactly the VM port's MTU is
// delivered, one byte more is what a plain one would be (dropped with DF,
// left in fragments without). And the ingress MTU bounds the outer IP
// packet, whatever tag is before it. Plain TCP: the parse's fast lane.
TEST(Overlay, TheEgressMtuBoundsTheInnerPacket) {
  Fixture f(overlay_yaml());
  f.dp->set_mtu(kVm, 1400);
  FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
  ASSERT_EQ(f.send(kVm, build_frame(syn)).out_port, kWire);
  FrameSpec reply = synack_of(syn);
  ASSERT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(reply))).out_port, kVm);
  reply.tcp_flags = ctrack::kAck;
  reply.seq = 901;
  reply.payload = 1400 - 40;  // the inner IP packet: 1400 bytes, the outer 1450
  std::vector<uint8_t> at = ctrack::vxlan_frame(remote_outer(), 100, build_frame(reply));
  ASSERT_EQ(at.size(), 14u + 1450u);
  Verdict v = f.send(kWire, at);
  EXPECT_EQ(v.out_port, kVm) << "an inner packet of the egress MTU was not delivered";
  EXPECT_EQ(v.frag_mtu, 0);
  EXPECT_EQ(f.st.drop[static_cast<int>(DropWhy::kTxMtu)], 0u);
  reply.payload++;  // one byte over, DF
  EXPECT_EQ(f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(reply))).out_port, kDrop);
  EXPECT_EQ(f.st.drop[static_cast<int>(DropWhy::kTxMtu)], 1u);
  reply.df = false;  // one byte over, no DF: fragments of the inner packet
  v = f.send(kWire, ctrack::vxlan_frame(remote_outer(), 100, build_frame(reply)));
  EXPECT_EQ(v.out_port, kVm);
  EXPECT_EQ(v.frag_mtu, 1400);
  EXPECT_EQ(v.l2_len, 14);
  // The wire's 1500: an outer IP packet of 1500 bytes, VLAN-tagged, is taken.
  f.dp->set_mtu(kVm, 1500);
  reply.df = true;
  reply.payload = 1500 - 50 - 40;
  std::vector<uint8_t> tagged = ctrack::vxlan_frame(remote_outer(), 100, build_frame(reply));
  ASSERT_EQ(tagged.size(), 14u + 1500u);
  const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x07};
  tagged.insert(tagged.begin() + 12, tag, tag + 4);
  EXPECT_EQ(f.send(kWire, tagged).out_port, kVm) << "the VLAN-tagged full-size frame";
  EXPECT_EQ(f.st.drop[static_cast<int>(DropWhy::kRxOversize)], 0u);
}

TEST(Overlay, SourcePortsSpreadFlows) {
  Fixture f(overlay_yaml());
  std::set<uint16_t> ports;
  for (int i = 0; i < 64; i++) {
    FrameSpec s = vm_tcp(ctrack::kSyn, 1, 0);
    s.sport = static_cast<uint16_t>(30000 + i);
    Verdict v = f.send(kVm, build_frame(s));
    ASSERT_EQ(v.out_port, kWire);
    EXPECT_GE(v.encap_sport, 49152);
    ports.insert(v.encap_sport);
  }
  EXPECT_GT(ports.size(), 48u) << "64 flows share too few source ports for ECMP to spread them";
}

// A config edited from a test's (the first `from` replaced by `to`), and
// the error it must give.
std::string edit(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}
struct ConfigCase {
  std::string text, want;
};
template <size_t N>
void expect_config_errors(const ConfigCase (&cases)[N]) {
  for (const ConfigCase& c : cases) {
    auto r = parse_config(c.text, "test.yaml");
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.message().find(c.want), std::string::npos) << "got: " << r.message() << "\nwant: " << c.want;
  }
}

TEST(Overlay, ConfigErrorsNameFileLineAndKey) {
  const ConfigCase cases[] = {
      {edit(overlay_yaml(), "vnis: [100, 200]", "vnis: [100, 200, 100]"),
       "test.yaml:11: key 'overlay.vxlan.vnis[2]': VNI 100 is listed twice (first at line 11)"},
      {edit(overlay_yaml(), "remote=192.0.2.2),output:wire\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\"",
            "remote=192.0.2.9),output:wire\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\""),
       "test.yaml:20: key 'tables.1.actions': rule 4: no next hop for remote 192.0.2.9"},
      {edit(overlay_yaml(), "encap(vxlan,vni=100,remote=192.0.2.2),output:wire\"}\n    - {priority: 100, match: "
                            "\"in_port=wire",
            "encap(vxlan,vni=300,remote=192.0.2.2),output:wire\"}\n    - {priority: 100, match: \"in_port=wire"),
       "rule 5: VNI 300 is not in overlay.vxlan.vnis"},
      {edit(overlay_yaml(), "mac: \"02:00:00:00:01:01\"", "mac: \"02:00:00:00:01\""),
       "test.yaml:9: key 'overlay.vxlan.mac': expected a MAC address"},
      {edit(overlay_yaml(), "port: wire", "port: mars"), "test.yaml:8: key 'overlay.vxlan.port': no port named 'mars'"},
      {edit(overlay_yaml(), "local: 192.0.2.1", "local: 2001:db8::1"), "key 'overlay.vxlan.local': expected an IPv4"},
      {edit(overlay_yaml(), "overlay:\n  vxlan:", "overlay:\n  gre:"), "key 'overlay.gre': unknown key"},
      {edit(overlay_yaml(), ",output:wire\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\"",
            ",drop\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\""),
       "encap(...) goes before the output"},
  };
  expect_config_errors(cases);
  std::string no_overlay = overlay_yaml();
  no_overlay.erase(no_overlay.find("overlay:"), no_overlay.find("tables:") - no_overlay.find("overlay:"));
  auto r = parse_config(no_overlay, "test.yaml");
  EXPECT_NE(r.message().find("encap(vxlan,...) needs overlay.vxlan"), std::string::npos) << r.message();
}


// Item 12 of issue 28: with two workers, a VXLAN frame that arrives at the
// worker which does not own its connection is handed to the owner; each
// frame is counted once (as received and as decapsulated), whichever worker
// ends up with it. Without a carry the owner decapsulates and parses it
// again; with one (`carry`: what the daemon's workers have, in the mbuf's
// private area) it takes the first worker's decap and parse, and the test
// spoils the frame's outer Ethernet type after the handoff to prove the
// owner does not read the headers again.
void two_workers(bool carry) {
  auto cfg = parse_config(overlay_yaml(), "test.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.message();
  auto pl = Pipeline::build(cfg->rules, 2, &cfg->overlay);
  ASSERT_TRUE(pl.ok()) << pl.message();
  uint8_t key[52];
  for (int i = 0; i < 52; i++) key[i] = i % 2 ? 0x5a : 0x6d;  // symmetric (steer.h)
  Steering steer(key, sizeof key, 2);
  std::unique_ptr<ctrack::Tracker> ct[2];
  WorkerStats st[2];
  std::unique_ptr<Datapath> dp[2];
  for (unsigned w = 0; w < 2; w++) {
    ctrack::Config cc;
    cc.capacity = 4096;
    cc.nat = true;
    ct[w] = std::move(ctrack::Tracker::create(cc).value());
    dp[w] = std::make_unique<Datapath>(w, ct[w].get(), &st[w]);
    dp[w]->set_steering(&steer, w);
    for (uint16_t p = 0; p < 2; p++) dp[w]->set_mtu(p, 1500);
  }
  uint64_t now = 1'000'000'000'000ull;
  int handed = 0;
  // One frame into worker 0, then to the owner it names (as a worker's
  // handoff ring would): the verdict the owner gives.
  Carried carried;
  auto send = [&](uint16_t port, std::vector<uint8_t> f) {
    Verdict v;
    bool handed_here = false;
    for (unsigned w = 0;; w = static_cast<unsigned>(v.handoff)) {
      PacketIn in{f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), port, false, 0};
      if (carry) {
        in.carry = &carried;
        in.carried = handed_here;
      }
      dp[w]->run(*pl.value(), &in, 1, now, &v);
      if (v.handoff < 0) break;
      handed++;
      handed_here = true;
      if (carry) f[12] = f[13] = 0x88;  // not an Ethernet type we parse: the owner must not parse again
    }
    now += 1'000'000;
    return v;
  };
  constexpr int kConns = 200;
  int delivered = 0;
  for (int k = 0; k < kConns; k++) {
    FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
    syn.sport = static_cast<uint16_t>(40000 + k);
    ASSERT_EQ(send(kVm, build_frame(syn)).out_port, kWire) << k;
    FrameSpec synack = synack_of(syn);
    FrameSpec outer;
    memcpy(outer.src_mac, "\x02\x00\x00\x00\x02\x02", 6);
    memcpy(outer.dst_mac, "\x02\x00\x00\x00\x01\x01", 6);
    outer.src = "192.0.2.2";
    outer.dst = "192.0.2.1";
    outer.sport = static_cast<uint16_t>(51000 + k);
    if (send(kWire, ctrack::vxlan_frame(outer, 100, build_frame(synack))).out_port == kVm) delivered++;
  }
  EXPECT_EQ(delivered, kConns);
  EXPECT_GT(handed, kConns / 4) << "the test needs frames that land on the other worker";
  EXPECT_EQ(st[0].tunnel[static_cast<int>(Tunnel::kVxlanDecap)] + st[1].tunnel[static_cast<int>(Tunnel::kVxlanDecap)],
            static_cast<uint64_t>(kConns))
      << "decapsulated frames, counted once";
  EXPECT_EQ(st[0].rx_packets + st[1].rx_packets, static_cast<uint64_t>(2 * kConns)) << "received, counted once";
  EXPECT_EQ(st[0].handoff_out + st[1].handoff_out, static_cast<uint64_t>(handed));
}

TEST(Overlay, TwoWorkersCountAHandedOverFrameOnce) { two_workers(false); }
TEST(Overlay, TheOwnerTakesTheFirstWorkersDecapAndParse) { two_workers(true); }

// ------------------------------------------------------------------ Geneve

// The same VM and wire with Geneve (RFC 8926) instead of VXLAN: VNI 100 to
// the remote 192.0.2.2, OVN's option (class 0x0102, type 0x80: critical)
// accepted, and put on encapsulated frames.
std::string geneve_yaml() {
  std::string y = overlay_yaml();
  auto sub = [&](const std::string& from, const std::string& to) {
    for (size_t p = y.find(from); p != std::string::npos; p = y.find(from, p + to.size())) y.replace(p, from.size(), to);
  };
  sub("  vxlan:", "  geneve:");
  sub("vnis: [100, 200]\n", "vnis: [100, 200]\n    accept_options: [\"0x0102:0x80\"]\n");
  sub("encap(vxlan,vni=100,remote=192.0.2.2)", "encap(geneve,vni=100,remote=192.0.2.2,opt=0x0102:0x80:00010002)");
  return y;
}

std::vector<uint8_t> scapy_geneve(const nlohmann::json& outer, const std::vector<uint8_t>& inner) {
  nlohmann::json spec = nlohmann::json::array({{{"outer", outer}, {"inner_hex", hex(inner)}}});
  auto r = testbed::run_capture({"/usr/bin/python3", std::string(SOURCE_ROOT) + "/dataplane/tests/geneve_golden.py",
                                 spec.dump()});
  EXPECT_TRUE(r.ok() && r->status == 0) << (r.ok() ? r->output : r.message());
  if (!r.ok()) return {};
  return unhex(r->output.substr(0, r->output.find('\n')));
}

const nlohmann::json kOvnOpt = {{"class", 0x0102}, {"type", 0x80}, {"data", "00010002"}};

TEST(Geneve, EncapsulatedFramesWithOptionsEqualScapys) {
  Fixture f(geneve_yaml());
  FrameSpec syn = vm_tcp(ctrack::kSyn, 100, 0);
  Verdict v = f.send(kVm, build_frame(syn));
  ASSERT_EQ(v.out_port, kWire);
  ASSERT_NE(v.encap, 0);
  EXPECT_EQ(f.pl->encap_len(v.encap), 14 + 20 + 8 + 8 + 8);
  FrameSpec inner = syn;
  inner.src = "203.0.113.7";
  nlohmann::json outer = {{"smac", "02:00:00:00:01:01"}, {"dmac", "02:00:00:00:02:02"}, {"src", "192.0.2.1"},
                          {"dst", "192.0.2.2"},          {"sport", v.encap_sport},      {"vni", 100},
                          {"ttl", 32},                   {"critical", 1},               {"options", {kOvnOpt}}};
  std::vector<uint8_t> w(f.pl->encap_len(v.encap));
  f.pl->write_encap(w.data(), v.encap, static_cast<uint32_t>(f.last.size()), v.encap_sport);
  w.insert(w.end(), f.last.begin(), f.last.end());
  EXPECT_EQ(hex(w), hex(scapy_geneve(outer, build_frame(inner))));
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kGeneveEncap)], 1u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kVxlanEncap)], 0u);

  // The reply in the tunnel, with OVN's option and a non-critical one:
  // decapsulated past the options, matched by tun_id, translated back.
  FrameSpec synack = vm_tcp(ctrack::kSyn | ctrack::kAck, 900, 101);
  std::swap(synack.src, synack.dst);
  std::swap(synack.sport, synack.dport);
  synack.dst = "203.0.113.7";
  nlohmann::json back = {{"smac", "02:00:00:00:02:02"}, {"dmac", "02:00:00:00:01:01"}, {"src", "192.0.2.2"},
                         {"dst", "192.0.2.1"},          {"sport", 51000},              {"vni", 100},
                         {"critical", 1},
                         {"options", {kOvnOpt, {{"class", 0xFFFF}, {"type", 0x01}, {"data", "0000000011111111"}}}}};
  Verdict r = f.send(kWire, scapy_geneve(back, build_frame(synack)));
  ASSERT_EQ(r.out_port, kVm);
  EXPECT_EQ(r.strip, 14 + 20 + 8 + 8 + 8 + 12);
  FrameSpec to_vm = synack;
  to_vm.dst = "10.0.0.5";
  EXPECT_EQ(hex(std::vector<uint8_t>(f.last.begin() + r.strip, f.last.end())), hex(build_frame(to_vm)));
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kGeneveDecap)], 1u);
  EXPECT_EQ(std::string(tunnel_name(Tunnel::kGeneveDecap)), "geneve_decap");
}

TEST(Geneve, BadHeadersAndOptionsAreCountedByReason) {
  Fixture f(geneve_yaml());
  auto count = [&](DropWhy w) { return f.st.drop[static_cast<int>(w)]; };
  const std::vector<uint8_t> inner = build_frame(vm_tcp(ctrack::kSyn, 1, 0));
  auto from = [](nlohmann::json extra) {
    nlohmann::json o = {{"smac", "02:00:00:00:02:02"}, {"dmac", "02:00:00:00:01:01"}, {"src", "192.0.2.2"},
                        {"dst", "192.0.2.1"},          {"sport", 51000},              {"vni", 100}};
    for (auto& [k, v] : extra.items()) o[k] = v;
    return o;
  };
  // An unknown option with the critical bit: dropped; without it: ignored.
  const nlohmann::json crit = {{"class", 0x0103}, {"type", 0x81}, {"data", "00000000"}};
  const nlohmann::json plain = {{"class", 0x0103}, {"type", 0x01}, {"data", "00000000"}};
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"critical", 1}, {"options", {crit}}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveCritical), 1u);
  // (A SYN from the wire: decapsulated, then the tables' last rule drops it.)
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"options", {plain}}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveCritical), 1u) << "a non-critical option is ignored";
  EXPECT_EQ(count(DropWhy::kRule), 1u) << "decapsulated and judged by the tables";
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"version", 1}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveVersion), 1u);
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"oam", 1}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveControl), 1u);
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"proto", 0x0800}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveHeader), 1u);
  EXPECT_EQ(f.send(kWire, scapy_geneve(from({{"vni", 300}}), inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveVni), 1u);
  // An option whose length runs past Opt Len: malformed.
  std::vector<uint8_t> bad = scapy_geneve(from({{"options", {plain}}}), inner);
  bad[14 + 20 + 8 + 8 + 3] = 2;  // 8 bytes of data in a 4-byte slot
  EXPECT_EQ(f.send(kWire, bad).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveHeader), 2u);
  // Opt Len past the datagram, and a cut frame: truncated.
  std::vector<uint8_t> longopts = scapy_geneve(from({}), {});
  longopts[14 + 20 + 8] = 4;
  EXPECT_EQ(f.send(kWire, longopts).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveTrunc), 1u);
  std::vector<uint8_t> cut = scapy_geneve(from({}), inner);
  cut.resize(14 + 20 + 8 + 4);
  EXPECT_EQ(f.send(kWire, cut).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveTrunc), 2u);
  nlohmann::json stranger = from({});
  stranger["src"] = "192.0.2.99";
  EXPECT_EQ(f.send(kWire, scapy_geneve(stranger, inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveRemote), 1u);
  nlohmann::json other_mac = from({});
  other_mac["dmac"] = "02:00:00:00:09:09";
  EXPECT_EQ(f.send(kWire, scapy_geneve(other_mac, inner)).out_port, kDrop);
  EXPECT_EQ(count(DropWhy::kGeneveMac), 1u);
  EXPECT_EQ(f.st.tunnel[static_cast<int>(Tunnel::kGeneveDecap)], 1u) << "only the non-critical option's frame";
  EXPECT_EQ(std::string(drop_why_name(DropWhy::kGeneveCritical)), "geneve_critical_option");
}

TEST(Geneve, ConfigAndRuleErrorsAreCaught) {
  const ConfigCase cases[] = {
      {edit(geneve_yaml(), "\"0x0102:0x80\"", "\"0x0102\""),
       "test.yaml:12: key 'overlay.geneve.accept_options[0]': expected CLASS:TYPE"},
      {edit(geneve_yaml(), "vnis: [100, 200]", "vnis: [100, 16777216]"), "key 'overlay.geneve.vnis[1]'"},
      {edit(geneve_yaml(), "opt=0x0102:0x80:00010002),output:wire\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\"",
            "opt=0x0102:0x80:000100),output:wire\"}\n    - {priority: 100, match: \"in_port=vm,ct_state=+trk+est\""),
       "opt data must be a multiple of 4 bytes"},
      {edit(geneve_yaml(), "vni=100,remote=192.0.2.2,opt=0x0102:0x80:00010002),output:wire\"}\n    - {priority: 100, "
                           "match: \"in_port=wire",
            "vni=300,remote=192.0.2.2),output:wire\"}\n    - {priority: 100, match: \"in_port=wire"),
       "rule 5: VNI 300 is not in overlay.geneve.vnis"},
      {edit(edit(geneve_yaml(), "overlay:\n  geneve:", "overlay:\n  vxlan:"), "    accept_options: [\"0x0102:0x80\"]\n", ""),
       "encap(geneve,...) needs overlay.geneve"},
      {edit(geneve_yaml(), "overlay:\n  geneve:", "overlay:\n  vxlan:"),
       "test.yaml:12: key 'overlay.vxlan.accept_options': unknown key"},
  };
  expect_config_errors(cases);
  auto ok = parse_config(geneve_yaml(), "test.yaml");
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->overlay[TunnelKind::kGeneve].udp_port, 6081);
}

// A connection whose path encapsulates in Geneve may go to the NIC (a
// RAW_ENCAP of the headers software would write, options included); the
// offload asks the tunnel module, which no longer refuses it by name.
TEST(Geneve, ConnectionEncapMayGoToTheNic) {
  Fixture f(geneve_yaml());
  ctrack::Key k{};
  k.family = 4;
  k.proto = IPPROTO_TCP;
  inet_pton(AF_INET, "10.0.0.5", k.src);
  inet_pton(AF_INET, "198.51.100.20", k.dst);
  k.sport = 40000;
  k.dport = 443;
  k.zone = 1;
  Pipeline::Trace t = f.pl->trace_established(k, kVm, false);
  EXPECT_EQ(t.refuse, nullptr) << t.refuse;
  EXPECT_EQ(t.out_port, kWire);
  ASSERT_NE(t.encap, 0);
  uint8_t hdr[kOuterMax];
  ASSERT_EQ(f.pl->encap_header(t.encap, k, hdr), 14 + 20 + 8 + 8 + 8);
  EXPECT_EQ(hdr[36] << 8 | hdr[37], 6081);
  EXPECT_EQ(hdr[42], 2) << "Opt Len: the option's 8 bytes";
  EXPECT_EQ(hdr[43], 0x40) << "C: the option is critical";
}

// ------------------------------------------------------------------ NAT kept per connection side

// A source NAT without the overlay: the flow cache translates the hits of
// a translated connection (results/ovl36 kept each side's rewrite per
// connection handle; this guards any such cache against a reused handle).
const char* kNatFirewall = R"Y(
ports:
  - {name: inside, devargs: "net_null0"}
  - {name: outside, devargs: "net_null1"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 0, match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new", actions: "ct(commit,nat(src=203.0.113.7)),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 0, match: "", actions: "drop"}
)Y";

// One TCP or UDP connection's frames from a client of 10.0.0.0/24 to
// 198.51.100.20:443, the replies to the floating address (the client's port
// kept): the frames and the port each comes in on.
std::vector<std::pair<uint16_t, std::vector<uint8_t>>> nat_conn(const char* client, uint16_t sport, uint8_t proto) {
  std::vector<std::pair<uint16_t, std::vector<uint8_t>>> v;
  uint32_t cseq = 100, sseq = 900;
  auto add = [&](bool out, uint8_t flags, uint32_t len) {
    FrameSpec f;
    f.proto = proto;
    f.src = out ? client : "198.51.100.20";
    f.dst = out ? "198.51.100.20" : "203.0.113.7";
    f.sport = out ? sport : 443;
    f.dport = out ? 443 : sport;
    f.tcp_flags = flags;
    f.seq = out ? cseq : sseq;
    f.ack = out ? sseq : cseq;
    f.payload = len;
    (out ? cseq : sseq) += len + ((flags & ctrack::kSyn) ? 1 : 0);
    v.push_back({static_cast<uint16_t>(out ? 0 : 1), build_frame(f)});
  };
  if (proto == IPPROTO_TCP) {
    add(true, ctrack::kSyn, 0);
    add(false, ctrack::kSyn | ctrack::kAck, 0);
    add(true, ctrack::kAck, 0);
  } else {
    add(true, 0, 10);
    add(false, 0, 10);
  }
  for (uint32_t k = 0; k < 6; k++) {
    add(true, ctrack::kAck | ctrack::kPsh, 10 + k);
    add(false, ctrack::kAck | ctrack::kPsh, 20 + k);
  }
  return v;
}

// Connection B takes the handle of connection A (flushed) after A's two
// sides were translated by flow cache hits: B's frames leave as they do
// without the flow cache (each through ct()'s own rewrite), not with A's
// addresses, ports or checksum deltas.
TEST(Overlay, AReusedHandleDoesNotTakeTheOldConnectionsTranslation) {
  for (const uint8_t proto : {uint8_t{IPPROTO_TCP}, uint8_t{IPPROTO_UDP}}) {
    Fixture f(kNatFirewall, 16), plain(kNatFirewall, 16);
    plain.dp->set_flow_cache(false);
    auto handle = [&] {
      uint32_t h = ctrack::kNoConn;
      f.ct->for_each(0, [&](const ctrack::ConnInfo& c) { h = c.handle; });
      return h;
    };
    // Every frame through both; the same bytes out (and the same verdict).
    auto both = [&](const std::vector<std::pair<uint16_t, std::vector<uint8_t>>>& frames, const char* what) {
      for (size_t k = 0; k < frames.size(); k++) {
        Verdict a = f.send(frames[k].first, frames[k].second);
        Verdict b = plain.send(frames[k].first, frames[k].second);
        ASSERT_EQ(a.out_port, b.out_port) << what << " frame " << k;
        ASSERT_GE(a.out_port, 0) << what << " frame " << k;
        EXPECT_EQ(hex(f.last), hex(plain.last)) << what << " frame " << k << " proto " << int(proto);
      }
    };
    both(nat_conn("10.0.0.1", 40000, proto), "A");
    EXPECT_GE(f.st.cache_hits, 10u) << "A's sides were not translated by the flow cache";
    const uint32_t a = handle();
    ASSERT_EQ(f.ct->flush(), 1u);
    ASSERT_EQ(plain.ct->flush(), 1u);
    const uint64_t hits = f.st.cache_hits;
    auto b = nat_conn("10.0.0.3", 40001, proto);
    both({b[0]}, "B");
    ASSERT_EQ(handle(), a) << "B did not reuse A's handle; the test proves nothing";
    both(std::vector(b.begin() + 1, b.end()), "B");
    EXPECT_GE(f.st.cache_hits, hits + 8) << "B's packets did not hit the flow cache";
  }
}

// The common outer frame's masked compare (prepare_outer_match,
// udp_tunnel_outer) decides every frame as the checks one by one do: the
// same Decap (inner offset, outer IP start and end, VNI, drop reason) from
// a pipeline's prepared tunnel config as from the unprepared one. Over
// three good replies (VNI 100, VNI 200, the second remote's) and each
// config (one remote, in the compare; two remotes; any_remote): every byte
// of the first 64 set to values the checks compare with, every length, and
// 110,000 random mutations (1-3 bits flipped, the outer checksum made good
// again in a quarter of them, a cut length in an eighth): about a million.
TEST(Overlay, TheOuterMatchDecidesAsTheChecksOneByOne) {
  const std::vector<uint8_t> inner = build_frame(reply_udp());
  std::vector<std::vector<uint8_t>> good = {scapy_vxlan(from_remote(), inner), scapy_vxlan(from_remote(200), inner)};
  nlohmann::json second = from_remote();
  second["src"] = "192.0.2.3";
  good.push_back(scapy_vxlan(second, inner));
  std::string two = overlay_yaml();
  two.replace(two.find("      - {ip: 192.0.2.2"), 0, "      - {ip: 192.0.2.3, mac: \"02:00:00:00:03:03\"}\n");
  std::string any = overlay_yaml();
  any.replace(any.find("    remotes:"), 0, "    any_remote: true\n");
  constexpr uint8_t kVx = 1u << static_cast<int>(TunnelKind::kVxlan);
  uint64_t fast = 0;
  for (const std::string& yaml : {overlay_yaml(), two, any}) {
    auto cfg = parse_config(yaml, "test.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.message();
    auto pl = Pipeline::build(cfg->rules, 1, &cfg->overlay);
    ASSERT_TRUE(pl.ok()) << pl.message();
    const OverlayConfig& prepared = (*pl)->overlay();
    const OverlayConfig& plain = cfg->overlay;
    ASSERT_TRUE(prepared[TunnelKind::kVxlan].outer.on) << "the pipeline's config is not prepared";
    ASSERT_FALSE(plain[TunnelKind::kVxlan].outer.on);
    std::mt19937 rng(7);
    auto same = [&](const std::vector<uint8_t>& fr, uint32_t len, const char* what) {
      uint8_t ca = 0, cb = 0;
      const Decap a = tunnel_decap(kVx, fr.data(), len, prepared, &ca);
      const Decap b = tunnel_decap(kVx, fr.data(), len, plain, &cb);
      fast += a.off != 0;
      const bool eq = a.off == b.off && a.l3 == b.l3 && a.end == b.end && a.vni == b.vni && a.why == b.why &&
                      (!a.off && a.why == DropWhy::kCount ? true : ca == cb);
      if (!eq)
        ADD_FAILURE() << what << ": prepared off " << a.off << " l3 " << a.l3 << " end " << a.end << " why "
                      << drop_why_name(a.why) << "; one by one off " << b.off << " l3 " << b.l3 << " end " << b.end
                      << " why " << drop_why_name(b.why) << "; frame " << hex(std::vector(fr.begin(), fr.begin() + len));
      return eq;
    };
    for (const auto& g : good) {
      // The replies from the first remote take the masked compare (a template
      // that never matched would decide alike, and lose the speed silently).
      if (&g != &good[2]) {
        EXPECT_TRUE(outer_matches(g.data(), prepared[TunnelKind::kVxlan].outer)) << "a good reply missed the outer match";
      }
      ASSERT_TRUE(same(g, static_cast<uint32_t>(g.size()), "a good reply"));
      // Every byte of the outer headers through values a check compares
      // with (and a flip), each length up to the frame's.
      for (uint32_t at = 0; at < 64; at++)
        for (const uint8_t v : {uint8_t{0}, uint8_t{0xFF}, uint8_t{0x45}, uint8_t{0x08}, uint8_t{0x11}, uint8_t{0x12},
                                uint8_t{0xB5}, uint8_t{0x40}, uint8_t{0x20}, static_cast<uint8_t>(g[at] ^ 1)}) {
          std::vector<uint8_t> m = g;
          m[at] = v;
          ASSERT_TRUE(same(m, static_cast<uint32_t>(m.size()), "one byte set"));
        }
      for (uint32_t len = 0; len <= g.size(); len++) ASSERT_TRUE(same(g, len, "cut"));
      for (int k = 0; k < 110000; k++) {
        std::vector<uint8_t> m = g;
        const int flips = 1 + static_cast<int>(rng() % 3);
        for (int j = 0; j < flips; j++) m[rng() % 64] ^= static_cast<uint8_t>(1u << (rng() % 8));
        if (rng() % 4 == 0) net::ipv4_set_checksum(m.data() + 14, 20);  // past the checksum, to the checks after it
        const uint32_t len = rng() % 8 == 0 ? static_cast<uint32_t>(rng() % (m.size() + 1)) : static_cast<uint32_t>(m.size());
        ASSERT_TRUE(same(m, len, "random"));
      }
    }
  }
  EXPECT_GT(fast, 1000u) << "hardly any frame was decapsulated: the test proves little";
}

}  // namespace
}  // namespace dp

int main(int argc, char** argv) { return run_tests_with_eal(argc, argv, "dp-overlay"); }
