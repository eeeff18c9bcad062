// Geneve in the NIC (offload/tunnel_nic.h says what a tunnel's hook
// declares): under DV software steering the NIC matches Geneve without
// options to this host's VTEP and decapsulates it (22.11's HWS has no
// GENEVE item: Geneve::kHwsDecapRefuse).
#pragma once

#include <string>

#include "features/geneve/geneve.h"
#include "offload/tunnel_nic.h"

namespace dp::hw {

template <>
struct TunnelNic<Geneve> {
  static constexpr uint16_t kParserPort = 6081;
  static bool on(const Layout& l) { return l.geneve; }
  static size_t underlay(const Layout& l) { return l.geneve_underlay; }
  static uint16_t udp_port(const Layout& l) { return l.geneve_port; }

  // VNI `vni` to this host's VTEP on its UDP port, version 0 by
  // construction (the NIC cannot match the version, mlx5_flow.c:3328-3332),
  // no options and not a control message (Opt Len and O both 0: frames with
  // options, whose critical ones software judges, and control messages,
  // which it drops, miss to software), an Ethernet payload (protocol 0x6558).
  static void items(Flow& f, const Layout& l, uint32_t vni) {
    tunnel_outer(f, l.geneve_vtep, l.geneve_port);
    rte_flow_item_geneve gs{}, gm{};
    gm.ver_opt_len_o_c_rsvd0 = htons(0x3F80);  // Opt Len and O: 0
    gs.protocol = htons(0x6558);
    gm.protocol = 0xFFFF;
    vni_item(gs.vni, gm.vni, vni);
    f.item(RTE_FLOW_ITEM_TYPE_GENEVE, gs, gm);
  }

  // A RAW_DECAP alone is DV's generic L2 decap (mlx5_flow_dv.c:7801-7819,
  // 14229-14240).
  static void decap(Flow& f) { f.action(RTE_FLOW_ACTION_TYPE_RAW_DECAP, rte_flow_action_raw_decap{}); }

  // A Geneve frame of another version would meet a tun_id rule as its VNI
  // (software drops them).
  static std::string refuse_tun_id(const Layout&, uint32_t tun_id) {
    return "tun_id: DV cannot match Geneve's version (mlx5_flow.c:3328-3332): a frame of another version would "
           "be taken as VNI " + std::to_string(tun_id);
  }
};

}  // namespace dp::hw
