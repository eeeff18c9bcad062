// Control path: compiling rules into the pipeline's classifiers (rte_acl per
// table and protocol class), the offload's and `trace`'s walks through them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_acl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>

#include "features/conntrack/narrate.h"
#include "features/overlay/narrate.h"
#include "features/ports/narrate.h"
#include "features/tables/acl.h"
#include "features/tables/narrate.h"
#include "interp.h"
#include "dataplane/pipeline.h"
#include "dataplane/rules.h"
#include "features/tunnels.h"
#include "net/headers.h"

namespace dp {

namespace {
std::atomic<const char*> g_acl_classifier{"none (no table built)"};
}  // namespace

const char* acl_classifier() { return g_acl_classifier.load(std::memory_order_relaxed); }


namespace {

enum F4 { F4_PROTO, F4_SRC, F4_DST, F4_SPORT, F4_DPORT, F4_INPORT, F4_VLAN, F4_TCPF, F4_CT, F4_ZONE, F4_TUN, F4_NUM };
enum F6 {
  F6_PROTO,
  F6_SRC0, F6_SRC1, F6_SRC2, F6_SRC3,
  F6_DST0, F6_DST1, F6_DST2, F6_DST3,
  F6_SPORT, F6_DPORT, F6_INPORT, F6_VLAN, F6_TCPF, F6_CT, F6_ZONE, F6_TUN, F6_NUM
};

RTE_ACL_RULE_DEF(Acl4Rule, F4_NUM);
RTE_ACL_RULE_DEF(Acl6Rule, F6_NUM);

rte_acl_field_def fdef(uint8_t type, uint8_t size, uint8_t field, uint8_t input, uint32_t off) {
  rte_acl_field_def d{};
  d.type = type;
  d.size = size;
  d.field_index = field;
  d.input_index = input;
  d.offset = off;
  return d;
}

void defs4(rte_acl_config* c) {
  c->num_fields = F4_NUM;
  c->defs[F4_PROTO] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F4_PROTO, 0, offsetof(AclKey4, proto));
  c->defs[F4_SRC] = fdef(RTE_ACL_FIELD_TYPE_MASK, 4, F4_SRC, 1, offsetof(AclKey4, src));
  c->defs[F4_DST] = fdef(RTE_ACL_FIELD_TYPE_MASK, 4, F4_DST, 2, offsetof(AclKey4, dst));
  c->defs[F4_SPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F4_SPORT, 3, offsetof(AclKey4, sport));
  c->defs[F4_DPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F4_DPORT, 3, offsetof(AclKey4, dport));
  c->defs[F4_INPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F4_INPORT, 4, offsetof(AclKey4, in_port));
  c->defs[F4_VLAN] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F4_VLAN, 4, offsetof(AclKey4, vlan));
  c->defs[F4_TCPF] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F4_TCPF, 5, offsetof(AclKey4, tcp_flags));
  c->defs[F4_CT] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F4_CT, 5, offsetof(AclKey4, ct_state));
  c->defs[F4_ZONE] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F4_ZONE, 5, offsetof(AclKey4, zone));
  c->defs[F4_TUN] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 4, F4_TUN, 6, offsetof(AclKey4, tun_id));
}

void defs6(rte_acl_config* c) {
  c->num_fields = F6_NUM;
  c->defs[F6_PROTO] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F6_PROTO, 0, offsetof(AclKey6, proto));
  for (int i = 0; i < 4; i++) {
    c->defs[F6_SRC0 + i] =
        fdef(RTE_ACL_FIELD_TYPE_MASK, 4, static_cast<uint8_t>(F6_SRC0 + i), static_cast<uint8_t>(1 + i),
             static_cast<uint32_t>(offsetof(AclKey6, src) + 4 * i));
    c->defs[F6_DST0 + i] =
        fdef(RTE_ACL_FIELD_TYPE_MASK, 4, static_cast<uint8_t>(F6_DST0 + i), static_cast<uint8_t>(5 + i),
             static_cast<uint32_t>(offsetof(AclKey6, dst) + 4 * i));
  }
  c->defs[F6_SPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F6_SPORT, 9, offsetof(AclKey6, sport));
  c->defs[F6_DPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F6_DPORT, 9, offsetof(AclKey6, dport));
  c->defs[F6_INPORT] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F6_INPORT, 10, offsetof(AclKey6, in_port));
  c->defs[F6_VLAN] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F6_VLAN, 10, offsetof(AclKey6, vlan));
  c->defs[F6_TCPF] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F6_TCPF, 11, offsetof(AclKey6, tcp_flags));
  c->defs[F6_CT] = fdef(RTE_ACL_FIELD_TYPE_BITMASK, 1, F6_CT, 11, offsetof(AclKey6, ct_state));
  c->defs[F6_ZONE] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 2, F6_ZONE, 11, offsetof(AclKey6, zone));
  c->defs[F6_TUN] = fdef(RTE_ACL_FIELD_TYPE_RANGE, 4, F6_TUN, 12, offsetof(AclKey6, tun_id));
}

void set_range16(rte_acl_field& f, bool has, uint16_t lo, uint16_t hi) {
  f.value.u16 = has ? lo : 0;
  f.mask_range.u16 = has ? hi : 0xFFFF;
}

template <typename R>
void common_fields(R& r, const Match& m, int proto, int sport, int dport, int inport, int vlan, int tcpf, int ct,
                   int zone, int tun) {
  r.field[proto].value.u8 = m.has(kMProto) ? m.proto : 0;
  r.field[proto].mask_range.u8 = m.has(kMProto) ? 0xFF : 0;
  set_range16(r.field[sport], m.has(kMTpSrc), m.tp_src_lo, m.tp_src_hi);
  set_range16(r.field[dport], m.has(kMTpDst), m.tp_dst_lo, m.tp_dst_hi);
  set_range16(r.field[inport], m.has(kMInPort), m.in_port, m.in_port);
  set_range16(r.field[vlan], m.has(kMVlan), m.vlan, m.vlan);
  r.field[tcpf].value.u8 = m.tcp_flags;
  r.field[tcpf].mask_range.u8 = m.tcp_flags_mask;
  r.field[ct].value.u8 = m.ct_state;
  r.field[ct].mask_range.u8 = m.ct_state_mask;
  set_range16(r.field[zone], m.has(kMCtZone), m.ct_zone, m.ct_zone);
  r.field[tun].value.u32 = m.has(kMTunId) ? m.tun_id : 0;
  r.field[tun].mask_range.u32 = m.has(kMTunId) ? m.tun_id : 0xFFFFFFFF;
}

uint32_t word(const uint8_t* a, int i) {
  return static_cast<uint32_t>(a[4 * i]) << 24 | static_cast<uint32_t>(a[4 * i + 1]) << 16 |
         static_cast<uint32_t>(a[4 * i + 2]) << 8 | a[4 * i + 3];
}

uint32_t word_len(int len, int i) { return static_cast<uint32_t>(std::clamp(len - 32 * i, 0, 32)); }

std::atomic<uint64_t> g_acl_gen{0};

}  // namespace

bool rule_in_class(const Match& m, int c) { return !m.has(kMProto) || proto_class(m.proto) == c; }

Pipeline::~Pipeline() = default;

RuleCounters Pipeline::counters(size_t r) const {
  RuleCounters c;
  for (unsigned w = 0; w < workers_; w++) {
    const RuleCounters& x = counters_[w * rules_.size() + r];
    c.packets += __atomic_load_n(&x.packets, __ATOMIC_RELAXED);
    c.bytes += __atomic_load_n(&x.bytes, __ATOMIC_RELAXED);
  }
  return c;
}

namespace {

// encap(<tunnel>,...)'s outer headers, from the tunnel's module, all but
// the per-packet fields (IPv4 total length and checksum, UDP length and
// source port); null when the overlay does not configure its VNI or remote.
Status make_encap(const OverlayConfig* ov, const Action& a, uint32_t rule_id, Pipeline::Encap* e) {
  Status st = Status::error("rule " + std::to_string(rule_id) + ": encap(" +
                            tunnel_kind_name(static_cast<TunnelKind>(a.tunnel)) +
                            ") names a VNI or remote overlay." + tunnel_kind_name(static_cast<TunnelKind>(a.tunnel)) +
                            " does not configure");
  with_tunnel(static_cast<TunnelKind>(a.tunnel), [&](auto t) {
    using T = decltype(t);
    const TunnelConfig* c = ov ? &(*ov)[T::kKind] : nullptr;
    const TunnelRemote* rem = c && c->on ? c->remote(a.remote) : nullptr;
    if (!rem || !c->has_vni(a.vni)) return;
    *e = Pipeline::Encap{};
    e->len = static_cast<uint16_t>(T::encap_template(*c, *rem, a, e->hdr));
    e->counter = static_cast<uint8_t>(T::kEncapCounter);
    e->kind = static_cast<uint8_t>(T::kKind);
    // The IPv4 header's sum without its total length and checksum, which
    // write_encap adds per packet with the UDP length and source port (0 in
    // the template, as the NIC's raw encap takes it).
    e->ip_sum = net::sum16(e->hdr + net::kEthLen, net::kIpv4Len);
    st = {};
  });
  return st;
}

}  // namespace

Result<std::unique_ptr<Pipeline>> Pipeline::build(std::vector<Rule> rules, unsigned workers,
                                                  const OverlayConfig* overlay) {
  if (workers == 0 || workers > kMaxWorkers) return Status::error("pipeline: bad worker count");
  std::unique_ptr<Pipeline> pl(new Pipeline());
  pl->rules_ = std::move(rules);
  pl->workers_ = workers;
  pl->counters_.assign(static_cast<size_t>(workers) * pl->rules_.size(), RuleCounters{});
  const auto& R = pl->rules_;
  for (size_t i = 0; i < R.size(); i++) {
    if (Status s = check_rule(R[i]); !s) return Status::error("rule " + std::to_string(R[i].id) + ": " + s.message());
    pl->max_table_ = std::max<int>(pl->max_table_, R[i].table);
  }
  if (Status s = check_rule_set(R); !s) return s;
  pl->tables_.resize(static_cast<size_t>(pl->max_table_ + 1));
  for (size_t i = 0; i < R.size(); i++) {
    if (R[i].table != 0 || R[i].id >= (1u << 20)) continue;
    if (R[i].id >= pl->table0_by_id_.size()) pl->table0_by_id_.resize(R[i].id + 1, -1);
    pl->table0_by_id_[R[i].id] = static_cast<int32_t>(i);
  }
  uint64_t gen = g_acl_gen.fetch_add(1);
  pl->gen_ = static_cast<uint32_t>(gen + 1);  // never 0: a zeroed cache entry matches no pipeline
  // The fast path's view of the rules: actions in one dense array.
  std::set<uint16_t> zones;
  std::map<std::vector<uint8_t>, uint32_t> ct_groups;  // zone, commit, NAT range's bytes -> Action::ct_group
  for (size_t i = 0; i < R.size(); i++) {
    CompiledRule c;
    c.first = static_cast<uint32_t>(pl->acts_.size());
    c.count = static_cast<uint16_t>(R[i].actions.size());
    c.table = static_cast<uint8_t>(R[i].table);
    c.offload = R[i].offload;
    c.id = R[i].id;
    pl->crules_.push_back(c);
    for (const Action& a : R[i].actions) {
      pl->acts_.push_back(a);
      if (a.type == ActType::kCt) {
        zones.insert(a.zone);
        static_assert(std::has_unique_object_representations_v<ctrack::NatRange>, "its bytes are its value");
        std::vector<uint8_t> k(sizeof a.zone + 1 + sizeof a.nat);
        memcpy(k.data(), &a.zone, sizeof a.zone);
        k[sizeof a.zone] = a.commit;
        memcpy(k.data() + sizeof a.zone + 1, &a.nat, sizeof a.nat);
        pl->acts_.back().ct_group =
            ct_groups.emplace(std::move(k), static_cast<uint32_t>(ct_groups.size())).first->second;
      }
      if (a.type == ActType::kEncap) {
        Encap e{};
        if (Status s = make_encap(overlay, a, R[i].id, &e); !s) return s;
        pl->encaps_.push_back(e);
        pl->acts_.back().encap = static_cast<uint16_t>(pl->encaps_.size());
      }
    }
    if (R[i].match.has(kMTcpFlags)) pl->tcp_flag_tables_ |= 1u << R[i].table;
  }
  pl->fast_zone_ = zones.size() == 1 ? *zones.begin() : -1;
  pl->sport_fix_ = pl->fast_zone_ >= 0 ? zone0_hash_fix(static_cast<uint16_t>(pl->fast_zone_)) : 0;
  if (overlay) pl->ov_ = *overlay;
  for (TunnelConfig& c : pl->ov_.tunnel) prepare_outer_match(c);
  for (uint16_t p = 0; p < kMaxPorts; p++) pl->decap_on_[p] = decap_mask(pl->ov_, p);
  pl->plan_stages();
  for (int t = 0; t <= pl->max_table_; t++) {
    std::vector<uint32_t> in;
    for (uint32_t i = 0; i < R.size(); i++)
      if (R[i].table == t) in.push_back(i);
    if (in.empty()) continue;
    // Highest priority first; ties go to the rule written first.
    std::stable_sort(in.begin(), in.end(), [&](uint32_t a, uint32_t b) { return R[a].priority > R[b].priority; });
    auto tbl = std::make_unique<Table>();
    std::vector<Acl4Rule> r4[kPcNum];
    std::vector<Acl6Rule> r6[kPcNum];
    for (size_t k = 0; k < in.size(); k++) {
      const Rule& rule = R[in[k]];
      const Match& m = rule.match;
      int32_t prio = 1 + rule.priority * 4096 + static_cast<int32_t>(4095 - std::min<size_t>(k, 4095));
      if (m.applies_v4()) {
        Acl4Rule a{};
        a.data.category_mask = 1;
        a.data.priority = prio;
        a.data.userdata = in[k] + 1;
        common_fields(a, m, F4_PROTO, F4_SPORT, F4_DPORT, F4_INPORT, F4_VLAN, F4_TCPF, F4_CT, F4_ZONE, F4_TUN);
        a.field[F4_SRC].value.u32 = m.has(kMSrc) ? word(m.src, 0) : 0;
        a.field[F4_SRC].mask_range.u32 = m.has(kMSrc) ? m.src_len : 0;
        a.field[F4_DST].value.u32 = m.has(kMDst) ? word(m.dst, 0) : 0;
        a.field[F4_DST].mask_range.u32 = m.has(kMDst) ? m.dst_len : 0;
        for (int c = 0; c < kPcNum; c++)
          if (rule_in_class(m, c)) r4[c].push_back(a);
      }
      if (m.applies_v6()) {
        Acl6Rule a{};
        a.data.category_mask = 1;
        a.data.priority = prio;
        a.data.userdata = in[k] + 1;
        common_fields(a, m, F6_PROTO, F6_SPORT, F6_DPORT, F6_INPORT, F6_VLAN, F6_TCPF, F6_CT, F6_ZONE, F6_TUN);
        for (int i = 0; i < 4; i++) {
          a.field[F6_SRC0 + i].value.u32 = m.has(kMSrc) ? word(m.src, i) : 0;
          a.field[F6_SRC0 + i].mask_range.u32 = m.has(kMSrc) ? word_len(m.src_len, i) : 0;
          a.field[F6_DST0 + i].value.u32 = m.has(kMDst) ? word(m.dst, i) : 0;
          a.field[F6_DST0 + i].mask_range.u32 = m.has(kMDst) ? word_len(m.dst_len, i) : 0;
        }
        for (int c = 0; c < kPcNum; c++)
          if (rule_in_class(m, c)) r6[c].push_back(a);
      }
      if (m.applies_other()) tbl->other.push_back({in[k], m});
    }
    auto make = [&](auto& rs, uint32_t rule_size, void (*defs)(rte_acl_config*), const std::string& fam,
                    rte_acl_ctx** out) -> Status {
      if (rs.empty()) return {};
      std::string name = "dp" + std::to_string(gen) + "t" + std::to_string(t) + fam;
      rte_acl_param p{};
      p.name = name.c_str();
      p.socket_id = SOCKET_ID_ANY;
      p.rule_size = rule_size;
      p.max_rule_num = static_cast<uint32_t>(rs.size());
      rte_acl_ctx* ctx = rte_acl_create(&p);
      if (!ctx) return Status::error("rte_acl_create failed for table " + std::to_string(t) + " (EAL memory?)");
      *out = ctx;
      if (int rc = rte_acl_add_rules(ctx, reinterpret_cast<const rte_acl_rule*>(rs.data()),
                                     static_cast<uint32_t>(rs.size()));
          rc != 0)
        return Status::error("rte_acl_add_rules: " + std::string(strerror(-rc)));
      rte_acl_config cfg{};
      cfg.num_categories = 1;
      defs(&cfg);
      if (int rc = rte_acl_build(ctx, &cfg); rc != 0)
        return Status::error("rte_acl_build table " + std::to_string(t) + ": " + strerror(-rc));
      g_acl_classifier.store(pick_classifier(ctx), std::memory_order_relaxed);
      return {};
    };
    for (int c = 0; c < kPcNum; c++) {
      if (Status s = make(r4[c], RTE_ACL_RULE_SZ(F4_NUM), defs4, "v4c" + std::to_string(c), &tbl->v4[c]); !s)
        return s;
      if (Status s = make(r6[c], RTE_ACL_RULE_SZ(F6_NUM), defs6, "v6c" + std::to_string(c), &tbl->v6[c]); !s)
        return s;
    }
    pl->tables_[static_cast<size_t>(t)] = std::move(tbl);
  }
  return pl;
}

// ------------------------------------------------------------------ trace

namespace {

// The offload decision's hooks of the walk (interp.h): what the tables do
// with an established connection's packet, and whether the NIC may do it
// alone. The first reason it may not stops the walk.
struct OffloadWalk {
  ClassKey key;
  uint16_t in_port;
  uint16_t vlan = 0;  // a connection's flow matches no VLAN
  uint32_t tun_id;
  int next = -1;
  const ctrack::Key& wire;
  bool reply;
  const ctrack::Key* after_ct;
  const CompiledRule* crules;
  Pipeline::Trace tr;
  bool tracked = false;
  uint32_t cur = 0;  // index of the rule being run
  int table_now = 0;

  void no_table(int) {}  // no rule matches: dropped
  bool table(int t, bool flags_table) {
    table_now = t;
    // A rule on flags would see FIN/RST/SYN differently from the segments
    // the NIC forwards; the NIC cannot run our tables per segment.
    if (flags_table && wire.proto == IPPROTO_TCP) return refuse("a rule in the path matches tcp_flags");
    return true;
  }
  void no_match(int) {}
  bool rule(int, uint32_t r) {
    cur = r;
    if (!crules[r].offload) return refuse("rule has offload: false");
    return true;
  }
  void no_terminal() {}
  bool refuse(const char* why) {
    tr.refuse = why;
    return false;
  }
  void set_mark(const Action&) {}
  bool encap(const Action& a) {
    const char* why = nullptr;
    with_tunnel(static_cast<TunnelKind>(a.tunnel), [&](auto t) { why = decltype(t)::kConnEncapRefuse; });
    if (why) return refuse(why);
    tr.encap = a.encap;
    return true;
  }
  Step ct(const Action& a, uint32_t) {
    if (tracked || a.zone != wire.zone) {
      refuse(tracked ? "the path runs ct twice" : "the path tracks in another zone");
      return Step::kStop;
    }
    tracked = true;
    tr.ct_rule = crules[cur].id;
    tr.ct_table = table_now;
    // The connection's translation: later tables see the tuple it leaves with.
    if (after_ct) key.tuple(*after_ct);
    key.ct(static_cast<uint8_t>(ctrack::kCtTrk | ctrack::kCtEst | (reply ? ctrack::kCtRpl : 0)), a.zone);
    return Step::kNext;
  }
  void output(const Action& a) {
    if (!tracked) tr.refuse = "the path does not run ct";
    tr.out_port = static_cast<int16_t>(a.port);
  }
  void drop(const Action&) { tr.refuse = "the path drops"; }
  void go(const Action& a) { next = a.table; }
};

}  // namespace

Pipeline::Trace Pipeline::trace_established(const ctrack::Key& k, uint16_t in_port, bool reply, uint32_t tun_id,
                                             const ctrack::Key* after_ct) const {
  OffloadWalk w{{}, in_port, 0, tun_id, -1, k, reply, after_ct, crules_.data(), {}};
  w.key.kind = k.family;
  // A mid-stream segment: ACK alone.
  if (k.family == 4) fill_acl_key(w.key.k4, k, ctrack::kAck, in_port, 0, tun_id);
  else fill_acl_key(w.key.k6, k, ctrack::kAck, in_port, 0, tun_id);
  Interp::walk(*this, w);  // out_port stays -1 (dropped) unless a rule outputs it
  return w.tr;
}

namespace {

// The narration's hooks of the walk (interp.h): each step in words, the
// ct state from the caller's peek. The words are each feature's
// (features/<name>/narrate.h).
struct NarrateWalk {
  ClassKey key;
  uint16_t in_port;
  uint16_t vlan;
  uint32_t tun_id;
  int next = -1;
  const ctrack::Parsed& pp;
  const PortNames& ports;
  const Pipeline::CtPeek& ct_peek;
  const std::vector<Rule>& rules;
  std::vector<std::string>& out;
  uint32_t mark = 0;
  uint32_t cur = 0;  // index of the rule being run

  void no_table(int t) { out.push_back(narrate::no_table(t)); }
  bool table(int, bool) { return true; }
  void no_match(int t) { out.push_back(narrate::no_match(t)); }
  bool rule(int t, uint32_t i) {
    cur = i;
    out.push_back(narrate::rule_hit(t, rules[i]));
    return true;
  }
  void no_terminal() { out.push_back(narrate::no_terminal()); }
  void set_mark(const Action& a) { mark = a.mark; }
  bool encap(const Action& a) {
    out.push_back(narrate::encap(a));
    return true;
  }
  Step ct(const Action& a, uint32_t) {
    const ctrack::Packet& cp = pp.ct;
    const bool ip = key.kind != 0;
    std::string note;
    ctrack::Key to{};
    to.family = 0;
    uint8_t st = ip ? ct_peek(cp, a.zone, a.commit, &note, &to) : 0;
    if (to.family == cp.key.family) {  // translated: later tables see the new tuple
      note += narrate::nat_leaves_as(to);
      key.tuple(to);
    }
    if (!ip) note = narrate::ct_untracked();
    if (ip && (st & ctrack::kCtNew)) note += narrate::nat_new(a);
    out.push_back(narrate::ct_step(a, st, note));
    key.ct(st, a.zone);
    return Step::kNext;
  }
  void output(const Action& a) { out.push_back(narrate::output(ports, a.port, mark)); }
  void drop(const Action&) { out.push_back(narrate::rule_drop(rules[cur])); }
  void go(const Action& a) { next = a.table; }
};

}  // namespace

std::vector<std::string> Pipeline::explain(const ctrack::Parsed& pp, uint16_t in_port, const PortNames& ports,
                                           const CtPeek& ct_peek, uint32_t tun_id) const {
  std::vector<std::string> out;
  if (tun_id) out.push_back(narrate::decap(ov_, tun_id));
  NarrateWalk w{{}, in_port, pp.vlan, tun_id, -1, pp, ports, ct_peek, rules_, out};
  w.key.fill(pp, in_port, tun_id);
  Interp::walk(*this, w);
  return out;
}

}  // namespace dp
