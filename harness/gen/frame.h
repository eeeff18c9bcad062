// harness-gen's packets: Ethernet + IPv4 + TCP (or UDP) frames built from per-kind
// templates, with the checksums kept by incremental update (RFC 1624) so the
// per-packet work is a copy and a few stores. Pure functions, no DPDK: the
// unit tests run them against the project's own tracker.
#pragma once

#include <cstdint>
#include <cstring>

#include "net/checksum.h"

namespace gen {

// Connection i of K: client 10.128.0.0 + i / kPortsPerIp, port 10000 + i %
// kPortsPerIp, to the server 10.64.0.1, port 80 + i / kPortsPerIp (so that
// behind a source NAT to one address, --overlay, the translated tuples of
// two client addresses need not share 64K ports). The index comes back from
// either direction's client address and port.
inline constexpr uint32_t kPortsPerIp = 50000;
inline constexpr uint32_t kClientNet = 0x0A800000u;  // 10.128.0.0
inline constexpr uint32_t kServerIp = 0x0A400001u;   // 10.64.0.1
inline constexpr uint16_t kServerPort = 80;
inline constexpr uint16_t kClientPortBase = 10000;
inline constexpr uint8_t kWscale = 7;           // both sides: windows of 65535 << 7
inline constexpr int kHeaders = 14 + 20 + 20;   // Ethernet, IPv4, TCP without options
inline constexpr int kTsBytes = 6;              // a 48-bit TSC at the start of the payload
inline constexpr int kMinFrame = 64, kMaxFrame = 1518;  // with the 4-byte FCS, as RFC 2544 counts

struct Tuple {
  uint32_t cip, sip;  // host order
  uint16_t cport, sport;
};

inline Tuple tuple_of(uint32_t i) {
  return Tuple{kClientNet + i / kPortsPerIp, kServerIp, static_cast<uint16_t>(kClientPortBase + i % kPortsPerIp),
               static_cast<uint16_t>(kServerPort + i / kPortsPerIp)};
}
// The connection a client address and port name; UINT32_MAX when none.
inline uint32_t index_of(uint32_t cip, uint16_t cport, uint32_t conns) {
  if (cip < kClientNet || cport < kClientPortBase || cport >= kClientPortBase + kPortsPerIp) return UINT32_MAX;
  uint64_t i = static_cast<uint64_t>(cip - kClientNet) * kPortsPerIp + (cport - kClientPortBase);
  return i < conns ? static_cast<uint32_t>(i) : UINT32_MAX;
}

enum : uint8_t { kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10 };

using net::finish;
using net::fold;
using net::get16;
using net::get32;
using net::put16;
using net::put32;
using net::sum16;

// Which side sends the frame.
enum class Dir : uint8_t { kToServer, kToClient };

// A frame of one kind (direction, flags, size) for every connection: the
// connection's addresses, ports, SEQ, ACK and timestamp are filled per
// packet. `base` is the TCP checksum's sum with those fields zero.
struct Template {
  uint8_t bytes[kMaxFrame];
  uint16_t len = 0;      // without FCS
  uint16_t payload = 0;  // TCP payload bytes
  uint16_t tcp_off = 34, data_off = 54;
  uint32_t base = 0;
  uint16_t ip_base = 0;  // IPv4 header checksum's sum with the addresses zero
  Dir dir = Dir::kToServer;
  uint8_t proto = 6;     // 6 TCP, 17 UDP
};

// frame_bytes counts the FCS (64..1518); SYN and SYN-ACK carry MSS and
// window-scale options and no payload. frame_bytes 0: headers only (a pure
// ACK or FIN; the frame padded to the Ethernet minimum).
inline void make_template(Template* t, Dir dir, uint8_t flags, int frame_bytes, const uint8_t src_mac[6],
                          const uint8_t dst_mac[6]) {
  memset(t->bytes, 0, sizeof t->bytes);
  t->dir = dir;
  const bool syn = flags & kSyn;
  const bool bare = syn || frame_bytes == 0;
  const int opt = syn ? 8 : 0;
  int len = bare ? kHeaders + opt : frame_bytes - 4;
  if (len < 60) len = 60;  // the minimum Ethernet frame (padding after the IP datagram)
  const int ip_len = bare ? 20 + 20 + opt : len - 14;
  t->len = static_cast<uint16_t>(len);
  t->payload = static_cast<uint16_t>(ip_len - 40 - opt);
  uint8_t* e = t->bytes;
  memcpy(e, dst_mac, 6);
  memcpy(e + 6, src_mac, 6);
  put16(e + 12, 0x0800);
  uint8_t* ip = e + 14;
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint16_t>(ip_len));
  put16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = 6;
  t->ip_base = static_cast<uint16_t>(fold(sum16(ip, 20)));
  uint8_t* tcp = ip + 20;
  t->tcp_off = 34;
  t->data_off = static_cast<uint16_t>(34 + 20 + opt);
  tcp[12] = static_cast<uint8_t>((20 + opt) / 4 << 4);
  tcp[13] = flags;
  put16(tcp + 14, 65535);
  if (syn) {
    tcp[20] = 2;  // MSS 1460
    tcp[21] = 4;
    put16(tcp + 22, 1460);
    tcp[24] = 1;  // NOP
    tcp[25] = 3;  // window scale
    tcp[26] = 3;
    tcp[27] = kWscale;
  }
  // Pseudo-header (protocol, TCP length) plus the TCP header and payload as
  // they stand (addresses, ports, SEQ, ACK and timestamp still zero).
  const uint16_t tcp_len = static_cast<uint16_t>(ip_len - 20);
  t->base = sum16(tcp, tcp_len, 6u + tcp_len);
}

// A UDP datagram of frame_bytes (64..1518, with FCS) in direction `dir`.
inline void make_udp_template(Template* t, Dir dir, int frame_bytes, const uint8_t src_mac[6], const uint8_t dst_mac[6]) {
  memset(t->bytes, 0, sizeof t->bytes);
  t->dir = dir;
  t->proto = 17;
  int len = frame_bytes - 4;
  if (len < 60) len = 60;
  const int ip_len = len - 14, udp_len = ip_len - 20;
  t->len = static_cast<uint16_t>(len);
  t->payload = static_cast<uint16_t>(udp_len - 8);
  uint8_t* e = t->bytes;
  memcpy(e, dst_mac, 6);
  memcpy(e + 6, src_mac, 6);
  put16(e + 12, 0x0800);
  uint8_t* ip = e + 14;
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint16_t>(ip_len));
  put16(ip + 6, 0x4000);
  ip[8] = 64;
  ip[9] = 17;
  t->ip_base = static_cast<uint16_t>(fold(sum16(ip, 20)));
  uint8_t* udp = ip + 20;
  t->tcp_off = 34;
  t->data_off = 42;
  put16(udp + 4, static_cast<uint16_t>(udp_len));
  t->base = sum16(udp, static_cast<size_t>(udp_len), 17u + static_cast<uint32_t>(udp_len));
}

// Writes connection `i`'s frame of kind `t` into out (t->len bytes). UDP
// templates take no SEQ or ACK.
inline void fill(const Template& t, uint8_t* out, const Tuple& c, uint32_t seq, uint32_t ack, uint64_t ts) {
  memcpy(out, t.bytes, t.len);
  uint8_t* ip = out + 14;
  uint8_t* tcp = out + t.tcp_off;
  const bool to_server = t.dir == Dir::kToServer;
  const uint32_t src = to_server ? c.cip : c.sip, dst = to_server ? c.sip : c.cip;
  const uint16_t sp = to_server ? c.cport : c.sport, dp = to_server ? c.sport : c.cport;
  put32(ip + 12, src);
  put32(ip + 16, dst);
  uint32_t ipsum = t.ip_base + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF);
  put16(ip + 10, finish(ipsum));
  put16(tcp, sp);
  put16(tcp + 2, dp);
  if (t.proto == 17) {
    uint32_t u = t.base + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + sp + dp;
    if (t.payload >= kTsBytes) {
      uint8_t* d = out + t.data_off;
      for (int k = 0; k < kTsBytes; k++) d[k] = static_cast<uint8_t>(ts >> (8 * (kTsBytes - 1 - k)));
      u += get16(d) + get16(d + 2) + get16(d + 4);
    }
    put16(tcp + 6, net::udp_field(finish(u)));
    return;
  }
  put32(tcp + 4, seq);
  put32(tcp + 8, ack);
  uint32_t s = t.base + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + sp + dp + (seq >> 16) +
               (seq & 0xFFFF) + (ack >> 16) + (ack & 0xFFFF);
  if (t.payload >= kTsBytes) {
    uint8_t* d = out + t.data_off;
    for (int k = 0; k < kTsBytes; k++) d[k] = static_cast<uint8_t>(ts >> (8 * (kTsBytes - 1 - k)));
    s += get16(d) + get16(d + 2) + get16(d + 4);
  }
  put16(tcp + 16, finish(s));
}

// What the receive side needs of a frame; false when it is not one of ours.
struct Seen {
  uint32_t conn;
  uint8_t flags;
  uint32_t seq, ack;
  uint16_t payload;
  uint64_t ts;  // 48 bits; 0 when the payload has none
};
inline bool parse(const uint8_t* f, uint32_t len, uint32_t conns, Dir arrived_as, Seen* s) {
  if (len < 42 || get16(f + 12) != 0x0800) return false;
  const uint8_t* ip = f + 14;
  if ((ip[0] >> 4) != 4 || (ip[9] != 6 && ip[9] != 17)) return false;
  const bool udp = ip[9] == 17;
  const int ihl = (ip[0] & 0xF) * 4;
  const uint16_t ip_len = get16(ip + 2);
  if (ihl < 20 || ip_len < ihl + (udp ? 8 : 20) || 14u + ip_len > len) return false;
  const uint8_t* tcp = ip + ihl;
  const int doff = udp ? 8 : (tcp[12] >> 4) * 4;
  if (doff < (udp ? 8 : 20) || ihl + doff > ip_len) return false;
  if (udp && get16(tcp + 4) != ip_len - ihl) return false;
  const bool to_server = arrived_as == Dir::kToServer;
  const uint32_t cip = get32(ip + (to_server ? 12 : 16));
  const uint16_t cport = get16(tcp + (to_server ? 0 : 2));
  s->conn = index_of(cip, cport, conns);
  if (s->conn == UINT32_MAX) return false;
  s->flags = udp ? 0 : tcp[13];
  s->seq = udp ? 0 : get32(tcp + 4);
  s->ack = udp ? 0 : get32(tcp + 8);
  s->payload = static_cast<uint16_t>(ip_len - ihl - doff);
  s->ts = 0;
  if (s->payload >= kTsBytes) {
    const uint8_t* d = tcp + doff;
    for (int k = 0; k < kTsBytes; k++) s->ts = s->ts << 8 | d[k];
  }
  return true;
}

// The 48-bit stamp in a data frame's payload: the trial it was sent in
// (top 8 bits, 1..255; 0 outside trials) and the low 40 bits of the TSC
// (6 minutes at 3 GHz, far above any latency). A frame of an earlier trial
// that arrives late is then not counted for the trial running now.
inline constexpr int kStampTscBits = 40;
inline constexpr uint64_t kStampTscMask = (1ull << kStampTscBits) - 1;
inline uint64_t stamp(uint8_t trial, uint64_t tsc) { return static_cast<uint64_t>(trial) << kStampTscBits | (tsc & kStampTscMask); }
inline uint8_t stamp_trial(uint64_t ts) { return static_cast<uint8_t>(ts >> kStampTscBits); }
inline uint64_t stamp_age(uint64_t ts, uint64_t now_tsc) { return (now_tsc - ts) & kStampTscMask; }

// A trial's count of what came back: frames stamped with its id, and the
// late ones of earlier trials that arrived while it ran (not its own).
struct TrialTally {
  uint8_t id = 0;
  uint64_t rx[2] = {}, late = 0;
  // true when the frame is this trial's (counted in rx[dir]).
  bool take(uint64_t ts, int dir) {
    if (stamp_trial(ts) != id) {
      late++;
      return false;
    }
    rx[dir]++;
    return true;
  }
};

}  // namespace gen
