// The established-path shortcut (tcp.h: established(), taken when
// fast_path() says so) against the full state machine (packet(): Linux's
// tcp_packet + tcp_in_window) over random segments and window states: the
// same verdict, reason and change flag, and the same entry afterwards,
// byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "../src/tcp.h"

namespace ctrack::proto::tcp {
namespace {

// A random ESTABLISHED, assured, replied entry with both windows known
// (what fast_path() needs), its windows near `base`.
detail::Conn random_conn(std::mt19937& g) {
  detail::Conn c;
  std::memset(static_cast<void*>(&c), 0, sizeof c);
  const uint32_t base = g();
  for (int d = 0; d < 2; d++) {
    c.td_end[d] = base + (g() % 200000);
    c.td_maxwin[d] = 1 + (g() % 4 ? g() % 70000 : g() % 20000000);
    c.td_maxend[d] = c.td_end[d] + (g() % 3 ? g() % 140000 : g());
    const uint8_t f = static_cast<uint8_t>(g());
    c.td_flags[d] = f & (kTcpWindowScale | kTcpSackPerm | kTcpCloseInit | kTcpDataUnacked | kTcpResyncAsked);
  }
  c.td_scales = static_cast<uint8_t>((g() % 15) | (g() % 15) << 4);
  c.state = sES;
  c.flags = detail::kAlive | detail::kSeenReply | detail::kAssured | static_cast<uint8_t>(g() & detail::kOrigCanon);
  c.expires = g();
  c.last_index = static_cast<uint8_t>(g());
  c.last_end = g();
  c.last_win = static_cast<uint16_t>(g());
  return c;
}

// A segment from side s: ACK with any of PSH/URG/ECE/CWR, its sequence and
// acknowledgement near (sometimes far from) the windows' edges.
Packet random_segment(std::mt19937& g, const detail::Conn& c, int s) {
  auto near = [&](uint32_t edge, uint32_t spread) {
    const uint32_t k = g() % 8;
    if (k == 0) return static_cast<uint32_t>(g());
    if (k < 3) return edge + static_cast<uint32_t>(static_cast<int32_t>(g() % 5) - 2);  // at the edge
    return edge + static_cast<uint32_t>(static_cast<int64_t>(g() % (2 * spread + 1)) - spread);
  };
  Packet p;
  p.tcp_flags = static_cast<uint8_t>(kAck | (g() & (kPsh | kUrg | kEce | kCwr)));
  p.seq = near(g() % 2 ? c.td_end[s] : c.td_maxend[s], c.td_maxwin[!s] + 1000);
  p.ack = near(g() % 2 ? c.td_end[!s] : c.td_end[!s] - c.td_maxwin[s], 70000);
  p.payload_len = static_cast<uint16_t>(g() % 3 ? g() % 1500 : g());
  p.win = static_cast<uint16_t>(g() % 10 ? g() : 0);
  if (g() % 3 == 0) {
    p.meta |= kMetaSack;
    p.sack = near(p.ack, 5000);
  }
  return p;
}

TEST(TcpFastPath, MatchesTheFullStateMachine) {
  Times t;
  t.set(Timeouts{});
  std::mt19937 g(33);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 500000; i++) {
    const detail::Conn c0 = random_conn(g);
    const int s = static_cast<int>(g() & 1);
    const Packet p = random_segment(g, c0, s);
    ASSERT_TRUE(fast_path(c0, p, false)) << i;
    const uint32_t now = g();
    detail::Conn a = c0, b = c0;
    detail::ConnCold xb;
    std::memset(static_cast<void*>(&xb), 0, sizeof xb);
    const Outcome fa = established(a, s, p, now, t);
    const Outcome fb = packet(b, xb, s, p, now, t, false);
    ASSERT_EQ(static_cast<int>(fa.v), static_cast<int>(fb.v)) << i;
    ASSERT_EQ(static_cast<int>(fa.reason), static_cast<int>(fb.reason)) << i;
    ASSERT_EQ(fa.changed, fb.changed) << i;
    if (fa.v == Verdict::kAccept) accepted++;
    else refused++;
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << i << ": the entries differ after the segment";
  }
  // Both outcomes exercised, each often.
  EXPECT_GT(accepted, 50000);
  EXPECT_GT(refused, 50000);
}

}  // namespace
}  // namespace ctrack::proto::tcp
