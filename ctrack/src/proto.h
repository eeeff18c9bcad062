// What the protocol trackers (tcp.h, udp.h, icmp.h) share with the table
// (tracker.cc). Each protocol is a namespace with the same small set of
// inline operations, dispatched by a switch on the protocol in tracker.cc
// (no indirect call per packet):
//   Invalid check_new(const Packet&, ...)   can this packet start a connection?
//   void init(Conn&, ConnCold&, const Packet&)   a new entry's protocol state
//   Outcome update(Conn&, [ConnCold&,] int dir, const Packet&, uint32_t now_ms, const Times&, ...)
#pragma once

#include <cstdint>

#include "ctrack/tracker.h"
#include "table.h"

namespace ctrack::proto {

using detail::Conn;
using detail::ConnCold;

// What one packet does to its entry.
enum class Verdict : uint8_t { kAccept, kIgnore, kInvalid, kReopen, kKill };

struct Outcome {
  Verdict v;
  Invalid reason;
  bool changed;  // the state changed (events may follow)
};

// Timeouts in ms, precomputed from the config's seconds.
struct Times {
  uint32_t tcp[kTcpStateCount];
  uint32_t tcp_unacked, udp[kUdpStateCount], udp_stream, icmp, other;

  void set(const Timeouts& T) {
    for (int s = 0; s < kTcpStateCount; s++) tcp[s] = T.tcp[s] * 1000;
    tcp_unacked = T.tcp_unacked * 1000;
    for (int s = 0; s < kUdpStateCount; s++) udp[s] = T.udp[s] * 1000;
    udp_stream = T.udp_stream_after * 1000;
    icmp = T.icmp * 1000;
    other = T.other * 1000;
  }
};

// Protocols without state of their own: timed by `other`.
namespace other {
inline Outcome update(Conn& c, int dir, uint32_t now, const Times& t) {
  c.expires = now + t.other;
  return {Verdict::kAccept, Invalid::kNone, dir == 1 && !(c.flags & detail::kSeenReply)};
}
}  // namespace other

}  // namespace ctrack::proto
