// net/: the byte-order, checksum and header helpers every part shares,
// against RFC 1071's worked example, a full recomputation (for RFC 1624's
// incremental update) and scapy's layers byte for byte (net_golden.py, run
// with Debian's python).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/bytes.h"
#include "net/checksum.h"
#include "net/headers.h"
#include "testbed/process.h"

namespace {

using Bytes = std::vector<uint8_t>;

std::string hex(const Bytes& b) {
  std::string s;
  char x[3];
  for (uint8_t c : b) {
    snprintf(x, sizeof x, "%02x", c);
    s += x;
  }
  return s;
}
Bytes unhex(const std::string& s) {
  Bytes b;
  for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return b;
}

// scapy's frame for each spec; fails the test when scapy does not answer.
std::vector<Bytes> scapy(const nlohmann::json& specs) {
  auto r = testbed::run_capture({"/usr/bin/python3", std::string(SOURCE_ROOT) + "/common/tests/net_golden.py", specs.dump()});
  EXPECT_TRUE(r.ok() && r->status == 0) << (r.ok() ? r->output : r.message());
  std::vector<Bytes> out;
  if (!r.ok()) return out;
  size_t at = 0;
  for (size_t nl; (nl = r->output.find('\n', at)) != std::string::npos; at = nl + 1)
    out.push_back(unhex(r->output.substr(at, nl - at)));
  EXPECT_EQ(out.size(), specs.size()) << r->output;
  return out;
}

TEST(Checksum, Rfc1071WorkedExample) {
  // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 2ddf0, folds to ddf2.
  const uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(net::sum16(b, 8), 0x2ddf0u);
  EXPECT_EQ(net::fold(net::sum16(b, 8)), 0xddf2);
  EXPECT_EQ(net::finish(net::sum16(b, 8)), 0x220d);
  // An odd length pads the last byte as a word's high byte.
  EXPECT_EQ(net::sum16(b, 7), 0x2ddf0u - 0xf7);
  EXPECT_EQ(net::udp_field(0), 0xFFFF);
  EXPECT_EQ(net::udp_field(0x1234), 0x1234);
}

// The incremental update equals a full recomputation, for every word
// position, including the sums that meet 0x0000/0xFFFF.
TEST(Checksum, IncrementalUpdateEqualsRecomputation) {
  std::mt19937 rng(1624);
  int checked = 0;
  for (int round = 0; round < 20000; round++) {
    uint8_t h[20];
    for (auto& c : h) c = static_cast<uint8_t>(rng());
    h[0] = 0x45;
    net::ipv4_set_checksum(h, 20);
    ASSERT_TRUE(net::ipv4_checksum_ok(h, 20));
    // A word or an address outside the checksum field.
    static const size_t kAt[] = {0, 2, 4, 6, 8, 12, 14, 16, 18, 12, 16};
    const size_t k = rng() % 11, at = kAt[k], n = k >= 9 ? 4 : 2;
    uint8_t neu[4];
    for (auto& c : neu) c = static_cast<uint8_t>(round % 7 == 0 ? 0xFF : round % 11 == 0 ? 0 : rng());
    net::adjust(h + 10, h + at, neu, n);
    memcpy(h + at, neu, n);
    uint8_t full[20];
    memcpy(full, h, 20);
    net::ipv4_set_checksum(full, 20);
    // The same one's-complement number: equal, or 0x0000 against 0xFFFF
    // (RFC 1624 section 3), which a receiver takes as good either way.
    ASSERT_TRUE(net::ipv4_checksum_ok(h, 20)) << round;
    if (net::get16(h + 10) != net::get16(full + 10)) {
      ASSERT_EQ(net::get16(h + 10) ^ net::get16(full + 10), 0xFFFF) << round;
    }
    checked++;
  }
  EXPECT_EQ(checked, 20000);
}

struct Spec {
  int family;
  const char* proto;
  uint16_t sport, dport;
  Bytes payload;
};

const uint8_t kSmac[6] = {0x02, 0, 0, 0, 0, 0x01}, kDmac[6] = {0x02, 0, 0, 0, 0, 0x02};

// Our frame for spec s: net::put_eth / put_ipv4 or put_ipv6 / put_tcp,
// put_udp or an ICMP echo / payload, and l4_checksum.
Bytes build(const Spec& s) {
  const bool v6 = s.family == 6;
  uint8_t src[16], dst[16];
  inet_pton(v6 ? AF_INET6 : AF_INET, v6 ? "2001:db8::1" : "10.0.0.1", src);
  inet_pton(v6 ? AF_INET6 : AF_INET, v6 ? "2001:db8::2" : "198.51.100.7", dst);
  const std::string p = s.proto;
  const int ip_proto = p == "tcp" ? IPPROTO_TCP : p == "udp" ? IPPROTO_UDP : v6 ? int{IPPROTO_ICMPV6} : int{IPPROTO_ICMP};
  const uint8_t proto = static_cast<uint8_t>(ip_proto);
  const uint32_t l4h = p == "tcp" ? net::kTcpLen : 8;
  const uint32_t l4len = l4h + static_cast<uint32_t>(s.payload.size());
  Bytes f(net::kEthLen + (v6 ? net::kIpv6Len : net::kIpv4Len) + l4len);
  uint8_t* ip = f.data() + net::put_eth(f.data(), kDmac, kSmac, v6 ? net::kEthIpv6 : net::kEthIpv4);
  uint8_t* l4 = ip + (v6 ? net::put_ipv6(ip, src, dst, proto, static_cast<uint16_t>(l4len), 64)
                         : net::put_ipv4(ip, {src, dst, proto, static_cast<uint16_t>(20 + l4len), 64, true, 7}));
  if (p == "tcp") {
    net::put_tcp(l4, {s.sport, s.dport, 1000, 2000, 0x18, 8192});
  } else if (p == "udp") {
    net::put_udp(l4, s.sport, s.dport, static_cast<uint16_t>(l4len));
  } else {
    l4[0] = v6 ? 128 : 8;
    l4[1] = 0;
    net::put16(l4 + 2, 0);
    net::put16(l4 + 4, s.sport);
    net::put16(l4 + 6, s.dport);
  }
  if (!s.payload.empty()) memcpy(l4 + l4h, s.payload.data(), s.payload.size());
  const size_t at = p == "tcp" ? 16 : p == "udp" ? 6 : 2;
  net::put16(l4 + at, net::l4_checksum(src, dst, v6 ? 16 : 4, proto, l4, l4len));
  return f;
}

nlohmann::json spec_json(const Spec& s) {
  const bool v6 = s.family == 6;
  return {{"family", s.family},     {"proto", s.proto},    {"smac", "02:00:00:00:00:01"}, {"dmac", "02:00:00:00:00:02"},
          {"src", v6 ? "2001:db8::1" : "10.0.0.1"},       {"dst", v6 ? "2001:db8::2" : "198.51.100.7"},
          {"ttl", 64},              {"id", 7},             {"df", true},
          {"sport", s.sport},       {"dport", s.dport},    {"seq", 1000}, {"ack", 2000}, {"flags", 0x18}, {"win", 8192},
          {"payload", hex(s.payload)}};
}

// A UDP payload whose checksum computes to 0x0000 (so it must go as 0xFFFF).
Bytes udp_zero_payload(int family) {
  Spec s{family, "udp", 5000, 53, Bytes(10, 0x11)};
  Bytes f = build(s);
  const size_t l4 = net::kEthLen + (family == 6 ? net::kIpv6Len : net::kIpv4Len);
  // With the last payload word 0, the sum without the field; pick the word
  // that brings it to 0xFFFF.
  net::put16(f.data() + l4 + 6, 0);
  net::put16(f.data() + f.size() - 2, 0);
  uint8_t src[16], dst[16];
  memcpy(src, f.data() + (family == 6 ? 22 : 26), family == 6 ? 16 : 4);
  memcpy(dst, f.data() + (family == 6 ? 38 : 30), family == 6 ? 16 : 4);
  const uint32_t sum = net::sum16(f.data() + l4, f.size() - l4,
                                  net::pseudo_sum(src, dst, family == 6 ? 16 : 4, IPPROTO_UDP,
                                                  static_cast<uint32_t>(f.size() - l4)));
  const uint16_t w = static_cast<uint16_t>(0xFFFF - net::fold(sum));
  s.payload[8] = static_cast<uint8_t>(w >> 8);
  s.payload[9] = static_cast<uint8_t>(w);
  return s.payload;
}

TEST(Headers, FramesEqualScapysLayers) {
  std::vector<Spec> specs;
  for (int fam : {4, 6}) {
    specs.push_back({fam, "tcp", 40000, 443, Bytes{'h', 'e', 'l', 'l', 'o'}});
    specs.push_back({fam, "tcp", 1, 65535, Bytes()});
    specs.push_back({fam, "udp", 5353, 53, Bytes{1, 2, 3}});
    specs.push_back({fam, "udp", 5000, 53, udp_zero_payload(fam)});
    specs.push_back({fam, "icmp", 0x1234, 7, Bytes(33, 0xa5)});
  }
  nlohmann::json js = nlohmann::json::array();
  for (const auto& s : specs) js.push_back(spec_json(s));
  const auto want = scapy(js);
  ASSERT_EQ(want.size(), specs.size());
  int zeroes = 0;
  for (size_t i = 0; i < specs.size(); i++) {
    SCOPED_TRACE(js[i].dump());
    const Bytes got = build(specs[i]);
    EXPECT_EQ(hex(got), hex(want[i]));
    const size_t l4 = net::kEthLen + (specs[i].family == 6 ? net::kIpv6Len : net::kIpv4Len);
    if (std::string(specs[i].proto) == "udp" && net::get16(got.data() + l4 + 6) == 0xFFFF) zeroes++;
  }
  EXPECT_EQ(zeroes, 2);  // the crafted payloads: a computed 0 sent as 0xFFFF, as scapy does
}

TEST(Headers, VxlanOuterEqualsScapysVxlanLayer) {
  const Spec inner{4, "tcp", 40000, 443, Bytes{'x', 'y'}};
  const Bytes in = build(inner);
  uint8_t vtep[4], remote[4];
  inet_pton(AF_INET, "192.0.2.1", vtep);
  inet_pton(AF_INET, "192.0.2.2", remote);
  const uint8_t rmac[6] = {0x02, 0, 0, 0, 2, 2}, lmac[6] = {0x02, 0, 0, 0, 1, 1};
  nlohmann::json js = nlohmann::json::array();
  std::vector<Bytes> got;
  for (uint32_t vni : {1u, 100u, 0xFFFFFFu}) {
    for (bool df : {true, false}) {
      Bytes f(net::kVxlanOuterV4 + in.size());
      const net::VxlanOuter o{rmac, lmac, vtep, remote, vni, 51000, net::kVxlanPort, 32, df};
      ASSERT_EQ(net::put_vxlan_outer_v4(f.data(), o, static_cast<uint32_t>(in.size())), 50u);
      memcpy(f.data() + 50, in.data(), in.size());
      EXPECT_TRUE(net::vxlan_has_vni(f.data() + 42));
      EXPECT_EQ(net::vxlan_vni(f.data() + 42), vni);
      got.push_back(f);
      nlohmann::json s = spec_json(inner);
      s["vxlan"] = {{"smac", "02:00:00:00:01:01"}, {"dmac", "02:00:00:00:02:02"}, {"src", "192.0.2.1"},
                    {"dst", "192.0.2.2"}, {"ttl", 32}, {"df", df}, {"sport", 51000}, {"dport", 4789}, {"vni", vni}};
      js.push_back(s);
    }
  }
  const auto want = scapy(js);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(hex(got[i]), hex(want[i])) << js[i].dump();
}

}  // namespace
