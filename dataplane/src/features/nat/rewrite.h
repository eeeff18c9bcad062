// Per packet: writes a translated connection's tuple into a frame (IPv4 and
// IPv6; TCP, UDP, ICMP echo; ICMP errors with their embedded header), with
// checksums updated incrementally (RFC 1624) where a field changed and the
// ICMP error's checksum computed again over the message it covers.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstring>

#include "ctrack/parse.h"
#include "ctrack/tracker.h"
#include "net/checksum.h"

namespace dp::nat {

using net::fold;
using net::get16;
using net::l4_sum;
using net::put16;
using net::set_field;
using net::sum16;

// Where an IP header's addresses and an L4 header's checksum are.
struct Hdr {
  uint8_t* src;
  uint8_t* dst;
  uint8_t alen;
  uint8_t* ipsum;  // IPv4 header checksum, null for IPv6
};
inline Hdr ip_hdr(uint8_t* ip, bool v6) {
  return v6 ? Hdr{ip + 8, ip + 24, 16, nullptr} : Hdr{ip + 12, ip + 16, 4, ip + 10};
}

// A UDP checksum that comes out 0x0000 is sent as 0xFFFF (net::udp_field).
inline void udp_nonzero(uint8_t* ls, uint8_t proto) {
  if (ls && proto == IPPROTO_UDP) put16(ls, net::udp_field(get16(ls)));
}

// Rewrites one IP header and the L4 ports after it to `to` (its src/dst
// and ports; ICMP echo: the id, which a request carries as sport and a
// reply as dport). `ip` starts the header, `hl` its length, `avail` the
// bytes from `ip` that may be touched. One instance per address length
// (kV6): the compares and checksum updates of a constant length inline.
template <bool kV6>
inline void rewrite_ip_of(uint8_t* ip, uint32_t hl, uint32_t avail, uint8_t proto, bool frag, const ctrack::Key& to,
                          uint8_t icmp_type) {
  constexpr bool v6 = kV6;
  const Hdr h = ip_hdr(ip, kV6);
  constexpr uint8_t kAlen = kV6 ? 16 : 4;
  uint8_t* l4 = ip + hl;
  const uint32_t l4avail = avail > hl ? avail - hl : 0;
  uint8_t* ls = frag ? nullptr : l4_sum(l4, l4avail, proto, v6);
  set_field(h.src, to.src, kAlen, h.ipsum, ls);
  set_field(h.dst, to.dst, kAlen, h.ipsum, ls);
  if (frag || l4avail < 8) {
    udp_nonzero(ls, proto);
    return;
  }
  uint8_t b[2];
  if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) {
    put16(b, to.sport);
    set_field(l4, b, 2, ls);
    put16(b, to.dport);
    set_field(l4 + 2, b, 2, ls);
    udp_nonzero(ls, proto);
  } else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
    const bool request = icmp_type == 8 || icmp_type == 128;
    const bool reply = icmp_type == 0 || icmp_type == 129;
    if (!request && !reply) return;
    put16(b, request ? to.sport : to.dport);
    set_field(l4 + 4, b, 2, l4 + 2);  // the ICMP checksum covers the id
  }
}
inline void rewrite_ip(uint8_t* ip, uint32_t hl, uint32_t avail, bool v6, uint8_t proto, bool frag,
                       const ctrack::Key& to, uint8_t icmp_type) {
  if (v6) rewrite_ip_of<true>(ip, hl, avail, proto, frag, to, icmp_type);
  else rewrite_ip_of<false>(ip, hl, avail, proto, frag, to, icmp_type);
}

// The common case in whole words: IPv4 TCP or UDP, not a fragment, with
// the L4 checksum within reach. Both addresses and both ports at once, one
// delta for the IPv4 header's checksum and one for the L4's: the bytes
// rewrite_ip_of<false> writes (net::adjust32 sums as adjust() does). False:
// not that case (nothing written).
// kFits: the caller knows the L4 checksum is within avail (the parse
// lane's frames).
template <bool kFits = false>
inline bool rewrite_ipv4_ports(uint8_t* ip, uint32_t hl, uint32_t avail, uint8_t proto, const ctrack::Key& to) {
  if (!kFits && avail < hl + (proto == IPPROTO_TCP ? 18u : 8u)) return false;
  uint8_t* l4 = ip + hl;
  uint32_t s, d, p;
  memcpy(&s, ip + 12, 4);
  memcpy(&d, ip + 16, 4);
  memcpy(&p, l4, 4);
  uint32_t ns, nd;
  memcpy(&ns, to.src, 4);
  memcpy(&nd, to.dst, 4);
  const uint32_t np = static_cast<uint32_t>(__builtin_bswap16(to.sport)) |
                      static_cast<uint32_t>(__builtin_bswap16(to.dport)) << 16;
  const uint64_t da = (s != ns ? net::delta32(s, ns) : 0) + (d != nd ? net::delta32(d, nd) : 0);
  const uint64_t dl4 = da + (p != np ? net::delta32(p, np) : 0);
  // (Nothing to write when nothing changes; a delta of zero is no such
  // proof: 0xFFFF to 0x0000 is +0 in ones' complement.)
  if (s == ns && d == nd && p == np) return true;
  if (da) net::adjust32(ip + 10, da);
  uint8_t* ls = proto == IPPROTO_TCP ? l4 + 16 : (get16(l4 + 6) ? l4 + 6 : nullptr);
  if (ls) {
    net::adjust32(ls, dl4);
    udp_nonzero(ls, proto);
  }
  memcpy(ip + 12, &ns, 4);
  memcpy(ip + 16, &nd, 4);
  memcpy(l4, &np, 4);
  return true;
}

// A translated connection's direction as the flow cache keeps it for the
// parse lane's frames (IPv4 TCP or UDP without options, not a fragment):
// the address and the port that change (a translation changes one side of
// a tuple: ctrack's translate()), where they are, and rewrite_ipv4_ports's
// two checksum deltas for the whole change, folded; worked out once when
// the direction's path is recorded (plain_rewrite) instead of per packet
// from the tuple conntrack hands out. Every packet of the direction carries
// the same tuple (its lookup compared it whole).
struct PlainRewrite {
  uint32_t addr;      // wire order
  uint16_t port;      // wire order
  uint16_t ip_delta, l4_delta;
  uint8_t addr_off;   // from the IP header: 12 (source) or 16 (destination)
  uint8_t port_off;   // from the L4 header: 0 (source) or 2 (destination)
};
static_assert(sizeof(PlainRewrite) == 12);

// A connection's flow-cache entry with a tracker that translates
// (Datapath::nat_entry()): its tag, which conntrack's lookup reads, and
// each direction's rewrite in the same 32 bytes, so that a done packet
// reads no line more than an untranslated one. Kept by conntrack after the
// connection's reply tuple, in one line (ctrack::Config::nat_caller_bytes:
// 16-byte aligned), or in an array of its own.
struct alignas(16) CacheEntry {
  ctrack::Tracker::Tag tag;
  PlainRewrite rw[2];
};
static_assert(sizeof(CacheEntry) == 32);

// The rewrite of a frame of tuple `from` translated to `to`: false when
// both addresses or both ports change (no translation ctrack makes; such a
// direction is not cached).
inline bool plain_rewrite(const ctrack::Key& from, const ctrack::Key& to, PlainRewrite* out) {
  auto ports = [](const ctrack::Key& k) {
    return static_cast<uint32_t>(__builtin_bswap16(k.sport)) | static_cast<uint32_t>(__builtin_bswap16(k.dport)) << 16;
  };
  uint32_t s, d, ns, nd;
  memcpy(&s, from.src, 4);
  memcpy(&d, from.dst, 4);
  memcpy(&ns, to.src, 4);
  memcpy(&nd, to.dst, 4);
  const uint32_t p = ports(from), np = ports(to);
  if ((s != ns && d != nd) || (from.sport != to.sport && from.dport != to.dport)) return false;
  // (rewrite_ipv4_ports's deltas: the same sums, so the same checksums.)
  const uint64_t da = (s != ns ? net::delta32(s, ns) : 0) + (d != nd ? net::delta32(d, nd) : 0);
  const uint64_t dl4 = da + (p != np ? net::delta32(p, np) : 0);
  PlainRewrite w;
  const bool dst = d != nd;
  w.addr = dst ? nd : ns;
  w.addr_off = dst ? 16 : 12;
  const bool dport = from.dport != to.dport;
  w.port = static_cast<uint16_t>(dport ? np >> 16 : np);
  w.port_off = dport ? 2 : 0;
  w.ip_delta = net::fold64(da);
  w.l4_delta = net::fold64(dl4);
  *out = w;
  return true;
}

// The tuple a PlainRewrite writes over a packet of key `pkt`, as conntrack
// would hand it out (the fallback of a flow-cache hit conntrack judged
// otherwise: the tables' translate() takes it).
inline ctrack::Key plain_rewrite_key(const PlainRewrite& w, const ctrack::Key& pkt) {
  ctrack::Key k = pkt;
  memcpy(w.addr_off == 16 ? k.dst : k.src, &w.addr, 4);
  (w.port_off == 2 ? k.dport : k.sport) = __builtin_bswap16(w.port);
  return k;
}

// rewrite_plain() from the direction's PlainRewrite: the same bytes, with
// no tuple to read and no deltas to work out. (When nothing changes, the
// address and port written are the frame's own and the zero deltas change
// no checksum, as rewrite_ipv4_ports's early return leaves them.)
[[gnu::always_inline]] inline void rewrite_plain_cached(uint8_t* frame, uint8_t proto, const PlainRewrite& w) {
  uint8_t* ip = frame + 14;
  uint8_t* l4 = ip + 20;
  net::adjust16(ip + 10, w.ip_delta);
  uint8_t* ls = proto == IPPROTO_TCP ? l4 + 16 : (get16(l4 + 6) ? l4 + 6 : nullptr);
  if (ls) {
    net::adjust16(ls, w.l4_delta);
    udp_nonzero(ls, proto);
  }
  memcpy(ip + w.addr_off, &w.addr, 4);
  memcpy(l4 + w.port_off, &w.port, 2);
}

// ICMP's checksum over [l4, l4+len) (ICMPv6: with its pseudo-header).
inline void icmp_checksum(uint8_t* ip, uint8_t* l4, uint32_t len, bool v6) {
  put16(l4 + 2, 0);
  put16(l4 + 2, v6 ? net::l4_checksum(ip + 8, ip + 24, 16, IPPROTO_ICMPV6, l4, len)
                   : net::l4_checksum(nullptr, nullptr, 0, IPPROTO_ICMP, l4, len));
}

// Writes `to` into the frame the parser read as `pp` (rewrite() below: what
// is not IPv4 TCP or UDP, out of line). An ICMP error's
// embedded header takes `to`; its outer header follows (the error goes back
// to the embedded packet's sender: outer dst becomes to.src, and outer src
// becomes to.dst when the embedded packet's destination sent the error or
// that destination is translated; a router on the untranslated side keeps
// its own address).
[[gnu::noinline]] inline void rewrite_other(uint8_t* frame, uint32_t len, const ctrack::Parsed& pp,
                                            const ctrack::Key& to) {
  const bool v6 = pp.ct.key.family == 6;
  uint8_t* ip = frame + pp.l3_off;
  const uint32_t avail = len - pp.l3_off;
  const uint32_t hl = pp.l4_off - pp.l3_off;
  const bool frag = (pp.ct.meta & ctrack::kMetaFragment) != 0;
  if (!(pp.ct.meta & ctrack::kMetaIcmpError)) {
    rewrite_ip(ip, hl, avail, v6, pp.ct.key.proto, frag, to, pp.ct.icmp_type);
    return;
  }
  uint8_t* icmp = ip + hl;
  // The message up to the IP length (parse checked it against the frame),
  // not the Ethernet padding after it.
  const uint32_t ip_len = v6 ? 40u + get16(ip + 4) : get16(ip + 2);
  const uint32_t icmp_len = (ip_len < avail ? ip_len : avail) - hl;
  uint8_t* in = icmp + 8;
  const uint32_t in_avail = icmp_len - 8;
  const uint32_t in_hl = v6 ? 40 : (in[0] & 0x0F) * 4u;
  const uint8_t in_proto = v6 ? in[6] : in[9];
  const bool in_frag = !v6 && (get16(in + 6) & 0x1FFF) != 0;
  Hdr outer = ip_hdr(ip, v6), inner = ip_hdr(in, v6);
  const uint8_t n = outer.alen;
  const bool from_dst = memcmp(outer.src, inner.dst, n) == 0;
  // The embedded packet's destination is translated (an error about a
  // reply as it reached our private side): the error takes our public
  // address as its source, whoever on that side sent it, as Linux's
  // nf_nat_icmp_reply_translation does. A router's own private address
  // never leaves through the translation.
  const bool dst_changed = memcmp(inner.dst, to.dst, n) != 0;
  // The embedded packet: its IP header checksum and (where present) its L4
  // checksum follow its fields; its ICMP type for an echo's id.
  rewrite_ip(in, in_hl, in_avail, v6, in_proto, in_frag, to, in_hl + 1 <= in_avail ? in[in_hl] : 0);
  uint8_t* outer_sum = v6 ? nullptr : outer.ipsum;
  set_field(outer.dst, to.src, n, outer_sum);
  if (from_dst || dst_changed) set_field(outer.src, to.dst, n, outer_sum);
  icmp_checksum(ip, icmp, icmp_len, v6);
}

// Writes `to` into the frame the parser read as `pp`: IPv4 TCP and UDP in
// whole words, inline (per packet: no call); the rest rewrite_other().
[[gnu::always_inline]] inline void rewrite(uint8_t* frame, uint32_t len, const ctrack::Parsed& pp,
                                           const ctrack::Key& to) {
  const uint8_t proto = pp.ct.key.proto;
  // IPv4 TCP or UDP, neither a fragment nor an ICMP error: in whole words, here.
  if (pp.ct.key.family == 4 && !(pp.ct.meta & (ctrack::kMetaFragment | ctrack::kMetaIcmpError)) &&
      (proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
      rewrite_ipv4_ports(frame + pp.l3_off, pp.l4_off - pp.l3_off, len - pp.l3_off, proto, to))
    return;
  rewrite_other(frame, len, pp, to);
}

// rewrite() of a frame ctrack::parse_ip4_plain took (the parse lane's:
// IPv4 without options at offset 14, TCP or UDP, not a fragment, its L4
// header within the datagram): the whole-word case at constant offsets,
// without rewrite()'s tests of what the lane checked (~12 instructions a
// translated packet; results/s14-33).
// (The lane takes a TCP packet of 40 bytes or more, a UDP one of 28, each
// within the frame: the L4 checksum is in reach.)
[[gnu::always_inline]] inline void rewrite_plain(uint8_t* frame, uint32_t len, const ctrack::Parsed& pp,
                                                 const ctrack::Key& to) {
  rewrite_ipv4_ports<true>(frame + 14, 20, len - 14, pp.ct.key.proto, to);
}

// The key the classifier reads after a rewrite (ICMP errors: the embedded
// tuple, as the parser gave it).
inline void rewrite_key(ctrack::Key& k, const ctrack::Key& to) {
  memcpy(k.src, to.src, 16);
  memcpy(k.dst, to.dst, 16);
  k.sport = to.sport;
  k.dport = to.dport;
}

}  // namespace dp::nat
