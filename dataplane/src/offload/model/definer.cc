// The HWS match definer: which bytes of the firmware's header layout
// (definer_hl) a pattern template matches, and whether the definer
// selectors can pick them (hws/mlx5dr_definer.c of 22.11.11).
//
// The layout's offsets are those of struct mlx5_ifc_definer_hl_bits in
// hws/mlx5dr_definer.h (DPDK-stable v22.11.4, lines 432-475, with eth_l2
// 131-158, eth_l2_src 160-169, eth_l3 186-212, eth_l4 214-237,
// ipv4_src_dst 358-361, ipv6_addr 363-368, tunnel_header 385-390,
// registers 417-430): that header is not in the reference tree; it is a
// firmware format, and every field the reference mlx5dr_definer.c names is
// in it. The selector counts are that header's lines 9-12.
#include "internal.h"

namespace dp {
namespace {

constexpr int kHlDw = 150;             // MLX5_ST_SZ_DW(definer_hl): 600 bytes
constexpr int kDwSelectorsMatch = 6;   // DW_SELECTORS_MATCH
constexpr int kDwSelectorsLimited = 3; // DW_SELECTORS_LIMITED
constexpr int kDwSelectors = 9;        // DW_SELECTORS
constexpr int kByteSelectors = 8;      // BYTE_SELECTORS

// The driver's field slots (enum mlx5dr_definer_fname): an item writes a
// slot, a later item may overwrite or erase it (mlx5dr_definer.c:544,
// 630, 757-760, 800-803, 1029-1045). Each slot is bytes of the layout.
enum Slot {
  kDmacHi, kDmacLo, kSmacHi, kSmacLo, kEthType, kVlanType, kVlanTci, kIpVersion, kIpProtocol, kIpIhl, kIpTos, kIpTtl,
  kIpFrag, kIpFragmented, kIpv4Src, kIpv4Dst, kIpv6Src0, kIpv6Dst0 = kIpv6Src0 + 4, kFlowLabel = kIpv6Dst0 + 4,
  kPayloadLen, kIpv6FragExt, kL4Sport, kL4Dport, kTcpFlags, kPerLayer
};
struct Field {
  uint16_t off;
  uint8_t len;
};
using Items = std::vector<Mlx5Model::Impl::ItemShape>;
// Per slot: {outer, inner} byte offset in definer_hl, length.
struct SlotPlace {
  uint16_t outer, inner;
  uint8_t len;
};
constexpr SlotPlace kPlace[kPerLayer] = {
    {0, 16, 4},    // dmac_47_16 (eth_l2_outer at 0, eth_l2_inner at 16)
    {4, 20, 2},    // dmac_15_0
    {32, 40, 4},   // smac_47_16 (eth_l2_src_outer at 32, inner at 40)
    {36, 44, 2},   // smac_15_0
    {6, 22, 2},    // l3_ethertype
    {9, 25, 1},    // first_vlan_qualifier
    {10, 26, 2},   // tci
    {9, 25, 1},    // l3_type
    {59, 79, 1},   // protocol_next_header (eth_l3_outer at 56, inner at 76), or l4_type_bwc (byte 9/25)
    {56, 76, 1},   // ihl
    {57, 77, 1},   // tos
    {58, 78, 1},   // time_to_live_hop_limit
    {62, 82, 2},   // ipv4_frag
    {8, 24, 1},    // eth_l2 ip_fragmented
    {256, 264, 4}, // ipv4_src_dest source_address (outer 256, inner 264)
    {260, 268, 4}, // destination_address
    {304, 320, 4}, {308, 324, 4}, {312, 328, 4}, {316, 332, 4},  // ipv6_src (outer 304, inner 320)
    {272, 288, 4}, {276, 292, 4}, {280, 296, 4}, {284, 300, 4},  // ipv6_dst (outer 272, inner 288)
    {69, 89, 3},   // flow_label
    {74, 94, 2},   // ipv6_payload_length
    {100, 108, 1}, // eth_l4 ip_fragmented (eth_l4_outer at 96, inner at 104)
    {96, 104, 2},  // source_port
    {98, 106, 2},  // destination_port
    {101, 109, 1}, // tcp_flags
};
constexpr Field kVxlanFlags{388, 1};  // tunnel_header_0, top byte (mlx5dr_definer.c:1050-1057)
constexpr Field kVxlanVni{392, 3};    // tunnel_header_1 bits 31..8 (1059-1066)
constexpr Field kRegC3{588, 4};       // the conntrack register, priv->mtr_color_reg (REG_C_3 where it can)
constexpr Field kRegC0{592, 4};       // REPRESENTED_PORT (wire_regc_mask, 975-1005) and the E-Switch tag

struct Slots {
  // [inner][slot]: set, and at which byte (IP_PROTOCOL moves to l4_type_bwc).
  bool set[2][kPerLayer] = {};
  uint16_t at[2][kPerLayer] = {};
  bool vxlan_flags = false, vxlan_vni = false, reg_ct = false, reg_port = false;
  void put(int in, int slot) { put_at(in, slot, in ? kPlace[slot].inner : kPlace[slot].outer); }
  void put_at(int in, int slot, uint16_t off) {
    set[in][slot] = true;
    at[in][slot] = off;
  }
};

bool any(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return true;
  return false;
}

// The items' fields, as mlx5dr_definer_conv_items (1496-1601) collects them
// for a template without relaxed matching (the provider asks none).
void collect(const Items& items, bool implicit_port, Slots* s) {
  int in = 0;  // after a tunnel item: inner (1508)
  if (implicit_port) s->reg_port = true;  // mlx5_flow_hw.c:4916-4921 prepends REPRESENTED_PORT
  for (const auto& it : items) {
    const uint8_t* m = it.has_mask ? it.mask.data() : nullptr;
    switch (it.type) {
      case RTE_FLOW_ITEM_TYPE_ETH: {  // 408-471
        if (!m) break;
        const auto* k = reinterpret_cast<const rte_flow_item_eth*>(m);
        if (k->hdr.ether_type) s->put(in, kEthType);
        if (any(k->hdr.src_addr.addr_bytes, 4)) s->put(in, kSmacHi);
        if (any(k->hdr.src_addr.addr_bytes + 4, 2)) s->put(in, kSmacLo);
        if (any(k->hdr.dst_addr.addr_bytes, 4)) s->put(in, kDmacHi);
        if (any(k->hdr.dst_addr.addr_bytes + 4, 2)) s->put(in, kDmacLo);
        if (k->has_vlan) s->put(in, kVlanType);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_VLAN: {  // 474-523
        s->put(in, kVlanType);
        if (!m) break;
        const auto* k = reinterpret_cast<const rte_flow_item_vlan*>(m);
        if (k->tci) s->put(in, kVlanTci);
        if (k->inner_type) s->put(in, kEthType);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV4: {  // 526-609
        s->put(in, kIpVersion);
        s->set[in][kEthType] = false;  // "Overwrite - Unset ethertype if present" (544)
        if (!m) break;
        const auto* k = reinterpret_cast<const rte_flow_item_ipv4*>(m);
        if (k->hdr.fragment_offset) {
          if (k->hdr.fragment_offset == RTE_BE16(0x3fff)) s->put(in, kIpFragmented);
          else s->put(in, kIpFrag);
        }
        if (k->hdr.next_proto_id) s->put(in, kIpProtocol);
        if (k->hdr.dst_addr) s->put(in, kIpv4Dst);
        if (k->hdr.src_addr) s->put(in, kIpv4Src);
        if (k->hdr.version_ihl & 0x0f) s->put(in, kIpIhl);  // the version nibble is not matched (589-594)
        if (k->hdr.time_to_live) s->put(in, kIpTtl);
        if (k->hdr.type_of_service) s->put(in, kIpTos);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV6: {  // 612-740
        s->put(in, kIpVersion);
        s->set[in][kEthType] = false;  // 630
        if (!m) break;
        const auto* k = reinterpret_cast<const rte_flow_item_ipv6*>(m);
        if (k->has_frag_ext) s->put(in, kIpv6FragExt);
        const uint32_t vtc = rte_be_to_cpu_32(k->hdr.vtc_flow);
        if (vtc & 0x0ff00000) s->put(in, kIpTos);
        if (vtc & 0x000fffff) s->put(in, kFlowLabel);
        if (k->hdr.payload_len) s->put(in, kPayloadLen);
        if (k->hdr.proto) s->put(in, kIpProtocol);
        if (k->hdr.hop_limits) s->put(in, kIpTtl);
        for (int w = 0; w < 4; w++) {  // one dword per non-zero word of the mask (685-739)
          if (any(k->hdr.src_addr + 4 * w, 4)) s->put(in, kIpv6Src0 + w);
          if (any(k->hdr.dst_addr + 4 * w, 4)) s->put(in, kIpv6Dst0 + w);
        }
        break;
      }
      case RTE_FLOW_ITEM_TYPE_UDP:
      case RTE_FLOW_ITEM_TYPE_TCP: {  // 743-828: the L4 type overwrites the IP protocol slot
        s->put_at(in, kIpProtocol, in ? 25 : 9);
        if (!m) break;
        uint16_t sp, dp;
        if (it.type == RTE_FLOW_ITEM_TYPE_TCP) {
          const auto* k = reinterpret_cast<const rte_flow_item_tcp*>(m);
          sp = k->hdr.src_port, dp = k->hdr.dst_port;
          if (k->hdr.tcp_flags) s->put(in, kTcpFlags);
        } else {
          const auto* k = reinterpret_cast<const rte_flow_item_udp*>(m);
          sp = k->hdr.src_port, dp = k->hdr.dst_port;
        }
        if (sp) s->put(in, kL4Sport);
        if (dp) s->put(in, kL4Dport);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_VXLAN: {  // 1008-1069: the outer UDP type and port 4789 where not set
        if (!s->set[in][kIpProtocol]) s->put_at(in, kIpProtocol, in ? 25 : 9);
        if (!s->set[in][kL4Dport]) s->put(in, kL4Dport);
        if (m) {
          const auto* k = reinterpret_cast<const rte_flow_item_vxlan*>(m);
          if (k->flags) s->vxlan_flags = true;
          if (any(k->vni, 3)) s->vxlan_vni = true;
        }
        in = 1;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_CONNTRACK:  // 1366-1393: the whole register
        if (m) s->reg_ct = true;
        break;
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT:  // 975-1005
        if (m && reinterpret_cast<const rte_flow_item_ethdev*>(m)->port_id) s->reg_port = true;
        break;
      default:
        break;
    }
  }
}

// Which bytes of each layout dword are matched: bit i = byte i of the dword
// (big-endian: byte 0 is bits 31..24).
void layout(const Slots& s, uint8_t dw[kHlDw]) {
  memset(dw, 0, kHlDw);
  auto mark = [&](uint16_t off, uint8_t len) {
    for (uint16_t b = off; b < off + len; b++) dw[b / 4] |= static_cast<uint8_t>(1u << (b % 4));
  };
  for (int in = 0; in < 2; in++)
    for (int k = 0; k < kPerLayer; k++)
      if (s.set[in][k]) mark(s.at[in][k], kPlace[k].len);
  if (s.vxlan_flags) mark(kVxlanFlags.off, kVxlanFlags.len);
  if (s.vxlan_vni) mark(kVxlanVni.off, kVxlanVni.len);
  if (s.reg_ct) mark(kRegC3.off, kRegC3.len);
  if (s.reg_port) mark(kRegC0.off, kRegC0.len);
}

struct SelCtrl {
  int allowed_full_dw, allowed_lim_dw, allowed_bytes;
  int used_full_dw = 0, used_lim_dw = 0, used_bytes = 0;
};

// mlx5dr_definer_best_hl_fit_recu (1709-1797), which selector takes each
// non-zero dword, in order: a limited one (dword < 64), a full one, or one
// byte selector per non-zero byte (offset <= 255).
bool fit(SelCtrl& c, int cur, const uint8_t dw[kHlDw]) {
  while (cur < kHlDw && !dw[cur]) cur++;
  if (cur == kHlDw) return true;
  if (c.allowed_full_dw == c.used_full_dw && c.allowed_lim_dw == c.used_lim_dw && c.allowed_bytes == c.used_bytes)
    return false;
  if (c.allowed_lim_dw > c.used_lim_dw && cur < 64) {
    c.used_lim_dw++;
    if (fit(c, cur + 1, dw)) return true;
    c.used_lim_dw--;
  }
  if (c.allowed_full_dw > c.used_full_dw) {
    c.used_full_dw++;
    if (fit(c, cur + 1, dw)) return true;
    c.used_full_dw--;
  }
  if (cur * 4 > 255) return false;
  const int bytes = __builtin_popcount(dw[cur]);
  if (bytes + c.used_bytes > c.allowed_bytes) return false;
  c.used_bytes += bytes;
  if (fit(c, cur + 1, dw)) return true;
  c.used_bytes -= bytes;
  return false;
}

}  // namespace

DefinerFit definer_fit(const Items& items, bool implicit_port, bool full_dw_jumbo) {
  Slots s;
  collect(items, implicit_port, &s);
  uint8_t dw[kHlDw];
  layout(s, dw);
  // mlx5dr_definer_find_best_hl_fit (1808-1843): a match definer, else a
  // jumbo one (full dword selectors only with format_select_dw_8_6_ext).
  SelCtrl match{kDwSelectorsMatch, 0, kByteSelectors};
  if (fit(match, 0, dw)) return DefinerFit::kMatch;
  SelCtrl jumbo{full_dw_jumbo ? kDwSelectors : kDwSelectorsMatch, full_dw_jumbo ? 0 : kDwSelectorsLimited,
                kByteSelectors};
  if (fit(jumbo, 0, dw)) return DefinerFit::kJumbo;
  return DefinerFit::kNone;
}

}  // namespace dp
