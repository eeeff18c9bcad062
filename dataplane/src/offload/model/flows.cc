// The model: rules (compile, create, destroy) and counter queries.
#include "internal.h"

namespace dp {

namespace {

// A GENEVE item (DV only) as DV's matcher builds it (mlx5_flow_dv.c:9512-9568):
// the VNI, Opt Len and the O bit under their masks, the protocol under its
// mask or, left open, forced to what the inner items say (an inner ETH:
// 0x6558; IPv4, IPv6; mlx5_flow.h:2114-2125). `at`: the item's index in
// the template.
void compile_geneve(const Mlx5Model::Impl::PT& pt, size_t at, const void* spec, const void* mask, MRule& r) {
  r.tunnel = true;
  r.geneve = true;
  rte_flow_item_geneve sp{}, mm{};
  if (spec && mask) {
    sp = *static_cast<const rte_flow_item_geneve*>(spec);
    mm = *static_cast<const rte_flow_item_geneve*>(mask);
  }
  r.vni = static_cast<uint32_t>(sp.vni[0] << 16 | sp.vni[1] << 8 | sp.vni[2]);
  r.vni_mask = static_cast<uint32_t>(mm.vni[0] << 16 | mm.vni[1] << 8 | mm.vni[2]);
  const uint16_t hv = ntohs(sp.ver_opt_len_o_c_rsvd0), hm = ntohs(mm.ver_opt_len_o_c_rsvd0);
  r.gn_optlen = static_cast<uint8_t>(hv >> 8 & 0x3F);
  r.gn_optlen_mask = static_cast<uint8_t>(hm >> 8 & 0x3F);
  r.gn_oam = static_cast<uint8_t>(hv >> 7 & 1);
  r.gn_oam_mask = static_cast<uint8_t>(hm >> 7 & 1);
  r.gn_proto = ntohs(sp.protocol);
  r.gn_proto_mask = ntohs(mm.protocol);
  if (!r.gn_proto_mask) {
    for (size_t i = at + 1; i < pt.items.size() && !r.gn_proto_mask; i++) {
      const rte_flow_item_type ty = pt.items[i].type;
      r.gn_proto = ty == RTE_FLOW_ITEM_TYPE_ETH    ? net::kEthTeb
                   : ty == RTE_FLOW_ITEM_TYPE_IPV4 ? net::kEthIpv4
                   : ty == RTE_FLOW_ITEM_TYPE_IPV6 ? net::kEthIpv6
                                                   : 0;
      if (r.gn_proto) r.gn_proto_mask = 0xFFFF;
    }
  }
}

}  // namespace

int ModelCalls::compile_items(Mlx5Model& m, Impl::Table& t, const rte_flow_item items[], MRule& r, rte_flow_error* e) {
  Impl& s = *m.impl_;
  size_t k = 0;
  // Items before a VXLAN or GENEVE item describe the outer headers.
  bool outer = std::any_of(t.pt->items.begin(), t.pt->items.end(),
                           [](const Impl::ItemShape& i) { return tunnel_item(i.type); });
  for (const rte_flow_item* it = items; it->type != RTE_FLOW_ITEM_TYPE_END; it++) {
    if (it->type == RTE_FLOW_ITEM_TYPE_VOID) continue;
    if (k >= t.pt->items.size() || t.pt->items[k].type != it->type)
      return refuse(m, e, EINVAL, "rule-shape", "rule items do not follow pattern template item " + std::to_string(k));
    const Impl::ItemShape& sh = t.pt->items[k++];
    const void* mk = sh.has_mask ? sh.mask.data() : nullptr;
    if (mk && !it->spec) return refuse(m, e, EINVAL, "rule-shape", "masked item without a spec");
    if (it->type == RTE_FLOW_ITEM_TYPE_VXLAN) {
      outer = false;
      r.tunnel = true;
      if (mk) {
        const auto* sp = static_cast<const rte_flow_item_vxlan*>(it->spec);
        const auto* mm = static_cast<const rte_flow_item_vxlan*>(mk);
        r.vni = static_cast<uint32_t>(sp->vni[0] << 16 | sp->vni[1] << 8 | sp->vni[2]);
        r.vni_mask = static_cast<uint32_t>(mm->vni[0] << 16 | mm->vni[1] << 8 | mm->vni[2]);
        // The flags only where the definer builds the match: HWS non-root
        // tables (rule vxlan-flags); the root and DV take the VNI alone.
        if (m.cfg_.dv_flow_en != 1 && !t.root) {
          r.vx_flags = sp->flags;
          r.vx_flags_mask = mm->flags;
        }
      }
      continue;
    }
    if (it->type == RTE_FLOW_ITEM_TYPE_GENEVE) {
      outer = false;
      compile_geneve(*t.pt, k - 1, it->spec, mk, r);
      continue;
    }
    if (outer && it->type != RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT) {  // the port is the rule's, outer or not
      if (it->type == RTE_FLOW_ITEM_TYPE_IPV4 && mk) {
        const auto* sp = static_cast<const rte_flow_item_ipv4*>(it->spec);
        const auto* mm = static_cast<const rte_flow_item_ipv4*>(mk);
        memcpy(r.o_smask, &mm->hdr.src_addr, 4);
        memcpy(r.o_dmask, &mm->hdr.dst_addr, 4);
        memcpy(r.o_src, &sp->hdr.src_addr, 4);
        memcpy(r.o_dst, &sp->hdr.dst_addr, 4);
      } else if (it->type == RTE_FLOW_ITEM_TYPE_UDP && mk &&
                 static_cast<const rte_flow_item_udp*>(mk)->hdr.dst_port) {
        if (static_cast<const rte_flow_item_udp*>(mk)->hdr.dst_port != 0xFFFF)
          return refuse(m, e, ENOTSUP, "not-modelled", "a partial outer UDP destination port");
        r.o_dport = ntohs(static_cast<const rte_flow_item_udp*>(it->spec)->hdr.dst_port);
      }
      continue;
    }
    switch (it->type) {
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT: {
        if (!mk || !static_cast<const rte_flow_item_ethdev*>(mk)->port_id) break;
        int idx = s.index_of(static_cast<const rte_flow_item_ethdev*>(it->spec)->port_id);
        if (idx < 0) return refuse(m, e, EINVAL, "vport-domain", "REPRESENTED_PORT of another E-Switch");
        r.in_port = static_cast<int16_t>(idx);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_ETH:
        if (mk) {
          const auto* sp = static_cast<const rte_flow_item_eth*>(it->spec);
          const auto* mm = static_cast<const rte_flow_item_eth*>(mk);
          if (mm->hdr.ether_type) {
            r.eth_type_set = true;
            r.eth_type = ntohs(sp->hdr.ether_type & mm->hdr.ether_type);
          }
          if (mm->has_vlan && sp->has_vlan) r.need_vlan = true;
        }
        break;
      case RTE_FLOW_ITEM_TYPE_VLAN:
        r.need_vlan = true;
        if (mk) {
          const auto* sp = static_cast<const rte_flow_item_vlan*>(it->spec);
          const auto* mm = static_cast<const rte_flow_item_vlan*>(mk);
          if (mm->hdr.vlan_tci) {
            r.vid_set = true;
            r.vid = ntohs(sp->hdr.vlan_tci) & 0xFFF;
          }
          if (mm->hdr.eth_proto) {
            r.eth_type_set = true;
            r.eth_type = ntohs(sp->hdr.eth_proto);
          }
        }
        break;
      case RTE_FLOW_ITEM_TYPE_IPV4: {
        r.family = 4;
        if (!mk) break;
        const auto* sp = static_cast<const rte_flow_item_ipv4*>(it->spec);
        const auto* mm = static_cast<const rte_flow_item_ipv4*>(mk);
        memcpy(r.smask, &mm->hdr.src_addr, 4);
        memcpy(r.dmask, &mm->hdr.dst_addr, 4);
        memcpy(r.src, &sp->hdr.src_addr, 4);
        memcpy(r.dst, &sp->hdr.dst_addr, 4);
        r.proto = sp->hdr.next_proto_id;
        r.proto_mask = mm->hdr.next_proto_id;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV6: {
        r.family = 6;
        if (!mk) break;
        const auto* sp = static_cast<const rte_flow_item_ipv6*>(it->spec);
        const auto* mm = static_cast<const rte_flow_item_ipv6*>(mk);
        memcpy(r.smask, mm->hdr.src_addr, 16);
        memcpy(r.dmask, mm->hdr.dst_addr, 16);
        memcpy(r.src, sp->hdr.src_addr, 16);
        memcpy(r.dst, sp->hdr.dst_addr, 16);
        r.proto = sp->hdr.proto;
        r.proto_mask = mm->hdr.proto;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_TCP:
      case RTE_FLOW_ITEM_TYPE_UDP: {
        r.l4 = it->type == RTE_FLOW_ITEM_TYPE_TCP ? IPPROTO_TCP : IPPROTO_UDP;
        if (!mk) break;
        if (r.l4 == IPPROTO_TCP) {
          const auto* sp = static_cast<const rte_flow_item_tcp*>(it->spec);
          const auto* mm = static_cast<const rte_flow_item_tcp*>(mk);
          r.sport = ntohs(sp->hdr.src_port);
          r.sport_mask = ntohs(mm->hdr.src_port);
          r.dport = ntohs(sp->hdr.dst_port);
          r.dport_mask = ntohs(mm->hdr.dst_port);
          r.tcpf = sp->hdr.tcp_flags;
          r.tcpf_mask = mm->hdr.tcp_flags;
        } else {
          const auto* sp = static_cast<const rte_flow_item_udp*>(it->spec);
          const auto* mm = static_cast<const rte_flow_item_udp*>(mk);
          r.sport = ntohs(sp->hdr.src_port);
          r.sport_mask = ntohs(mm->hdr.src_port);
          r.dport = ntohs(sp->hdr.dst_port);
          r.dport_mask = ntohs(mm->hdr.dst_port);
        }
        break;
      }
      case RTE_FLOW_ITEM_TYPE_CONNTRACK:
        r.ct_item = true;
        if (mk) {
          r.ct_spec = static_cast<uint8_t>(static_cast<const rte_flow_item_conntrack*>(it->spec)->flags);
          r.ct_mask = static_cast<uint8_t>(static_cast<const rte_flow_item_conntrack*>(mk)->flags);
        }
        break;
      default:
        return refuse(m, e, EINVAL, "rule-shape", "item not in the template");
    }
  }
  if (k != t.pt->items.size()) return refuse(m, e, EINVAL, "rule-shape", "rule has fewer items than its template");
  return 0;
}

int ModelCalls::compile_actions(Mlx5Model& m, Impl::Table& t, const rte_flow_action actions[], MRule& r,
                                int32_t* ct_out, rte_flow_error* e) {
  Impl& s = *m.impl_;
  size_t k = 0;
  for (const rte_flow_action* a = actions; a->type != RTE_FLOW_ACTION_TYPE_END; a++) {
    if (a->type == RTE_FLOW_ACTION_TYPE_VOID) continue;
    if (k >= t.at->acts.size() || t.at->acts[k].type != a->type)
      return refuse(m, e, EINVAL, "rule-shape", "rule actions do not follow actions template action " + std::to_string(k));
    const Impl::ActShape& sh = t.at->acts[k++];
    const void* conf = sh.masked ? static_cast<const void*>(sh.conf.data()) : a->conf;
    switch (a->type) {
      case RTE_FLOW_ACTION_TYPE_INDIRECT: {
        const void* h = sh.masked ? *reinterpret_cast<const void* const*>(sh.conf.data()) : a->conf;
        auto v = reinterpret_cast<uintptr_t>(h);
        uint32_t idx = static_cast<uint32_t>(v & 0xFFFFFFFFu) - 1;
        uint16_t owner = static_cast<uint16_t>((v >> 32) & 0xFFFF);
        if ((v >> 62) != 1 || idx >= s.cts.size())
          return refuse(m, e, EINVAL, "ct-freed", "not a conntrack handle of this port");
        if (!s.cts[idx].used)
          return refuse(m, e, ENXIO, "ct-freed", "rule refers to a freed conntrack object");
        if (owner != t.port) return refuse(m, e, EINVAL, "ct-owner", "conntrack object of another port");
        if (!s.cts[idx].ready) s.ct_unready_refs++;  // taken, as the driver does
        r.ct = static_cast<int32_t>(idx);
        // The direction is taken now, from the object (mlx5_flow_hw.c:421-423).
        r.ct_dir = s.cts[idx].is_original ? 0 : 1;
        *ct_out = r.ct;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_MARK: {
        uint32_t id = static_cast<const rte_flow_action_mark*>(conf)->id;
        if (id >= kMarkMax)
          return refuse(m, e, EINVAL, "mark-range", "mark id must in 0 <= id < 16777200 (MLX5_FLOW_MARK_MAX)");
        r.mark = true;
        r.mark_id = id;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_DROP: r.fate = MRule::kDrop; break;
      case RTE_FLOW_ACTION_TYPE_JUMP: {
        uint32_t g = static_cast<const rte_flow_action_jump*>(conf)->group;
        if (t.fdb && m.cfg_.fdb_def_rule) g += 1;  // the same translation as tables (flow_hw_translate_group)
        if (g >= kMaxGroups) return refuse(m, e, ENOTSUP, "not-modelled", "jump to a group above 4095");
        r.fate = MRule::kJump;
        r.jump = g;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_RSS: {
        const auto* c = static_cast<const rte_flow_action_rss*>(conf);
        if (!c) return refuse(m, e, EINVAL, "rule-shape", "RSS without its configuration");
        if (c->level > 1 || (c->types & (RTE_ETH_RSS_L3_SRC_ONLY | RTE_ETH_RSS_L3_DST_ONLY | RTE_ETH_RSS_L4_SRC_ONLY |
                                         RTE_ETH_RSS_L4_DST_ONLY)))
          return refuse(m, e, ENOTSUP, "not-modelled", "RSS on inner or source/destination-only fields");
        r.fate = MRule::kSw;
        r.rss_types = c->types ? c->types : RTE_ETH_RSS_IP;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_QUEUE: r.fate = MRule::kSw; break;
      case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT: {
        int idx = s.index_of(static_cast<const rte_flow_action_ethdev*>(conf)->port_id);
        if (idx < 0) return refuse(m, e, EINVAL, "vport-domain", "cannot forward to port from a different E-Switch");
        r.fate = MRule::kOut;
        r.out = static_cast<int16_t>(idx);
        break;
      }
      case RTE_FLOW_ACTION_TYPE_COUNT: r.count = true; break;
      case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP:
      case RTE_FLOW_ACTION_TYPE_RAW_DECAP: r.decap = true; break;
      case RTE_FLOW_ACTION_TYPE_RAW_ENCAP: {
        const auto* c = static_cast<const rte_flow_action_raw_encap*>(a->conf);
        // The rule's data takes the template's length (mlx5_flow_hw.c:1750-1760: the size is the template's).
        if (!c || !c->data) return refuse(m, e, EINVAL, "rule-shape", "RAW_ENCAP without its data");
        memcpy(r.encap, c->data, t.at->encap_size);
        r.encap_len = t.at->encap_size;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD: {
        // The field, operation and width are the template's; a rule gives
        // the value unless the template's mask fixed it (mlx5_flow_hw.c:837-867).
        const auto* tv = reinterpret_cast<const rte_flow_action_modify_field*>(sh.conf.data());
        const auto* v = sh.masked ? tv : static_cast<const rte_flow_action_modify_field*>(a->conf);
        if (!v) return refuse(m, e, EINVAL, "rule-shape", "MODIFY_FIELD without its configuration");
        Mod& md = r.mod[r.nmod++];
        switch (tv->dst.field) {
          case RTE_FLOW_FIELD_IPV4_SRC: md.field = kModIp4Src; md.len = 4; break;
          case RTE_FLOW_FIELD_IPV4_DST: md.field = kModIp4Dst; md.len = 4; break;
          case RTE_FLOW_FIELD_TCP_PORT_SRC: md.field = kModTcpSport; md.len = 2; break;
          case RTE_FLOW_FIELD_TCP_PORT_DST: md.field = kModTcpDport; md.len = 2; break;
          case RTE_FLOW_FIELD_UDP_PORT_SRC: md.field = kModUdpSport; md.len = 2; break;
          default: md.field = kModUdpDport; md.len = 2; break;
        }
        memcpy(md.value, v->src.value, md.len);
        break;
      }
      case RTE_FLOW_ACTION_TYPE_AGE: {
        const auto* ag = static_cast<const rte_flow_action_age*>(conf);
        if (!ag) return refuse(m, e, EINVAL, "rule-shape", "AGE without a configuration");
        r.age = true;
        r.age_s = ag->timeout;
        break;
      }
      default:
        return refuse(m, e, EINVAL, "rule-shape", "action not in the template");
    }
  }
  if (k != t.at->acts.size()) return refuse(m, e, EINVAL, "rule-shape", "rule has fewer actions than its template");
  return 0;
}

int ModelCalls::compile(Mlx5Model& m, Impl::Table& t, const rte_flow_item items[], const rte_flow_action actions[],
                   MRule& r, int32_t* ct_out, rte_flow_error* e) {
  Impl& s = *m.impl_;
  r.group = t.igroup;
  r.prio = t.attr.flow_attr.priority;
  r.dom = t.fdb ? 0xFFFF : static_cast<uint16_t>(s.index_of(t.port));
  if (!t.fdb || t.pt->implicit_port) r.in_port = static_cast<int16_t>(s.index_of(t.port));
  if (int rc = compile_items(m, t, items, r, e); rc) return rc;
  if (int rc = compile_actions(m, t, actions, r, ct_out, e); rc) return rc;
  // An exact 5-tuple rule goes to the hash table.
  int alen = r.family == 4 ? 4 : 16;
  auto full = [&](const uint8_t* mk) { return std::all_of(mk, mk + alen, [](uint8_t b) { return b == 0xFF; }); };
  bool proto_known = r.proto_mask == 0xFF || (r.l4 && !r.proto_mask);
  r.exact = !t.root && r.in_port >= 0 && r.family && full(r.smask) && full(r.dmask) && proto_known && r.l4 &&
            r.sport_mask == 0xFFFF && r.dport_mask == 0xFFFF && !r.ct_item && !r.need_vlan &&
            !r.eth_type_set;
  if (r.exact) {
    memcpy(r.key.src, r.src, static_cast<size_t>(alen));
    memcpy(r.key.dst, r.dst, static_cast<size_t>(alen));
    r.key.sport = r.sport;
    r.key.dport = r.dport;
    r.key.zone = static_cast<uint16_t>(r.in_port | (r.tunnel ? kTunnelZone : 0));
    r.key.proto = r.l4;
    r.key.family = r.family;
  }
  return 0;
}

rte_flow* ModelCalls::async_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                              rte_flow_template_table* th, const rte_flow_item items[], uint8_t pt_index,
                              const rte_flow_action actions[], uint8_t at_index, void* user_data,
                              rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  Impl::FlowQueue* q = job(m, p, queue, e);
  if (!q) return nullptr;
  Impl::Table* t = find_owned(s.tables, th);
  if (!t) return refuse_null<rte_flow>(m, e, EINVAL, "rule-port", "unknown template table");
  if (t->port != port)
    return refuse_null<rte_flow>(m, e, EINVAL, "rule-port",
                                 "table belongs to port " + std::to_string(t->port) + ", rule queued on port " +
                                     std::to_string(port));
  if (pt_index != 0 || at_index != 0)
    return refuse_null<rte_flow>(m, e, EINVAL, "rule-shape", "template index out of range");
  if (!t->translated) return refuse_null<rte_flow>(m, e, EINVAL, "start-order", "port not started");
  if (t->free.empty()) {
    rte_errno = ENOMEM;
    return refuse_null<rte_flow>(m, e, ENOMEM, "rule-table-full",
                                 "fail to create rte flow (table of " + std::to_string(t->cap) + " full)");
  }
  Op o;
  o.kind = Op::kFlowAdd;
  int32_t ct = -1;
  if (compile(m, *t, items, actions, o.rule, &ct, e) != 0) return nullptr;
  bool exact = o.rule.exact;
  if (!exact && s.masked_count >= m.cfg_.max_masked)
    return refuse_null<rte_flow>(m, e, ENOMEM, "not-modelled", "the model's masked-rule space is full");
  const bool counter = o.rule.count || o.rule.age;
  if (counter) {
    // One counter per rule from the port's pool; freed ones come back at
    // the counter service's cycle.
    const uint64_t now = m.now();
    while (!p->cnt_waiting.empty() && p->cnt_waiting.front() <= now) p->cnt_waiting.pop_front();
    if (p->cnt_taken + p->cnt_waiting.size() >= p->counters) {
      if (!p->cnt_waiting.empty())
        return refuse_null<rte_flow>(m, e, EAGAIN, "counter-reuse",
                                     "fail to create rte flow: no free counter (" +
                                         std::to_string(p->cnt_waiting.size()) +
                                         " wait for the counter service's next cycle)");
      return refuse_null<rte_flow>(m, e, ENOENT, "counter-reuse",
                                   "fail to create rte flow: no counter left of " + std::to_string(p->counters));
    }
    p->cnt_taken++;
  }
  uint32_t id = t->free.back();
  t->free.pop_back();
  t->used++;
  if (!exact) s.masked_count++;
  o.id = id;
  o.rule.id = id;
  o.rule.order = s.order++;
  s.flows[id] = Impl::FlowRec{Impl::FlowRec::kLive, t, ct, exact, o.rule.age ? o.rule.age_s : 0, counter};
  for (const rte_flow_action* a = actions; a->type != RTE_FLOW_ACTION_TYPE_END; a++)
    if (a->type == RTE_FLOW_ACTION_TYPE_AGE && a->conf)
      s.flows[id].age_ctx = static_cast<const rte_flow_action_age*>(a->conf)->context;
  s.flows_used++;
  if (ct >= 0) s.cts[static_cast<size_t>(ct)].refs++;
  Counter& c = s.counters[id];
  c.packets.store(0);
  c.bytes.store(0);
  c.last_hit_ns.store(0);
  if (s.flow_created_ns.size() < s.flows.size()) s.flow_created_ns.resize(s.flows.size());
  s.flow_created_ns[id] = m.now();
  if (o.rule.age) {
    if (s.age_listed.size() < s.flows.size()) s.age_listed.resize(s.flows.size());
    if (!s.age_listed[id]) {
      s.age_listed[id] = 1;
      s.age_ids.push_back(id);
    }
  }
  enqueue(m, *q, o, Impl::Pending{0, 0, user_data, true, Impl::Pending::kFlowCreate, id}, op && op->postpone);
  return reinterpret_cast<rte_flow*>(static_cast<uintptr_t>(id) + 1);
}

int ModelCalls::async_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow* f,
                         void* user_data, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  Impl::FlowQueue* q = job(m, p, queue, e);
  if (!q) return -rte_errno;
  uint64_t v = reinterpret_cast<uintptr_t>(f);
  if (v == 0 || v > s.flows.size() || s.flows[v - 1].st != Impl::FlowRec::kLive)
    return refuse(m, e, EINVAL, "rule-shape", "not a live rule");
  uint32_t id = static_cast<uint32_t>(v - 1);
  Impl::FlowRec& fr = s.flows[id];
  if (fr.t->port != port) return refuse(m, e, EINVAL, "rule-port", "rule of another port");
  fr.st = Impl::FlowRec::kDestroying;
  Op o;
  o.kind = Op::kFlowDel;
  o.id = id;
  if (!fr.exact) s.masked_count--;
  enqueue(m, *q, o, Impl::Pending{0, 0, user_data, true, Impl::Pending::kFlowDestroy, id}, op && op->postpone);
  return 0;
}

int ModelCalls::query(void* self, uint16_t port, rte_flow* f, const rte_flow_action* actions, void* data,
                 rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  uint64_t v = reinterpret_cast<uintptr_t>(f);
  if (v == 0 || v > s.flows.size() || s.flows[v - 1].st == Impl::FlowRec::kFree)
    return refuse(m, e, EINVAL, "query", "not a rule");
  uint32_t id = static_cast<uint32_t>(v - 1);
  const Impl::FlowRec& fr = s.flows[id];
  if (fr.t->port != port) return refuse(m, e, EINVAL, "rule-port", "rule of another port");
  int rc = -EINVAL;
  for (; actions->type != RTE_FLOW_ACTION_TYPE_END; actions++) {
    switch (actions->type) {
      case RTE_FLOW_ACTION_TYPE_VOID: break;
      case RTE_FLOW_ACTION_TYPE_COUNT: {
        if (!fr.t->at->has_count && !fr.t->at->has_age)
          return refuse(m, e, EINVAL, "query", "counter are not available");
        auto* qc = static_cast<rte_flow_query_count*>(data);
        qc->hits_set = qc->bytes_set = 1;
        qc->hits = s.counters[id].packets.load(std::memory_order_relaxed);
        qc->bytes = s.counters[id].bytes.load(std::memory_order_relaxed);
        rc = 0;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_AGE: {
        if (!fr.t->at->has_age) return refuse(m, e, EINVAL, "query", "age data not available");
        auto* qa = static_cast<rte_flow_query_age*>(data);
        uint64_t last = std::max(s.counters[id].last_hit_ns.load(std::memory_order_relaxed), s.flow_created_ns[id]);
        uint64_t now = m.now();
        uint64_t idle_s = now > last ? (now - last) / 1'000'000'000ull : 0;
        qa->aged = fr.age_s && idle_s >= fr.age_s;
        qa->sec_since_last_hit_valid = !qa->aged;
        qa->sec_since_last_hit = qa->aged ? 0 : static_cast<uint32_t>(idle_s);
        rc = 0;
        break;
      }
      default:
        return refuse(m, e, ENOTSUP, "query", "action not supported");
    }
  }
  return rc;
}

}  // namespace dp
