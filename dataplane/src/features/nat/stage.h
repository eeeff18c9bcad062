// NAT (per packet, where a ct(nat) or the flow cache gives a connection's
// translation): the bytes (features/nat/rewrite.h) and the classifier's key.
#pragma once

#include "pipeline/burst.h"
#include "features/nat/rewrite.h"

namespace dp {

using stage::PktState;

// A translated connection's packet: its bytes, then what the classifier
// reads in later tables. The tracker keeps being asked with the tuple the
// packet came in with (a second ct() finds the connection as the first did).
inline void Datapath::translate(Burst& b, uint32_t i, const ctrack::Key& to) {
  PktState& p = b.s[i];
  nat::rewrite(b.in[i].data + p.off, b.in[i].len - p.off, p.parsed, to);
  p.natted = true;
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
  if (p.table < 0) return;  // the flow cache judged it: no table reads it
  p.key.tuple(to);
}

// A flow cache hit of a translated connection (side: the tracker's
// NatSide, kNatOrig or kNatReply for a hit): as translate(), with the
// side's rewrite kept from its first such packet (nat_sides_) where the
// packet is an IPv4 TCP or UDP one that nat::rewrite would write in whole
// words.
[[gnu::always_inline]] inline void Datapath::translate_hit(Burst& b, uint32_t i, uint32_t conn, uint8_t side,
                                                           const ctrack::Key& to) {
  PktState& p = b.s[i];
  uint8_t* frame = b.in[i].data + p.off;
  const uint32_t len = b.in[i].len - p.off;
  if (nat::ipv4_ports_case(p.parsed, len) && (side == ctrack::kNatOrig || side == ctrack::kNatReply)) {
    NatSide& e = nat_sides_[size_t{conn} * 2 + (side == ctrack::kNatReply)];
    nat::Rewrite4 r;
    memcpy(&r, e.b, sizeof r);
    uint8_t* ip = frame + p.parsed.l3_off;
    if ((r.src | r.dst) == 0) {  // the side's first hit
      r = nat::ipv4_ports_rewrite(ip, frame + p.parsed.l4_off, to);
      memcpy(e.b, &r, sizeof r);
    }
    nat::apply_ipv4_ports(ip, p.parsed.l4_off - p.parsed.l3_off, p.parsed.ct.key.proto, r);
  } else {
    nat::rewrite(frame, len, p.parsed, to);
  }
  p.natted = true;
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
  // (The classifier's key is not filled before the tables, which a hit skips.)
}

// Handle `conn` is a new connection's (conntrack/): its sides' kept
// rewrites were another connection's.
inline void Datapath::nat_forget(uint32_t conn) {
  if (nat_sides_.empty()) return;
  memset(nat_sides_[size_t{conn} * 2].b, 0, 2 * sizeof(NatSide));
}

}  // namespace dp
