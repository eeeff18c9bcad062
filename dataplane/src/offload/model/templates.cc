// The model: pattern and actions templates, template tables.
#include "internal.h"

namespace dp {

bool ModelCalls::zero(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return std::all_of(b, b + n, [](uint8_t x) { return x == 0; });
}

std::pair<const char*, std::string> ModelCalls::check_mask(const rte_flow_item& it) {
  if (!it.mask) return {nullptr, ""};
  switch (it.type) {
    case RTE_FLOW_ITEM_TYPE_ETH: {
      const auto& k = *static_cast<const rte_flow_item_eth*>(it.mask);
      if (k.reserved) return {"pt-item-mask", "ETH reserved bits are ENOTSUP"};
      if (!zero(&k.hdr.dst_addr, 6) || !zero(&k.hdr.src_addr, 6)) return {"not-modelled", "ETH MAC match"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_VLAN: {
      const auto& k = *static_cast<const rte_flow_item_vlan*>(it.mask);
      if (k.reserved) return {"pt-item-mask", "VLAN reserved bits are ENOTSUP"};
      if (k.has_more_vlan) return {"not-modelled", "VLAN has_more_vlan"};
      if (k.hdr.vlan_tci && k.hdr.vlan_tci != htons(0x0FFF)) return {"not-modelled", "VLAN TCI mask other than the VID"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_IPV4: {
      const auto& k = *static_cast<const rte_flow_item_ipv4*>(it.mask);
      if (k.hdr.total_length || k.hdr.packet_id || k.hdr.hdr_checksum)
        return {"pt-item-mask", "IPv4 total_length/packet_id/hdr_checksum masks are ENOTSUP"};
      if (k.hdr.version_ihl || k.hdr.type_of_service || k.hdr.time_to_live || k.hdr.fragment_offset)
        return {"not-modelled", "IPv4 fields other than addresses and protocol"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_IPV6: {
      const auto& k = *static_cast<const rte_flow_item_ipv6*>(it.mask);
      if (k.has_hop_ext || k.has_route_ext || k.has_auth_ext || k.has_esp_ext || k.has_dest_ext ||
          k.has_mobil_ext || k.has_hip_ext || k.has_shim6_ext)
        return {"pt-item-mask", "IPv6 extension header flags are ENOTSUP"};
      if (k.hdr.vtc_flow || k.hdr.payload_len || k.hdr.hop_limits || k.has_frag_ext)
        return {"not-modelled", "IPv6 fields other than addresses and next header"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_TCP: {
      const auto& k = *static_cast<const rte_flow_item_tcp*>(it.mask);
      if (k.hdr.sent_seq || k.hdr.recv_ack || k.hdr.data_off || k.hdr.rx_win || k.hdr.cksum || k.hdr.tcp_urp)
        return {"not-modelled", "TCP fields other than ports and flags (the definer ignores them)"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_UDP: {
      const auto& k = *static_cast<const rte_flow_item_udp*>(it.mask);
      if (k.hdr.dgram_len || k.hdr.dgram_cksum) return {"pt-item-mask", "UDP length/checksum masks are ENOTSUP"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT: {
      const auto& k = *static_cast<const rte_flow_item_ethdev*>(it.mask);
      if (k.port_id != 0xFFFF && k.port_id != 0) return {"not-modelled", "partial REPRESENTED_PORT mask"};
      return {nullptr, ""};
    }
    case RTE_FLOW_ITEM_TYPE_VXLAN: {
      const auto& k = *static_cast<const rte_flow_item_vxlan*>(it.mask);
      if (k.rsvd0[0] || k.rsvd0[1] || k.rsvd0[2] || k.rsvd1) return {"pt-item-mask", "VXLAN reserved fields are not supported"};
      if (!zero(k.vni, 3) && !(k.vni[0] == 0xFF && k.vni[1] == 0xFF && k.vni[2] == 0xFF))
        return {"not-modelled", "partial VXLAN VNI mask"};
      return {nullptr, ""};
    }
    default:
      return {nullptr, ""};
  }
}

rte_flow_pattern_template* ModelCalls::pattern_template_create(void* self, uint16_t port,
                                                          const rte_flow_pattern_template_attr* a,
                                                          const rte_flow_item items[], rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  if (!hws_ok(m, p, e)) return nullptr;
  using R = rte_flow_pattern_template;
  if (!a->ingress && !a->egress && !a->transfer)
    return refuse_null<R>(m, e, EINVAL, "pt-direction", "at least one of the direction attributes must be specified");
  if (m.cfg_.esw) {
    if (p->proxy && (a->ingress + a->egress + a->transfer) > 1)
      return refuse_null<R>(m, e, EINVAL, "pt-direction",
                            "only one direction attribute at once can be used on transfer proxy port");
    if (!p->proxy && a->transfer)
      return refuse_null<R>(m, e, EINVAL, "pt-direction", "transfer attribute cannot be used with port representors");
  } else if (a->transfer) {
    return refuse_null<R>(m, e, EINVAL, "pt-direction", "transfer attribute cannot be used when E-Switch is disabled");
  }
  if (a->egress) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "egress templates");
  auto pt = std::make_unique<Impl::PT>();
  pt->port = port;
  pt->attr = *a;
  // VXLAN or Geneve: the items before it are the outer headers (the model
  // knows ETH, IPv4 and UDP there), those after it the inner frame.
  size_t vx = SIZE_MAX, n = 0;
  for (; items[n].type != RTE_FLOW_ITEM_TYPE_END; n++)
    if (tunnel_item(items[n].type) && vx == SIZE_MAX) vx = n;
  for (size_t i = 0; i < n && vx != SIZE_MAX; i++) {
    const rte_flow_item& it = items[i];
    if (i > vx && it.type == RTE_FLOW_ITEM_TYPE_VXLAN)
      return refuse_null<R>(m, e, ENOTSUP, "pt-vxlan-inner", "Inner VXLAN item not supported");
    if (i > vx && it.type == RTE_FLOW_ITEM_TYPE_GENEVE) break;  // the DV validator's (dv-geneve-item) or HWS's
    if (it.type == RTE_FLOW_ITEM_TYPE_VOID || i == vx) continue;
    if (i < vx) {
      if (it.type != RTE_FLOW_ITEM_TYPE_ETH && it.type != RTE_FLOW_ITEM_TYPE_IPV4 &&
          it.type != RTE_FLOW_ITEM_TYPE_UDP && it.type != RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT)
        return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "outer headers other than ETH, IPv4 and UDP");
      if (it.type == RTE_FLOW_ITEM_TYPE_UDP && it.mask && static_cast<const rte_flow_item_udp*>(it.mask)->hdr.src_port)
        return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "the outer UDP source port (the sender's entropy)");
      if (it.type == RTE_FLOW_ITEM_TYPE_ETH && it.mask && static_cast<const rte_flow_item_eth*>(it.mask)->hdr.ether_type)
        return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "the outer ether type");
    } else if (it.type != RTE_FLOW_ITEM_TYPE_ETH && it.type != RTE_FLOW_ITEM_TYPE_IPV4 &&
               it.type != RTE_FLOW_ITEM_TYPE_TCP && it.type != RTE_FLOW_ITEM_TYPE_UDP) {
      return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "inner headers other than ETH, IPv4, TCP and UDP");
    }
  }
  for (const rte_flow_item* it = items;; it++) {
    if (it->type == RTE_FLOW_ITEM_TYPE_END) break;
    switch (it->type) {
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT:
        if (a->ingress && m.cfg_.esw && m.cfg_.repr_matching)
          return refuse_null<R>(m, e, EINVAL, "pt-represented-port",
                                "represented port item cannot be used when ingress attribute is set");
        break;
      case RTE_FLOW_ITEM_TYPE_VOID:
      case RTE_FLOW_ITEM_TYPE_ETH:
      case RTE_FLOW_ITEM_TYPE_VLAN:
      case RTE_FLOW_ITEM_TYPE_IPV4:
      case RTE_FLOW_ITEM_TYPE_IPV6:
      case RTE_FLOW_ITEM_TYPE_UDP:
      case RTE_FLOW_ITEM_TYPE_TCP:
      case RTE_FLOW_ITEM_TYPE_CONNTRACK:
      case RTE_FLOW_ITEM_TYPE_VXLAN:
        break;
      case RTE_FLOW_ITEM_TYPE_GENEVE:
      case RTE_FLOW_ITEM_TYPE_GENEVE_OPT:
        // HWS: not an item of the template API (hws-geneve). DV's hidden
        // tables (inside) take what flow_dv_validate took (sync.cc).
        if (!s.inside) return refuse_null<R>(m, e, EINVAL, "hws-geneve", "Unsupported item type");
        if (it->type == RTE_FLOW_ITEM_TYPE_GENEVE_OPT)
          return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "Geneve option matching");
        break;
      case RTE_FLOW_ITEM_TYPE_GTP:
      case RTE_FLOW_ITEM_TYPE_GTP_PSC:
      case RTE_FLOW_ITEM_TYPE_GRE:
      case RTE_FLOW_ITEM_TYPE_GRE_KEY:
      case RTE_FLOW_ITEM_TYPE_GRE_OPTION:
      case RTE_FLOW_ITEM_TYPE_ICMP:
      case RTE_FLOW_ITEM_TYPE_ICMP6:
      case RTE_FLOW_ITEM_TYPE_INTEGRITY:
      case RTE_FLOW_ITEM_TYPE_TAG:
      case RTE_FLOW_ITEM_TYPE_META:
      case RTE_FLOW_ITEM_TYPE_METER_COLOR:
        return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "item type " + std::to_string(it->type));
      default:
        return refuse_null<R>(m, e, EINVAL, "pt-item-type", "Unsupported item type");
    }
    if (it->type == RTE_FLOW_ITEM_TYPE_VOID) continue;
    auto [rule, why] = check_mask(*it);
    if (rule) return refuse_null<R>(m, e, ENOTSUP, rule, why);
    Impl::ItemShape sh;
    sh.type = it->type;
    if (it->mask) {
      sh.has_mask = true;
      memcpy(sh.mask.data(), it->mask, flow_item_size(it->type));
    }
    pt->items.push_back(sh);
  }
  // mlx5_flow_hw.c:4930-4937: an ingress template on an E-Switch port
  // matches the port itself (REPRESENTED_PORT prepended).
  pt->implicit_port = m.cfg_.esw && m.cfg_.repr_matching && a->ingress;
  auto* raw = pt.get();
  s.pts.push_back(std::move(pt));
  return reinterpret_cast<R*>(raw);
}

int ModelCalls::pattern_template_destroy(void* self, uint16_t, rte_flow_pattern_template* t, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::PT* pt = find_owned(m.impl_->pts, t);
  if (!pt) return refuse(m, e, EINVAL, "template-in-use", "unknown pattern template");
  if (pt->refs > 1) return refuse(m, e, EBUSY, "template-in-use", "item template is in use");
  std::erase_if(m.impl_->pts, [&](const auto& x) { return x.get() == pt; });
  return 0;
}

namespace {

// A refusal: the rule's name, errno and message; no rule: taken.
struct Refusal {
  std::string rule;
  int err = 0;
  std::string msg;
};
Refusal bad(const char* rule, int err, std::string msg) { return Refusal{rule, err, std::move(msg)}; }

// mlx5_flow_hw.c:3758-3770 (flow_hw_validate_action_raw_encap), and what
// the model runs: ETH, IPv4 without options, UDP, then VXLAN to 4789 with
// its I flag (50 bytes) or Geneve to 6081, version 0, an Ethernet payload,
// its options within the data (50 bytes and Opt Len's); the data given
// with each rule, as long as the template's.
Refusal check_raw_encap(const rte_flow_action& act, const rte_flow_action& msk) {
  const auto* c = static_cast<const rte_flow_action_raw_encap*>(act.conf);
  if (!c || !c->size || !c->data) return bad("at-raw-encap", EINVAL, "invalid raw_encap_data");
  if (msk.conf) return bad("not-modelled", ENOTSUP, "raw_encap data shared by the template");
  const uint8_t* d = c->data;
  const bool outer = c->size >= kVxlanEncapLen && d[12] == 0x08 && d[13] == 0x00 && d[14] == 0x45 &&
                     d[23] == IPPROTO_UDP;
  const uint16_t dport = outer ? static_cast<uint16_t>(d[36] << 8 | d[37]) : 0;
  const bool vxlan = dport == kVxlanPort && c->size == kVxlanEncapLen && net::vxlan_has_vni(d + 42);
  const bool geneve = dport == kGenevePort && (d[42] >> 6) == 0 && c->size == kVxlanEncapLen + (d[42] & 0x3F) * 4u &&
                      net::get16(d + 44) == net::kEthTeb;
  if (!vxlan && !geneve)
    return bad("not-modelled", ENOTSUP, "raw_encap other than VXLAN or Geneve (Ethernet payload) over IPv4");
  return {};
}

// MODIFY_FIELD: mlx5_flow_hw.c:3419-3483 (flow_hw_validate_action_modify_field),
// then what the model runs: SET of an IPv4 address or a TCP/UDP port from an
// immediate value, the whole field, in the outermost headers (after a decap
// those are the former inner ones).
Refusal check_modify_field(const rte_flow_action& act, const rte_flow_action& msk) {
  const auto* v = static_cast<const rte_flow_action_modify_field*>(act.conf);
  const auto* k = static_cast<const rte_flow_action_modify_field*>(msk.conf);
  // The driver reads both without a check (3423-3426): a null one crashes it.
  if (!v || !k) return bad("at-modify-field", EINVAL, "MODIFY_FIELD needs its configuration and its mask");
  if (v->operation != k->operation) return bad("at-modify-field", EINVAL, "modify_field operation mask and template are not equal");
  if (v->dst.field != k->dst.field) return bad("at-modify-field", EINVAL, "destination field mask and template are not equal");
  if (v->dst.field == RTE_FLOW_FIELD_POINTER || v->dst.field == RTE_FLOW_FIELD_VALUE)
    return bad("at-modify-field", EINVAL, "immediate value and pointer cannot be used as destination");
  if (k->dst.level != UINT32_MAX) return bad("at-modify-field", EINVAL, "destination encapsulation level must be fully masked");
  if (k->dst.offset != UINT32_MAX) return bad("at-modify-field", EINVAL, "destination offset level must be fully masked");
  if (v->src.field != k->src.field) return bad("at-modify-field", EINVAL, "destination field mask and template are not equal");
  if (v->src.field != RTE_FLOW_FIELD_POINTER && v->src.field != RTE_FLOW_FIELD_VALUE) {
    if (k->src.level != UINT32_MAX) return bad("at-modify-field", EINVAL, "source encapsulation level must be fully masked");
    if (k->src.offset != UINT32_MAX) return bad("at-modify-field", EINVAL, "source offset level must be fully masked");
  }
  if (k->width != UINT32_MAX) return bad("at-modify-field", EINVAL, "modify_field width field must be fully masked");
  if (v->dst.field == RTE_FLOW_FIELD_START || v->src.field == RTE_FLOW_FIELD_START)
    return bad("at-modify-field", EINVAL, "modifying arbitrary place in a packet is not supported");
  if (v->dst.field == RTE_FLOW_FIELD_VLAN_TYPE || v->src.field == RTE_FLOW_FIELD_VLAN_TYPE)
    return bad("at-modify-field", EINVAL, "modifying vlan_type is not supported");
  if (v->dst.field == RTE_FLOW_FIELD_GENEVE_VNI || v->src.field == RTE_FLOW_FIELD_GENEVE_VNI)
    return bad("at-modify-field", EINVAL, "modifying Geneve VNI is not supported");
  if (v->operation != RTE_FLOW_MODIFY_SET || v->src.field != RTE_FLOW_FIELD_VALUE)
    return bad("not-modelled", ENOTSUP, "MODIFY_FIELD other than SET from an immediate value");
  if (v->dst.level > 1 || v->dst.offset) return bad("not-modelled", ENOTSUP, "MODIFY_FIELD of inner headers or part of a field");
  uint32_t width = 0;
  switch (v->dst.field) {
    case RTE_FLOW_FIELD_IPV4_SRC:
    case RTE_FLOW_FIELD_IPV4_DST: width = 32; break;
    case RTE_FLOW_FIELD_TCP_PORT_SRC:
    case RTE_FLOW_FIELD_TCP_PORT_DST:
    case RTE_FLOW_FIELD_UDP_PORT_SRC:
    case RTE_FLOW_FIELD_UDP_PORT_DST: width = 16; break;
    default: return bad("not-modelled", ENOTSUP, "MODIFY_FIELD of a field other than IPv4 addresses and L4 ports");
  }
  if (v->width != width) return bad("not-modelled", ENOTSUP, "MODIFY_FIELD of part of a field");
  return {};
}

}  // namespace

rte_flow_actions_template* ModelCalls::actions_template_create(void* self, uint16_t port,
                                                          const rte_flow_actions_template_attr* a,
                                                          const rte_flow_action actions[],
                                                          const rte_flow_action masks[], rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  using R = rte_flow_actions_template;
  if (!hws_ok(m, p, e)) return nullptr;
  if (a->transfer && (!m.cfg_.esw || !p->proxy))
    return refuse_null<R>(m, e, EINVAL, "at-transfer-proxy", "transfer actions are only valid to proxy port");
  if (a->egress) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "egress templates");
  auto at = std::make_unique<Impl::AT>();
  at->port = port;
  at->attr = *a;
  bool fate = false;
  for (int i = 0;; i++) {
    const rte_flow_action& act = actions[i];
    const rte_flow_action& msk = masks[i];
    if (act.type != RTE_FLOW_ACTION_TYPE_INDIRECT && act.type != msk.type)
      return refuse_null<R>(m, e, ENOTSUP, "at-mask-type", "mask type does not match action type");
    if (act.type == RTE_FLOW_ACTION_TYPE_END) break;
    Impl::ActShape sh;
    sh.type = act.type;
    auto keep_mask = [&](size_t n) {
      if (msk.conf && !zero(msk.conf, n) && act.conf) {
        sh.masked = true;
        memcpy(sh.conf.data(), act.conf, n);
      }
    };
    switch (act.type) {
      case RTE_FLOW_ACTION_TYPE_VOID:
        continue;
      case RTE_FLOW_ACTION_TYPE_INDIRECT:
        // mlx5_flow_hw.c:3681-3741: the mask's type is the action's real type.
        if (msk.type == RTE_FLOW_ACTION_TYPE_INDIRECT || msk.type == RTE_FLOW_ACTION_TYPE_END)
          return refuse_null<R>(m, e, ENOTSUP, "at-indirect-mask", "Unsupported indirect action type");
        if (msk.type == RTE_FLOW_ACTION_TYPE_METER_MARK || msk.type == RTE_FLOW_ACTION_TYPE_RSS ||
            msk.type == RTE_FLOW_ACTION_TYPE_COUNT || msk.type == RTE_FLOW_ACTION_TYPE_AGE)
          return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "indirect action other than CONNTRACK");
        if (msk.type != RTE_FLOW_ACTION_TYPE_CONNTRACK)
          return refuse_null<R>(m, e, ENOTSUP, "at-indirect-mask", "Unsupported indirect action type");
        sh.ind = msk.type;
        if (msk.conf && act.conf) {  // a fixed handle in the template
          sh.masked = true;
          memcpy(sh.conf.data(), &act.conf, sizeof(void*));
        }
        at->has_indirect = true;
        at->dr.push_back(kDrAsoCt);
        break;
      case RTE_FLOW_ACTION_TYPE_MARK:
        keep_mask(sizeof(rte_flow_action_mark));
        at->dr.push_back(kDrTag);
        break;
      case RTE_FLOW_ACTION_TYPE_DROP:
        at->dr.push_back(kDrDrop);
        fate = true;
        break;
      case RTE_FLOW_ACTION_TYPE_JUMP:
        keep_mask(sizeof(rte_flow_action_jump));
        at->dr.push_back(kDrFt);
        fate = true;
        break;
      case RTE_FLOW_ACTION_TYPE_RSS:
      case RTE_FLOW_ACTION_TYPE_QUEUE:
        at->dr.push_back(kDrTir);
        fate = true;
        break;
      case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT:
        if (!m.cfg_.esw)
          return refuse_null<R>(m, e, EINVAL, "vport-domain", "cannot use represented_port actions without an E-Switch");
        keep_mask(sizeof(rte_flow_action_ethdev));
        if (sh.masked) {
          uint16_t to = reinterpret_cast<const rte_flow_action_ethdev*>(sh.conf.data())->port_id;
          if (s.index_of(to) < 0)
            return refuse_null<R>(m, e, EINVAL, "vport-domain", "cannot forward to port from a different E-Switch");
        }
        at->dr.push_back(kDrVport);
        fate = true;
        break;
      case RTE_FLOW_ACTION_TYPE_COUNT:
        if (!p->counters) return refuse_null<R>(m, e, EINVAL, "at-count-pool", "counters pool not initialized");
        if (at->has_count) return refuse_null<R>(m, e, EINVAL, "at-count-pool", "duplicate count actions set");
        if (msk.conf && static_cast<const rte_flow_action_count*>(msk.conf)->id)
          return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "shared COUNT by mask");
        at->has_count = true;
        if (!at->has_age) at->dr.push_back(kDrCtr);  // COUNT and AGE share one counter (4268-4280)
        break;
      case RTE_FLOW_ACTION_TYPE_AGE:
        if (!p->aging) return refuse_null<R>(m, e, EINVAL, "at-age-pool", "aging pool not initialized");
        if (at->has_age) return refuse_null<R>(m, e, EINVAL, "at-age-pool", "duplicate AGE actions set");
        at->has_age = true;
        if (!at->has_count) at->dr.push_back(kDrCtr);
        break;
      case RTE_FLOW_ACTION_TYPE_RAW_DECAP:
        // DV's hidden tables only (its L2 decap, rule dv-decap): HWS below.
        if (!s.inside) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "action type " + std::to_string(act.type));
        [[fallthrough]];
      case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP:
        // One reformat per template (mlx5_flow_hw.c:4236-4243 asserts it).
        if (at->decap || at->encap)
          return refuse_null<R>(m, e, ENOTSUP, "at-reformat", "one encap or decap action per actions template");
        at->decap = true;
        at->dr.push_back(kDrDecap);
        break;
      case RTE_FLOW_ACTION_TYPE_RAW_ENCAP: {
        if (Refusal st = check_raw_encap(act, msk); !st.rule.empty())
          return refuse_null<R>(m, e, st.err, st.rule.c_str(), st.msg);
        // After a decap the driver makes it an L3 tunnel (4246-4250), which the model does not run.
        if (at->decap) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "decap and encap in one rule (an L3 tunnel)");
        if (at->encap)
          return refuse_null<R>(m, e, ENOTSUP, "at-reformat", "one encap or decap action per actions template");
        at->encap = true;
        at->encap_size = static_cast<uint8_t>(static_cast<const rte_flow_action_raw_encap*>(act.conf)->size);
        at->dr.push_back(kDrEncap);
        break;
      }
      case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD: {
        if (Refusal st = check_modify_field(act, msk); !st.rule.empty())
          return refuse_null<R>(m, e, st.err, st.rule.c_str(), st.msg);
        if (++at->mods > kMaxMods) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "more than 4 MODIFY_FIELD actions");
        static_assert(sizeof(rte_flow_action_modify_field) <= kConfMax);
        // The value alone decides sharing (mlx5_flow_hw.c:837-867).
        sh.masked = !zero(static_cast<const rte_flow_action_modify_field*>(msk.conf)->src.value, 16);
        memcpy(sh.conf.data(), act.conf, sizeof(rte_flow_action_modify_field));  // field, width: the template's
        // All MODIFY_FIELD actions are one modify-header action, at the first one's place (4255-4261).
        if (!at->modify) at->dr.push_back(kDrModify);
        at->modify = true;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_CONNTRACK:
      case RTE_FLOW_ACTION_TYPE_VXLAN_ENCAP:
      case RTE_FLOW_ACTION_TYPE_NVGRE_ENCAP:
      case RTE_FLOW_ACTION_TYPE_NVGRE_DECAP:
      case RTE_FLOW_ACTION_TYPE_METER_MARK:
      case RTE_FLOW_ACTION_TYPE_OF_POP_VLAN:
      case RTE_FLOW_ACTION_TYPE_OF_SET_VLAN_VID:
      case RTE_FLOW_ACTION_TYPE_OF_PUSH_VLAN:
        return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "action type " + std::to_string(act.type));
      default:
        // PORT_REPRESENTOR, PORT_ID, FLAG, ... (mlx5_flow_hw.c:4103-4107)
        return refuse_null<R>(m, e, ENOTSUP, "at-action-type", "action not supported in template API");
    }
    at->acts.push_back(sh);
  }
  if (!fate) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "a rule without a fate action");
  auto* raw = at.get();
  s.ats.push_back(std::move(at));
  return reinterpret_cast<R*>(raw);
}

int ModelCalls::actions_template_destroy(void* self, uint16_t, rte_flow_actions_template* t, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::AT* at = find_owned(m.impl_->ats, t);
  if (!at) return refuse(m, e, EINVAL, "template-in-use", "unknown actions template");
  if (at->refs > 1) return refuse(m, e, EBUSY, "template-in-use", "action template is in use");
  std::erase_if(m.impl_->ats, [&](const auto& x) { return x.get() == at; });
  return 0;
}

int ModelCalls::translate(Mlx5Model& m, Impl::Table& t, rte_flow_error* e) {
  if (t.root) {
    if (t.at->has_indirect)
      return refuse(m, e, EINVAL, "root-indirect", "Indirect action is not supported in root table.");
    if (t.at->has_age)
      return refuse(m, e, ENOTSUP, "root-count-age",
                    "Age action on root table is not supported in HW steering mode");
    if (t.at->has_count)
      return refuse(m, e, ENOTSUP, "root-count-age",
                    "Counter action on root table is not supported in HW steering mode");
  } else if (!combo_ok(t.at->dr, t.fdb)) {
    return refuse(m, e, ENOTSUP, "action-order",
                  std::string("Invalid combination in action template 0 for the ") + (t.fdb ? "FDB" : "NIC Rx") +
                      " table type");
  }
  t.translated = true;
  return 0;
}

rte_flow_template_table* ModelCalls::template_table_create(void* self, uint16_t port,
                                                      const rte_flow_template_table_attr* a,
                                                      rte_flow_pattern_template* pts[], uint8_t nb_pts,
                                                      rte_flow_actions_template* ats[], uint8_t nb_ats,
                                                      rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  using R = rte_flow_template_table;
  if (!hws_ok(m, p, e)) return nullptr;
  uint32_t ig = a->flow_attr.group;
  bool fdb = a->flow_attr.transfer;
  if (fdb && !(m.cfg_.esw && p->proxy))
    return refuse_null<R>(m, e, EINVAL, "at-transfer-proxy", "transfer tables are only valid to proxy port");
  if (fdb && m.cfg_.fdb_def_rule) {
    if (ig > UINT32_MAX - 2) return refuse_null<R>(m, e, EINVAL, "table-group", "group index not supported");
    ig += 1;
  }
  if (ig >= kMaxGroups) return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "groups above 4095");
  bool root = ig == 0;
  if (nb_pts != 1 || nb_ats != 1)
    return refuse_null<R>(m, e, root && nb_pts > 1 ? EINVAL : ENOTSUP, root && nb_pts > 1 ? "table-templates"
                                                                                          : "not-modelled",
                          "tables with several templates");
  Impl::PT* pt = find_owned(s.pts, pts[0]);
  Impl::AT* at = find_owned(s.ats, ats[0]);
  if (!pt || !at || pt->port != port || at->port != port)
    return refuse_null<R>(m, e, EINVAL, "rule-port", "templates of another port");
  if ((a->flow_attr.ingress && !pt->attr.ingress) || (a->flow_attr.transfer && !pt->attr.transfer))
    return refuse_null<R>(m, e, EINVAL, "table-attr", "pattern template and template table attribute mismatch");
  // On an E-Switch the model steers the FDB only (what misses it reaches
  // software); NIC Rx rules of its ports would never be looked at.
  if (m.cfg_.esw && !fdb)
    return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "NIC Rx tables on an E-Switch port");
  // A decap whose pattern does not prove the packet tunnelled: the driver
  // takes it (no validation, mlx5_flow_hw.c:4014-4017); what the hardware
  // then does to a packet without the tunnel the model does not know.
  if (at->decap && std::none_of(pt->items.begin(), pt->items.end(),
                                [](const Impl::ItemShape& i) { return tunnel_item(i.type); }))
    return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "a decap in a table whose pattern has no tunnel item");
  // The fields of a non-root table's template must fit a match or jumbo
  // definer (root tables use the DV matcher: no definer).
  if (!root && !s.inside &&
      definer_fit(pt->items, pt->implicit_port, m.cfg_.limits.full_dw_jumbo) == DefinerFit::kNone)
    return refuse_null<R>(m, e, ENOTSUP, "match-definer",
                          std::string("Unable to find supporting match/jumbo definer combination (") +
                              (m.cfg_.limits.full_dw_jumbo ? "9 full dword" : "6 full and 3 limited dword") +
                              " and 8 byte selectors)");
  // Modify-header and reformat arguments, sized at table create: a chunk of
  // 64 bytes per 8 commands (a single command is inline, no argument), one
  // per rule where the values are the rules' own (rte_log2_u32(nb_flows)),
  // asked of the firmware within its log_header_modify_argument_granularity
  // and _max_alloc.
  {
    uint32_t cmds = 0;
    bool shared = true;
    for (const auto& x : at->acts)
      if (x.type == RTE_FLOW_ACTION_TYPE_MODIFY_FIELD) {
        cmds += (reinterpret_cast<const rte_flow_action_modify_field*>(x.conf.data())->width + 31) / 32;
        shared = shared && x.masked;
      }
    auto arg_ok = [&](uint32_t bytes, uint32_t bulk) {
      uint32_t chunk = bytes <= 64 ? 0 : bytes <= 128 ? 1 : bytes <= 256 ? 2 : 3;
      uint32_t log = chunk + bulk;
      return log >= m.cfg_.limits.log_arg_granularity && log <= m.cfg_.limits.log_arg_max_alloc;
    };
    const uint32_t bulk = rte_log2_u32(a->nb_flows);
    if (cmds > 1 && !arg_ok(cmds * 8, shared ? 0 : bulk))
      return refuse_null<R>(m, e, EINVAL, "at-arg-size",
                            "Arg size " + std::to_string(bulk) + " does not fit FW capability (modify header of " +
                                std::to_string(cmds) + " commands for " + std::to_string(a->nb_flows) + " rules)");
    // 22.11.11 shares every reformat's data (mlx5_flow_hw.c:1720, bulk 0).
    if (at->encap && !arg_ok(at->encap_size, 0))  // VXLAN over IPv4: 50 bytes, one chunk; Geneve's options add
      return refuse_null<R>(m, e, EINVAL, "at-arg-size", "Arg size 0 does not fit FW requests (reformat)");
  }
  uint32_t cap = 1;
  while (cap < a->nb_flows) cap <<= 1;
  // The model's id space: one contiguous range per table.
  uint32_t base = UINT32_MAX;
  for (auto it = s.id_ranges_free.begin(); it != s.id_ranges_free.end(); ++it) {
    if (it->second >= cap) {
      base = it->first;
      if (it->second == cap) s.id_ranges_free.erase(it);
      else *it = {it->first + cap, it->second - cap};
      break;
    }
  }
  if (base == UINT32_MAX) {
    if (s.next_id + static_cast<uint64_t>(cap) > m.cfg_.max_flows)
      return refuse_null<R>(m, e, ENOMEM, "not-modelled",
                            "the model's rule space (" + std::to_string(m.cfg_.max_flows) + ") is exhausted");
    base = s.next_id;
    s.next_id += cap;
  }
  auto t = std::make_unique<Impl::Table>();
  t->port = port;
  t->attr = *a;
  t->igroup = ig;
  t->root = root;
  t->fdb = fdb;
  t->pt = pt;
  t->at = at;
  t->cap = cap;
  t->base = base;
  for (uint32_t i = cap; i-- > 0;) t->free.push_back(base + i);
  if (p->started) {
    if (translate(m, *t, e) != 0) {
      s.id_ranges_free.push_back({base, cap});
      return nullptr;
    }
  }
  pt->refs++;
  at->refs++;
  auto* raw = t.get();
  s.tables.push_back(std::move(t));
  return reinterpret_cast<R*>(raw);
}

int ModelCalls::template_table_destroy(void* self, uint16_t, rte_flow_template_table* h, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Table* t = find_owned(s.tables, h);
  if (!t) return refuse(m, e, EINVAL, "template-in-use", "unknown table");
  if (t->used || t->refs) return refuse(m, e, EBUSY, "template-in-use", "table is in use");
  t->pt->refs--;
  t->at->refs--;
  s.id_ranges_free.push_back({t->base, t->cap});
  std::erase_if(s.tables, [&](const auto& x) { return x.get() == t; });
  return 0;
}

}  // namespace dp
