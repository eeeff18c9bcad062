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
// NatSide, kNatOrig or kNatReply for a hit), as translate() writes it: the
// side's rewrite kept from its first such packet (nat_sides_) where the
// packet is an IPv4 TCP or UDP one that nat::rewrite writes in whole words;
// translate_hit_slow() the first and the rest (process_found() with
// nat_kept gives no tuple for such a hit).
[[gnu::noinline]] inline void Datapath::translate_hit(Burst& b, uint32_t i, uint32_t conn, uint8_t side) {
  PktState& p = b.s[i];
  const PacketIn& in = b.in[i];
  const NatSide& r = nat_sides_[size_t{conn} * 2 + ((side >> 1) & 1)];
  const uint8_t proto = p.parsed.ct.key.proto;
  const uint32_t l4 = p.off + p.parsed.l4_off;
  // A kept side's packets are its connection's: IPv4, and TCP or UDP as its first was.
  if (!(p.parsed.ct.meta & (ctrack::kMetaFragment | ctrack::kMetaIcmpError)) &&
      in.len >= l4 + (proto == IPPROTO_TCP ? 18u : 8u) && (side & 1) && (r.src | r.dst) != 0) [[likely]] {
    const uint32_t l3 = p.off + p.parsed.l3_off;
    nat::apply_ipv4_ports(in.data + l3, l4 - l3, proto, r);
    p.natted = true;
    b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
    // (The classifier's key is not filled before the tables, which a hit skips.)
    return;
  }
  translate_hit_slow(b, i, conn, side);
}

// translate_hit's other packets, with the tracker's tuple: a side's first
// (its rewrite kept), and what nat::rewrite does not write in whole words.
[[gnu::noinline]] inline void Datapath::translate_hit_slow(Burst& b, uint32_t i, uint32_t conn, uint8_t side) {
  PktState& p = b.s[i];
  uint8_t* frame = b.in[i].data + p.off;
  const uint32_t len = b.in[i].len - p.off;
  ctrack::Key to;
  ct_->nat_target(conn, side, &to);
  if ((side == ctrack::kNatOrig || side == ctrack::kNatReply) && nat::ipv4_ports_case(p.parsed, len)) {
    uint8_t* ip = frame + p.parsed.l3_off;
    const nat::Rewrite4 r = nat::ipv4_ports_rewrite(ip, frame + p.parsed.l4_off, to);
    nat_sides_[size_t{conn} * 2 + (side == ctrack::kNatReply)] = NatSide{r.src, r.dst, r.ports, r.dip, r.dl4};
    nat::apply_ipv4_ports(ip, p.parsed.l4_off - p.parsed.l3_off, p.parsed.ct.key.proto, r);
  } else {
    nat::rewrite(frame, len, p.parsed, to);
  }
  p.natted = true;
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
}

// The tuple of a flow cache lookup's translated packet that goes on to the
// tables (result r of process_found() with nat_kept, which wrote `written`
// only where the connection ended with the packet).
inline void Datapath::nat_kept_target(const ctrack::CtResult& r, const ctrack::Key& written, ctrack::Key* to) {
  if (r.conn == ctrack::kNoConn) *to = written;
  else ct_->nat_target(r.conn, r.nat, to);
}

// Handle `conn` is a new connection's (conntrack/): its sides' kept
// rewrites were another connection's.
inline void Datapath::nat_forget(uint32_t conn) {
  if (nat_sides_.empty()) return;
  nat_sides_[size_t{conn} * 2] = NatSide{};
  nat_sides_[size_t{conn} * 2 + 1] = NatSide{};
}

}  // namespace dp
