// The Internet checksum (RFC 1071), its incremental update (RFC 1624) and
// the rules around it, once for every part. A sum is a uint32_t of 16-bit
// big-endian words; fold() carries it into 16 bits; the field written is
// finish(sum) = ~fold(sum). A received header is good when fold() of its
// sum, checksum field included, is 0xFFFF.
#pragma once

#include <netinet/in.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "net/bytes.h"

namespace net {

// The one's-complement sum of n bytes as 16-bit words; an odd last byte is
// the high byte of a word padded with zero (RFC 1071 4.1).
inline uint32_t sum16(const uint8_t* p, size_t n, uint32_t s = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) s += get16(p + i);
  if (n & 1) s += static_cast<uint32_t>(p[n - 1]) << 8;
  return s;
}
// (Without a loop: s + rotr(s, 16) holds the end-around-carry sum of s's
// halves in its upper half, the carry out of the lower halves' sum
// included. fold64: a 64-bit sum of words, to 32 bits the same way, then 16.)
inline uint16_t fold(uint32_t s) { return static_cast<uint16_t>((s + std::rotr(s, 16)) >> 16); }
inline uint16_t fold64(uint64_t s) { return fold(static_cast<uint32_t>((s + std::rotr(s, 32)) >> 32)); }
inline uint16_t finish(uint32_t s) { return static_cast<uint16_t>(~fold(s)); }

// The TCP/UDP/ICMPv6 pseudo-header's sum (RFC 793, 768; RFC 8200 8.1):
// addresses of alen bytes (4 or 16), the protocol and the L4 length.
inline uint32_t pseudo_sum(const uint8_t* src, const uint8_t* dst, uint8_t alen, uint8_t proto, uint32_t l4_len,
                           uint32_t s = 0) {
  s = sum16(src, alen, s);
  s = sum16(dst, alen, s);
  return s + proto + (l4_len >> 16) + (l4_len & 0xFFFF);
}

// What a UDP checksum field holds for a computed checksum c: 0x0000 goes as
// 0xFFFF (RFC 768: 0 means "no checksum", which IPv6 forbids; the two are
// the same one's-complement number). TCP and ICMP take either.
inline uint16_t udp_field(uint16_t c) { return c ? c : 0xFFFF; }

// RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'): the checksum at `csum` after the
// n bytes (n even) [old, old+n) become [neu, neu+n).
inline void adjust(uint8_t* csum, const uint8_t* old, const uint8_t* neu, size_t n) {
  uint32_t s = static_cast<uint16_t>(~get16(csum));
  for (size_t i = 0; i < n; i += 2) {
    s += static_cast<uint16_t>(~get16(old + i));
    s += get16(neu + i);
  }
  put16(csum, finish(s));
}

// Sets the n bytes at `field` to `v`, adjusting each of the checksums s1 and s2
// (null: none) incrementally.
inline void set_field(uint8_t* field, const uint8_t* v, size_t n, uint8_t* s1, uint8_t* s2 = nullptr) {
  if (memcmp(field, v, n) == 0) return;
  if (s1) adjust(s1, field, v, n);
  if (s2) adjust(s2, field, v, n);
  memcpy(field, v, n);
}

// RFC 1624 over 32-bit words read in the machine's byte order (a
// one's-complement sum does not depend on it, RFC 1071 2(B)): delta32() of
// each word that changed (~old + new), summed; adjust32() puts the sum
// into the checksum at `csum` as adjust() would, word by word.
inline uint64_t delta32(uint32_t old, uint32_t neu) { return static_cast<uint64_t>(~old) + neu; }
inline void adjust32(uint8_t* csum, uint64_t d) {
  uint16_t hc;
  memcpy(&hc, csum, 2);
  hc = static_cast<uint16_t>(~fold64(static_cast<uint16_t>(~hc) + d));
  memcpy(csum, &hc, 2);
}

// adjust32() with its sum folded to 16 bits already (fold64(d), which
// gives the same checksum: fold keeps a sum's value modulo 0xFFFF and is 0
// only for 0).
inline void adjust16(uint8_t* csum, uint16_t d) {
  uint16_t hc;
  memcpy(&hc, csum, 2);
  hc = static_cast<uint16_t>(~fold(static_cast<uint32_t>(static_cast<uint16_t>(~hc)) + d));
  memcpy(csum, &hc, 2);
}

// The L4 checksum that covers the pseudo-header (null: none, or UDP over
// IPv4 sent without one), if it lies within `avail` bytes.
inline uint8_t* l4_sum(uint8_t* l4, size_t avail, uint8_t proto, bool v6) {
  if (proto == IPPROTO_TCP && avail >= 18) return l4 + 16;
  if (proto == IPPROTO_UDP && avail >= 8) return (v6 || get16(l4 + 6)) ? l4 + 6 : nullptr;
  if (proto == IPPROTO_ICMPV6 && avail >= 4) return l4 + 2;
  return nullptr;
}

// An IPv4 header of ihl bytes: its checksum written, or checked.
inline void ipv4_set_checksum(uint8_t* ip, size_t ihl) {
  put16(ip + 10, 0);
  put16(ip + 10, finish(sum16(ip, ihl)));
}
// (In 32-bit words of the machine's order, ihl being a multiple of 4: the
// sum's bytes swapped, which 0xFFFF is too. A header without options, ihl
// 20 and nearly all, in three loads: the loop of a variable count was ~25
// instructions a decapsulated packet, results/s14-33.)
inline bool ipv4_checksum_ok(const uint8_t* ip, size_t ihl) {
  uint64_t s = 0;
  if (ihl == 20) {
    uint64_t a, b;
    uint32_t c;
    memcpy(&a, ip, 8);
    memcpy(&b, ip + 8, 8);
    memcpy(&c, ip + 16, 4);
    s = (a & 0xFFFFFFFFu) + (a >> 32) + (b & 0xFFFFFFFFu) + (b >> 32) + c;
  } else {
    for (size_t i = 0; i < ihl; i += 4) {
      uint32_t w;
      memcpy(&w, ip + i, 4);
      s += w;
    }
  }
  return fold64(s) == 0xFFFF;
}

// The checksum of an L4 segment [l4, l4+len) with its field zeroed first:
// TCP, UDP and ICMPv6 with the pseudo-header of (src, dst, alen), ICMP
// without. UDP's comes back as udp_field() would write it.
inline uint16_t l4_checksum(const uint8_t* src, const uint8_t* dst, uint8_t alen, uint8_t proto, const uint8_t* l4,
                            uint32_t len) {
  const uint32_t s = proto == IPPROTO_ICMP ? 0 : pseudo_sum(src, dst, alen, proto, len);
  const uint16_t c = finish(sum16(l4, len, s));
  return proto == IPPROTO_UDP ? udp_field(c) : c;
}

}  // namespace net
