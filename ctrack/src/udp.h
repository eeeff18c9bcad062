// UDP: unreplied, replied, and assured once replies have come for
// udp_stream_after (Linux's UDP stream timeout).
#pragma once

#include "proto.h"

namespace ctrack::proto::udp {

inline Outcome update(Conn& c, const ConnCold& x, int dir, uint32_t now, const Times& t) {
  Outcome o{Verdict::kAccept, Invalid::kNone, false};
  if (c.flags & detail::kSeenReply) {
    if (static_cast<int32_t>(now - (x.created + t.udp_stream)) >= 0) {
      c.expires = now + t.udp[kUdpAssured];
      if (!(c.flags & detail::kAssured)) {
        c.flags |= detail::kAssured;
        c.state = kUdpAssured;
        o.changed = true;
      }
    } else {
      c.expires = now + t.udp[kUdpReplied];
    }
  } else {
    c.expires = now + t.udp[kUdpUnreplied];
    if (dir == 1) {
      c.state = kUdpReplied;
      o.changed = true;
    }
  }
  return o;
}

}  // namespace ctrack::proto::udp
