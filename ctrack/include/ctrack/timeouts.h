// One table of per-state timeouts, in seconds.
//
// Defaults match Linux nf_conntrack (v6.1, the Debian 12 kernel):
//   TCP      net/netfilter/nf_conntrack_proto_tcp.c  tcp_timeouts[]
//   UDP      net/netfilter/nf_conntrack_proto_udp.c  udp_timeouts[]
//            (nf_conntrack_udp_timeout=30, nf_conntrack_udp_timeout_stream=120;
//             a flow still active 2 s after creation with replies is "assured")
//   ICMP     net/netfilter/nf_conntrack_proto_icmp.c nf_ct_icmp_timeout = 30 s
//   ICMPv6   net/netfilter/nf_conntrack_proto_icmpv6.c nf_ct_icmpv6_timeout = 30 s
//   other    net/netfilter/nf_conntrack_proto_generic.c nf_ct_generic_timeout = 600 s
#pragma once

#include <cstdint>

namespace ctrack {

enum TcpState : uint8_t {
  kTcpNone = 0,
  kTcpSynSent,
  kTcpSynRecv,
  kTcpEstablished,
  kTcpFinWait,
  kTcpCloseWait,
  kTcpLastAck,
  kTcpTimeWait,
  kTcpClose,
  kTcpSynSent2,  // simultaneous open
  kTcpStateCount,
};

enum UdpState : uint8_t { kUdpUnreplied = 0, kUdpReplied, kUdpAssured, kUdpStateCount };

struct Timeouts {
  // TCP, indexed by TcpState (kTcpNone unused).
  uint32_t tcp[kTcpStateCount] = {
      0,       // NONE
      120,     // SYN_SENT      2 min
      60,      // SYN_RECV      60 s
      432000,  // ESTABLISHED   5 days
      120,     // FIN_WAIT      2 min
      60,      // CLOSE_WAIT    60 s
      30,      // LAST_ACK      30 s
      120,     // TIME_WAIT     2 min
      10,      // CLOSE         10 s
      120,     // SYN_SENT2     2 min
  };
  uint32_t tcp_unacked = 300;  // TCP_CONNTRACK_UNACK: data in flight unacknowledged
  uint32_t udp[kUdpStateCount] = {30, 30, 120};  // unreplied, replied, assured
  uint32_t udp_stream_after = 2;                  // seconds of activity before "assured"
  uint32_t icmp = 30;
  uint32_t other = 600;

  bool operator==(const Timeouts&) const = default;
};

const char* tcp_state_name(uint8_t s);
const char* udp_state_name(uint8_t s);

}  // namespace ctrack
