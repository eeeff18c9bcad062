// The lane (ctrack/parse.h parse_ip4_plain: a plain IPv4 TCP or UDP frame)
// against parse_packet: where it takes a frame, its Parsed is parse_packet's
// byte for byte; what it must refuse (tags, IPv6, options, fragments, other
// protocols, short or lying lengths) it refuses.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <vector>

#include "ctrack/frame.h"
#include "ctrack/parse.h"

namespace ctrack {
namespace {

// Takes the frame: the same Parsed as parse_packet (which accepts it).
// Refuses it: fine, parse_packet has it. Returns whether it was taken.
bool same_as_parse_packet(const std::vector<uint8_t>& f, uint32_t len, uint16_t zone = 0) {
  Parsed fast, full, both;
  memset(static_cast<void*>(&fast), 0xA5, sizeof fast);  // what it does not write shows
  memset(static_cast<void*>(&both), 0x5A, sizeof both);
  const Drop d = parse_packet(f.data(), len, zone, &full);
  // parse() is the lane, else parse_packet: always parse_packet's.
  EXPECT_EQ(parse(f.data(), len, zone, &both), d);
  EXPECT_EQ(memcmp(&both, &full, sizeof both), 0) << "len " << len;
  if (!parse_ip4_plain(f.data(), len, zone, &fast)) return false;
  EXPECT_EQ(d, Drop::kNone);
  EXPECT_EQ(memcmp(&fast, &full, sizeof fast), 0) << "len " << len;
  return true;
}

FrameSpec plain_tcp() {
  return FrameSpec{.src = "172.16.1.2", .dst = "172.20.0.1", .sport = 12345, .dport = 443, .seq = 0x01020304,
                   .ack = 0xA0B0C0D0, .tcp_flags = kAck | kPsh, .win = 0x1234, .ttl = 33, .payload = 64};
}

FrameSpec plain_udp() {
  FrameSpec s = plain_tcp();
  s.proto = IPPROTO_UDP;
  s.sport = 4321;
  s.dport = 53;
  return s;
}

// Linux's established segments: NOP, NOP, timestamps (a data offset of 8).
TEST(ParseLane, TakesTimestampedTcpAsParsePacketDoes) {
  for (size_t payload : {0, 1, 64, 1400})
    for (uint16_t zone : {0, 7}) {
      FrameSpec s = plain_tcp();
      s.payload = payload;
      s.tcp_options = {1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
      auto f = build_frame(s);
      EXPECT_TRUE(same_as_parse_packet(f, static_cast<uint32_t>(f.size()), zone)) << "payload " << payload;
      // A total length that leaves no room for the options: refused (parse_packet: kTcpOff).
      auto g = f;
      const uint16_t tot = static_cast<uint16_t>(20 + 20 + 8);
      g[16] = static_cast<uint8_t>(tot >> 8);
      g[17] = static_cast<uint8_t>(tot);
      Parsed r;
      EXPECT_FALSE(parse_ip4_plain(g.data(), static_cast<uint32_t>(g.size()), zone, &r));
      EXPECT_NE(parse_packet(g.data(), static_cast<uint32_t>(g.size()), zone, &r), Drop::kNone);
    }
}

// Frames cut to exactly their length (so that ASan sees a read past it),
// with every total length the IP header may claim up to it: the lane reads
// nothing beyond len. (dataplane-fuzz found a 42-46-byte frame with a short
// total length whose TCP data offset was read past its end.)
TEST(ParseLane, ReadsNothingPastTheFrame) {
  for (bool ts : {false, true}) {
    FrameSpec s = plain_tcp();
    s.payload = 0;
    if (ts) s.tcp_options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
    const auto full = build_frame(s);
    for (size_t len = 42; len <= full.size(); len++)
      for (uint32_t tot = 20; tot + 14 <= len; tot++) {
        std::vector<uint8_t> f(full.begin(), full.begin() + static_cast<long>(len));
        f[16] = static_cast<uint8_t>(tot >> 8);
        f[17] = static_cast<uint8_t>(tot);
        f.shrink_to_fit();
        same_as_parse_packet(f, static_cast<uint32_t>(f.size()));
      }
  }
}

TEST(ParseLane, TakesPlainTcpAndUdp4AsParsePacketDoes) {
  for (const FrameSpec& base : {plain_tcp(), plain_udp()})
    for (bool df : {true, false})
      for (size_t payload : {0, 1, 64, 1400})
        for (uint16_t zone : {0, 7}) {
          FrameSpec s = base;
          s.df = df;
          s.payload = payload;
          auto f = build_frame(s);
          EXPECT_TRUE(same_as_parse_packet(f, static_cast<uint32_t>(f.size()), zone));
          f.resize(f.size() + 7, 0);  // Ethernet padding after the datagram
          EXPECT_TRUE(same_as_parse_packet(f, static_cast<uint32_t>(f.size()), zone));
        }
}

TEST(ParseLane, RefusesWhatItDoesNotParse) {
  auto refused = [](const FrameSpec& s) {
    auto f = build_frame(s);
    Parsed r;
    return !parse_ip4_plain(f.data(), static_cast<uint32_t>(f.size()), 0, &r);
  };
  for (const FrameSpec& base : {plain_tcp(), plain_udp()}) {
    FrameSpec s = base;
    s.vlan = 5;
    EXPECT_TRUE(refused(s));
    s = base;
    s.src = "2001:db8::1";
    s.dst = "2001:db8::2";
    EXPECT_TRUE(refused(s));
  }
  FrameSpec s = plain_tcp();
  s.proto = IPPROTO_ICMP;
  EXPECT_TRUE(refused(s));
  s = plain_tcp();
  s.proto = IPPROTO_SCTP;
  EXPECT_TRUE(refused(s));
  s = plain_tcp();
  s.tcp_options = {1, 1, 1, 1};  // NOPs: a data offset of 6
  EXPECT_TRUE(refused(s));
  // Options at a data offset of 8 other than Linux's NOP, NOP, timestamps:
  // the same 12 bytes in another order, or carrying what ctrack reads.
  for (std::vector<uint8_t> o : std::vector<std::vector<uint8_t>>{
           {8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1},          // timestamps, then NOPs
           {1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2},          // a SACK block
           {1, 3, 3, 7, 1, 1, 8, 10, 0, 0, 0, 1},          // window scale
           {1, 1, 8, 9, 0, 0, 0, 1, 0, 0, 0, 2},           // a timestamps option one byte short
           {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1, 4, 2}}) {  // then SACK-permitted: a data offset of 9
    s = plain_tcp();
    s.tcp_options = o;
    EXPECT_TRUE(refused(s)) << "options of " << o.size() << " bytes, kind " << int(o[2]);
  }
  auto take = [](std::vector<uint8_t> g) {
    Parsed r;
    return parse_ip4_plain(g.data(), static_cast<uint32_t>(g.size()), 0, &r);
  };
  // An IP option, a fragment (MF; an offset), a too long total length.
  for (const FrameSpec& base : {plain_tcp(), plain_udp()}) {
    auto f = build_frame(base);
    auto g = f;
    g[14] = 0x46;
    EXPECT_FALSE(take(g));
    g = f;
    g[20] |= 0x20;  // MF
    EXPECT_FALSE(take(g));
    g = f;
    g[21] = 1;  // offset 8
    EXPECT_FALSE(take(g));
    g = f;
    g.resize(14 + 20 + 20 + 10);  // a total length past the frame: kIpLen
    EXPECT_FALSE(take(g));
  }
  auto g = build_frame(plain_tcp());
  g[16] = 0;
  g[17] = 39;  // total length 39: parse_packet's kTruncL4
  EXPECT_FALSE(take(g));
  // UDP: a total length under 28 (kTruncL4); a UDP length under 8 or past
  // the datagram (kUdpLen).
  const auto u = build_frame(plain_udp());
  g = u;
  g[16] = 0;
  g[17] = 27;
  EXPECT_FALSE(take(g));
  g = u;
  g[14 + 20 + 4] = 0;
  g[14 + 20 + 5] = 7;
  EXPECT_FALSE(take(g));
  g = u;
  g[14 + 20 + 4] = 0;
  g[14 + 20 + 5] = 64 + 8 + 1;
  EXPECT_FALSE(take(g));
  g = u;  // a UDP length short of the datagram's end is parse_packet's too
  g[14 + 20 + 5] = 8 + 10;
  EXPECT_TRUE(same_as_parse_packet(g, static_cast<uint32_t>(g.size())));
}

// Random bytes changed in plain frames (and cut short): whatever it takes
// is parsed as parse_packet parses it.
void mutate_and_compare(const FrameSpec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto base = build_frame(s);
  uint32_t taken = 0;
  for (int n = 0; n < 200000; n++) {
    auto f = base;
    const int k = 1 + static_cast<int>(rng() % 3);
    for (int j = 0; j < k; j++) {
      // Mostly the headers (the first 54 bytes and the options), where it decides.
      const size_t at = rng() % 4 ? rng() % (54 + s.tcp_options.size()) : rng() % f.size();
      f[at] = rng() % 2 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(f[at] ^ (1u << (rng() % 8)));
    }
    uint32_t len = static_cast<uint32_t>(f.size());
    if (rng() % 8 == 0) len = static_cast<uint32_t>(rng() % (f.size() + 1));
    taken += same_as_parse_packet(f, len, static_cast<uint16_t>(n & 3));
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(taken, 10000u);  // (it took many: the comparison ran)
}

TEST(ParseLane, MutatedTcpFramesParseAsParsePacketDoes) { mutate_and_compare(plain_tcp(), 33); }
TEST(ParseLane, MutatedTimestampedTcpFramesParseAsParsePacketDoes) {
  FrameSpec s = plain_tcp();
  s.tcp_options = {1, 1, 8, 10, 0, 0, 1, 0, 0, 0, 2, 0};
  mutate_and_compare(s, 36);
}

TEST(ParseLane, MutatedUdpFramesParseAsParsePacketDoes) {
  FrameSpec s = plain_udp();
  s.payload = 20;  // (a UDP length mutated within the frame's reach)
  mutate_and_compare(s, 34);
}

}  // namespace
}  // namespace ctrack
