// Per packet: everything in Datapath::run. Nothing here allocates, throws,
// logs or calls virtually on that path; Pipeline::build is control path.
#include "dataplane/pipeline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_acl.h>
#include <rte_cycles.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>

namespace dp {

namespace {

// rte_acl input keys: the first field is one byte, the rest grouped in
// 4-byte words; multi-byte fields in network byte order.
struct AclKey4 {
  uint8_t proto;
  uint8_t pad[3];
  uint8_t src[4];
  uint8_t dst[4];
  uint16_t sport, dport;
  uint16_t in_port, vlan;
  uint8_t tcp_flags, ct_state;
  uint16_t zone;
};
static_assert(sizeof(AclKey4) == 24 && std::has_unique_object_representations_v<AclKey4>);

struct AclKey6 {
  uint8_t proto;
  uint8_t pad[3];
  uint8_t src[16];
  uint8_t dst[16];
  uint16_t sport, dport;
  uint16_t in_port, vlan;
  uint8_t tcp_flags, ct_state;
  uint16_t zone;
};
static_assert(sizeof(AclKey6) == 48 && std::has_unique_object_representations_v<AclKey6>);

enum F4 { F4_PROTO, F4_SRC, F4_DST, F4_SPORT, F4_DPORT, F4_INPORT, F4_VLAN, F4_TCPF, F4_CT, F4_ZONE, F4_NUM };
enum F6 {
  F6_PROTO,
  F6_SRC0, F6_SRC1, F6_SRC2, F6_SRC3,
  F6_DST0, F6_DST1, F6_DST2, F6_DST3,
  F6_SPORT, F6_DPORT, F6_INPORT, F6_VLAN, F6_TCPF, F6_CT, F6_ZONE, F6_NUM
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
}

void set_range16(rte_acl_field& f, bool has, uint16_t lo, uint16_t hi) {
  f.value.u16 = has ? lo : 0;
  f.mask_range.u16 = has ? hi : 0xFFFF;
}

template <typename R>
void common_fields(R& r, const Match& m, int proto, int sport, int dport, int inport, int vlan, int tcpf, int ct,
                   int zone) {
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
}

uint32_t word(const uint8_t* a, int i) {
  return static_cast<uint32_t>(a[4 * i]) << 24 | static_cast<uint32_t>(a[4 * i + 1]) << 16 |
         static_cast<uint32_t>(a[4 * i + 2]) << 8 | a[4 * i + 3];
}

uint32_t word_len(int len, int i) { return static_cast<uint32_t>(std::clamp(len - 32 * i, 0, 32)); }

std::atomic<uint64_t> g_acl_gen{0};

}  // namespace

const char* drop_why_name(DropWhy d) {
  static const char* const n[] = {"no_match", "rule_drop", "tx_full", "tx_mtu", "rx_oversize", "ct_full", "handoff_full"};
  static_assert(sizeof(n) / sizeof(n[0]) == static_cast<size_t>(DropWhy::kCount));
  return n[static_cast<int>(d)];
}

WorkerStats WorkerStats::snapshot() const {
  WorkerStats s;
  auto ld = [](const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
  s.rx_packets = ld(rx_packets);
  s.rx_bytes = ld(rx_bytes);
  s.tx_packets = ld(tx_packets);
  for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) s.parse_drop[i] = ld(parse_drop[i]);
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) s.drop[i] = ld(drop[i]);
  s.hw_marked = ld(hw_marked);
  s.cache_hits = ld(cache_hits);
  s.handoff_out = ld(handoff_out);
  s.handoff_in = ld(handoff_in);
  s.nic_packets = ld(nic_packets);
  s.nic_cycles = ld(nic_cycles);
  s.busy_polls = ld(busy_polls);
  s.idle_polls = ld(idle_polls);
  s.busy_cycles = ld(busy_cycles);
  s.expire_runs = ld(expire_runs);
  s.expire_cycles = ld(expire_cycles);
  s.expired = ld(expired);
  return s;
}

// Rules of one table that are not IPv4/IPv6 (ARP, ND, other ethertypes),
// matched by a short linear scan in priority order.
struct OtherRule {
  uint32_t rule;  // index into rules_
  Match m;
};

// IP rules are classified per protocol class: a TCP packet only walks the
// trie of rules that can match TCP (those naming TCP or no protocol), so a
// rule set's UDP rules cost TCP traffic nothing. Rules without a protocol
// are in all three.
enum ProtoClass { kPcTcp, kPcUdp, kPcOther, kPcNum };
inline int proto_class(uint8_t proto) { return proto == IPPROTO_TCP ? kPcTcp : proto == IPPROTO_UDP ? kPcUdp : kPcOther; }
bool rule_in_class(const Match& m, int c) { return !m.has(kMProto) || proto_class(m.proto) == c; }

struct Pipeline::Table {
  rte_acl_ctx* v4[kPcNum] = {};
  rte_acl_ctx* v6[kPcNum] = {};
  std::vector<OtherRule> other;
  ~Table() {
    for (int c = 0; c < kPcNum; c++) {
      if (v4[c]) rte_acl_free(v4[c]);
      if (v6[c]) rte_acl_free(v6[c]);
    }
  }
};

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

Result<std::unique_ptr<Pipeline>> Pipeline::build(std::vector<Rule> rules, unsigned workers) {
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
  for (size_t i = 0; i < R.size(); i++) {
    CompiledRule c;
    c.first = static_cast<uint32_t>(pl->acts_.size());
    c.count = static_cast<uint16_t>(R[i].actions.size());
    c.table = static_cast<uint8_t>(R[i].table);
    c.offload = R[i].offload;
    pl->crules_.push_back(c);
    for (const Action& a : R[i].actions) {
      pl->acts_.push_back(a);
      if (a.type == ActType::kCt) zones.insert(a.zone);
    }
    if (R[i].match.has(kMTcpFlags)) pl->tcp_flag_tables_ |= 1u << R[i].table;
  }
  pl->fast_zone_ = zones.size() == 1 ? *zones.begin() : -1;
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
        common_fields(a, m, F4_PROTO, F4_SPORT, F4_DPORT, F4_INPORT, F4_VLAN, F4_TCPF, F4_CT, F4_ZONE);
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
        common_fields(a, m, F6_PROTO, F6_SPORT, F6_DPORT, F6_INPORT, F6_VLAN, F6_TCPF, F6_CT, F6_ZONE);
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

Pipeline::Trace Pipeline::trace_established(const ctrack::Key& k, uint16_t in_port, bool reply) const {
  Trace tr;
  AclKey4 k4{};
  AclKey6 k6{};
  auto fill = [&](auto& a) {
    a.proto = k.proto;
    memcpy(a.src, k.src, sizeof a.src);
    memcpy(a.dst, k.dst, sizeof a.dst);
    a.sport = htons(k.sport);
    a.dport = htons(k.dport);
    a.in_port = htons(in_port);
    a.tcp_flags = k.proto == IPPROTO_TCP ? ctrack::kAck : 0;  // a mid-stream segment
  };
  if (k.family == 4) fill(k4);
  else fill(k6);
  bool tracked = false;
  int t = 0;
  for (int hops = 0; hops < 64 && t <= max_table_; hops++) {
    const Table* tbl = tables_[static_cast<size_t>(t)].get();
    if (!tbl) return tr;  // no rule matches: dropped
    // A rule on flags would see FIN/RST/SYN differently from the segments
    // the NIC forwards; the NIC cannot run our tables per segment.
    for (const Rule& r : rules_)
      if (r.table == t && r.match.has(kMTcpFlags) && k.proto == IPPROTO_TCP) {
        tr.refuse = "a rule in the path matches tcp_flags";
        return tr;
      }
    uint32_t res = 0;
    const uint8_t* d = k.family == 4 ? reinterpret_cast<const uint8_t*>(&k4) : reinterpret_cast<const uint8_t*>(&k6);
    rte_acl_ctx* ctx = k.family == 4 ? tbl->v4[proto_class(k.proto)] : tbl->v6[proto_class(k.proto)];
    if (!ctx || rte_acl_classify(ctx, &d, &res, 1, 1) != 0 || res == 0) return tr;
    const Rule& r = rules_[res - 1];
    if (!r.offload) {
      tr.refuse = "rule has offload: false";
      return tr;
    }
    int next = -1;
    for (const Action& a : r.actions) {
      switch (a.type) {
        case ActType::kCount:
        case ActType::kSetMark:
          continue;
        case ActType::kCt: {
          if (tracked) {
            tr.refuse = "the path runs ct twice";
            return tr;
          }
          if (a.zone != k.zone) {
            tr.refuse = "the path tracks in another zone";
            return tr;
          }
          tracked = true;
          uint8_t st = ctrack::kCtTrk | ctrack::kCtEst | (reply ? ctrack::kCtRpl : 0);
          k4.ct_state = k6.ct_state = st;
          k4.zone = k6.zone = htons(a.zone);
          if (a.table >= 0) next = a.table;
          break;
        }
        case ActType::kOutput:
          if (!tracked) tr.refuse = "the path does not run ct";
          tr.out_port = static_cast<int16_t>(a.port);
          return tr;
        case ActType::kDrop:
          tr.refuse = "the path drops";
          return tr;
        case ActType::kGotoTable:
          next = a.table;
          break;
      }
      if (next >= 0) break;
    }
    if (next < 0) return tr;
    t = next;
  }
  return tr;
}

std::vector<std::string> Pipeline::explain(const ctrack::Parsed& pp, uint16_t in_port, const PortNames& ports,
                                           const CtPeek& ct_peek) const {
  std::vector<std::string> out;
  auto port_name = [&](uint16_t p) { return p < ports.names.size() ? ports.names[p] : std::to_string(p); };
  const ctrack::Packet& cp = pp.ct;
  const bool ip = pp.kind == ctrack::L3Kind::kIp;
  AclKey4 k4{};
  AclKey6 k6{};
  auto fill = [&](auto& a) {
    a.proto = cp.key.proto;
    memcpy(a.src, cp.key.src, sizeof a.src);
    memcpy(a.dst, cp.key.dst, sizeof a.dst);
    a.sport = htons(cp.key.sport);
    a.dport = htons(cp.key.dport);
    a.in_port = htons(in_port);
    a.vlan = htons(pp.vlan);
    a.tcp_flags = cp.key.proto == IPPROTO_TCP ? cp.tcp_flags : 0;
  };
  if (ip && cp.key.family == 4) fill(k4);
  else if (ip) fill(k6);
  uint16_t other_type = pp.kind == ctrack::L3Kind::kNd ? kEthNd : pp.ethertype;
  uint32_t mark = 0;
  int t = 0;
  for (int hops = 0; hops < 64; hops++) {
    if (t > max_table_ || !tables_[static_cast<size_t>(t)]) {
      out.push_back("table " + std::to_string(t) + ": no rules: dropped (no_match)");
      return out;
    }
    const Table* tbl = tables_[static_cast<size_t>(t)].get();
    uint32_t res = 0;
    if (ip) {
      const uint8_t* d =
          cp.key.family == 4 ? reinterpret_cast<const uint8_t*>(&k4) : reinterpret_cast<const uint8_t*>(&k6);
      rte_acl_ctx* ctx = cp.key.family == 4 ? tbl->v4[proto_class(cp.key.proto)] : tbl->v6[proto_class(cp.key.proto)];
      if (ctx && rte_acl_classify(ctx, &d, &res, 1, 1) != 0) res = 0;
    } else {
      for (const OtherRule& o : tbl->other) {
        const Match& m = o.m;
        if (m.has(kMInPort) && m.in_port != in_port) continue;
        if (m.has(kMEthType) && m.eth_type != other_type) continue;
        if (m.has(kMVlan) && m.vlan != pp.vlan) continue;
        res = o.rule + 1;
        break;
      }
    }
    if (res == 0) {
      out.push_back("table " + std::to_string(t) + ": no rule matches: dropped (no_match)");
      return out;
    }
    const Rule& r = rules_[res - 1];
    out.push_back("table " + std::to_string(t) + ": rule " + std::to_string(r.id) + " (priority " +
                  std::to_string(r.priority) + ") match \"" + r.match_text + "\" actions \"" + r.actions_text + "\"");
    int next = -1;
    for (const Action& a : r.actions) {
      switch (a.type) {
        case ActType::kCount:
          continue;
        case ActType::kSetMark:
          mark = a.mark;
          continue;
        case ActType::kCt: {
          std::string note;
          uint8_t st = ip ? ct_peek(cp, a.zone, a.commit, &note) : 0;
          if (!ip) note = "not IP: stays untracked";
          out.push_back("  ct(" + std::string(a.commit ? "commit," : "") + "zone=" + std::to_string(a.zone) +
                        "): " + ct_state_str(st) + (note.empty() ? "" : ": " + note));
          k4.ct_state = k6.ct_state = st;
          k4.zone = k6.zone = htons(a.zone);
          if (a.table >= 0) next = a.table;
          break;
        }
        case ActType::kOutput:
          out.push_back("result: output to " + port_name(a.port) + (mark ? ", mark " + std::to_string(mark) : ""));
          return out;
        case ActType::kDrop:
          out.push_back("result: dropped by rule " + std::to_string(r.id) + " (rule_drop)");
          return out;
        case ActType::kGotoTable:
          next = a.table;
          break;
      }
      if (next >= 0) break;
    }
    if (next < 0) {
      out.push_back("result: no terminal action: dropped");
      return out;
    }
    t = next;
  }
  return out;
}

// ------------------------------------------------------------------ datapath

namespace {

// The classifier's view of a parsed packet (network byte order).
template <typename K>
inline void fill_acl_key(K& k, const ctrack::Packet& cp, uint16_t nport, uint16_t nvlan) {
  k.proto = cp.key.proto;
  k.pad[0] = k.pad[1] = k.pad[2] = 0;
  memcpy(k.src, cp.key.src, sizeof k.src);
  memcpy(k.dst, cp.key.dst, sizeof k.dst);
  k.sport = htons(cp.key.sport);
  k.dport = htons(cp.key.dport);
  k.in_port = nport;
  k.vlan = nvlan;
  k.tcp_flags = cp.key.proto == IPPROTO_TCP ? cp.tcp_flags : 0;
  k.ct_state = 0;
  k.zone = 0;
}

struct PktState {
  ctrack::Parsed parsed;
  union {
    AclKey4 k4;
    AclKey6 k6;
  };
  uint8_t kind;  // 4, 6, or 0 for other (ARP, ND, non-IP)
  int8_t table;  // current table, -1 when done
  uint8_t ct_state;
  uint16_t other_type;  // ethertype for the "other" list (kEthNd for ND)
  uint32_t rule;        // matched rule index
  int32_t pre;          // table-0 rule the NIC matched (mark), or -1
  int32_t ct_zone;      // zone a ct() found this packet's connection in, -1 none, -2 commit failed
  uint8_t resume;       // action index to resume at after ct
  // The path, for the flow cache.
  bool cacheable;
  bool have_ct;         // the flow cache ran this packet's first ct(): `first` is its result
  bool have_found;      // the flow cache looked it up: `found` saves its first ct() the lookup
  ctrack::Tracker::Found found;
  bool rule_drop;       // ended by a drop action
  uint8_t ncts, nhits;
  ctrack::CtResult first;
  bool first_commit;
  uint32_t hits[kMaxTables];
};

constexpr uint8_t kEst = ctrack::kCtTrk | ctrack::kCtEst;
constexpr uint8_t kEstRpl = ctrack::kCtTrk | ctrack::kCtEst | ctrack::kCtRpl;

inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Bytes after the Ethernet header and up to two VLAN tags (what the MTU
// bounds), for frames the parser did not see (the NIC classified them).
inline uint32_t l3_bytes(const uint8_t* d, uint32_t len, uint32_t pkt_len) {
  uint32_t off = 14;
  for (int t = 0; t < 2 && off <= len; t++) {
    uint16_t et = rd16(d + off - 2);
    if (et != 0x8100 && et != 0x88A8) break;
    off += 4;
  }
  return pkt_len > off ? pkt_len - off : 0;
}

// The length an IP header claims for its packet (parse gave kIpLen).
inline uint32_t ip_claimed(const uint8_t* d, uint32_t len, const ctrack::Parsed& pp) {
  const uint8_t* ip = d + pp.l3_off;
  if (pp.ethertype == 0x0800 && pp.l3_off + 4u <= len) return rd16(ip + 2);
  if (pp.ethertype == 0x86DD && pp.l3_off + 6u <= len) return 40u + rd16(ip + 4);
  return 0;
}

inline uint32_t path_hash(const FlowPath& p) {
  uint32_t h = 2166136261u;
  auto mix = [&](uint32_t v) { h = (h ^ v) * 16777619u; };
  mix(p.in_port | static_cast<uint32_t>(p.vlan) << 16);
  mix(p.state | static_cast<uint32_t>(p.nrules) << 8 | static_cast<uint32_t>(p.commit) << 16);
  mix(static_cast<uint16_t>(p.out_port));
  mix(p.mark);
  for (uint32_t i = 0; i < p.nrules; i++) mix(p.rules[i]);
  return h | 1;  // never 0 (empty)
}

inline bool same_path(const FlowPath& a, const FlowPath& b) {
  if (a.in_port != b.in_port || a.vlan != b.vlan || a.state != b.state || a.nrules != b.nrules ||
      a.commit != b.commit || a.out_port != b.out_port || a.mark != b.mark)
    return false;
  for (uint32_t i = 0; i < a.nrules; i++)
    if (a.rules[i] != b.rules[i]) return false;
  return true;
}

}  // namespace

Datapath::Datapath(unsigned worker, ctrack::Tracker* tracker, WorkerStats* stats)
    : worker_(worker), ct_(tracker), st_(stats), cache_(tracker->capacity()), paths_(kPaths) {
  std::fill(std::begin(mtu_), std::end(mtu_), uint16_t{0xFFFF});
}

uint16_t Datapath::record_path(const FlowPath& p) {
  uint32_t h = path_hash(p);
  for (uint32_t k = 0; k < 8; k++) {
    uint32_t slot = (h + k) & (kPaths - 1);
    FlowPath& q = paths_[slot];
    if (q.hash == 0) {
      q = p;
      q.hash = h;
      return static_cast<uint16_t>(slot);
    }
    if (q.hash == h && same_path(q, p)) return static_cast<uint16_t>(slot);
  }
  return FlowCacheEntry::kNone;
}

void Datapath::run(Pipeline& pl, const PacketIn* in, uint32_t n, uint64_t now_ns, Verdict* out) {
  PktState s[kMaxBurst];
  WorkerStats& st = *st_;
  const CompiledRule* crules = pl.crules_.data();
  const Action* acts = pl.acts_.data();
  RuleCounters* counters = &pl.counters_[static_cast<size_t>(worker_) * pl.crules_.size()];
  const HwMarkTable* hw = marks_ ? marks_->load(std::memory_order_acquire) : nullptr;
  const bool fast = cache_on_ && pl.fast_zone_ >= 0;
  const uint16_t fast_zone = static_cast<uint16_t>(pl.fast_zone_);
  uint32_t active = 0;

  // Parse, and the hardware-mark skip. (Counters are summed in locals and
  // stored once: a per-packet increment of one memory word is a dependency
  // chain through store forwarding.)
  uint64_t rx_bytes = 0, handed = 0, handed_bytes = 0;
  uint32_t l3len[kMaxBurst];
  for (uint32_t i = 0; i < n; i++) {
    out[i] = Verdict{-1, 0, -1, 0};
    rx_bytes += in[i].pkt_len;
    PktState& p = s[i];
    p.table = -1;
    p.ct_state = 0;
    p.pre = -1;
    p.ct_zone = -1;
    p.cacheable = fast;
    p.have_ct = false;
    p.have_found = false;
    p.rule_drop = false;
    p.ncts = p.nhits = 0;
    if (in[i].has_mark && hw && (in[i].mark & HwMarkTable::kTag)) {
      uint32_t idx = in[i].mark & ~HwMarkTable::kTag;
      if (idx & HwMarkTable::kRule) {
        idx &= ~HwMarkTable::kRule;
        if (idx < pl.table0_by_id_.size()) p.pre = pl.table0_by_id_[idx];
        if (p.pre >= 0) st.hw_marked++;
      } else if (idx < hw->out_port.size() && hw->out_port[idx] >= 0) {
        out[i].out_port = hw->out_port[idx];
        out[i].mark = in[i].mark;
        l3len[i] = l3_bytes(in[i].data, in[i].len, in[i].pkt_len);
        st.hw_marked++;
        continue;
      }
    }
    ctrack::Drop d = ctrack::parse_packet(in[i].data, in[i].len, 0, &p.parsed);
    const uint16_t mtu = mtu_[in[i].port];
    if (d != ctrack::Drop::kNone) {
      // A frame as long as the port takes (the MTU, less up to two VLAN
      // tags the port's frame limit may count) whose IP length goes past
      // it and past the MTU: the port cut an oversize packet short
      // (af_packet truncates to its ring's frame size), not a malformed
      // header. A short frame claiming more is malformed.
      if (d == ctrack::Drop::kIpLen && in[i].pkt_len - p.parsed.l3_off + 8u >= mtu &&
          ip_claimed(in[i].data, in[i].len, p.parsed) > mtu)
        st.drop[static_cast<int>(DropWhy::kRxOversize)]++;
      else
        st.parse_drop[static_cast<int>(d)]++;
      continue;
    }
    l3len[i] = in[i].pkt_len - p.parsed.l3_off;
    if (l3len[i] > mtu) {
      st.drop[static_cast<int>(DropWhy::kRxOversize)]++;
      continue;
    }
    p.parsed.ct.in_port = static_cast<uint8_t>(in[i].port);
    if (p.parsed.kind == ctrack::L3Kind::kIp) {
      if (steer_) {
        unsigned owner = steer_->owner(p.parsed.ct.key);
        if (owner != self_) {
          out[i].handoff = static_cast<int8_t>(owner);
          handed++;
          handed_bytes += in[i].pkt_len;
          continue;
        }
      }
      p.kind = p.parsed.ct.key.family;
    } else {
      p.kind = 0;
      p.other_type = p.parsed.kind == ctrack::L3Kind::kNd ? kEthNd : p.parsed.ethertype;
    }
    p.table = 0;
    active++;
  }
  // Counted where they are judged (the owner), not where they came in.
  st.rx_packets += n - handed;
  st.rx_bytes += rx_bytes - handed_bytes;
  st.handoff_out += handed;

  // The flow cache: established packets whose direction has a path under
  // this pipeline go from conntrack straight to that path's actions.
  if (fast && active) {
    if (paths_gen_ != pl.gen_) {  // the rules changed: every path is stale
      for (FlowPath& fp : paths_) fp.hash = 0;
      paths_gen_ = pl.gen_;
    }
    const ctrack::Packet* cpk[kMaxBurst];
    ctrack::Tracker::Found found[kMaxBurst];
    uint32_t idx[kMaxBurst], nc = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (s[i].table != 0 || s[i].pre >= 0 || s[i].kind == 0) continue;
      s[i].parsed.ct.key.zone = fast_zone;
      cpk[nc] = &s[i].parsed.ct;
      idx[nc++] = i;
    }
    if (nc) ct_->lookup(cpk, nc, found);
    // Hits, unless another packet of the burst that takes the full pipeline
    // belongs to the same connection: conntrack sees a connection's packets
    // in burst order either way.
    uint32_t hit[kMaxBurst], nh = 0, busy[kMaxBurst], nb = 0;
    const FlowPath* path[kMaxBurst];
    for (uint32_t k = 0; k < nc; k++) {
      uint32_t i = idx[k];
      const FlowPath* fp = nullptr;
      const uint32_t conn = found[k].conn;
      if (conn != ctrack::kNoConn) {
        const FlowCacheEntry& e = cache_[conn];
        uint16_t slot = e.path[found[k].dir];
        if (e.gen == pl.gen_ && slot != FlowCacheEntry::kNone) {
          const FlowPath& c = paths_[slot];
          if (c.in_port == in[i].port && c.vlan == s[i].parsed.vlan) fp = &c;
        }
      }
      if (fp) {
        path[nh] = fp;
        hit[nh++] = k;
      } else {
        if (conn != ctrack::kNoConn) busy[nb++] = conn;
        s[i].have_found = true;
        s[i].found = found[k];
      }
    }
    uint32_t keep = 0;
    for (uint32_t h = 0; h < nh; h++) {
      bool clash = false;
      for (uint32_t b = 0; b < nb && !clash; b++) clash = busy[b] == found[hit[h]].conn;
      if (!clash) {
        path[keep] = path[h];
        hit[keep++] = hit[h];
      } else {
        s[idx[hit[h]]].have_found = true;
        s[idx[hit[h]]].found = found[hit[h]];
      }
    }
    nh = keep;
    // Conntrack for the hits, in burst order, grouped by the path's commit.
    for (int commit = 0; commit < 2 && nh; commit++) {
      const ctrack::Packet* hp[kMaxBurst];
      const ctrack::Tracker::Found* hf[kMaxBurst];
      uint32_t which[kMaxBurst], m = 0;
      for (uint32_t h = 0; h < nh; h++) {
        if (path[h]->commit != (commit == 1)) continue;
        hp[m] = cpk[hit[h]];
        hf[m] = &found[hit[h]];
        which[m++] = h;
      }
      if (!m) continue;
      ctrack::CtResult res[kMaxBurst];
      ct_->process_found(hp, hf, m, now_ns, commit == 1, res);
      for (uint32_t j = 0; j < m; j++) {
        const FlowPath& fp = *path[which[j]];
        uint32_t i = idx[hit[which[j]]];
        PktState& p = s[i];
        if (res[j].state != fp.state || res[j].conn != hf[j]->conn) {
          // Not the state the path was taken in: the full pipeline goes on
          // with this result as its first ct()'s.
          p.have_ct = true;
          p.first = res[j];
          continue;
        }
        out[i].ct_state = res[j].state;
        out[i].mark = fp.mark;
        for (uint32_t r = 0; r < fp.nrules; r++) {
          counters[fp.rules[r]].packets++;
          counters[fp.rules[r]].bytes += in[i].pkt_len;
        }
        if (fp.out_port >= 0) out[i].out_port = fp.out_port;
        else st.drop[static_cast<int>(DropWhy::kRule)]++;
        p.table = -1;
        p.cacheable = false;
        active--;
        st.cache_hits++;
      }
    }
  }

  // The classifier keys, for what the flow cache did not take.
  for (uint32_t i = 0; i < n && active; i++) {
    PktState& p = s[i];
    if (p.table != 0 || p.kind == 0) continue;
    uint16_t nport = htons(in[i].port), nvlan = htons(p.parsed.vlan);
    if (p.kind == 4) fill_acl_key(p.k4, p.parsed.ct, nport, nvlan);
    else fill_acl_key(p.k6, p.parsed.ct, nport, nvlan);
  }

  // Tables in order; every jump goes forward, so one pass ends it.
  for (int t = 0; t <= pl.max_table_ && active; t++) {
    const Pipeline::Table* tbl = pl.tables_[static_cast<size_t>(t)].get();
    const bool flags_table = (pl.tcp_flag_tables_ >> t) & 1;
    // Per (family, protocol class): the keys, their packets, the results.
    const uint8_t* dk[2 * kPcNum][kMaxBurst];
    uint32_t ik[2 * kPcNum][kMaxBurst], rk[2 * kPcNum][kMaxBurst], nk[2 * kPcNum] = {};
    uint32_t here[kMaxBurst], nhere = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (s[i].table != t) continue;
      here[nhere++] = i;
      s[i].rule = 0;
      if (flags_table) s[i].cacheable = false;
      if (s[i].pre >= 0) {  // the NIC did this table's lookup
        s[i].rule = static_cast<uint32_t>(s[i].pre) + 1;
        s[i].pre = -1;
        continue;
      }
      if (!tbl) continue;
      if (s[i].kind == 4) {
        int c = proto_class(s[i].k4.proto);
        if (!tbl->v4[c]) continue;
        dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].k4);
        ik[c][nk[c]++] = i;
      } else if (s[i].kind == 6) {
        int c = kPcNum + proto_class(s[i].k6.proto);
        if (!tbl->v6[c - kPcNum]) continue;
        dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].k6);
        ik[c][nk[c]++] = i;
      } else {
        for (const OtherRule& o : tbl->other) {
          const Match& m = o.m;
          if (m.has(kMInPort) && m.in_port != in[i].port) continue;
          if (m.has(kMEthType) && m.eth_type != s[i].other_type) continue;
          if (m.has(kMVlan) && m.vlan != s[i].parsed.vlan) continue;
          s[i].rule = o.rule + 1;
          break;
        }
      }
    }
    for (int c = 0; c < 2 * kPcNum; c++) {
      if (!nk[c]) continue;
      rte_acl_ctx* ctx = c < kPcNum ? tbl->v4[c] : tbl->v6[c - kPcNum];
      rte_acl_classify(ctx, dk[c], rk[c], nk[c], 1);
      for (uint32_t k = 0; k < nk[c]; k++) s[ik[c][k]].rule = rk[c][k];
    }

    // Actions up to a ct(); ct runs once for the whole table's packets.
    uint32_t ctq[kMaxBurst], nct = 0;
    auto exec = [&](uint32_t i, uint32_t from) {
      PktState& p = s[i];
      const CompiledRule& r = crules[p.rule];
      for (uint32_t a = from; a < r.count; a++) {
        const Action& act = acts[r.first + a];
        switch (act.type) {
          case ActType::kCount:
            break;  // every rule counts its hits; `count` documents intent in listings
          case ActType::kSetMark:
            out[i].mark = act.mark;
            break;
          case ActType::kCt:
            p.resume = static_cast<uint8_t>(a);
            ctq[nct++] = i;
            return;
          case ActType::kOutput:
            out[i].out_port = static_cast<int16_t>(act.port);
            p.table = -1;
            active--;
            return;
          case ActType::kDrop:
            st.drop[static_cast<int>(DropWhy::kRule)]++;
            p.rule_drop = true;
            p.table = -1;
            active--;
            return;
          case ActType::kGotoTable:
            p.table = static_cast<int8_t>(act.table);
            return;
        }
      }
    };
    uint32_t last = UINT32_MAX;  // rule hits, summed over runs of the same rule
    uint64_t lp = 0, lb = 0;
    for (uint32_t k = 0; k < nhere; k++) {
      uint32_t i = here[k];
      if (s[i].rule == 0) {
        st.drop[static_cast<int>(DropWhy::kNoMatch)]++;
        s[i].table = -1;
        s[i].cacheable = false;
        active--;
        continue;
      }
      uint32_t r = --s[i].rule;
      if (r != last) {
        if (last != UINT32_MAX) {
          counters[last].packets += lp;
          counters[last].bytes += lb;
        }
        last = r;
        lp = lb = 0;
      }
      lp++;
      lb += in[i].pkt_len;
      if (s[i].nhits < kMaxTables) s[i].hits[s[i].nhits++] = r;
      if (!crules[r].offload) s[i].cacheable = false;
      exec(i, 0);
    }
    if (last != UINT32_MAX) {
      counters[last].packets += lp;
      counters[last].bytes += lb;
    }
    if (!nct) continue;

    // Conntrack, grouped by (zone, commit). Non-IP packets stay untracked.
    const ctrack::Packet* cpk[kMaxBurst];
    const ctrack::Tracker::Found* cfd[kMaxBurst];
    ctrack::CtResult res[kMaxBurst];
    bool done[kMaxBurst] = {};
    for (uint32_t a = 0; a < nct; a++) {
      if (done[a]) continue;
      const CompiledRule& lr = crules[s[ctq[a]].rule];
      const Action& lead = acts[lr.first + s[ctq[a]].resume];
      uint32_t ng = 0, nall = 0, all[kMaxBurst];
      bool any_found = false;
      for (uint32_t b = a; b < nct; b++) {
        if (done[b]) continue;
        const Action& x = acts[crules[s[ctq[b]].rule].first + s[ctq[b]].resume];
        if (x.zone != lead.zone || x.commit != lead.commit) continue;
        done[b] = true;
        PktState& p = s[ctq[b]];
        if (p.kind == 0) continue;
        all[nall++] = ctq[b];
        if (p.have_ct) continue;  // the flow cache ran this ct() already
        p.parsed.ct.key.zone = x.zone;
        // A second ct() in the zone of the first finds the same connection:
        // its counters take the packet once.
        if (p.ct_zone == x.zone) p.parsed.ct.meta |= ctrack::kMetaCounted;
        else p.parsed.ct.meta &= static_cast<uint8_t>(~ctrack::kMetaCounted);
        // The flow cache's lookup, for the first ct() (in its zone).
        cfd[ng] = p.have_found && p.ncts == 0 && x.zone == fast_zone ? &p.found : nullptr;
        any_found |= cfd[ng] != nullptr;
        cpk[ng++] = &p.parsed.ct;
      }
      if (ng && any_found) ct_->process_found(cpk, cfd, ng, now_ns, lead.commit, res);
      else if (ng) ct_->process(cpk, ng, now_ns, lead.commit, res);
      for (uint32_t g = 0, k = 0; g < nall; g++) {
        PktState& p = s[all[g]];
        ctrack::CtResult r;
        if (p.have_ct) {
          r = p.first;
          p.have_ct = false;
        } else {
          r = res[k++];
        }
        p.ct_state = r.state;
        if (++p.ncts == 1) {
          p.first = r;
          p.first_commit = lead.commit;
          if (lead.zone != fast_zone) p.cacheable = false;
        } else {
          p.cacheable = false;
        }
        // A new entry (or one reused for a new connection) has no path yet.
        if (r.conn != ctrack::kNoConn && (r.state & ctrack::kCtNew)) cache_[r.conn].gen = 0;
        if (r.conn != ctrack::kNoConn) p.ct_zone = lead.zone;
        if (lead.commit && (r.reason == ctrack::Invalid::kTableFull || r.reason == ctrack::Invalid::kZoneLimit))
          p.ct_zone = -2;  // commit failed under full_policy: drop
        if (p.kind == 4) {
          p.k4.ct_state = r.state;
          p.k4.zone = htons(lead.zone);
        } else {
          p.k6.ct_state = r.state;
          p.k6.zone = htons(lead.zone);
        }
      }
    }
    for (uint32_t a = 0; a < nct; a++) {
      uint32_t i = ctq[a];
      PktState& p = s[i];
      out[i].ct_state = p.ct_state;
      if (p.ct_zone == -2) {
        st.drop[static_cast<int>(DropWhy::kCtFull)]++;
        p.table = -1;
        p.cacheable = false;
        active--;
        continue;
      }
      const Action& act = acts[crules[p.rule].first + p.resume];
      if (act.table >= 0) p.table = static_cast<int8_t>(act.table);
      else exec(i, p.resume + 1u);
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    PktState& p = s[i];
    // Anything still pointing at a table past the last one matched nothing.
    if (p.table > pl.max_table_) {
      st.drop[static_cast<int>(DropWhy::kNoMatch)]++;
      p.table = -1;
      p.cacheable = false;
    }
    // Record the path of an established packet that took the tables.
    if (p.cacheable && p.ncts == 1 && p.first.conn != ctrack::kNoConn &&
        (p.first.state == kEst || p.first.state == kEstRpl) && (out[i].out_port >= 0 || p.rule_drop)) {
      FlowPath fp;
      fp.in_port = in[i].port;
      fp.vlan = p.parsed.vlan;
      fp.state = p.first.state;
      fp.commit = p.first_commit;
      fp.out_port = out[i].out_port;
      fp.mark = out[i].mark;
      fp.nrules = p.nhits;
      for (uint32_t r = 0; r < p.nhits; r++) fp.rules[r] = p.hits[r];
      uint16_t slot = record_path(fp);
      if (slot != FlowCacheEntry::kNone) {
        FlowCacheEntry& e = cache_[p.first.conn];
        if (e.gen != pl.gen_) e = FlowCacheEntry{pl.gen_, {FlowCacheEntry::kNone, FlowCacheEntry::kNone}};
        e.path[p.first.dir] = slot;
      }
    }
    if (out[i].out_port >= 0 && l3len[i] > mtu_[out[i].out_port]) {
      st.drop[static_cast<int>(DropWhy::kTxMtu)]++;
      out[i].out_port = -1;
    }
  }
}

}  // namespace dp
