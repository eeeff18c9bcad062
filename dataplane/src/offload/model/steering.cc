// The model's data side: each rx queue's replica of the tables, the
// steering of a packet through them (groups, exact tables, conntrack).
#include "internal.h"

#include "net/checksum.h"
#include "net/headers.h"

namespace dp {

// ------------------------------------------------------------------ data side

void Mlx5Model::drain() {
  for (auto& p : impl_->ports)
    for (auto& q : p.q) {
      ModelCalls::send(*this, q);
      for (auto& pd : q.inflight) pd.due = 0;
    }
  for (auto& r : impl_->replicas) service_replica(r.get(), UINT64_MAX);
}

uint32_t Mlx5Model::service(unsigned q, uint64_t now_ns) { return service_replica(impl_->replicas[q].get(), now_ns); }

uint32_t Mlx5Model::service_replica(void* rp, uint64_t now_ns) {
  Replica& r = *static_cast<Replica*>(rp);
  uint32_t n = 0;
  while (Op* op = r.ops.front()) {
    if (op->due > now_ns) break;
    switch (op->kind) {
      case Op::kFlowAdd: {
        MRule& x = r.rules[op->id];
        x = op->rule;
        if (x.exact) {
          r.exact.insert(&x);
        } else {
          auto at = std::upper_bound(r.masked.begin(), r.masked.end(), &x, [](const MRule* a, const MRule* b) {
            return a->group != b->group ? a->group < b->group
                                        : a->prio != b->prio ? a->prio < b->prio : a->order < b->order;
          });
          r.masked.insert(at, &x);  // within the reservation: no allocation
        }
        break;
      }
      case Op::kNop:
        break;
      case Op::kFlowDel: {
        MRule& x = r.rules[op->id];
        if (x.exact) r.exact.erase(&x);
        else r.masked.erase(std::find(r.masked.begin(), r.masked.end(), &x));
        break;
      }
      case Op::kCtSet:
        r.ct[op->id] = op->ct;
        break;
      case Op::kCtDel:
        r.ct[op->id].alive = false;
        break;
      case Op::kCtQuery:
        r.qout[op->slot] = r.ct[op->id];
        break;
    }
    r.applied.store(op->seq, std::memory_order_release);
    r.ops.pop();
    n++;
  }
  return n;
}

namespace {

// Linux tcp_in_window, as the NIC's conntrack ASO runs it.
uint8_t ct_check(CtState& c, int dir, const ctrack::Packet& p) {
  if (!c.alive) return RTE_FLOW_CONNTRACK_PKT_STATE_BAD;
  if (!c.enable) return RTE_FLOW_CONNTRACK_PKT_STATE_DISABLED;
  if (p.tcp_flags & (ctrack::kSyn | ctrack::kFin | ctrack::kRst)) return RTE_FLOW_CONNTRACK_PKT_STATE_CHANGED;
  if (!(p.tcp_flags & ctrack::kAck)) return RTE_FLOW_CONNTRACK_PKT_STATE_INVALID;
  CtDir& s = c.d[dir];
  CtDir& r = c.d[1 - dir];
  uint32_t seq = p.seq, ack = p.ack, end = seq + p.payload_len;
  uint32_t win = static_cast<uint32_t>(p.win) << s.scale;
  uint32_t maxack = std::max<uint32_t>(s.max_win, 66000);
  bool ok = !after(seq, s.reply_end) && after(end, s.sent_end - r.max_win - 1) && !after(ack, r.sent_end) &&
            after(ack, r.sent_end - maxack - 1);
  if (!ok && !c.liberal) return RTE_FLOW_CONNTRACK_PKT_STATE_INVALID;
  if (s.max_win < win) s.max_win = win ? win : 1;
  if (after(end, s.sent_end)) s.sent_end = end;
  if (after(ack, s.max_ack)) s.max_ack = ack;
  if (!after(r.reply_end, ack + win)) r.reply_end = ack + (win ? win : 1);
  return RTE_FLOW_CONNTRACK_PKT_STATE_VALID;
}

// A tunnelled packet as the hardware's parser sees it: outer IPv4 (not a
// fragment), UDP to 4789 (the parser's VXLAN port) with the VXLAN header,
// or to 6081 (its Geneve port) with the Geneve header and its options
// (Opt Len), then a parseable inner frame. The parser reads Geneve's
// fields whatever its version (DV cannot match the version: rule
// dv-geneve-item).
struct VxTunnel {
  bool ok = false;
  bool geneve = false;
  uint8_t flags = 0;                                // VXLAN
  uint8_t optlen = 0, oam = 0;                      // Geneve
  uint16_t proto = 0;                               // Geneve
  uint32_t vni = 0, off = 0;  // off: where the inner frame starts
  ctrack::Parsed inner;
};
void find_tunnel(const PacketIn& in, const ctrack::Parsed& pp, VxTunnel* t) {
  t->ok = false;
  const ctrack::Packet& p = pp.ct;
  if (pp.kind != ctrack::L3Kind::kIp || p.key.family != 4 || p.key.proto != IPPROTO_UDP ||
      (p.meta & ctrack::kMetaFragment) || (p.key.dport != kVxlanPort && p.key.dport != kGenevePort) ||
      in.len < pp.l4_off + 16u + 14u)
    return;
  const uint8_t* h = in.data + pp.l4_off + 8;
  t->geneve = p.key.dport == kGenevePort;
  t->vni = t->geneve ? net::get32(h + 4) >> 8 : net::vxlan_vni(h);
  if (t->geneve) {
    t->optlen = h[0] & 0x3F;
    t->oam = h[1] >> 7;
    t->proto = net::get16(h + 2);
    t->off = pp.l4_off + 16u + t->optlen * 4u;
    if (in.len < t->off + 14u) return;
  } else {
    t->flags = h[0];
    t->off = pp.l4_off + 16u;
  }
  t->ok = ctrack::parse_packet(in.data + t->off, in.len - t->off, 0, &t->inner) == ctrack::Drop::kNone;
}

// The outer headers and the tunnel header a tunnel rule asks for.
bool outer_match(const MRule& r, const ctrack::Parsed& pp, const VxTunnel& tn) {
  if (!tn.ok || tn.geneve != r.geneve || ((tn.vni ^ r.vni) & r.vni_mask)) return false;
  if (r.geneve) {
    if (((tn.optlen ^ r.gn_optlen) & r.gn_optlen_mask) || ((tn.oam ^ r.gn_oam) & r.gn_oam_mask) ||
        ((tn.proto ^ r.gn_proto) & r.gn_proto_mask))
      return false;
  } else if ((tn.flags ^ r.vx_flags) & r.vx_flags_mask) {
    return false;
  }
  for (int i = 0; i < 4; i++)
    if (((pp.ct.key.src[i] ^ r.o_src[i]) & r.o_smask[i]) || ((pp.ct.key.dst[i] ^ r.o_dst[i]) & r.o_dmask[i]))
      return false;
  return true;
}

bool match(const MRule& r, const ctrack::Parsed& outer, const VxTunnel& tn, int in_port, uint8_t ct_flags) {
  if (r.tunnel && !outer_match(r, outer, tn)) return false;
  const ctrack::Parsed& pp = r.tunnel ? tn.inner : outer;
  const ctrack::Packet& p = pp.ct;
  if (r.in_port >= 0 && r.in_port != in_port) return false;
  if (r.need_vlan && pp.vlan == 0) return false;
  if (r.vid_set && pp.vlan != r.vid) return false;
  if (r.eth_type_set && pp.ethertype != r.eth_type) return false;
  if (r.family) {
    if (pp.kind != ctrack::L3Kind::kIp && pp.kind != ctrack::L3Kind::kNd) return false;
    if (p.key.family != r.family) return false;
    int alen = r.family == 4 ? 4 : 16;
    for (int i = 0; i < alen; i++)
      if (((p.key.src[i] ^ r.src[i]) & r.smask[i]) || ((p.key.dst[i] ^ r.dst[i]) & r.dmask[i])) return false;
    if ((p.key.proto ^ r.proto) & r.proto_mask) return false;
  }
  if (r.l4) {
    if (pp.kind != ctrack::L3Kind::kIp || p.key.proto != r.l4 || (p.meta & ctrack::kMetaFragment)) return false;
    if (((p.key.sport ^ r.sport) & r.sport_mask) || ((p.key.dport ^ r.dport) & r.dport_mask)) return false;
    if ((p.tcp_flags ^ r.tcpf) & r.tcpf_mask) return false;
  }
  if (r.ct_item && ((ct_flags ^ r.ct_spec) & r.ct_mask)) return false;
  return true;
}

// MODIFY_FIELD SET on the frame as it stands (after a decap: the former
// inner headers). The device keeps the IPv4 header checksum and the L4
// checksum right; a field the packet does not have is left alone.
void modify(PacketIn& in, const ctrack::Parsed& pp, const Mod& md) {
  if (pp.kind != ctrack::L3Kind::kIp || pp.ct.key.family != 4) return;
  uint8_t* ip = in.data + pp.l3_off;
  uint8_t* l4 = in.data + pp.l4_off;
  const uint8_t proto = pp.ct.key.proto;
  const bool first = !(pp.ct.meta & ctrack::kMetaFragment);
  uint8_t* l4sum = first ? net::l4_sum(l4, in.len - pp.l4_off, proto, false) : nullptr;
  switch (md.field) {
    case kModIp4Src: net::set_field(ip + 12, md.value, 4, ip + 10, l4sum); break;
    case kModIp4Dst: net::set_field(ip + 16, md.value, 4, ip + 10, l4sum); break;
    case kModTcpSport:
    case kModTcpDport:
    case kModUdpSport:
    case kModUdpDport: {
      const bool tcp = md.field == kModTcpSport || md.field == kModTcpDport;
      if (!first || proto != (tcp ? IPPROTO_TCP : IPPROTO_UDP) || in.len < pp.l4_off + 4u) return;
      const bool src = md.field == kModTcpSport || md.field == kModUdpSport;
      net::set_field(l4 + (src ? 0 : 2), md.value, 2, l4sum);
      break;
    }
  }
}

// L2_TO_TNL_L2: the rule's headers go before the frame; the device fills
// the outer IPv4 total length and checksum and the UDP length (the driver
// builds the header without them, mlx5_flow_dv.c:4366-4383). False: no
// room before the frame (the model's buffer, not the hardware's limit).
bool encap(PacketIn& in, const MRule& r) {
  if (in.headroom < r.encap_len) return false;
  in.data -= r.encap_len;
  in.headroom = static_cast<uint16_t>(in.headroom - r.encap_len);
  in.len += r.encap_len;
  in.pkt_len += r.encap_len;
  memcpy(in.data, r.encap, r.encap_len);
  uint8_t* ip = in.data + 14;
  net::put16(ip + 2, static_cast<uint16_t>(in.pkt_len - 14));
  net::ipv4_set_checksum(ip, net::kIpv4Len);
  net::put16(ip + 24, static_cast<uint16_t>(in.pkt_len - 34));
  return true;
}

// The fields an RSS action hashes a packet on, as (L3 family, L4 protocol),
// 0 for none. HWS makes one TIR of the action's types alone: one L3 (IPv4
// before IPv6) and one L4 (UDP before TCP) (mlx5_flow_hw.c:183-225); a
// packet of another family or protocol than the TIR selects is counted as
// hashed on nothing of its own (what the hardware hashes then is not
// documented). DV expands the rule's pattern by the types
// (mlx5_flow.c:7096-7103) and hashes each expansion on the layers it has
// (flow_dv_hashfields_set, mlx5_flow_dv.c:11541-11608): the packet's own
// layers, where the types name them.
struct HashOn {
  uint8_t l3 = 0, l4 = 0;
  bool operator==(const HashOn&) const = default;
};

HashOn rss_hash_on(uint64_t types, bool dv, const ctrack::Parsed& p) {
  HashOn h;
  if (p.kind != ctrack::L3Kind::kIp) return h;
  const uint8_t fam = p.ct.key.family, proto = p.ct.key.proto;
  const bool l4 = !(p.ct.meta & ctrack::kMetaFragment) && (proto == IPPROTO_TCP || proto == IPPROTO_UDP);
  constexpr uint64_t kV4 = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
                           RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV4_OTHER;  // MLX5_IPV4_LAYER_TYPES
  constexpr uint64_t kV6 = RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP |
                           RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_IPV6_EX | RTE_ETH_RSS_IPV6_TCP_EX |
                           RTE_ETH_RSS_IPV6_UDP_EX | RTE_ETH_RSS_NONFRAG_IPV6_OTHER;  // MLX5_IPV6_LAYER_TYPES
  if (dv) {
    if (!(types & (fam == 4 ? kV4 : kV6))) return h;
    h.l3 = fam;
    if (l4 && (types & (proto == IPPROTO_UDP ? RTE_ETH_RSS_UDP : RTE_ETH_RSS_TCP))) h.l4 = proto;
    return h;
  }
  const uint8_t tir_l3 = types & kV4 ? 4 : types & kV6 ? 6 : 0;
  const uint8_t tir_l4 = types & RTE_ETH_RSS_UDP ? IPPROTO_UDP : types & RTE_ETH_RSS_TCP ? IPPROTO_TCP : 0;
  if (tir_l3 != fam) return h;
  h.l3 = fam;
  if (l4 && tir_l4 == proto) h.l4 = proto;
  return h;
}

// The port's own RSS (rss_hf IP|TCP|UDP; in HWS the PMD's Rx control rules
// carry one RSS per packet type, mlx5_flow_hw.c:6754-6790).
HashOn port_hash_on(const ctrack::Parsed& p) { return rss_hash_on(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP, true, p); }

}  // namespace

int16_t Mlx5Model::rx(unsigned qi, PacketIn& in, uint64_t now_ns, ctrack::Parsed* parsed, ctrack::Drop* drop) {
  Impl& s = *impl_;
  Replica& q = *s.replicas[qi];
  q.st.rx++;
  // A port (or, on an E-Switch, its proxy) never rte_flow_configure'd has
  // no Rx control flows: nothing reaches its queues.
  if (!q.port_hws[in.port] || (cfg_.esw && !q.port_hws[cfg_.proxy_index])) {
    q.st.no_rx_flows++;
    return -1;
  }
  ctrack::Parsed local;
  ctrack::Parsed& pp = parsed ? *parsed : local;
  ctrack::Drop d = ctrack::parse_packet(in.data, in.len, 0, &pp);
  if (drop) *drop = d;
  if (d != ctrack::Drop::kNone) {
    q.st.to_software++;  // software counts the reason
    return kNicMiss;
  }
  VxTunnel tn;
  find_tunnel(in, pp, &tn);
  const uint16_t dom = cfg_.esw ? 0xFFFF : in.port;
  uint8_t ct_flags = 0;
  uint32_t g = cfg_.esw && cfg_.fdb_def_rule ? 1 : 0;
  auto exact_ok = [](const ctrack::Parsed& x) {
    return x.kind == ctrack::L3Kind::kIp && !(x.ct.meta & ctrack::kMetaFragment);
  };
  for (int hops = 0; hops < 16; hops++) {
    const MRule* best = nullptr;
    if (g != 0 && tn.ok && exact_ok(tn.inner)) {  // a rule below a tunnel item: keyed by the inner tuple
      ctrack::Key kt = tn.inner.ct.key;
      kt.zone = static_cast<uint16_t>(in.port | kTunnelZone);
      best = q.exact.find(g, kt);
      if (best && (best->dom != dom || !outer_match(*best, pp, tn))) best = nullptr;
      if (best && best->tcpf_mask && ((tn.inner.ct.tcp_flags ^ best->tcpf) & best->tcpf_mask)) best = nullptr;
    }
    if (!best && g != 0 && exact_ok(pp)) {
      ctrack::Key k = pp.ct.key;
      k.zone = in.port;
      best = q.exact.find(g, k);
      if (best && best->dom != dom) best = nullptr;
      // An exact rule may also match TCP flags (the flows strategy's
      // connection rules leave SYN, FIN and RST to software).
      if (best && best->tcpf_mask && ((pp.ct.tcp_flags ^ best->tcpf) & best->tcpf_mask)) best = nullptr;
    }
    auto it = std::lower_bound(q.masked.begin(), q.masked.end(), g,
                               [](const MRule* a, uint32_t grp) { return a->group < grp; });
    for (; it != q.masked.end() && (*it)->group == g; ++it) {
      const MRule* x = *it;
      if (best && x->prio >= best->prio) break;
      if (x->dom == dom && match(*x, pp, tn, in.port, ct_flags)) {
        best = x;
        break;
      }
    }
    if (!best) {
      if (cfg_.esw || g == 0) {  // fdb-miss / NIC Rx root: the port's queues
        q.st.to_software++;
        return kNicMiss;
      }
      q.st.miss_dropped++;  // nic-miss
      return -1;
    }
    const MRule& r = *best;
    if (r.count || r.age) {
      Counter& c = s.counters[r.id];
      c.packets.fetch_add(1, std::memory_order_relaxed);
      c.bytes.fetch_add(in.pkt_len, std::memory_order_relaxed);
      c.last_hit_ns.store(now_ns, std::memory_order_relaxed);
    }
    // The rule's actions in the hardware's order: tag, decap, counter,
    // conntrack, modify, encap, fate (kOrderRx/kOrderFdb).
    if (r.mark) {
      in.has_mark = true;
      in.mark = r.mark_id;
    }
    if (r.decap) {  // its table's pattern has a tunnel item: tn.ok
      in.data += tn.off;
      in.len -= tn.off;
      in.pkt_len -= tn.off;
      in.headroom = static_cast<uint16_t>(in.headroom + tn.off);
      pp = tn.inner;
      tn.ok = false;  // the tunnel is gone: later tables see the inner frame
    }
    const ctrack::Parsed& view = r.tunnel && !r.decap ? tn.inner : pp;
    if (r.ct >= 0 && view.ct.key.proto == IPPROTO_TCP) {
      ct_flags = ct_check(q.ct[static_cast<size_t>(r.ct)], r.ct_dir, view.ct);
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_INVALID) q.st.ct_invalid++;
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_CHANGED) q.st.ct_changed++;
    }
    if (r.nmod || r.encap_len) {
      for (uint8_t i = 0; i < r.nmod; i++) modify(in, pp, r.mod[i]);
      if (r.encap_len && !encap(in, r)) {
        q.st.dropped++;
        return -1;
      }
      q.st.rewritten++;
      if (r.fate == MRule::kJump) {  // later tables match the packet as it now is
        ctrack::parse_packet(in.data, in.len, 0, &pp);
        find_tunnel(in, pp, &tn);
      }
    }
    switch (r.fate) {
      case MRule::kOut:
        q.st.forwarded++;
        return r.out;
      case MRule::kDrop:
        q.st.dropped++;
        return -1;
      case MRule::kJump:
        g = r.jump;
        continue;
      default:
        q.st.to_software++;
        if (r.rss_types && !(rss_hash_on(r.rss_types, cfg_.dv_flow_en == 1, pp) == port_hash_on(pp)))
          q.st.rss_off_port++;
        return kNicMiss;
    }
  }
  q.st.to_software++;
  return kNicMiss;
}

}  // namespace dp
