// VXLAN in the NIC (offload/tunnel_nic.h says what a tunnel's hook
// declares): the NIC matches VXLAN to this host's VTEP and decapsulates it.
#pragma once

#include <string>

#include "features/vxlan/vxlan.h"
#include "offload/tunnel_nic.h"

namespace dp::hw {

template <>
struct TunnelNic<Vxlan> {
  static constexpr uint16_t kParserPort = 4789;
  static bool on(const Layout& l) { return l.vxlan; }
  static size_t underlay(const Layout& l) { return l.underlay; }
  static uint16_t udp_port(const Layout& l) { return l.vxlan_port; }

  // The outer headers a decapsulating rule matches: VXLAN VNI `vni` to
  // this host's VTEP on its UDP port, the I flag set, from any remote VTEP
  // (as software decapsulates).
  static void items(Flow& f, const Layout& l, uint32_t vni) {
    tunnel_outer(f, l.vtep, l.vxlan_port);
    rte_flow_item_vxlan vs{}, vm{};
    vs.flags = vm.flags = 0x08;
    vni_item(vs.vni, vm.vni, vni);
    f.item(RTE_FLOW_ITEM_TYPE_VXLAN, vs, vm);
  }

  // DV's VXLAN_DECAP wants a VXLAN item (mlx5_flow_dv.c:3582-3586).
  static void decap(Flow& f) { f.action(RTE_FLOW_ACTION_TYPE_VXLAN_DECAP); }

  // Where the table-0 rules' table cannot match the I flag, a frame with
  // it clear would meet a tun_id rule as VNI n, which software does not
  // decapsulate (features/vxlan/vxlan.h): only a jump to the connection
  // group (which decides nothing itself) may go there.
  static std::string refuse_tun_id(const Layout& l, uint32_t tun_id) {
    if (l.transfer && l.vxlan_flags) return "";
    return std::string("tun_id: the ") + (l.transfer ? "DV" : "NIC Rx root") +
           " table matches the VNI but not the VXLAN flags (mlx5_flow_dv.c:9391-9414): a frame with the I flag "
           "clear would be taken as VNI " + std::to_string(tun_id);
  }
};

}  // namespace dp::hw
