// Internal to the dataplane library: the one interpreter of the rules.
//
// Three things read the compiled rules: the burst executor (Datapath::run,
// per packet), the narration of `dataplane-ctl trace` (Pipeline::explain)
// and the offload's question "may the NIC do this connection's path alone"
// (Pipeline::trace_established). They share here
//   - the classifier key a packet is looked up with (fill_acl_key, and
//     what a ct() changes in it: set_acl_tuple, set_acl_ct),
//   - the lookup of non-IP packets (match_other) and of one packet
//     (classify_one),
//   - the action walk (run_actions / after_ct): one switch over a rule's
//     actions that calls a policy's hooks, and
//   - for the two that take one packet at a time, the table walk
//     (Interp::walk).
// A policy is a plain struct whose hooks the compiler inlines (a template
// parameter, no virtual call): the executor's hooks write the verdict and
// queue the packet at a ct() for the burst's batched conntrack; the
// narrator's write lines; the offload decision's refuse.
//
// hw::translate_rules (offload/hwflow.cc) answers a different question, per
// table-0 rule rather than per packet (a rule flow, before any connection
// exists); it walks a rule's actions with run_actions too, and takes the
// action-by-action answer from rule_action_refuse below.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_acl.h>

#include <cstring>

#include "features/tables/acl.h"
#include "dataplane/match.h"
#include "dataplane/pipeline.h"
#include "features/tunnels.h"

namespace dp {

// ------------------------------------------------------------ classifier key

// The classifier's view of a packet (network byte order): its tuple, the
// port and VLAN it came in on, its TCP flags (TCP only), the VNI it was
// decapsulated with; no ct state or zone yet.
template <typename K>
inline void fill_acl_key(K& k, const ctrack::Key& key, uint8_t tcp_flags, uint16_t in_port, uint16_t vlan,
                         uint32_t tun_id) {
  k.proto = key.proto;
  k.pad[0] = k.pad[1] = k.pad[2] = 0;
  memcpy(k.src, key.src, sizeof k.src);
  memcpy(k.dst, key.dst, sizeof k.dst);
  k.sport = htons(key.sport);
  k.dport = htons(key.dport);
  k.in_port = htons(in_port);
  k.vlan = htons(vlan);
  k.tcp_flags = key.proto == IPPROTO_TCP ? tcp_flags : 0;
  k.ct_state = 0;
  k.zone = 0;
  k.tun_id = htonl(tun_id);
}

// A translated connection's packet: later tables match the tuple it leaves with.
template <typename K>
inline void set_acl_tuple(K& k, const ctrack::Key& to) {
  memcpy(k.src, to.src, sizeof k.src);
  memcpy(k.dst, to.dst, sizeof k.dst);
  k.sport = htons(to.sport);
  k.dport = htons(to.dport);
}

// After a ct(): later tables match its state and zone.
template <typename K>
inline void set_acl_ct(K& k, uint8_t state, uint16_t zone) {
  k.ct_state = state;
  k.zone = htons(zone);
}

// A packet as the tables see it: an IPv4 or IPv6 key for rte_acl, or (kind
// 0: ARP, ND, other ethertypes) the few fields the linear scan reads.
struct ClassKey {
  union {
    AclKey4 k4;
    AclKey6 k6;
  };
  uint8_t kind;          // 4, 6, or 0 for other
  uint16_t other_type;   // kind 0: the ethertype (kEthNd for ND)

  // From a parsed packet (the executor and the narration: one fill).
  void fill(const ctrack::Parsed& pp, uint16_t in_port, uint32_t tun_id) {
    if (pp.kind == ctrack::L3Kind::kIp) {
      kind = pp.ct.key.family;
      if (kind == 4) fill_acl_key(k4, pp.ct.key, pp.ct.tcp_flags, in_port, pp.vlan, tun_id);
      else fill_acl_key(k6, pp.ct.key, pp.ct.tcp_flags, in_port, pp.vlan, tun_id);
    } else {
      kind = 0;
      other_type = pp.kind == ctrack::L3Kind::kNd ? kEthNd : pp.ethertype;
    }
  }
  void tuple(const ctrack::Key& to) {
    if (kind == 4) set_acl_tuple(k4, to);
    else if (kind == 6) set_acl_tuple(k6, to);
  }
  void ct(uint8_t state, uint16_t zone) {
    if (kind == 4) set_acl_ct(k4, state, zone);
    else if (kind == 6) set_acl_ct(k6, state, zone);
  }
  uint8_t proto() const { return kind == 4 ? k4.proto : k6.proto; }
  const uint8_t* bytes() const {
    return kind == 4 ? reinterpret_cast<const uint8_t*>(&k4) : reinterpret_cast<const uint8_t*>(&k6);
  }
};

// The linear scan of a table's non-IP rules: rule index + 1, 0 none.
inline uint32_t match_other(const Pipeline::Table& tbl, uint16_t in_port, uint16_t other_type, uint16_t vlan,
                            uint32_t tun_id) {
  for (const OtherRule& o : tbl.other) {
    const Match& m = o.m;
    if (m.has(kMInPort) && m.in_port != in_port) continue;
    if (m.has(kMEthType) && m.eth_type != other_type) continue;
    if (m.has(kMVlan) && m.vlan != vlan) continue;
    if (m.has(kMTunId) && m.tun_id != tun_id) continue;
    return o.rule + 1;
  }
  return 0;
}

// The rte_acl context a key is looked up in (null: no rule of its class).
inline rte_acl_ctx* acl_ctx(const Pipeline::Table& tbl, const ClassKey& k) {
  return k.kind == 4 ? tbl.v4[proto_class(k.k4.proto)] : tbl.v6[proto_class(k.k6.proto)];
}

// ------------------------------------------------------------ action walk

// How a walk over a rule's actions ended.
enum class Step : uint8_t {
  kNext,    // (a ct() hook: go on with the next action)
  kWait,    // at a ct(): the executor runs conntrack for the burst, then after_ct()
  kOutput,
  kDrop,
  kGoto,    // to the table the policy's go() was given
  kStop,    // the policy stopped (refused, or a ct() it narrates as a drop)
  kEnd,     // no terminal action (check_rule refuses such rules)
};

// A rule's actions from `from` on, through policy P's hooks:
//   set_mark(a), encap(a) -> bool (false: stop), ct(a, index) -> Step (kNext
//   goes on; a ct(table=T) then jumps), output(a), drop(a), go(a) (to
//   a.table: goto_table or ct(table=T)).
template <typename P>
inline Step run_actions(const Action* acts, uint32_t count, uint32_t from, P& p) {
  for (uint32_t a = from; a < count; a++) {
    const Action& act = acts[a];
    switch (act.type) {
      case ActType::kCount:
        break;  // every rule counts its hits; `count` documents intent in listings
      case ActType::kSetMark:
        p.set_mark(act);
        break;
      case ActType::kEncap:
        if (!p.encap(act)) return Step::kStop;
        break;
      case ActType::kCt: {
        const Step s = p.ct(act, a);
        if (s != Step::kNext) return s;
        if (act.table >= 0) {
          p.go(act);
          return Step::kGoto;
        }
        break;
      }
      case ActType::kOutput:
        p.output(act);
        return Step::kOutput;
      case ActType::kDrop:
        p.drop(act);
        return Step::kDrop;
      case ActType::kGotoTable:
        p.go(act);
        return Step::kGoto;
    }
  }
  return Step::kEnd;
}

// The executor's resumption after the burst's conntrack ran the ct() at
// `at`: what run_actions does after a ct() hook says kNext.
template <typename P>
inline Step after_ct(const Action* acts, uint32_t count, uint32_t at, P& p) {
  if (acts[at].table >= 0) {
    p.go(acts[at]);
    return Step::kGoto;
  }
  return run_actions(acts, count, at + 1, p);
}

// ------------------------------------------------------------ offloadability

// What a NIC may do of one action, asked of a table-0 rule's flow
// (hw::translate_rules): null if it may, else why not. A connection's flow
// (trace_established) may encap and translate: the connection's tuple is
// known there; a rule's flow, before any connection, cannot.
inline const char* rule_action_refuse(const Action& a) {
  if (a.type == ActType::kEncap) {
    const char* why = nullptr;
    with_tunnel(static_cast<TunnelKind>(a.tunnel), [&](auto t) { why = decltype(t)::kRuleEncapRefuse; });
    return why;
  }
  if (a.type == ActType::kCt && a.nat.kind != ctrack::NatKind::kNone) return "ct(nat): NAT runs in software";
  return nullptr;
}

// ------------------------------------------------------------ table walk

// The walk of one packet through the tables, for the policies that take
// one packet at a time (the narration, the offload decision); the executor
// walks a burst table by table with the same pieces (run.cc). Pipeline
// befriends it. P adds to the action hooks:
//   no_table(t) (no rules there), table(t, flags_table) -> bool (false:
//   stop), no_match(t), rule(t, index) -> bool, no_terminal(); and the
//   packet's `key` (ClassKey, which its ct() hook updates) and the non-IP
//   scan's in_port, vlan, tun_id.
struct Interp {
  static uint32_t classify_one(const Pipeline::Table& tbl, const ClassKey& k, uint16_t in_port, uint16_t vlan,
                               uint32_t tun_id) {
    if (k.kind == 0) return match_other(tbl, in_port, k.other_type, vlan, tun_id);
    rte_acl_ctx* ctx = acl_ctx(tbl, k);
    const uint8_t* d = k.bytes();
    uint32_t res = 0;
    if (!ctx || rte_acl_classify(ctx, &d, &res, 1, 1) != 0) return 0;
    return res;
  }

  template <typename P>
  static void walk(const Pipeline& pl, P& p) {
    int t = 0;
    for (int hops = 0; hops < 64; hops++) {
      const Pipeline::Table* tbl = t <= pl.max_table_ ? pl.tables_[static_cast<size_t>(t)].get() : nullptr;
      if (!tbl) {
        p.no_table(t);
        return;
      }
      if (!p.table(t, (pl.tcp_flag_tables_ >> t) & 1)) return;
      const uint32_t res = classify_one(*tbl, p.key, p.in_port, p.vlan, p.tun_id);
      if (res == 0) {
        p.no_match(t);
        return;
      }
      const CompiledRule& r = pl.crules_[res - 1];
      if (!p.rule(t, res - 1)) return;
      p.next = -1;
      const Step s = run_actions(pl.acts_.data() + r.first, r.count, 0, p);
      if (s == Step::kEnd) p.no_terminal();
      if (s != Step::kGoto) return;
      t = p.next;
    }
  }
};

}  // namespace dp
