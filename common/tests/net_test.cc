// net/: the byte-order, checksum and header helpers every part shares,
// against RFC 1071's worked example, a full recomputation (for RFC 1624's
// incremental update) and scapy's layers byte for byte (net_golden.py, run
// with Debian's python), Geneve's among them (scapy.contrib.geneve).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/bytes.h"
#include "net/checksum.h"
#include "net/geneve.h"
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

// ipv4_checksum_ok against the RFC 1071 sum, headers with and without
// options (its constant-length path is ihl 20): good ones pass, and a
// header with one bit flipped fails.
TEST(Checksum, Ipv4HeaderCheckOfEveryLength) {
  std::mt19937 rng(1071);
  int good = 0, bad = 0;
  for (int round = 0; round < 4000; round++) {
    const size_t ihl = 20 + 4 * (round % 11);
    uint8_t h[60];
    for (auto& c : h) c = static_cast<uint8_t>(rng());
    h[0] = static_cast<uint8_t>(0x40 | ihl / 4);
    net::ipv4_set_checksum(h, ihl);
    ASSERT_EQ(net::finish(net::sum16(h, ihl)), 0) << ihl;
    ASSERT_TRUE(net::ipv4_checksum_ok(h, ihl)) << ihl;
    good++;
    const size_t at = rng() % ihl;
    h[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    ASSERT_FALSE(net::ipv4_checksum_ok(h, ihl)) << ihl << " " << at;
    bad++;
  }
  EXPECT_EQ(good, 4000);
  EXPECT_EQ(bad, 4000);
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

// fold(), fold64() and adjust32() have no loop: each equals RFC 1071's
// loop of end-around carries (the reference here) on every edge and on
// 100,000 random sums.
namespace {
uint16_t loop_fold(uint64_t s) {
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return static_cast<uint16_t>(s);
}
}  // namespace

TEST(Checksum, FoldsWithoutALoopEqualTheCarryLoop) {
  std::vector<uint64_t> v = {0, 1, 0xFFFE, 0xFFFF, 0x10000, 0x10001, 0x1FFFE, 0x1FFFF, 0xFFFF0000u, 0xFFFF0001u,
                             0xFFFEFFFFu, 0xFFFFFFFEu, 0xFFFFFFFFu, 0x8000FFFFu, 0x7FFF8001u, 0x100000000ull,
                             0xFFFFFFFF00000000ull, 0xFFFFFFFFFFFFFFFFull, 0x00000001FFFFFFFFull, 0x8000000080000000ull};
  uint64_t x = 12345;
  for (int i = 0; i < 100000; i++) v.push_back(x = x * 6364136223846793005ull + 1442695040888963407ull);
  for (uint64_t s : v) {
    ASSERT_EQ(net::fold(static_cast<uint32_t>(s)), loop_fold(static_cast<uint32_t>(s))) << std::hex << s;
    ASSERT_EQ(net::fold64(s >> 2), loop_fold(s >> 2)) << std::hex << s;  // (>> 2: no carry out of 64 bits)
  }
  const uint32_t words[] = {0, 1, 0xFFFF, 0x10000, 0xFFFFFFFFu, 0xFFFF0000u, 0x0000FFFFu, 0x12345678u, 0xFEDCBA98u};
  for (uint16_t hc : {0, 1, 0xFFFE, 0xFFFF, 0x8000, 0x1234})
    for (uint32_t a : words)
      for (uint32_t b : words)
        for (uint32_t c : words) {
          // Three changed words, as NAT's rewrite sums them.
          const uint64_t d = net::delta32(a, b) + net::delta32(b, c) + net::delta32(c, a ^ b);
          // (adjust32's words, and so its field, are in the machine's order.)
          uint8_t got[2];
          memcpy(got, &hc, 2);
          net::adjust32(got, d);
          uint16_t g;
          memcpy(&g, got, 2);
          ASSERT_EQ(g, static_cast<uint16_t>(~loop_fold(static_cast<uint16_t>(~hc) + d))) << std::hex << hc << " " << d;
        }
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

// The tunnels' ends in the golden frames: this VTEP 192.0.2.1 (MAC
// 02:00:00:00:01:01) to the remote 192.0.2.2 (02:00:00:00:02:02).
struct TunnelEnds {
  uint8_t vtep[4], remote[4];
  const uint8_t rmac[6] = {0x02, 0, 0, 0, 2, 2}, lmac[6] = {0x02, 0, 0, 0, 1, 1};
  TunnelEnds() {
    inet_pton(AF_INET, "192.0.2.1", vtep);
    inet_pton(AF_INET, "192.0.2.2", remote);
  }
};

TEST(Headers, VxlanOuterEqualsScapysVxlanLayer) {
  const Spec inner{4, "tcp", 40000, 443, Bytes{'x', 'y'}};
  const Bytes in = build(inner);
  const TunnelEnds e;
  const auto& [vtep, remote, rmac, lmac] = e;
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

// Geneve options for the golden frames: data of 0, 4, 8, 120 and 124 bytes,
// critical and not, so Opt Len's six bits and the options' five are all
// exercised (the last set's Opt Len is 63 words, the most there is).
struct GeneveCase {
  std::vector<net::GeneveOption> opts;
  bool oam;
};
std::vector<GeneveCase> geneve_cases(const Bytes& data) {
  const uint8_t* d = data.data();
  return {
      {{}, false},
      {{{0x0102, 0x01, d, 0}}, false},
      {{{0x0102, 0x80, d, 4}}, false},
      {{{0x0101, 0x05, d, 8}, {0xFFFF, 0x7F, d, 4}}, true},
      {{{0x0100, 0x01, d, 4}, {0x0102, 0x83, d + 4, 8}, {0x0104, 0xFF, d + 8, 0}}, false},
      {{{0x0102, 0x10, d, 60}}, false},
      {{{0x0102, 0x10, d, 124}, {0x0103, 0x81, d + 1, 120}}, false},
  };
}

nlohmann::json geneve_json(const GeneveCase& c, uint32_t vni, bool df) {
  nlohmann::json opts = nlohmann::json::array();
  bool critical = false;
  for (const auto& o : c.opts) {
    opts.push_back({{"class", o.cls}, {"type", o.type}, {"data", hex(Bytes(o.data, o.data + o.len))}});
    critical |= (o.type & 0x80) != 0;
  }
  return {{"smac", "02:00:00:00:01:01"}, {"dmac", "02:00:00:00:02:02"}, {"src", "192.0.2.1"}, {"dst", "192.0.2.2"},
          {"ttl", 32}, {"df", df}, {"sport", 51000}, {"dport", 6081}, {"vni", vni}, {"oam", c.oam},
          {"critical", critical}, {"options", opts}};
}

TEST(Headers, GeneveOuterEqualsScapysGeneveLayer) {
  const Spec inner{4, "tcp", 40000, 443, Bytes{'x', 'y'}};
  const Bytes in = build(inner);
  Bytes data(128);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(0xA0 + i * 7);
  const TunnelEnds e;
  const auto& [vtep, remote, rmac, lmac] = e;
  nlohmann::json js = nlohmann::json::array();
  std::vector<Bytes> got;
  const auto cases = geneve_cases(data);
  for (size_t k = 0; k < cases.size(); k++) {
    const auto& c = cases[k];
    const uint32_t vni = k == 0 ? 0xFFFFFFu : static_cast<uint32_t>(k * 1000 + 1);
    const bool df = k % 2 == 0;
    const net::GeneveOuter o{rmac,      lmac, vtep, remote, vni, 51000, net::kGenevePort, 32, df, c.opts.data(),
                             static_cast<uint32_t>(c.opts.size()), c.oam};
    const uint32_t len = net::geneve_outer_v4_len(o);
    ASSERT_GE(len, net::kGeneveOuterV4) << k;
    Bytes f(len + in.size());
    ASSERT_EQ(net::put_geneve_outer_v4(f.data(), o, static_cast<uint32_t>(in.size())), len) << k;
    memcpy(f.data() + len, in.data(), in.size());
    got.push_back(f);
    nlohmann::json s = spec_json(inner);
    s["geneve"] = geneve_json(c, vni, df);
    js.push_back(s);
    // And it reads back: the VNI, the flags, every option, the inner frame.
    net::GeneveHeader h;
    const uint8_t* g = f.data() + net::kEthLen + net::kIpv4Len + net::kUdpLen;
    ASSERT_EQ(net::parse_geneve(g, static_cast<uint32_t>(f.data() + f.size() - g), &h), net::GeneveError::kNone) << k;
    EXPECT_EQ(h.vni, vni);
    EXPECT_EQ(h.proto, net::kEthTeb);
    EXPECT_EQ(h.oam, c.oam);
    EXPECT_EQ(g + h.len, f.data() + len);
    ASSERT_EQ(h.n_opts, c.opts.size());
    uint32_t at = 0;
    for (const auto& want : c.opts) {
      net::GeneveOption o2;
      ASSERT_TRUE(net::geneve_next_option(h.opts, h.opts_len, &at, &o2));
      EXPECT_EQ(o2.cls, want.cls);
      EXPECT_EQ(o2.type, want.type);
      EXPECT_EQ(hex(Bytes(o2.data, o2.data + o2.len)), hex(Bytes(want.data, want.data + want.len)));
    }
    EXPECT_EQ(at, h.opts_len);
  }
  const auto want = scapy(js);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(hex(got[i]), hex(want[i])) << js[i].dump();
}

// The C bit follows the options, and the first critical option is the one
// reported, C or not.
TEST(Headers, GeneveReportsTheFirstCriticalOption) {
  const uint8_t d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const net::GeneveOption opts[] = {{0x0102, 0x01, d, 4}, {0x0103, 0x85, d, 8}, {0x0104, 0x80, d, 0}};
  uint8_t buf[64];
  const uint32_t len = net::put_geneve(buf, {42, opts, 3});
  ASSERT_EQ(len, 8u + 8 + 12 + 4);
  EXPECT_EQ(buf[1] & net::kGeneveFlagC, net::kGeneveFlagC);
  net::GeneveHeader h;
  ASSERT_EQ(net::parse_geneve(buf, len, &h), net::GeneveError::kNone);
  EXPECT_TRUE(h.critical);
  ASSERT_TRUE(h.has_critical);
  EXPECT_EQ(h.first_critical.cls, 0x0103);
  EXPECT_EQ(h.first_critical.type, 0x85);
  EXPECT_EQ(h.first_critical.len, 8);
  EXPECT_EQ(h.first_critical.data, buf + 8 + 8 + 4);
  // A sender that left C clear: the option is still found.
  buf[1] &= static_cast<uint8_t>(~net::kGeneveFlagC);
  ASSERT_EQ(net::parse_geneve(buf, len, &h), net::GeneveError::kNone);
  EXPECT_FALSE(h.critical);
  EXPECT_TRUE(h.has_critical);
  EXPECT_EQ(h.first_critical.type, 0x85);
  // Without critical options: neither.
  ASSERT_EQ(net::put_geneve(buf, {42, opts, 1}), 16u);
  EXPECT_EQ(buf[1], 0);
  ASSERT_EQ(net::parse_geneve(buf, 16, &h), net::GeneveError::kNone);
  EXPECT_FALSE(h.critical);
  EXPECT_FALSE(h.has_critical);
  EXPECT_EQ(h.n_opts, 1u);
}

// What cannot be written is refused whole: nothing is written.
TEST(Headers, GeneveBuilderRefusesOptionsItCannotEncode) {
  const uint8_t d[128] = {};
  const net::GeneveOption odd[] = {{1, 1, d, 6}}, big[] = {{1, 1, d, 128}};
  const net::GeneveOption over[] = {{1, 1, d, 124}, {1, 2, d, 124}};  // 256 bytes of options > 252
  uint8_t buf[400];
  memset(buf, 0xEE, sizeof buf);
  for (const auto& [opts, n] : {std::pair{odd, 1u}, std::pair{big, 1u}, std::pair{over, 2u}}) {
    EXPECT_EQ(net::geneve_len({1, opts, n}), 0u);
    EXPECT_EQ(net::put_geneve(buf, {1, opts, n}), 0u);
    const uint8_t m[6] = {};
    const net::GeneveOuter o{m, m, d, d, 1, 1, net::kGenevePort, 64, true, opts, n};
    EXPECT_EQ(net::put_geneve_outer_v4(buf, o, 10), 0u);
  }
  for (uint8_t c : buf) ASSERT_EQ(c, 0xEE);
}

// Malformed headers: each refused by its reason, and no read past the bytes
// given (each case in a heap buffer of exactly its length, for ASan).
TEST(Headers, GeneveParserRefusesMalformedHeaders) {
  const uint8_t d[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  const net::GeneveOption opts[] = {{0x0102, 0x01, d, 4}, {0x0102, 0x82, d, 8}};
  Bytes good(8 + 8 + 12);
  ASSERT_EQ(net::put_geneve(good.data(), {7, opts, 2}), good.size());
  auto parse = [](const Bytes& b) {
    std::unique_ptr<uint8_t[]> exact(new uint8_t[b.size() ? b.size() : 1]);
    if (!b.empty()) memcpy(exact.get(), b.data(), b.size());
    net::GeneveHeader h;
    return net::parse_geneve(exact.get(), static_cast<uint32_t>(b.size()), &h);
  };
  EXPECT_EQ(parse(good), net::GeneveError::kNone);
  // Truncated anywhere: before the fixed header ends, or inside the options.
  for (size_t n = 0; n < good.size(); n++) {
    const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(parse(cut), n < 8 ? net::GeneveError::kShort : net::GeneveError::kOptLen) << n;
  }
  // Versions 1..3.
  for (uint8_t v = 1; v < 4; v++) {
    Bytes b = good;
    b[0] = static_cast<uint8_t>(v << 6 | (b[0] & 0x3F));
    EXPECT_EQ(parse(b), net::GeneveError::kVersion) << int{v};
  }
  // Opt Len one word, and 63 words, past the end.
  Bytes b = good;
  b[0] = static_cast<uint8_t>(b[0] + 1);
  EXPECT_EQ(parse(b), net::GeneveError::kOptLen);
  b[0] = 0x3F;
  EXPECT_EQ(parse(b), net::GeneveError::kOptLen);
  // An option's Length past Opt Len (the bytes are there, Opt Len stops
  // short of them): the second option claims 3 words where 2 are.
  b = good;
  b[8 + 8 + 3] = 3;
  b.resize(b.size() + 4, 0);
  EXPECT_EQ(parse(b), net::GeneveError::kOptionLen);
  // Walked option by option, the first is given and the second is not
  // (the walk stays where it was).
  uint32_t at = 0;
  net::GeneveOption o;
  EXPECT_TRUE(net::geneve_next_option(b.data() + 8, 20, &at, &o));
  EXPECT_EQ(at, 8u);
  EXPECT_FALSE(net::geneve_next_option(b.data() + 8, 20, &at, &o));
  EXPECT_EQ(at, 8u);
  // Opt Len ending inside an option's 4-byte header.
  b = good;
  b[0] = 3;  // 12 bytes: the first option (8) and half of the second's header
  EXPECT_EQ(parse(b), net::GeneveError::kOptionLen);
  // The largest option Length (31 words) in a one-word region.
  b = Bytes{0x01, 0, 0x65, 0x58, 0, 0, 7, 0, 0x01, 0x02, 0x03, 0x1F};
  EXPECT_EQ(parse(b), net::GeneveError::kOptionLen);
  // The reserved bits in an option's length byte are not its length.
  b = Bytes{0x01, 0, 0x65, 0x58, 0, 0, 7, 0, 0x01, 0x02, 0x03, 0xE0};
  EXPECT_EQ(parse(b), net::GeneveError::kNone);
}

}  // namespace
