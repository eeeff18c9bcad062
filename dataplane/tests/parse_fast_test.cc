// The rx stage's parse of a plain IPv4/TCP frame (features/parse/fast.h)
// against ctrack::parse_packet: where it takes a frame, its Parsed is
// parse_packet's byte for byte; what it must refuse (tags, IPv6, options,
// fragments, other protocols, short or lying lengths) it refuses.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <vector>

#include "ctrack/frame.h"
#include "ctrack/parse.h"
#include "features/parse/fast.h"

namespace dp {
namespace {

using ctrack::FrameSpec;

// Takes the frame: the same Parsed as parse_packet (which accepts it).
// Refuses it: fine, parse_packet has it. Returns whether it was taken.
bool same_as_parse_packet(const std::vector<uint8_t>& f, uint32_t len) {
  ctrack::Parsed fast, full;
  memset(static_cast<void*>(&fast), 0xA5, sizeof fast);  // what it does not write shows
  if (!parse_tcp4_plain(f.data(), len, &fast)) return false;
  const ctrack::Drop d = ctrack::parse_packet(f.data(), len, 0, &full);
  EXPECT_EQ(d, ctrack::Drop::kNone);
  EXPECT_EQ(memcmp(&fast, &full, sizeof fast), 0) << "len " << len;
  return true;
}

FrameSpec plain() {
  return FrameSpec{.src = "172.16.1.2", .dst = "172.20.0.1", .sport = 12345, .dport = 443, .seq = 0x01020304,
                   .ack = 0xA0B0C0D0, .tcp_flags = ctrack::kAck | ctrack::kPsh, .win = 0x1234, .ttl = 33,
                   .payload = 64};
}

TEST(ParseFast, TakesPlainTcp4AsParsePacketDoes) {
  for (bool df : {true, false})
    for (size_t payload : {0, 1, 64, 1400}) {
      FrameSpec s = plain();
      s.df = df;
      s.payload = payload;
      auto f = build_frame(s);
      EXPECT_TRUE(same_as_parse_packet(f, static_cast<uint32_t>(f.size())));
      f.resize(f.size() + 7, 0);  // Ethernet padding after the datagram
      EXPECT_TRUE(same_as_parse_packet(f, static_cast<uint32_t>(f.size())));
    }
}

TEST(ParseFast, RefusesWhatItDoesNotParse) {
  auto refused = [](const FrameSpec& s) {
    auto f = build_frame(s);
    ctrack::Parsed r;
    return !parse_tcp4_plain(f.data(), static_cast<uint32_t>(f.size()), &r);
  };
  FrameSpec s = plain();
  s.vlan = 5;
  EXPECT_TRUE(refused(s));
  s = plain();
  s.src = "2001:db8::1";
  s.dst = "2001:db8::2";
  EXPECT_TRUE(refused(s));
  s = plain();
  s.proto = IPPROTO_UDP;
  EXPECT_TRUE(refused(s));
  s = plain();
  s.tcp_options = {1, 1, 1, 1};  // NOPs: a data offset of 6
  EXPECT_TRUE(refused(s));
  // An IP option, a fragment (MF; an offset), a short or too long total length.
  auto f = build_frame(plain());
  auto take = [](std::vector<uint8_t> g) {
    ctrack::Parsed r;
    return parse_tcp4_plain(g.data(), static_cast<uint32_t>(g.size()), &r);
  };
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
  g[16] = 0;
  g[17] = 39;  // total length 39: parse_packet's kTruncL4
  EXPECT_FALSE(take(g));
  g = f;
  g.resize(14 + 20 + 20 + 10);  // a total length past the frame: kIpLen
  EXPECT_FALSE(take(g));
}

// Random bytes changed in plain frames (and cut short): whatever it takes
// is parsed as parse_packet parses it.
TEST(ParseFast, MutatedFramesParseAsParsePacketDoes) {
  std::mt19937 rng(33);
  const auto base = build_frame(plain());
  uint32_t taken = 0;
  for (int n = 0; n < 200000; n++) {
    auto f = base;
    const int k = 1 + static_cast<int>(rng() % 3);
    for (int j = 0; j < k; j++) {
      // Mostly the headers (the first 54 bytes), where it decides.
      const size_t at = rng() % 4 ? rng() % 54 : rng() % f.size();
      f[at] = rng() % 2 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(f[at] ^ (1u << (rng() % 8)));
    }
    uint32_t len = static_cast<uint32_t>(f.size());
    if (rng() % 8 == 0) len = static_cast<uint32_t>(rng() % (f.size() + 1));
    taken += same_as_parse_packet(f, len);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(taken, 10000u);  // (it took many: the comparison ran)
}

}  // namespace
}  // namespace dp
