#include "ctrack/parse.h"

#include <netinet/in.h>

#include <cstring>

#include "net/bytes.h"

namespace ctrack {

namespace {


constexpr uint16_t kEthIpv4 = 0x0800, kEthIpv6 = 0x86DD, kEthArp = 0x0806, kEthVlan = 0x8100, kEthQinQ = 0x88A8;

bool icmp4_is_error(uint8_t t) { return t == 3 || t == 4 || t == 5 || t == 11 || t == 12; }
bool icmp6_is_error(uint8_t t) { return t >= 1 && t <= 4; }

// TCP options: window scale, SACK-permitted, highest SACK right edge.
void tcp_options(const uint8_t* o, uint32_t n, Packet* p) {
  uint32_t i = 0;
  while (i < n) {
    uint8_t kind = o[i];
    if (kind == 0) return;
    if (kind == 1) {
      i++;
      continue;
    }
    if (i + 1 >= n) return;
    uint8_t l = o[i + 1];
    if (l < 2 || i + l > n) return;  // malformed options are ignored, as Linux does
    if (kind == 3 && l == 3) {
      p->meta |= kMetaWscale;
      p->wscale = o[i + 2];
    } else if (kind == 4 && l == 2) {
      p->meta |= kMetaSackPerm;
    } else if (kind == 5 && l >= 10 && (l - 2) % 8 == 0) {
      for (uint32_t b = i + 2; b + 8 <= i + l; b += 8) {
        uint32_t right = net::get32(o + b + 4);
        if (!(p->meta & kMetaSack) || static_cast<int32_t>(right - p->sack) > 0) p->sack = right;
        p->meta |= kMetaSack;
      }
    }
    i += l;
  }
}

// L4 ports (or ICMP echo id) of a header at l4 with `avail` bytes. Used for
// the packet itself and for the header embedded in an ICMP error.
// Returns false when the header is too short.
bool l4_ports(uint8_t proto, bool v6, const uint8_t* l4, uint32_t avail, Key* k, uint8_t* meta) {
  if (proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE) {
    if (avail < 4) return false;
    k->sport = net::get16(l4);
    k->dport = net::get16(l4 + 2);
    return true;
  }
  if ((proto == IPPROTO_ICMP && !v6) || (proto == IPPROTO_ICMPV6 && v6)) {
    if (avail < 8) return false;
    uint8_t t = l4[0];
    bool req = v6 ? t == 128 : t == 8;
    bool rep = v6 ? t == 129 : t == 0;
    if (req || rep) {
      // Request keeps the id in sport, reply in dport, so reply == reversed request.
      uint16_t id = net::get16(l4 + 4);
      k->sport = req ? id : 0;
      k->dport = req ? 0 : id;
      *meta |= kMetaIcmpEcho;
    }
    return true;
  }
  return true;  // other protocols: no ports
}

// Parses the IP header embedded in an ICMP error into k (zone already set).
bool parse_inner(const uint8_t* p, uint32_t n, bool v6, Key* k) {
  uint8_t proto;
  uint32_t hl;
  if (!v6) {
    if (n < 20 || (p[0] >> 4) != 4) return false;
    hl = (p[0] & 0x0F) * 4u;
    if (hl < 20 || hl > n) return false;
    proto = p[9];
    memcpy(k->src, p + 12, 4);
    memcpy(k->dst, p + 16, 4);
    k->family = 4;
    if (net::get16(p + 6) & 0x1FFF) {  // embedded non-first fragment: no ports
      k->proto = proto;
      return true;
    }
  } else {
    if (n < 40 || (p[0] >> 4) != 6) return false;
    hl = 40;
    proto = p[6];
    memcpy(k->src, p + 8, 16);
    memcpy(k->dst, p + 24, 16);
    k->family = 6;
  }
  k->proto = proto;
  uint8_t meta = 0;
  return l4_ports(proto, v6, p + hl, n - hl, k, &meta);
}

// An ICMP error: the key is its embedded header's. Out of line: its local
// Key would give every packet's parse a stack frame and a stack-protector
// check.
[[gnu::noinline]] Drop icmp_error(const uint8_t* l4, uint32_t l4len, bool v6, uint16_t zone, Packet* p) {
  Key inner{};
  inner.zone = zone;
  if (!parse_inner(l4 + 8, l4len - 8, v6, &inner)) return Drop::kIcmpInner;
  p->key = inner;
  p->meta |= kMetaIcmpError;
  return Drop::kNone;
}

// The transport header of a datagram that is not a later fragment: ports,
// TCP's sequence space, ICMP's type and an error's inner key.
inline Drop parse_l4(uint8_t proto, bool v6, const uint8_t* l4, uint32_t l4len, uint16_t zone, Parsed* out) {
  Parsed& r = *out;
  Packet& p = r.ct;
  switch (proto) {
    case IPPROTO_TCP: {
      if (l4len < 20) return Drop::kTruncL4;
      uint32_t doff = (l4[12] >> 4) * 4u;
      if (doff < 20 || doff > l4len) return Drop::kTcpOff;
      p.key.sport = net::get16(l4);
      p.key.dport = net::get16(l4 + 2);
      p.seq = net::get32(l4 + 4);
      p.ack = net::get32(l4 + 8);
      p.tcp_flags = l4[13];
      p.win = net::get16(l4 + 14);
      p.payload_len = static_cast<uint16_t>(l4len - doff);
      if (doff > 20) tcp_options(l4 + 20, doff - 20, &p);
      return Drop::kNone;
    }
    case IPPROTO_UDP: {
      if (l4len < 8) return Drop::kTruncL4;
      uint32_t ul = net::get16(l4 + 4);
      // A first fragment's UDP length is the whole datagram's: it may run
      // past the fragment, never end inside it.
      if (ul < 8 || (r.frag == Parsed::kFragFirst ? ul < l4len : ul > l4len)) return Drop::kUdpLen;
      p.key.sport = net::get16(l4);
      p.key.dport = net::get16(l4 + 2);
      p.payload_len = static_cast<uint16_t>(ul - 8);
      return Drop::kNone;
    }
    case IPPROTO_ICMP:
    case IPPROTO_ICMPV6: {
      if ((proto == IPPROTO_ICMP) == v6) return Drop::kNone;  // ICMP in IPv6 or ICMPv6 in IPv4: generic
      if (l4len < 8) return Drop::kTruncL4;
      uint8_t t = l4[0];
      p.icmp_type = t;
      r.icmp_code = l4[1];
      if (v6 && t >= 130 && t <= 137) {
        r.kind = L3Kind::kNd;  // MLD, router/neighbour solicitation/advertisement, redirect
        return Drop::kNone;
      }
      if (v6 ? icmp6_is_error(t) : icmp4_is_error(t)) return icmp_error(l4, l4len, v6, zone, &p);
      l4_ports(proto, v6, l4, l4len, &p.key, &p.meta);
      p.payload_len = static_cast<uint16_t>(l4len - 8);
      return Drop::kNone;
    }
    default:
      l4_ports(proto, v6, l4, l4len, &p.key, &p.meta);
      return Drop::kNone;
  }
}

}  // namespace

const char* drop_name(Drop d) {
  static const char* const n[] = {"none",    "trunc_eth", "trunc_vlan", "vlan_depth", "trunc_ip", "ip_version", "ip_ihl",
                                  "ip_len",  "ip6_ext",   "trunc_l4",   "tcp_off",    "udp_len",  "icmp_inner"};
  static_assert(sizeof(n) / sizeof(n[0]) == static_cast<size_t>(Drop::kCount));
  return n[static_cast<int>(d)];
}

Drop parse_packet(const uint8_t* d, uint32_t len, uint16_t zone, Parsed* out) {
  Parsed& r = *out;
  // Cleared in place, 64 bytes at a time (vector stores): `r = Parsed{}`
  // built a 64-byte-aligned temporary with `rep stos` and copied it over,
  // and GCC makes one 128-byte memset a `rep stos` too (-mtune=znver3):
  // either was half the parser's time. Every default is zero but kind's.
  static_assert(sizeof(Parsed) == 128);
  memset(static_cast<void*>(out), 0, 64);
  memset(reinterpret_cast<char*>(out) + 64, 0, 64);
  r.kind = L3Kind::kOther;
  Packet& p = r.ct;
  p.key.zone = zone;
  if (len < 14) return Drop::kTruncEth;
  uint32_t off = 12;
  uint16_t et = net::get16(d + off);
  for (int tags = 0; et == kEthVlan || et == kEthQinQ; tags++) {
    if (tags == 2) return Drop::kVlanDepth;
    if (off + 6 > len) return Drop::kTruncVlan;
    if (tags == 0) r.vlan = net::get16(d + off + 2) & 0x0FFF;
    off += 4;
    et = net::get16(d + off);
  }
  off += 2;
  r.ethertype = et;
  r.l3_off = static_cast<uint16_t>(off);
  if (et == kEthArp) {
    r.kind = L3Kind::kArp;
    return Drop::kNone;
  }
  if (et != kEthIpv4 && et != kEthIpv6) {
    r.kind = L3Kind::kOther;
    return Drop::kNone;
  }
  const uint8_t* ip = d + off;
  uint32_t avail = len - off;
  uint8_t proto;
  uint32_t l4off;  // from ip
  uint32_t ip_end;  // bytes of IP datagram (<= avail)
  bool v6 = et == kEthIpv6;
  bool fragment = false;
  if (!v6) {
    if (avail < 20) return Drop::kTruncIp;
    if ((ip[0] >> 4) != 4) return Drop::kIpVersion;
    uint32_t ihl = (ip[0] & 0x0F) * 4u;
    if (ihl < 20 || ihl > avail) return Drop::kIpIhl;
    uint32_t tot = net::get16(ip + 2);
    if (tot < ihl || tot > avail) return Drop::kIpLen;
    ip_end = tot;
    proto = ip[9];
    r.ttl = ip[8];
    memcpy(p.key.src, ip + 12, 4);
    memcpy(p.key.dst, ip + 16, 4);
    p.key.family = 4;
    const uint16_t ff = net::get16(ip + 6);
    if (ff & 0x3FFF) {  // MF or an offset
      r.frag = (ff & 0x1FFF) ? Parsed::kFragLater : Parsed::kFragFirst;
      r.frag_more = (ff & 0x2000) != 0;
      r.frag_id = net::get16(ip + 4);
      r.frag_off = (ff & 0x1FFFu) * 8u;
      r.frag_start = static_cast<uint16_t>(ihl);
      r.frag_len = tot - ihl;
    }
    fragment = (ff & 0x1FFF) != 0;
    l4off = ihl;
  } else {
    if (avail < 40) return Drop::kTruncIp;
    if ((ip[0] >> 4) != 6) return Drop::kIpVersion;
    uint32_t plen = net::get16(ip + 4);
    if (40 + plen > avail) return Drop::kIpLen;
    ip_end = 40 + plen;
    proto = ip[6];
    r.ttl = ip[7];
    memcpy(p.key.src, ip + 8, 16);
    memcpy(p.key.dst, ip + 24, 16);
    p.key.family = 6;
    l4off = 40;
    for (int n = 0;; n++) {
      if (proto != 0 && proto != 43 && proto != 44 && proto != 60 && proto != 51) break;
      if (n == 8 || l4off + 8 > ip_end) return Drop::kIp6Ext;
      const uint8_t* eh = ip + l4off;
      uint32_t ehl;
      if (proto == 44) {
        ehl = 8;
        const uint16_t fo = net::get16(eh + 2);
        if (r.frag != Parsed::kFragNone) return Drop::kIp6Ext;  // two fragment headers
        if (fo & 0xFFF9) {  // an offset or M (an atomic fragment, RFC 6946, is a whole packet)
          r.frag = (fo & 0xFFF8) ? Parsed::kFragLater : Parsed::kFragFirst;
          r.frag_more = (fo & 1) != 0;
          r.frag_id = net::get32(eh + 4);
          r.frag_off = fo & 0xFFF8u;
          r.frag_start = static_cast<uint16_t>(l4off + 8);
          r.frag_len = ip_end - (l4off + 8);
        }
        if ((fo & 0xFFF8) != 0) fragment = true;
      } else if (proto == 51) {
        ehl = (eh[1] + 2u) * 4u;
      } else {
        ehl = (eh[1] + 1u) * 8u;
      }
      if (l4off + ehl > ip_end) return Drop::kIp6Ext;
      proto = eh[0];
      l4off += ehl;
      if (fragment) break;
    }
  }
  p.key.proto = proto;
  p.l3_len = static_cast<uint16_t>(ip_end > 0xFFFF ? 0xFFFF : ip_end);
  p.l2_len = static_cast<uint8_t>(off);
  r.kind = L3Kind::kIp;
  r.l4_off = static_cast<uint16_t>(off + l4off);
  if (fragment) {
    p.meta |= kMetaFragment;
    return Drop::kNone;
  }
  return parse_l4(proto, v6, ip + l4off, ip_end - l4off, zone, &r);
}

}  // namespace ctrack
