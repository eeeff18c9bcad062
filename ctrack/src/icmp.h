// ICMP and ICMPv6: echo request/reply pairs by id (errors about a known
// connection are related to it: tracker.cc).
#pragma once

#include "proto.h"

namespace ctrack::proto::icmp {

// Only echo requests start ICMP connections (id in sport).
inline Invalid check_new(const Packet& p) {
  return (p.meta & kMetaIcmpEcho) && p.key.dport == 0 ? Invalid::kNone : Invalid::kIcmpType;
}

inline Outcome update(Conn& c, int dir, uint32_t now, const Times& t) {
  c.expires = now + t.icmp;
  return {Verdict::kAccept, Invalid::kNone, dir == 1 && !(c.flags & detail::kSeenReply)};
}

}  // namespace ctrack::proto::icmp
