// A tunnel module's part in the NIC (offload/hwflow.cc): each module
// specialises TunnelNic<T> in its folder (features/<name>/nic.h, listed
// in features/tunnels_nic.h), and hwflow.cc reaches them through
// for_each_tunnel / with_tunnel (features/overlay/tunnel.h), as the
// pipeline and the config reach the modules. Control path only. A
// specialisation declares:
//   kParserPort          the UDP port the NIC's parser takes the tunnel on
//   on(l), underlay(l), udp_port(l)
//                        the tunnel as the provider laid it out (Layout):
//                        the NIC decapsulates it, on which port, which UDP port
//   items(f, l, vni)     the pattern items of its outer headers, VNI `vni`
//   decap(f)             the action that takes them off
//   refuse_tun_id(l, id) why a tun_id rule that decides in table 0 (not a
//                        jump to the connection group) stays in software
//                        here, or "" (asked only when on(l))
#pragma once

#include <arpa/inet.h>

#include <cstring>

#include "dataplane/hwflow.h"

namespace dp::hw {

template <typename T>
struct TunnelNic;

// ETH / IPv4 to `vtep` / UDP to `port`: a tunnel's outer headers.
inline void tunnel_outer(Flow& f, const uint8_t vtep[4], uint16_t port) {
  f.item(RTE_FLOW_ITEM_TYPE_ETH);
  rte_flow_item_ipv4 s{}, m{};
  memcpy(&s.hdr.dst_addr, vtep, 4);
  m.hdr.dst_addr = 0xFFFFFFFFu;
  f.item(RTE_FLOW_ITEM_TYPE_IPV4, s, m);
  rte_flow_item_udp us{}, um{};
  us.hdr.dst_port = htons(port);
  um.hdr.dst_port = 0xFFFF;
  f.item(RTE_FLOW_ITEM_TYPE_UDP, us, um);
}

// A 24-bit VNI into an item's spec, matched exactly (mask all ones).
inline void vni_item(uint8_t (&spec)[3], uint8_t (&mask)[3], uint32_t vni) {
  spec[0] = static_cast<uint8_t>(vni >> 16);
  spec[1] = static_cast<uint8_t>(vni >> 8);
  spec[2] = static_cast<uint8_t>(vni);
  mask[0] = mask[1] = mask[2] = 0xFF;
}

}  // namespace dp::hw
