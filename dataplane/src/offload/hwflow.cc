#include "dataplane/hwflow.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_ethdev.h>
#include <rte_tcp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "../pipeline/interp.h"
#include "features/tunnels_nic.h"

namespace dp::hw {

namespace {

uint32_t prefix_mask4(uint8_t len) { return len == 0 ? 0 : htonl(~0u << (32 - len)); }

void prefix_mask6(uint8_t len, uint8_t* out) {
  for (int i = 0; i < 16; i++) {
    int bits = std::clamp(static_cast<int>(len) - 8 * i, 0, 8);
    out[i] = static_cast<uint8_t>(0xFF00 >> bits);
  }
}

// The RSS types that make the NIC hash a packet of (family, proto) on the
// fields the port's own RSS does (rss_hf IP|TCP|UDP: addresses, and ports
// for TCP and UDP), so that it reaches the queue of the worker that owns
// it (steer.h). HWS builds one TIR per RSS action from its types alone:
// IPv4 wins over IPv6 and UDP over TCP (mlx5_flow_hw.c:183-225, 396-399),
// so IP|TCP|UDP would hash TCP without its ports and IPv6 on nothing.
uint64_t rss_types(int family, int proto) {
  const bool v4 = family == 4;
  if (proto == IPPROTO_TCP) return v4 ? RTE_ETH_RSS_NONFRAG_IPV4_TCP : RTE_ETH_RSS_NONFRAG_IPV6_TCP;
  if (proto == IPPROTO_UDP) return v4 ? RTE_ETH_RSS_NONFRAG_IPV4_UDP : RTE_ETH_RSS_NONFRAG_IPV6_UDP;
  return v4 ? RTE_ETH_RSS_IPV4 : RTE_ETH_RSS_IPV6;
}

// The queues pick what the port's redirection table does (entry i: queue
// i % queues, control/ports.cc; steer.h's owner is hash % 128 % queues):
// the driver's indirection table for n queues has the next power of two
// entries, entry i queue[i % n] (mlx5_devx.c mlx5_devx_ind_table_create_rqt_attr,
// outside the reference tree).
// Where n divides 128 the n queues alone give hash % n, the same; else the
// 128 entries themselves, as the PMD's own Rx control rules take the
// table (mlx5_flow_hw.c:6784-6788).
void rss(Flow& f, const Layout& l, uint64_t types) {
  std::array<uint16_t, Steering::kRetaSize> q{};
  const uint16_t nq = std::max<uint16_t>(l.nb_queues, 1);
  const uint32_t n = Steering::kRetaSize % nq == 0 ? nq : Steering::kRetaSize;
  for (uint16_t i = 0; i < q.size(); i++) q[i] = i % nq;
  rte_flow_action_rss r{};
  r.func = RTE_ETH_HASH_FUNCTION_TOEPLITZ;
  r.types = types;
  r.key_len = kRssKeyLen;
  r.key = f.keep(std::to_array(kSymmetricRssKey))->data();
  r.queue_num = n;
  r.queue = f.keep(q)->data();
  f.action(RTE_FLOW_ACTION_TYPE_RSS, r);
}

// NIC Rx only: to the software queues, hashed as the port's RSS would
// (rss_types). A rule for one family and TCP or UDP carries its own RSS;
// any other jumps to the RSS split group (split_flows), which sorts
// packets by type first. (In the FDB nothing is needed: a miss goes to the
// E-Switch manager, which hands the packet to the representor it came
// from, hws/mlx5dr_table.c:17-52; PORT_REPRESENTOR is not in the 22.11
// template API, mlx5_flow_hw.c:4103-4107.)
void to_software(Flow& f, const Layout& l, int family = 0, int proto = 0) {
  if ((family == 4 || family == 6) && (proto == IPPROTO_TCP || proto == IPPROTO_UDP)) rss(f, l, rss_types(family, proto));
  else f.action(RTE_FLOW_ACTION_TYPE_JUMP, rte_flow_action_jump{l.split_group()});
}

// NIC Rx: the port a packet is to leave by, as a mark (the TAG action runs
// first in the NIC Rx order, hws/mlx5dr_action.c:18-37). Nothing in the FDB,
// which has no TAG (hws/mlx5dr_action.c:55-73).
void mark_out(Flow& f, const Layout& l, size_t out) {
  if (!l.transfer) f.action(RTE_FLOW_ACTION_TYPE_MARK, rte_flow_action_mark{kMarkTag | static_cast<uint32_t>(out)});
}

// The fate that sends a packet on: FDB: the port itself; NIC Rx: software's
// queues (it carries the mark software forwards by).
void fate_out(Flow& f, const Layout& l, size_t out, int family = 0, int proto = 0) {
  if (l.transfer) f.action(RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT, rte_flow_action_ethdev{l.port_ids[out]});
  else to_software(f, l, family, proto);
}

void attr(Flow& f, const Layout& l, uint32_t group, uint32_t prio, size_t in) {
  f.attr.group = group;
  f.attr.priority = prio;
  f.attr.ingress = !l.transfer;
  f.attr.transfer = l.transfer;
  f.port_id = l.transfer ? l.proxy_port : l.port_ids[in];
  if (l.transfer) {
    f.item(RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT, rte_flow_item_ethdev{l.port_ids[in]},
           rte_flow_item_ethdev{0xFFFF});
  }
}

}  // namespace

const rte_flow_item* Flow::find_item(rte_flow_item_type t) const {
  for (const auto& i : pattern)
    if (i.type == t) return &i;
  return nullptr;
}

const rte_flow_action* Flow::find_action(rte_flow_action_type t) const {
  for (const auto& a : actions)
    if (a.type == t) return &a;
  return nullptr;
}

rte_flow_action_conntrack ct_profile(const ctrack::Event& e, uint16_t peer_port) {
  rte_flow_action_conntrack ct{};
  ct.peer_port = peer_port;
  ct.is_original_dir = 1;
  ct.enable = 1;
  ct.live_connection = 1;
  ct.selective_ack = (e.tcp[0].flags & ctrack::kTcpSackPerm) && (e.tcp[1].flags & ctrack::kTcpSackPerm);
  ct.challenge_ack_passed = 0;
  // rte_flow.h: 1 = the last packet came from the original direction. The
  // driver copies the bit into the context unchanged (mlx5_flow_aso.c:1266
  // and back at 1619), so the header's meaning is the hardware's. (testpmd's
  // example uses last_dir 0 for what looks like an original-direction ACK,
  // but its max_ack values are not a consistent state either.)
  ct.last_direction = e.last_dir == 0;
  ct.liberal_mode = ((e.tcp[0].flags | e.tcp[1].flags) & ctrack::kTcpBeLiberal) != 0;
  ct.state = RTE_FLOW_CONNTRACK_STATE_ESTABLISHED;
  ct.max_ack_window = 7;        // mlx5's and Linux's MAXACKWINDOW scale
  ct.retransmission_limit = 3;  // Linux nf_conntrack_tcp_max_retrans (3)
  for (int d = 0; d < 2; d++) {
    const ctrack::TcpDirState& s = e.tcp[d];
    rte_flow_tcp_dir_param p{};
    p.scale = (s.flags & ctrack::kTcpWindowScale) ? s.scale : 0xF;
    p.close_initiated = (s.flags & ctrack::kTcpCloseInit) != 0;
    p.last_ack_seen = 1;
    p.data_unacked = (s.flags & ctrack::kTcpDataUnacked) != 0;
    p.sent_end = s.end;
    // The right edge this side may send up to: the peer's last ack + window
    // as software saw it, or, if further, one whole window of the peer (the
    // largest it has advertised) beyond what this side sent. The context
    // starts from a snapshot, and the sender may have used window the peer
    // granted since; with too tight an edge its next segments are refused,
    // and as the context then never sees them, neither the peer's ACKs for
    // them: both directions stall until software resyncs the context.
    // Linux's own tracking never has a right edge beyond end + maxwin either.
    const ctrack::TcpDirState& peer = e.tcp[1 - d];
    uint32_t edge = s.end + peer.maxwin;
    p.reply_end = static_cast<int32_t>(edge - s.maxend) > 0 ? edge : s.maxend;
    p.max_win = s.maxwin;
    p.max_ack = s.maxack;  // the largest ACK this direction sent (see TcpDirState::maxack)
    (d == 0 ? ct.original_dir : ct.reply_dir) = p;
  }
  ct.last_window = e.last_win;
  static constexpr rte_flow_conntrack_tcp_last_index kIndex[] = {
      RTE_FLOW_CONNTRACK_FLAG_SYN, RTE_FLOW_CONNTRACK_FLAG_SYNACK, RTE_FLOW_CONNTRACK_FLAG_FIN,
      RTE_FLOW_CONNTRACK_FLAG_ACK, RTE_FLOW_CONNTRACK_FLAG_RST,    RTE_FLOW_CONNTRACK_FLAG_NONE};
  ct.last_index = e.last_index < 6 ? kIndex[e.last_index] : RTE_FLOW_CONNTRACK_FLAG_NONE;
  ct.last_seq = e.last_seq;
  ct.last_ack = e.last_ack;
  ct.last_end = e.last_end;
  return ct;
}

rte_flow_action_conntrack ct_merge(const rte_flow_action_conntrack& nic, const rte_flow_action_conntrack& sw) {
  auto later = [](uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0 ? a : b; };
  rte_flow_action_conntrack m = sw;
  const rte_flow_tcp_dir_param* n[2] = {&nic.original_dir, &nic.reply_dir};
  rte_flow_tcp_dir_param* o[2] = {&m.original_dir, &m.reply_dir};
  for (int d = 0; d < 2; d++) {
    o[d]->sent_end = later(n[d]->sent_end, o[d]->sent_end);
    o[d]->reply_end = later(n[d]->reply_end, o[d]->reply_end);
    o[d]->max_ack = later(n[d]->max_ack, o[d]->max_ack);
    o[d]->max_win = std::max(n[d]->max_win, o[d]->max_win);
  }
  for (int d = 0; d < 2; d++)  // the right edge again, from the merged values (see ct_profile)
    o[d]->reply_end = later(o[d]->reply_end, o[d]->sent_end + o[1 - d]->max_win);
  return m;
}

rte_flow_modify_conntrack ct_reply_update(const rte_flow_action_conntrack& orig) {
  rte_flow_modify_conntrack m{};
  m.new_ct = orig;
  m.new_ct.is_original_dir = 0;
  m.direction = 1;
  m.state = 0;
  return m;
}

namespace {

void set_field(Flow& f, rte_flow_field_id field, const void* v, uint32_t len) {
  rte_flow_action_modify_field x{};
  x.operation = RTE_FLOW_MODIFY_SET;
  x.dst.field = field;
  x.src.field = RTE_FLOW_FIELD_VALUE;
  memcpy(x.src.value, v, len);  // network order, as the item holds it (rte_flow.h)
  x.width = len * 8;
  f.action(RTE_FLOW_ACTION_TYPE_MODIFY_FIELD, x);
}

// MODIFY_FIELD for each field of `from` that differs in `to`.
void translate(Flow& f, const ctrack::Key& from, const ctrack::Key& to) {
  const bool tcp = from.proto == IPPROTO_TCP;
  if (memcmp(from.src, to.src, 4)) set_field(f, RTE_FLOW_FIELD_IPV4_SRC, to.src, 4);
  if (from.sport != to.sport) {
    const uint16_t p = htons(to.sport);
    set_field(f, tcp ? RTE_FLOW_FIELD_TCP_PORT_SRC : RTE_FLOW_FIELD_UDP_PORT_SRC, &p, 2);
  }
  if (memcmp(from.dst, to.dst, 4)) set_field(f, RTE_FLOW_FIELD_IPV4_DST, to.dst, 4);
  if (from.dport != to.dport) {
    const uint16_t p = htons(to.dport);
    set_field(f, tcp ? RTE_FLOW_FIELD_TCP_PORT_DST : RTE_FLOW_FIELD_UDP_PORT_DST, &p, 2);
  }
}

}  // namespace

// Actions in the hardware's order (hws/mlx5dr_action.c:18-73): tag,
// decap, counter, conntrack, modify, encap, fate.
Flow conn_flow(const Layout& l, const Conn& c, int dir, rte_flow_action_handle* ct, void* age_ctx) {
  const Conn::Dir& cd = c.dir[dir];
  ctrack::Key k = cd.nat ? cd.wire : dir == 0 ? c.orig : c.orig.reversed();
  size_t in = c.in_port[dir], out = static_cast<size_t>(c.out_port[dir]);
  Flow f;
  f.pattern.reserve(10);
  f.actions.reserve(10);
  attr(f, l, l.ct_group, 0, in);
  if (cd.vni) with_tunnel(cd.tunnel(), [&](auto t) { TunnelNic<decltype(t)>::items(f, l, cd.vni); });
  f.item(RTE_FLOW_ITEM_TYPE_ETH);
  if (k.family == 4) {
    rte_flow_item_ipv4 s{}, m{};
    memcpy(&s.hdr.src_addr, k.src, 4);
    memcpy(&s.hdr.dst_addr, k.dst, 4);
    s.hdr.next_proto_id = k.proto;
    m.hdr.src_addr = m.hdr.dst_addr = 0xFFFFFFFFu;
    m.hdr.next_proto_id = 0xFF;
    f.item(RTE_FLOW_ITEM_TYPE_IPV4, s, m);
  } else {
    rte_flow_item_ipv6 s{}, m{};
    memcpy(s.hdr.src_addr, k.src, 16);
    memcpy(s.hdr.dst_addr, k.dst, 16);
    s.hdr.proto = k.proto;
    memset(m.hdr.src_addr, 0xFF, 16);
    memset(m.hdr.dst_addr, 0xFF, 16);
    m.hdr.proto = 0xFF;
    f.item(RTE_FLOW_ITEM_TYPE_IPV6, s, m);
  }
  bool tcp = k.proto == IPPROTO_TCP;
  const bool aso = tcp && c.aso;
  if (tcp) {
    rte_flow_item_tcp s{}, m{};
    s.hdr.src_port = htons(k.sport);
    s.hdr.dst_port = htons(k.dport);
    m.hdr.src_port = m.hdr.dst_port = 0xFFFF;
    // flows: SYN, FIN and RST clear (hws/mlx5dr_definer.c:808-813 matches
    // tcp_flags); segments carrying one miss to software.
    if (!aso) m.hdr.tcp_flags = RTE_TCP_SYN_FLAG | RTE_TCP_FIN_FLAG | RTE_TCP_RST_FLAG;
    f.item(RTE_FLOW_ITEM_TYPE_TCP, s, m);
  } else {
    rte_flow_item_udp s{}, m{};
    s.hdr.src_port = htons(k.sport);
    s.hdr.dst_port = htons(k.dport);
    m.hdr.src_port = m.hdr.dst_port = 0xFFFF;
    f.item(RTE_FLOW_ITEM_TYPE_UDP, s, m);
  }
  if (!aso) mark_out(f, l, out);
  if (cd.vni) with_tunnel(cd.tunnel(), [&](auto t) { TunnelNic<decltype(t)>::decap(f); });
  f.action(RTE_FLOW_ACTION_TYPE_COUNT, rte_flow_action_count{});
  if (l.age_action) {
    rte_flow_action_age age{};
    age.timeout = l.age_s & 0xFFFFFF;
    age.context = age_ctx;
    f.action(RTE_FLOW_ACTION_TYPE_AGE, age);
  }
  if (aso) f.actions.push_back(rte_flow_action{RTE_FLOW_ACTION_TYPE_INDIRECT, ct});
  if (cd.nat) translate(f, k, cd.out);
  if (cd.encap) {
    const auto* hdr = f.keep(std::to_array(cd.hdr));
    f.action(RTE_FLOW_ACTION_TYPE_RAW_ENCAP, rte_flow_action_raw_encap{const_cast<uint8_t*>(hdr->data()), nullptr,
                                                                       cd.hdr_len});
  }
  if (aso) f.action(RTE_FLOW_ACTION_TYPE_JUMP, rte_flow_action_jump{l.verdict_group(in, out)});
  else fate_out(f, l, out, k.family, k.proto);
  f.finish();
  return f;
}

std::vector<Flow> base_flows(const Layout& l) {
  std::vector<Flow> v;
  // NIC Rx tables other than the root have no miss target: what matches no
  // rule is dropped (hws/mlx5dr_table.c:100-120), so group N and each
  // verdict group end in a catch-all to software. The FDB misses to
  // software by itself.
  if (!l.transfer) {
    // The RSS split group: each packet type to the software queues with
    // the RSS types that hash it as the port does (rss_types); more
    // specific first (the L3-only and Ethernet rules match TCP and UDP too).
    struct Split {
      int family, proto;
      uint32_t prio;
    };
    static constexpr Split kSplit[] = {{4, IPPROTO_TCP, 0}, {4, IPPROTO_UDP, 0}, {6, IPPROTO_TCP, 0},
                                       {6, IPPROTO_UDP, 0}, {4, 0, 1},           {6, 0, 1},
                                       {0, 0, 2}};
    for (size_t in = 0; in < l.nports(); in++) {
      for (const Split& sp : kSplit) {
        Flow f;
        f.what = "group " + std::to_string(l.split_group()) + " from port " + std::to_string(in) + ": software, " +
                 (sp.family ? "IPv" + std::to_string(sp.family) : std::string("other")) +
                 (sp.proto == IPPROTO_TCP ? "/TCP" : sp.proto == IPPROTO_UDP ? "/UDP" : "") + " hash";
        attr(f, l, l.split_group(), sp.prio, in);
        f.item(RTE_FLOW_ITEM_TYPE_ETH);
        // Items of the type alone (spec and mask zero).
        if (sp.family == 4) f.item(RTE_FLOW_ITEM_TYPE_IPV4, rte_flow_item_ipv4{}, rte_flow_item_ipv4{});
        if (sp.family == 6) f.item(RTE_FLOW_ITEM_TYPE_IPV6, rte_flow_item_ipv6{}, rte_flow_item_ipv6{});
        if (sp.proto == IPPROTO_TCP) f.item(RTE_FLOW_ITEM_TYPE_TCP, rte_flow_item_tcp{}, rte_flow_item_tcp{});
        if (sp.proto == IPPROTO_UDP) f.item(RTE_FLOW_ITEM_TYPE_UDP, rte_flow_item_udp{}, rte_flow_item_udp{});
        rss(f, l, sp.family ? rss_types(sp.family, sp.proto) : RTE_ETH_RSS_IP);
        f.finish();
        v.push_back(std::move(f));
      }
    }
    for (size_t in = 0; in < l.nports(); in++) {
      Flow f;
      f.what = "group " + std::to_string(l.ct_group) + " miss from port " + std::to_string(in) + ": software";
      attr(f, l, l.ct_group, 1, in);
      f.item(RTE_FLOW_ITEM_TYPE_ETH);
      to_software(f, l);
      f.finish();
      v.push_back(std::move(f));
    }
  }
  for (size_t in = 0; in < l.nports() && l.aso; in++) {
    for (size_t out = 0; out < l.nports(); out++) {
      uint32_t g = l.verdict_group(in, out);
      Flow ok;
      ok.what = "group " + std::to_string(g) + ": conntrack valid, port " + std::to_string(in) + " -> " +
                std::to_string(out);
      attr(ok, l, g, 0, in);
      const uint32_t all = RTE_FLOW_CONNTRACK_PKT_STATE_VALID | RTE_FLOW_CONNTRACK_PKT_STATE_CHANGED |
                           RTE_FLOW_CONNTRACK_PKT_STATE_INVALID | RTE_FLOW_CONNTRACK_PKT_STATE_DISABLED |
                           RTE_FLOW_CONNTRACK_PKT_STATE_BAD;
      ok.item(RTE_FLOW_ITEM_TYPE_CONNTRACK, rte_flow_item_conntrack{RTE_FLOW_CONNTRACK_PKT_STATE_VALID},
              rte_flow_item_conntrack{all});
      mark_out(ok, l, out);
      ok.action(RTE_FLOW_ACTION_TYPE_COUNT, rte_flow_action_count{});
      fate_out(ok, l, out);
      ok.finish();
      v.push_back(std::move(ok));
      if (l.transfer) continue;  // INVALID, CHANGED, BAD, DISABLED miss to software
      Flow sw;
      sw.what = "group " + std::to_string(g) + ": invalid/changed/bad: software";
      attr(sw, l, g, 1, in);
      sw.item(RTE_FLOW_ITEM_TYPE_ETH);
      to_software(sw, l);
      sw.finish();
      v.push_back(std::move(sw));
    }
  }
  return v;
}

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::kFull: return "full";
    case Tier::kJumpCt: return "jump_ct";
    case Tier::kMark: return "mark";
    case Tier::kSoftware: return "software";
  }
  return "?";
}

// ------------------------------------------------------------------ rules

namespace {

int family_of(const Match& m) {
  if (m.has(kMEthType)) {
    if (m.eth_type == kEthIpv4) return 4;
    if (m.eth_type == kEthIpv6 || m.eth_type == kEthNd) return 6;
    return -1;  // ARP or another ethertype: no IP
  }
  if (m.family) return m.family;
  return 0;  // either
}

bool prefixes_disjoint(const uint8_t* a, uint8_t alen, const uint8_t* b, uint8_t blen) {
  int n = std::min(alen, blen);
  for (int i = 0; i < n; i++) {
    int bit = 7 - (i % 8);
    if (((a[i / 8] >> bit) & 1) != ((b[i / 8] >> bit) & 1)) return true;
  }
  return false;
}

bool ranges_disjoint(uint16_t alo, uint16_t ahi, uint16_t blo, uint16_t bhi) { return ahi < blo || bhi < alo; }

const char* field_name(uint32_t bit) {
  switch (bit) {
    case kMInPort: return "in_port";
    case kMEthType: return "eth_type";
    case kMVlan: return "vlan";
    case kMSrc: return "ip_src";
    case kMDst: return "ip_dst";
    case kMProto: return "ip_proto";
    case kMTpSrc: return "tp_src";
    case kMTpDst: return "tp_dst";
    case kMTcpFlags: return "tcp_flags";
    case kMCtState: return "ct_state";
    case kMCtZone: return "ct_zone";
    case kMTunId: return "tun_id";
  }
  return "?";
}

// Builds the pattern of `m` for one ingress port and one IP family (0: no IP
// item). Returns the fields it consumed.
uint32_t build_pattern(Flow& f, const Match& m, int family) {
  uint32_t used = kMInPort;  // expressed by the flow's port (or REPRESENTED_PORT item)
  rte_flow_item_eth es{}, em{};
  uint16_t type = 0;
  if (m.has(kMEthType) && m.eth_type != kEthNd) type = m.eth_type;
  else if (family == 4) type = kEthIpv4;
  else if (family == 6) type = kEthIpv6;
  if (m.has(kMEthType) && m.eth_type != kEthNd) used |= kMEthType;
  if (m.has(kMVlan)) {
    es.has_vlan = em.has_vlan = 1;
    f.item(RTE_FLOW_ITEM_TYPE_ETH, es, em);
    rte_flow_item_vlan vs{}, vm{};
    vs.hdr.vlan_tci = htons(m.vlan);
    vm.hdr.vlan_tci = htons(0x0FFF);
    if (type) {
      vs.hdr.eth_proto = htons(type);
      vm.hdr.eth_proto = 0xFFFF;
    }
    f.item(RTE_FLOW_ITEM_TYPE_VLAN, vs, vm);
    used |= kMVlan;
  } else if (type) {
    es.hdr.ether_type = htons(type);
    em.hdr.ether_type = 0xFFFF;
    f.item(RTE_FLOW_ITEM_TYPE_ETH, es, em);
  } else {
    f.item(RTE_FLOW_ITEM_TYPE_ETH);
  }
  if (family == 4) {
    rte_flow_item_ipv4 s{}, k{};
    if (m.has(kMSrc) && m.family == 4) {
      memcpy(&s.hdr.src_addr, m.src, 4);
      k.hdr.src_addr = prefix_mask4(m.src_len);
      s.hdr.src_addr &= k.hdr.src_addr;
      used |= kMSrc;
    }
    if (m.has(kMDst) && m.family == 4) {
      memcpy(&s.hdr.dst_addr, m.dst, 4);
      k.hdr.dst_addr = prefix_mask4(m.dst_len);
      s.hdr.dst_addr &= k.hdr.dst_addr;
      used |= kMDst;
    }
    if (m.has(kMProto)) {
      s.hdr.next_proto_id = m.proto;
      k.hdr.next_proto_id = 0xFF;
      used |= kMProto;
    }
    f.item(RTE_FLOW_ITEM_TYPE_IPV4, s, k);
  } else if (family == 6) {
    rte_flow_item_ipv6 s{}, k{};
    if (m.has(kMSrc) && m.family == 6) {
      prefix_mask6(m.src_len, k.hdr.src_addr);
      for (int i = 0; i < 16; i++) s.hdr.src_addr[i] = m.src[i] & k.hdr.src_addr[i];
      used |= kMSrc;
    }
    if (m.has(kMDst) && m.family == 6) {
      prefix_mask6(m.dst_len, k.hdr.dst_addr);
      for (int i = 0; i < 16; i++) s.hdr.dst_addr[i] = m.dst[i] & k.hdr.dst_addr[i];
      used |= kMDst;
    }
    if (m.has(kMProto)) {
      s.hdr.proto = m.proto;
      k.hdr.proto = 0xFF;
      used |= kMProto;
    }
    f.item(RTE_FLOW_ITEM_TYPE_IPV6, s, k);
  }
  if (!family || !m.has(kMProto)) return used;
  auto ports = [&](auto& s, auto& k) {
    if (m.has(kMTpSrc) && m.tp_src_lo == m.tp_src_hi) {
      s.hdr.src_port = htons(m.tp_src_lo);
      k.hdr.src_port = 0xFFFF;
      used |= kMTpSrc;
    }
    if (m.has(kMTpDst) && m.tp_dst_lo == m.tp_dst_hi) {
      s.hdr.dst_port = htons(m.tp_dst_lo);
      k.hdr.dst_port = 0xFFFF;
      used |= kMTpDst;
    }
  };
  if (m.proto == IPPROTO_TCP) {
    rte_flow_item_tcp s{}, k{};
    ports(s, k);
    if (m.has(kMTcpFlags)) {
      s.hdr.tcp_flags = m.tcp_flags;
      k.hdr.tcp_flags = m.tcp_flags_mask;
      used |= kMTcpFlags;
    }
    f.item(RTE_FLOW_ITEM_TYPE_TCP, s, k);
  } else if (m.proto == IPPROTO_UDP) {
    rte_flow_item_udp s{}, k{};
    ports(s, k);
    f.item(RTE_FLOW_ITEM_TYPE_UDP, s, k);
  }
  return used;
}

// A table-0 rule's actions through the rules' one action walk
// (pipeline/interp.h), asking what a rule flow may do of them. This is not
// the per-packet question trace_established answers for a connection (its
// path through all tables, with its tuple known): a rule flow exists before
// any connection, so NAT and encap, which a connection's flow carries, are
// refused here (rule_action_refuse), and the walk stops at the first table.
struct RuleOffload {
  const Action* term = nullptr;  // the first action that is not count/set_mark
  bool side = false;             // set_mark before it: software-visible metadata
  const char* why = nullptr;     // the first action a rule flow may not do
  void note(const Action& a) {
    if (!why) why = rule_action_refuse(a);
  }
  void set_mark(const Action& a) {
    if (!term) side = true;
    note(a);
  }
  bool encap(const Action& a) {
    note(a);
    return true;  // on: every action is asked
  }
  Step ct(const Action& a, uint32_t) {
    note(a);
    terminal(a);
    return Step::kNext;  // on: the actions after a ct() are asked too
  }
  void output(const Action& a) { terminal(a); }
  void drop(const Action& a) { terminal(a); }
  void go(const Action& a) { terminal(a); }
  void terminal(const Action& a) {
    if (!term) term = &a;
  }
};

// Tunnels: software decapsulates frames to this host's VTEPs before its
// tables; in the NIC a rule meets them with their outer headers. A tun_id
// rule matches them as VXLAN or Geneve (the outer headers, then the inner
// frame); any other rule that may see an underlay port stays in software,
// as does every rule that may see a tunnel only software decapsulates
// (soft_decap). Why `m` stays in software for them, or empty.
std::string refuse_tunnels(const Layout& l, const Match& m) {
  bool any = false;             // a tunnel the NIC decapsulates
  std::string parser;           // the first on a UDP port the NIC's parser does not take
  const char* seen = nullptr;   // the first whose underlay port the rule may see
  size_t seen_port = 0;
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    using N = TunnelNic<T>;
    if (!N::on(l)) return;
    any = true;
    if (parser.empty() && N::udp_port(l) != N::kParserPort)
      parser = std::string("tun_id: ") + T::kDisplay + " on UDP port " + std::to_string(N::udp_port(l)) +
               " (the NIC's parser takes " + std::to_string(N::kParserPort) + ")";
    if (!seen && (!m.has(kMInPort) || m.in_port == N::underlay(l))) {
      seen = T::kDisplay;
      seen_port = N::underlay(l);
    }
  });
  if (m.has(kMTunId)) {
    if (!any) {
      if (l.soft_decap.empty()) return "tun_id: no overlay.vxlan (no VTEP to match)";
    } else if (!parser.empty()) {
      return parser;
    } else if (!seen) {
      return "tun_id on a port other than the tunnels' underlay ports: matches nothing";
    }
  } else if (seen) {
    return std::string("may match ") + seen + " frames to this host's VTEP on port " + std::to_string(seen_port) +
           ", which software decapsulates first (in the NIC it would meet their outer headers)";
  }
  for (const Layout::SoftDecap& sd : l.soft_decap) {
    if (m.has(kMTunId)) return std::string("tun_id: ") + sd.why;
    if (!m.has(kMInPort) || m.in_port == sd.port)
      return std::string(sd.why) + ": may match its frames on port " + std::to_string(sd.port) +
             ", which software decapsulates first";
  }
  return "";
}

// Why `m` cannot be expressed, or empty.
std::string refuse_match(const Match& m) {
  if (m.has(kMCtState)) return "ct_state: only software conntrack sets it";
  if (m.has(kMCtZone)) return "ct_zone: only software conntrack sets it";
  if (m.has(kMEthType) && m.eth_type == kEthNd) return "eth_type=nd: neighbour discovery is five ICMPv6 types";
  if (m.has(kMTpSrc) && m.tp_src_lo != m.tp_src_hi && !(m.tp_src_lo == 0 && m.tp_src_hi == 0xFFFF))
    return "tp_src range: mlx5 matches exact ports only";
  if (m.has(kMTpDst) && m.tp_dst_lo != m.tp_dst_hi && !(m.tp_dst_lo == 0 && m.tp_dst_hi == 0xFFFF))
    return "tp_dst range: mlx5 matches exact ports only";
  if (m.has(kMSrc) && m.has(kMDst) && m.family == 6 && (m.has(kMTpSrc) || m.has(kMTpDst)))
    return "IPv6 addresses and ports: no IPv6 5-tuple definer in mlx5 HWS 22.11 (mlx5.rst:163)";
  return "";
}

}  // namespace

bool may_overlap(const Match& a, const Match& b) {
  if (a.has(kMInPort) && b.has(kMInPort) && a.in_port != b.in_port) return false;
  if (a.has(kMEthType) && b.has(kMEthType) && a.eth_type != b.eth_type) {
    // ND is a subset of IPv6; everything else differs by ethertype.
    bool nd6 = (a.eth_type == kEthNd && b.eth_type == kEthIpv6) || (b.eth_type == kEthNd && a.eth_type == kEthIpv6);
    if (!nd6) return false;
  }
  int fa = family_of(a), fb = family_of(b);
  auto ip = [](const Match& m, int f) {
    return f > 0 || m.has(kMSrc) || m.has(kMDst) || m.has(kMProto) || m.has(kMTpSrc) || m.has(kMTpDst) ||
           m.has(kMTcpFlags);
  };
  if ((fa == -1 && ip(b, fb)) || (fb == -1 && ip(a, fa))) return false;
  if (fa > 0 && fb > 0 && fa != fb) return false;
  if (a.has(kMVlan) && b.has(kMVlan) && a.vlan != b.vlan) return false;
  if (a.has(kMProto) && b.has(kMProto) && a.proto != b.proto) return false;
  if (a.has(kMSrc) && b.has(kMSrc) && a.family == b.family && prefixes_disjoint(a.src, a.src_len, b.src, b.src_len))
    return false;
  if (a.has(kMDst) && b.has(kMDst) && a.family == b.family && prefixes_disjoint(a.dst, a.dst_len, b.dst, b.dst_len))
    return false;
  if (a.has(kMTpSrc) && b.has(kMTpSrc) && ranges_disjoint(a.tp_src_lo, a.tp_src_hi, b.tp_src_lo, b.tp_src_hi))
    return false;
  if (a.has(kMTpDst) && b.has(kMTpDst) && ranges_disjoint(a.tp_dst_lo, a.tp_dst_hi, b.tp_dst_lo, b.tp_dst_hi))
    return false;
  if (a.has(kMCtZone) && b.has(kMCtZone) && a.ct_zone != b.ct_zone) return false;
  if (a.has(kMTunId) && b.has(kMTunId) && a.tun_id != b.tun_id) return false;
  return true;
}

std::vector<RuleFlows> translate_rules(const Layout& l, const std::vector<Rule>& rules) {
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < rules.size(); i++)
    if (rules[i].table == 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return rules[a].priority > rules[b].priority; });
  std::vector<RuleFlows> out;
  std::vector<uint32_t> soft;  // rules (indices) that stay in software so far
  // A NIC rule's priority is its rank among the rules that go to the NIC
  // (the ones left in software need none). NIC Rx group 0 is the root table,
  // whose lowest priorities hold the PMD's own Rx control rules
  // (MLX5_HW_CTRL_RX_PRIO_L4..L2 = 13..15, mlx5_flow_hw.c:41-50): a rule
  // ranked there would tie with or fall below them. (The FDB's group 0 is
  // table 1, not root, with fdb_def_rule_en.)
  constexpr uint32_t kRootPrioFree = 13;
  uint32_t hw_rank = 0;
  for (size_t rank = 0; rank < order.size(); rank++) {
    const Rule& r = rules[order[rank]];
    RuleFlows rf;
    rf.rule_id = r.id;
    const Match& m = r.match;
    std::string why = refuse_match(m);
    if (why.empty()) why = refuse_tunnels(l, m);
    // What the actions need.
    Tier tier = Tier::kFull;
    RuleOffload ro;
    run_actions(r.actions.data(), static_cast<uint32_t>(r.actions.size()), 0, ro);
    if (why.empty() && ro.why) why = ro.why;
    const Action* term = ro.term;
    const bool side = ro.side;
    if (!term) why = why.empty() ? "no terminal action" : why;
    else if (term->type == ActType::kCt) tier = side ? Tier::kMark : Tier::kJumpCt;
    else if (term->type == ActType::kGotoTable) tier = Tier::kMark;
    else if (term->type == ActType::kOutput && (side || !l.transfer)) tier = Tier::kMark;
    // A tun_id rule that decides here: each tunnel the NIC decapsulates
    // may know a frame it would take wrongly (its hook's refuse_tun_id).
    if (why.empty() && m.has(kMTunId) && tier != Tier::kJumpCt)
      for_each_tunnel([&](auto t) {
        using N = TunnelNic<decltype(t)>;
        if (why.empty() && N::on(l)) why = N::refuse_tun_id(l, m.tun_id);
      });
    if (why.empty() && tier == Tier::kMark && l.transfer)
      why = "needs a mark for software: the FDB has no TAG action (hws/mlx5dr_action.c:55-73)";
    if (why.empty() && tier == Tier::kMark && r.id >= kMaxMarkedRule)
      why = "rule id too large for a 24-bit mark";
    if (why.empty()) {
      for (uint32_t s : soft) {
        if (may_overlap(rules[s].match, m)) {
          why = "may match packets of rule " + std::to_string(rules[s].id) + ", which stays in software";
          break;
        }
      }
    }
    if (why.empty() && !l.transfer && hw_rank >= kRootPrioFree)
      why = "root table priority " + std::to_string(hw_rank) +
            ": the PMD's Rx control rules hold root priorities 13-15 (mlx5_flow_hw.c:41-50)";
    if (why.empty()) {
      int fam = family_of(m);
      bool l3 = m.has(kMSrc) || m.has(kMDst) || m.has(kMProto) || m.has(kMTpSrc) || m.has(kMTpDst) ||
                m.has(kMTcpFlags);
      std::vector<int> fams;
      if (fam > 0) fams = {fam};
      else if (fam == 0 && l3) fams = {4, 6};
      else fams = {0};
      for (size_t in = 0; in < l.nports() && why.empty(); in++) {
        if (m.has(kMInPort) && m.in_port != in) continue;
        // tun_id: a flow per tunnel the NIC decapsulates on this port.
        std::vector<void (*)(Flow&, const Layout&, uint32_t)> tuns = {nullptr};
        if (m.has(kMTunId)) {
          tuns.clear();
          for_each_tunnel([&](auto t) {
            using N = TunnelNic<decltype(t)>;
            if (N::on(l) && in == N::underlay(l)) tuns.push_back(N::items);
          });
        }
        for (auto tun : tuns)
        for (int fy : fams) {
          Flow f;
          f.what = "rule " + std::to_string(r.id) + " (" + tier_name(tier) + ")";
          attr(f, l, 0, hw_rank, in);
          if (tun) tun(f, l, m.tun_id);
          uint32_t used = build_pattern(f, m, fy) | (m.has(kMTunId) ? kMTunId : 0u);
          if (uint32_t left = m.fields & ~used) {
            why = std::string(field_name(left & (~left + 1))) + ": not expressible in this pattern";
            break;
          }
          // Group 0 is the root table in the NIC Rx domain, where COUNT is
          // refused (mlx5_flow_hw.c:1606-1617); transfer group 0 is table 1.
          if (tier == Tier::kMark) f.action(RTE_FLOW_ACTION_TYPE_MARK, rte_flow_action_mark{kRuleMarkTag | r.id});
          if (l.transfer) f.action(RTE_FLOW_ACTION_TYPE_COUNT, rte_flow_action_count{});
          const int proto = m.has(kMProto) ? m.proto : 0;
          switch (tier) {
            case Tier::kFull:
              if (term->type == ActType::kDrop) f.action(RTE_FLOW_ACTION_TYPE_DROP);
              else fate_out(f, l, term->port, fy, proto);
              break;
            case Tier::kJumpCt:
              f.action(RTE_FLOW_ACTION_TYPE_JUMP, rte_flow_action_jump{l.ct_group});
              break;
            case Tier::kMark:
            case Tier::kSoftware:
              to_software(f, l, fy, proto);
              break;
          }
          f.finish();
          rf.flows.push_back(std::move(f));
        }
      }
    }
    if (!why.empty()) {
      rf.tier = Tier::kSoftware;
      rf.why = why;
      rf.flows.clear();
      soft.push_back(order[rank]);
    } else {
      rf.tier = tier;
      hw_rank++;
    }
    out.push_back(std::move(rf));
  }
  return out;
}

}  // namespace dp::hw
