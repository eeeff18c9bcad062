// Parser tests over hand-built frames, including every malformed-packet reason.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <vector>

#include "ctrack/parse.h"

namespace ctrack {
namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}

Bytes eth(uint16_t type, std::vector<uint16_t> vlans = {}) {
  Bytes b(12, 0xAA);
  for (uint16_t v : vlans) {
    put16(b, 0x8100);
    put16(b, v);
  }
  put16(b, type);
  return b;
}

Bytes ipv4(uint8_t proto, const Bytes& l4, uint16_t frag = 0, int ihl_words = 5) {
  Bytes b;
  b.push_back(static_cast<uint8_t>(0x40 | ihl_words));
  b.push_back(0);
  put16(b, static_cast<uint16_t>(ihl_words * 4 + l4.size()));
  put16(b, 1);
  put16(b, frag);
  b.push_back(64);
  b.push_back(proto);
  put16(b, 0);
  put32(b, 0x0A000001);
  put32(b, 0x0A000002);
  for (int i = 5; i < ihl_words; i++) put32(b, 0x01010101);  // NOP options
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}

Bytes tcp_hdr(uint8_t flags, const Bytes& opts = {}, size_t payload = 0) {
  Bytes b;
  put16(b, 40000);
  put16(b, 80);
  put32(b, 1000);
  put32(b, 0);
  b.push_back(static_cast<uint8_t>(((20 + opts.size()) / 4) << 4));
  b.push_back(flags);
  put16(b, 29200);
  put32(b, 0);
  b.insert(b.end(), opts.begin(), opts.end());
  b.insert(b.end(), payload, 0x55);
  return b;
}

Bytes udp_hdr(uint16_t sport, uint16_t dport, size_t payload = 10) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<uint16_t>(8 + payload));
  put16(b, 0);
  b.insert(b.end(), payload, 0x11);
  return b;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Drop parse(const Bytes& b, Parsed* out) { return parse_packet(b.data(), static_cast<uint32_t>(b.size()), 3, out); }

TEST(Parse, TcpSynWithOptions) {
  // MSS, SACK-permitted, NOP, window scale 7.
  Bytes opts = {2, 4, 0x05, 0xb4, 4, 2, 1, 3, 3, 7};
  opts.resize(12, 0);
  Bytes f = cat(eth(0x0800), ipv4(IPPROTO_TCP, tcp_hdr(kSyn, opts, 0)));
  Parsed p;
  ASSERT_EQ(parse(f, &p), Drop::kNone);
  EXPECT_EQ(p.kind, L3Kind::kIp);
  EXPECT_EQ(p.ct.key.proto, IPPROTO_TCP);
  EXPECT_EQ(p.ct.key.sport, 40000);
  EXPECT_EQ(p.ct.key.dport, 80);
  EXPECT_EQ(p.ct.key.zone, 3);
  EXPECT_EQ(p.ct.key.family, 4);
  EXPECT_EQ(p.ct.seq, 1000u);
  EXPECT_EQ(p.ct.tcp_flags, kSyn);
  EXPECT_TRUE(p.ct.meta & kMetaWscale);
  EXPECT_EQ(p.ct.wscale, 7);
  EXPECT_TRUE(p.ct.meta & kMetaSackPerm);
  EXPECT_EQ(p.ct.payload_len, 0);
  EXPECT_EQ(p.ct.l3_len, 20 + 32);
}

TEST(Parse, SackBlocksGiveHighestRightEdge) {
  Bytes opts = {1, 1, 5, 18};
  Bytes tmp;
  put32(tmp, 2000);
  put32(tmp, 3000);
  put32(tmp, 4000);
  put32(tmp, 5000);
  opts.insert(opts.end(), tmp.begin(), tmp.end());
  opts.resize(24, 0);
  Parsed p;
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_TCP, tcp_hdr(kAck, opts, 10))), &p), Drop::kNone);
  EXPECT_TRUE(p.ct.meta & kMetaSack);
  EXPECT_EQ(p.ct.sack, 5000u);
  EXPECT_EQ(p.ct.payload_len, 10);
}

TEST(Parse, VlanUdpWithIpOptions) {
  Parsed p;
  ASSERT_EQ(parse(cat(eth(0x0800, {100}), ipv4(IPPROTO_UDP, udp_hdr(1, 2), 0, 7)), &p), Drop::kNone);
  EXPECT_EQ(p.vlan, 100);
  EXPECT_EQ(p.ct.key.sport, 1);
  EXPECT_EQ(p.ct.key.dport, 2);
  EXPECT_EQ(p.l4_off, 14 + 4 + 28);
}

TEST(Parse, Ipv4Fragments) {
  Parsed p;
  // First fragment (MF set, offset 0): ports are parsed.
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_UDP, udp_hdr(7, 8), 0x2000)), &p), Drop::kNone);
  EXPECT_FALSE(p.ct.meta & kMetaFragment);
  EXPECT_EQ(p.ct.key.sport, 7);
  // Non-first: no ports, flagged.
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_UDP, udp_hdr(7, 8), 0x0010)), &p), Drop::kNone);
  EXPECT_TRUE(p.ct.meta & kMetaFragment);
  EXPECT_EQ(p.ct.key.sport, 0);
  EXPECT_EQ(p.ct.key.dport, 0);
  EXPECT_EQ(p.frag, Parsed::kFragLater);
  EXPECT_EQ(p.frag_off, 0x10u * 8);
  EXPECT_FALSE(p.frag_more);
}

Bytes ipv6(uint8_t next, const Bytes& payload) {
  Bytes b = {0x60, 0, 0, 0};
  put16(b, static_cast<uint16_t>(payload.size()));
  b.push_back(next);
  b.push_back(64);
  Bytes a(16, 0);
  a[0] = 0xfd;
  a[15] = 1;
  b.insert(b.end(), a.begin(), a.end());
  a[15] = 2;
  b.insert(b.end(), a.begin(), a.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

TEST(Parse, Ipv6ExtensionChain) {
  // hop-by-hop (8 bytes) -> destination options (16 bytes) -> UDP
  Bytes hbh = {60, 0, 1, 4, 0, 0, 0, 0};
  Bytes dst = {IPPROTO_UDP, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  Parsed p;
  ASSERT_EQ(parse(cat(eth(0x86DD), ipv6(0, cat(cat(hbh, dst), udp_hdr(53, 9999)))), &p), Drop::kNone);
  EXPECT_EQ(p.ct.key.family, 6);
  EXPECT_EQ(p.ct.key.proto, IPPROTO_UDP);
  EXPECT_EQ(p.ct.key.sport, 53);
  EXPECT_EQ(p.ct.key.src[0], 0xfd);
  // Fragment header with a non-zero offset: a non-first fragment.
  Bytes frag = {IPPROTO_UDP, 0, 0x00, 0x08, 0, 0, 0, 1};
  ASSERT_EQ(parse(cat(eth(0x86DD), ipv6(44, cat(frag, udp_hdr(53, 1)))), &p), Drop::kNone);
  EXPECT_TRUE(p.ct.meta & kMetaFragment);
  EXPECT_EQ(p.ct.key.sport, 0);
}

TEST(Parse, FirstFragmentsCarryTheWholeDatagramsUdpLength) {
  // A 3000-byte datagram's first fragment: the UDP length runs past it.
  Bytes u = udp_hdr(7, 8, 1472);
  u[4] = 3008 >> 8;
  u[5] = 3008 & 0xFF;
  Parsed p;
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_UDP, u, 0x2000)), &p), Drop::kNone);
  EXPECT_EQ(p.frag, Parsed::kFragFirst);
  EXPECT_TRUE(p.frag_more);
  EXPECT_EQ(p.frag_id, 1u);
  EXPECT_EQ(p.frag_off, 0u);
  EXPECT_EQ(p.frag_len, 1480u);
  EXPECT_EQ(p.frag_start, 20);
  EXPECT_EQ(p.ct.key.dport, 8);
  EXPECT_EQ(p.ct.payload_len, 3000);
  // The same length in a whole datagram is past its end; and a first
  // fragment's UDP length may not end inside the fragment.
  EXPECT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_UDP, u, 0)), &p), Drop::kUdpLen);
  u[4] = 0;
  u[5] = 100;
  EXPECT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_UDP, u, 0x2000)), &p), Drop::kUdpLen);
  // IPv6: M set, offset 0, identification 0x01020304.
  Bytes u6 = udp_hdr(53, 9, 1000);
  u6[4] = 3008 >> 8;
  u6[5] = 3008 & 0xFF;
  Bytes fh = {IPPROTO_UDP, 0, 0x00, 0x01, 1, 2, 3, 4};
  ASSERT_EQ(parse(cat(eth(0x86DD), ipv6(44, cat(fh, u6))), &p), Drop::kNone);
  EXPECT_EQ(p.frag, Parsed::kFragFirst);
  EXPECT_EQ(p.frag_id, 0x01020304u);
  EXPECT_EQ(p.frag_start, 48);
  EXPECT_EQ(p.frag_len, 1008u);
  EXPECT_EQ(p.ct.key.sport, 53);
  EXPECT_FALSE(p.ct.meta & kMetaFragment);
  // An atomic fragment (RFC 6946: offset 0, no M) is a whole packet; two
  // fragment headers are malformed.
  Bytes atomic = {IPPROTO_UDP, 0, 0, 0, 1, 2, 3, 4};
  ASSERT_EQ(parse(cat(eth(0x86DD), ipv6(44, cat(atomic, udp_hdr(53, 9)))), &p), Drop::kNone);
  EXPECT_EQ(p.frag, Parsed::kFragNone);
  Bytes twice = {44, 0, 0x00, 0x01, 1, 2, 3, 4};
  EXPECT_EQ(parse(cat(eth(0x86DD), ipv6(44, cat(cat(twice, fh), u6))), &p), Drop::kIp6Ext);
}

Bytes icmp(uint8_t type, uint8_t code, uint16_t id, const Bytes& rest = {}) {
  Bytes b = {type, code, 0, 0};
  put16(b, id);
  put16(b, 1);
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

TEST(Parse, IcmpEchoAndErrors) {
  Parsed p;
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_ICMP, icmp(8, 0, 77))), &p), Drop::kNone);
  EXPECT_TRUE(p.ct.meta & kMetaIcmpEcho);
  EXPECT_EQ(p.ct.key.sport, 77);
  EXPECT_EQ(p.ct.key.dport, 0);
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_ICMP, icmp(0, 0, 77))), &p), Drop::kNone);
  EXPECT_EQ(p.ct.key.sport, 0);
  EXPECT_EQ(p.ct.key.dport, 77);

  // Port unreachable carrying the UDP packet 10.0.0.1:5000 -> 10.0.0.2:53.
  Bytes inner = ipv4(IPPROTO_UDP, udp_hdr(5000, 53, 0));
  Bytes err = {3, 3, 0, 0, 0, 0, 0, 0};
  err.insert(err.end(), inner.begin(), inner.end());
  ASSERT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_ICMP, err)), &p), Drop::kNone);
  EXPECT_TRUE(p.ct.meta & kMetaIcmpError);
  EXPECT_EQ(p.ct.key.proto, IPPROTO_UDP);
  EXPECT_EQ(p.ct.key.sport, 5000);
  EXPECT_EQ(p.ct.key.dport, 53);
  EXPECT_EQ(p.ct.key.zone, 3);

  // The same error with its embedded header cut short.
  Bytes shortErr(err.begin(), err.begin() + 8 + 12);
  EXPECT_EQ(parse(cat(eth(0x0800), ipv4(IPPROTO_ICMP, shortErr)), &p), Drop::kIcmpInner);
}

TEST(Parse, PassThroughKinds) {
  Parsed p;
  Bytes arp = eth(0x0806);
  arp.resize(42, 0);
  ASSERT_EQ(parse(arp, &p), Drop::kNone);
  EXPECT_EQ(p.kind, L3Kind::kArp);
  ASSERT_EQ(parse(cat(eth(0x86DD), ipv6(IPPROTO_ICMPV6, icmp(135, 0, 0, Bytes(16, 0)))), &p), Drop::kNone);
  EXPECT_EQ(p.kind, L3Kind::kNd);
  Bytes lldp = eth(0x88CC);
  lldp.resize(60, 0);
  ASSERT_EQ(parse(lldp, &p), Drop::kNone);
  EXPECT_EQ(p.kind, L3Kind::kOther);
}

struct Bad {
  const char* name;
  Bytes frame;
  Drop want;
};

// Every field of a reused Parsed is what a fresh one would hold: nothing of
// the frame parsed into it before survives (the parser clears it in place).
TEST(Parse, ReusedResultHoldsNothingOfThePreviousFrame) {
  Bytes opts = {3, 3, 7, 0};
  Bytes fh = {IPPROTO_UDP, 0, 0x00, 0x01, 0, 0, 0, 42};  // IPv6 first fragment, M set
  const Bytes frames[] = {
      cat(eth(0x0800), ipv4(IPPROTO_TCP, tcp_hdr(kSyn | kAck, opts, 5))),
      cat(eth(0x0800, {100}), ipv4(IPPROTO_UDP, udp_hdr(7, 8), 0x2000, 7)),
      cat(eth(0x86DD), ipv6(44, cat(fh, udp_hdr(53, 9)))),
      cat(eth(0x0800), ipv4(IPPROTO_ICMP, icmp(8, 0, 77))),
      cat(eth(0x0806), Bytes(28, 0)),
      cat(eth(0x1234), Bytes(20, 0)),
      Bytes(10, 0),
  };
  auto same = [](const Parsed& a, const Parsed& b) {
    return a.ct.key == b.ct.key && a.ct.seq == b.ct.seq && a.ct.ack == b.ct.ack && a.ct.sack == b.ct.sack &&
           a.ct.win == b.ct.win && a.ct.payload_len == b.ct.payload_len && a.ct.l3_len == b.ct.l3_len &&
           a.ct.tcp_flags == b.ct.tcp_flags && a.ct.wscale == b.ct.wscale && a.ct.meta == b.ct.meta &&
           a.ct.icmp_type == b.ct.icmp_type && a.ct.in_port == b.ct.in_port && a.ct.l2_len == b.ct.l2_len &&
           a.vlan == b.vlan && a.ethertype == b.ethertype && a.l3_off == b.l3_off && a.l4_off == b.l4_off &&
           a.kind == b.kind && a.icmp_code == b.icmp_code && a.ttl == b.ttl && a.frag == b.frag &&
           a.frag_more == b.frag_more && a.frag_start == b.frag_start && a.frag_id == b.frag_id &&
           a.frag_off == b.frag_off && a.frag_len == b.frag_len;
  };
  for (const Bytes& prev : frames) {
    for (const Bytes& f : frames) {
      Parsed fresh, reused;
      Drop want = parse(f, &fresh);
      parse(prev, &reused);
      reused.ct.in_port = 9;  // set by a front end after parsing
      EXPECT_EQ(parse(f, &reused), want);
      EXPECT_TRUE(same(fresh, reused)) << "frame of " << f.size() << " bytes after one of " << prev.size();
    }
    // A frame cut short before its ethertype leaves the defaults (and the zone).
    Parsed reused, defaults{};  // (value-initialised: Key has no member initialisers)
    defaults.ct.key.zone = 3;
    parse(prev, &reused);
    EXPECT_EQ(parse(Bytes(10, 0), &reused), Drop::kTruncEth);
    EXPECT_TRUE(same(defaults, reused)) << "after a frame of " << prev.size() << " bytes";
  }
}

TEST(Parse, MalformedPacketsGetTheirReason) {
  Bytes good = cat(eth(0x0800), ipv4(IPPROTO_TCP, tcp_hdr(kAck)));
  Bytes badver = good;
  badver[14] = 0x65;
  Bytes badihl = good;
  badihl[14] = 0x44;
  Bytes biglen = good;
  biglen[16] = 0x40;
  Bytes smalllen = good;
  smalllen[16] = 0;
  smalllen[17] = 10;
  Bytes badoff = good;
  badoff[14 + 20 + 12] = 0x40;
  Bytes bigoff = good;
  bigoff[14 + 20 + 12] = 0xF0;
  Bytes udpbad = cat(eth(0x0800), ipv4(IPPROTO_UDP, udp_hdr(1, 2)));
  udpbad[14 + 20 + 5] = 200;
  Bytes v6trunc = cat(eth(0x86DD), ipv6(0, {IPPROTO_UDP, 5, 0, 0, 0, 0, 0, 0}));
  std::vector<Bad> cases = {
      {"empty", {}, Drop::kTruncEth},
      {"13 bytes", Bytes(13, 0), Drop::kTruncEth},
      {"three VLAN tags", eth(0x0800, {1, 2, 3}), Drop::kVlanDepth},
      {"VLAN tag cut", Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0}, Drop::kTruncVlan},
      {"IPv4 header cut", Bytes(good.begin(), good.begin() + 30), Drop::kTruncIp},
      {"IPv6 header cut", Bytes(v6trunc.begin(), v6trunc.begin() + 40), Drop::kTruncIp},
      {"version 6 in IPv4 frame", badver, Drop::kIpVersion},
      {"IHL 4", badihl, Drop::kIpIhl},
      {"total length past frame", biglen, Drop::kIpLen},
      {"total length below header", smalllen, Drop::kIpLen},
      {"IPv6 ext header past payload", v6trunc, Drop::kIp6Ext},
      {"TCP header cut", Bytes(good.begin(), good.end() - 5), Drop::kIpLen},
      {"TCP offset 4", badoff, Drop::kTcpOff},
      {"TCP offset past packet", bigoff, Drop::kTcpOff},
      {"UDP length past packet", udpbad, Drop::kUdpLen},
  };
  // A TCP header cut short inside a consistent IP length.
  Bytes tcpcut = cat(eth(0x0800), ipv4(IPPROTO_TCP, Bytes(10, 0)));
  cases.push_back({"TCP shorter than 20", tcpcut, Drop::kTruncL4});
  for (const auto& c : cases) {
    Parsed p;
    EXPECT_EQ(parse(c.frame, &p), c.want) << c.name << ": got " << drop_name(parse(c.frame, &p));
  }
}

}  // namespace
}  // namespace ctrack
