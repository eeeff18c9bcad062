// Geneve (RFC 8926): its header with options, built and parsed, and the
// outer Ethernet + IPv4 + UDP + Geneve headers of an encapsulated frame,
// in the style of put_vxlan / put_vxlan_outer_v4 (headers.h). Nothing
// allocates or throws; the parser reads only the bytes it is given. What
// these build is compared with scapy's Geneve layer byte for byte
// (common/tests/net_test.cc).
//
//  0                   1                   2                   3
//  |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//  |        Virtual Network Identifier (VNI)       |    Reserved   |
//  |                    Variable-Length Options                    |
// Each option: | Option Class (16) | Type (8) |R|R|R| Length (5) | data |
// with Opt Len and Length in 4-byte words (the option's own 4-byte header
// not counted in its Length).
#pragma once

#include <cstdint>
#include <cstring>

#include "net/bytes.h"
#include "net/headers.h"

namespace net {

inline constexpr uint16_t kGenevePort = 6081;    // IANA
inline constexpr uint16_t kEthTeb = 0x6558;      // Transparent Ethernet Bridging: an Ethernet frame follows
inline constexpr uint32_t kGeneveLen = 8;        // the fixed header, without options
inline constexpr uint32_t kGeneveOptHdrLen = 4;  // an option's class, type and length
inline constexpr uint32_t kGeneveMaxOptLen = 63 * 4;      // Opt Len is 6 bits of words
inline constexpr uint32_t kGeneveMaxOptDataLen = 31 * 4;  // an option's Length is 5 bits of words
inline constexpr uint8_t kGeneveFlagO = 0x80;    // byte 1: an OAM (control) packet
inline constexpr uint8_t kGeneveFlagC = 0x40;    // byte 1: critical options present
inline constexpr uint8_t kGeneveCritical = 0x80;  // an option type's high bit
// Ethernet + IPv4 + UDP + Geneve without options; options add to it.
inline constexpr uint32_t kGeneveOuterV4 = kEthLen + kIpv4Len + kUdpLen + kGeneveLen;

// One option: data is len bytes, len a multiple of 4 and at most 124.
struct GeneveOption {
  uint16_t cls;
  uint8_t type;
  const uint8_t* data = nullptr;
  uint8_t len = 0;
};
inline bool geneve_critical(const GeneveOption& o) { return o.type & kGeneveCritical; }

// The bytes n options take on the wire, or 0 when one of them cannot be
// written (a data length not a multiple of 4 or over 124) or together
// they pass Opt Len's 252 bytes. With no options: 0 too, which is valid.
inline uint32_t geneve_options_len(const GeneveOption* opts, uint32_t n) {
  uint32_t len = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (opts[i].len % 4 != 0 || opts[i].len > kGeneveMaxOptDataLen) return 0;
    len += kGeneveOptHdrLen + opts[i].len;
  }
  return len <= kGeneveMaxOptLen ? len : 0;
}
inline bool geneve_options_ok(const GeneveOption* opts, uint32_t n) { return n == 0 || geneve_options_len(opts, n) != 0; }

inline uint32_t put_geneve_option(uint8_t* p, const GeneveOption& o) {
  put16(p, o.cls);
  p[2] = o.type;
  p[3] = static_cast<uint8_t>(o.len / 4);  // the three reserved bits zero
  if (o.len) memcpy(p + kGeneveOptHdrLen, o.data, o.len);
  return kGeneveOptHdrLen + o.len;
}

// A Geneve header. C is set when an option is critical (RFC 8926 3.4);
// the version is 0.
struct Geneve {
  uint32_t vni;
  const GeneveOption* opts = nullptr;
  uint32_t n_opts = 0;
  bool oam = false;
  uint16_t proto = kEthTeb;
};
// Its length on the wire, or 0 when its options cannot be written.
inline uint32_t geneve_len(const Geneve& g) {
  return geneve_options_ok(g.opts, g.n_opts) ? kGeneveLen + geneve_options_len(g.opts, g.n_opts) : 0;
}
// Writes the header and its options at p and returns their length, or
// writes nothing and returns 0 when the options cannot be written.
inline uint32_t put_geneve(uint8_t* p, const Geneve& g) {
  const uint32_t len = geneve_len(g);
  if (len == 0) return 0;
  bool critical = false;
  for (uint32_t i = 0; i < g.n_opts; i++) critical |= geneve_critical(g.opts[i]);
  p[0] = static_cast<uint8_t>((len - kGeneveLen) / 4);  // version 0
  p[1] = static_cast<uint8_t>((g.oam ? kGeneveFlagO : 0) | (critical ? kGeneveFlagC : 0));
  put16(p + 2, g.proto);
  put32(p + 4, (g.vni & 0xFFFFFF) << 8);  // reserved byte 0
  uint8_t* o = p + kGeneveLen;
  for (uint32_t i = 0; i < g.n_opts; i++) o += put_geneve_option(o, g.opts[i]);
  return len;
}

// Reading a received header. The reasons a header is refused, in the order
// they are checked.
enum class GeneveError : uint8_t {
  kNone,
  kShort,       // fewer than 8 bytes
  kVersion,     // a version other than 0 (RFC 8926 3.4: dropped)
  kOptLen,      // Opt Len runs past the bytes present
  kOptionLen,   // an option's Length runs past Opt Len
};
inline const char* geneve_error_name(GeneveError e) {
  switch (e) {
    case GeneveError::kNone: return "none";
    case GeneveError::kShort: return "short";
    case GeneveError::kVersion: return "version";
    case GeneveError::kOptLen: return "opt-len";
    case GeneveError::kOptionLen: return "option-len";
  }
  return "?";
}

// The next option of the options region [opts, opts + len) at *at, or
// false at its end or when the option does not fit in it (then *at stays).
inline bool geneve_next_option(const uint8_t* opts, uint32_t len, uint32_t* at, GeneveOption* o) {
  if (*at + kGeneveOptHdrLen > len) return false;
  const uint8_t* p = opts + *at;
  const uint32_t data_len = (p[3] & 0x1F) * 4u;
  if (*at + kGeneveOptHdrLen + data_len > len) return false;
  *o = {get16(p), p[2], p + kGeneveOptHdrLen, static_cast<uint8_t>(data_len)};
  *at += kGeneveOptHdrLen + data_len;
  return true;
}

struct GeneveHeader {
  uint32_t vni = 0;
  uint16_t proto = 0;
  bool oam = false, critical = false;  // the O and C bits as sent
  uint32_t len = 0;                    // 8 + options: where the inner frame starts
  const uint8_t* opts = nullptr;       // the options region, opts_len bytes
  uint32_t opts_len = 0;
  uint32_t n_opts = 0;
  // The first option whose type has the critical bit, whatever C says;
  // what to do about it (an endpoint that does not know it must drop the
  // packet, RFC 8926 3.5.1) is the caller's policy.
  bool has_critical = false;
  GeneveOption first_critical{};
};

// Reads the Geneve header at p, of which avail bytes are present, into
// *h: its version, Opt Len against avail, and every option inside Opt Len.
inline GeneveError parse_geneve(const uint8_t* p, uint32_t avail, GeneveHeader* h) {
  if (avail < kGeneveLen) return GeneveError::kShort;
  if (p[0] >> 6 != 0) return GeneveError::kVersion;
  const uint32_t opts_len = (p[0] & 0x3Fu) * 4;
  if (kGeneveLen + opts_len > avail) return GeneveError::kOptLen;
  *h = {};
  h->vni = get32(p + 4) >> 8;
  h->proto = get16(p + 2);
  h->oam = p[1] & kGeneveFlagO;
  h->critical = p[1] & kGeneveFlagC;
  h->len = kGeneveLen + opts_len;
  h->opts = p + kGeneveLen;
  h->opts_len = opts_len;
  uint32_t at = 0;
  GeneveOption o;
  while (geneve_next_option(h->opts, opts_len, &at, &o)) {
    h->n_opts++;
    if (geneve_critical(o) && !h->has_critical) {
      h->has_critical = true;
      h->first_critical = o;
    }
  }
  return at == opts_len ? GeneveError::kNone : GeneveError::kOptionLen;
}

// The outer headers of a Geneve frame over IPv4 for an inner Ethernet
// frame of inner_len bytes, at out (geneve_outer_v4_len(o) bytes; the inner
// frame follows). The UDP checksum is 0 (RFC 8926 4.1.1 allows it over
// IPv4).
struct GeneveOuter {
  const uint8_t* dmac;
  const uint8_t* smac;
  const uint8_t* src;  // the sending tunnel endpoint, network order
  const uint8_t* dst;
  uint32_t vni;
  uint16_t sport;
  uint16_t dport = kGenevePort;
  uint8_t ttl = 64;
  bool df = true;
  const GeneveOption* opts = nullptr;
  uint32_t n_opts = 0;
  bool oam = false;
};
// Its length, or 0 when the options cannot be written.
inline uint32_t geneve_outer_v4_len(const GeneveOuter& o) {
  const uint32_t g = geneve_len({o.vni, o.opts, o.n_opts, o.oam});
  return g ? kEthLen + kIpv4Len + kUdpLen + g : 0;
}
// Writes the outer headers and returns their length, or writes nothing and
// returns 0 when the options cannot be written.
inline uint32_t put_geneve_outer_v4(uint8_t* out, const GeneveOuter& o, uint32_t inner_len) {
  const uint32_t len = geneve_outer_v4_len(o);
  if (len == 0) return 0;
  const uint32_t udp_len = len - kEthLen - kIpv4Len + inner_len;
  uint8_t* p = out + put_eth(out, o.dmac, o.smac, kEthIpv4);
  p += put_ipv4(p, {o.src, o.dst, IPPROTO_UDP, static_cast<uint16_t>(kIpv4Len + udp_len), o.ttl, o.df});
  p += put_udp(p, o.sport, o.dport, static_cast<uint16_t>(udp_len));
  put_geneve(p, {o.vni, o.opts, o.n_opts, o.oam});
  return len;
}

}  // namespace net
