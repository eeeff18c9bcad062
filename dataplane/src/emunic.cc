#include "dataplane/emunic.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ctrack/parse.h"

namespace dp {

struct Op {
  enum Kind : uint8_t { kFlowAdd, kFlowDel, kCtAdd, kCtUpd, kCtDel } kind;
  uint32_t id = 0;
  hw::Flow flow;
  rte_flow_action_conntrack ct{};
  rte_flow_modify_conntrack mod{};
  uint64_t cookie = 0;
  uint64_t due = 0;
};

struct EmuNic::Rule {
  bool live = false;
  uint32_t id = 0, group = 0, prio = 0;
  int in_port = -1;
  bool eth_type_set = false, need_vlan = false, vid_set = false;
  uint16_t eth_type = 0, vid = 0;
  int family = 0;
  uint8_t src[16] = {}, smask[16] = {}, dst[16] = {}, dmask[16] = {};
  uint8_t proto = 0, proto_mask = 0;
  int l4 = 0;
  uint16_t sport = 0, sport_mask = 0, dport = 0, dport_mask = 0;
  uint8_t tcpf = 0, tcpf_mask = 0;
  bool ct_item = false;
  uint32_t ct_spec = 0, ct_mask = 0;
  bool exact = false;
  ctrack::Key key{};  // exact rules; zone = ingress config port
  // actions
  bool count = false;
  int ct = -1;
  uint8_t ct_dir = 0;
  enum Fate : uint8_t { kNone, kOut, kDrop, kSw, kJump } fate = kNone;
  int16_t out = -1;
  uint32_t jump = 0;
  bool mark = false;
  uint32_t mark_id = 0;
};

namespace {

struct CtDir {
  uint8_t scale = 0;
  uint32_t sent_end = 0, reply_end = 0, max_win = 0, max_ack = 0;
};

struct CtCtx {
  bool alive = false;
  uint32_t users = 0;    // rules whose INDIRECT action names it
  bool orig_dir = true;  // direction the next flow created with it gets
  bool liberal = false;
  bool enable = true;
  CtDir d[2];
};

inline bool after(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

int port_index(const hw::Layout& l, uint16_t port_id) {
  for (size_t i = 0; i < l.port_ids.size(); i++)
    if (l.port_ids[i] == port_id) return static_cast<int>(i);
  return -1;
}

}  // namespace

// Exact-match entries of all groups: open addressing, linear probing,
// backward-shift deletion; preallocated, like the NIC's own table.
class ExactTable {
 public:
  explicit ExactTable(uint32_t entries) {
    uint32_t n = 1024;
    while (n < 2 * entries) n <<= 1;
    slot_.assign(n, nullptr);
    mask_ = n - 1;
  }
  EmuNic::Rule* find(uint32_t group, const ctrack::Key& k) const {
    for (uint32_t i = home(group, k);; i = (i + 1) & mask_) {
      EmuNic::Rule* r = slot_[i];
      if (!r) return nullptr;
      if (r->group == group && r->key == k) return r;
    }
  }
  bool insert(EmuNic::Rule* r) {
    for (uint32_t i = home(r->group, r->key);; i = (i + 1) & mask_) {
      if (!slot_[i]) {
        slot_[i] = r;
        return true;
      }
      if (slot_[i]->group == r->group && slot_[i]->key == r->key) return false;
    }
  }
  void erase(EmuNic::Rule* r) {
    uint32_t i = home(r->group, r->key);
    while (slot_[i] != r) i = (i + 1) & mask_;
    for (uint32_t j = (i + 1) & mask_; slot_[j]; j = (j + 1) & mask_) {
      uint32_t h = home(slot_[j]->group, slot_[j]->key);
      // Move j back into the hole at i unless its home lies in (i, j].
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        slot_[i] = slot_[j];
        i = j;
      }
    }
    slot_[i] = nullptr;
  }

 private:
  uint32_t home(uint32_t group, const ctrack::Key& k) const {
    return (ctrack::hash_key(k) ^ (group * 0x9E3779B9u)) & mask_;
  }
  std::vector<EmuNic::Rule*> slot_;
  uint32_t mask_;
};

struct EmuNic::Queue {
  struct Group {
    std::vector<Rule*> masked;  // by priority, then insertion
  };
  Queue(const EmuNicConfig& c, size_t ids)
      : ops(c.ring), done(c.ring), exact(c.table_size), rules(ids), ct(c.ct_contexts) {}
  SpscRing<Op> ops;
  SpscRing<Completion> done;
  ExactTable exact;
  std::vector<Group> groups;
  std::vector<Rule> rules;  // by flow id
  std::vector<CtCtx> ct;
  uint64_t masked_used = 0, ct_used = 0;  // written by the worker
  QueueStats st;
};

EmuNic::EmuNic(const EmuNicConfig& cfg, hw::Layout layout)
    : cfg_(cfg), layout_(std::move(layout)), counters_(cfg.flow_ids ? cfg.flow_ids : cfg.table_size + cfg.rule_size) {
  for (unsigned q = 0; q < cfg.queues; q++) queues_.push_back(std::make_unique<Queue>(cfg, counters_.size()));
}

EmuNic::~EmuNic() = default;

void EmuNic::reset_counter(uint32_t id) {
  counters_[id].packets.store(0);
  counters_[id].bytes.store(0);
  counters_[id].last_hit_ns.store(0);
}

uint64_t EmuNic::rules_in_use() const {
  uint64_t n = 0;
  for (auto& q : queues_) n += __atomic_load_n(&q->masked_used, __ATOMIC_RELAXED);
  return n;
}

uint64_t EmuNic::ct_in_use() const {
  uint64_t n = 0;
  for (auto& q : queues_) n += __atomic_load_n(&q->ct_used, __ATOMIC_RELAXED);
  return n;
}

EmuNic::QueueStats EmuNic::stats(unsigned q) const {
  const QueueStats& s = queues_[q]->st;
  QueueStats r;
  r.rx = __atomic_load_n(&s.rx, __ATOMIC_RELAXED);
  r.forwarded = __atomic_load_n(&s.forwarded, __ATOMIC_RELAXED);
  r.dropped = __atomic_load_n(&s.dropped, __ATOMIC_RELAXED);
  r.to_software = __atomic_load_n(&s.to_software, __ATOMIC_RELAXED);
  r.ct_invalid = __atomic_load_n(&s.ct_invalid, __ATOMIC_RELAXED);
  r.ct_changed = __atomic_load_n(&s.ct_changed, __ATOMIC_RELAXED);
  return r;
}

// ------------------------------------------------------------------ control side

bool EmuNic::submit(unsigned q, Op&& op, uint64_t now_ns) {
  // One NIC: operations on all queues share its insertion rate.
  uint64_t due = std::max<uint64_t>(now_ns + cfg_.latency_us * 1000ull, next_slot_ns_);
  op.due = due;
  if (!queues_[q]->ops.push(std::move(op))) return false;
  next_slot_ns_ = due + (cfg_.insert_rate ? 1'000'000'000ull / cfg_.insert_rate : 0);
  return true;
}

bool EmuNic::flow_create(unsigned q, uint32_t id, hw::Flow f, uint64_t cookie, uint64_t now_ns) {
  return submit(q, Op{Op::kFlowAdd, id, std::move(f), {}, {}, cookie, 0}, now_ns);
}
bool EmuNic::flow_destroy(unsigned q, uint32_t id, uint64_t cookie, uint64_t now_ns) {
  return submit(q, Op{Op::kFlowDel, id, {}, {}, {}, cookie, 0}, now_ns);
}
bool EmuNic::ct_create(unsigned q, uint32_t ct, const rte_flow_action_conntrack& prof, uint64_t cookie,
                       uint64_t now_ns) {
  return submit(q, Op{Op::kCtAdd, ct, {}, prof, {}, cookie, 0}, now_ns);
}
bool EmuNic::ct_update(unsigned q, uint32_t ct, const rte_flow_modify_conntrack& m, uint64_t cookie, uint64_t now_ns) {
  return submit(q, Op{Op::kCtUpd, ct, {}, {}, m, cookie, 0}, now_ns);
}
bool EmuNic::ct_destroy(unsigned q, uint32_t ct, uint64_t cookie, uint64_t now_ns) {
  return submit(q, Op{Op::kCtDel, ct, {}, {}, {}, cookie, 0}, now_ns);
}

bool EmuNic::can_submit(unsigned q, uint32_t n) const { return queues_[q]->ops.space() >= n; }

uint32_t EmuNic::poll(unsigned q, Completion* out, uint32_t max) {
  uint32_t n = 0;
  while (n < max) {
    const Completion* c = queues_[q]->done.front();
    if (!c) break;
    out[n++] = *c;
    queues_[q]->done.pop();
  }
  return n;
}

// ------------------------------------------------------------------ worker side

namespace {

void load_dir(CtDir& d, const rte_flow_tcp_dir_param& p) {
  d.scale = static_cast<uint8_t>(p.scale == 0xF ? 0 : p.scale);
  d.sent_end = p.sent_end;
  d.reply_end = p.reply_end;
  d.max_win = p.max_win;
  d.max_ack = p.max_ack;
}

// The model's parser for one rule. Returns 0 or an errno.
int compile(const hw::Flow& f, const hw::Layout& l, const std::vector<CtCtx>& cts, EmuNic::Rule& r) {
  r.group = f.attr.group;
  r.prio = f.attr.priority;
  for (const auto& it : f.pattern) {
    switch (it.type) {
      case RTE_FLOW_ITEM_TYPE_END:
        break;
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT:
        r.in_port = port_index(l, static_cast<const rte_flow_item_ethdev*>(it.spec)->port_id);
        if (r.in_port < 0) return ENODEV;
        break;
      case RTE_FLOW_ITEM_TYPE_ETH:
        if (it.spec) {
          const auto* s = static_cast<const rte_flow_item_eth*>(it.spec);
          const auto* m = static_cast<const rte_flow_item_eth*>(it.mask);
          if (m->hdr.ether_type) {
            r.eth_type_set = true;
            r.eth_type = ntohs(s->hdr.ether_type);
          }
          r.need_vlan = m->has_vlan && s->has_vlan;
        }
        break;
      case RTE_FLOW_ITEM_TYPE_VLAN: {
        const auto* s = static_cast<const rte_flow_item_vlan*>(it.spec);
        const auto* m = static_cast<const rte_flow_item_vlan*>(it.mask);
        r.need_vlan = true;
        if (m->hdr.vlan_tci) {
          r.vid_set = true;
          r.vid = ntohs(s->hdr.vlan_tci) & 0xFFF;
        }
        if (m->hdr.eth_proto) {
          r.eth_type_set = true;
          r.eth_type = ntohs(s->hdr.eth_proto);
        }
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV4: {
        const auto* s = static_cast<const rte_flow_item_ipv4*>(it.spec);
        const auto* m = static_cast<const rte_flow_item_ipv4*>(it.mask);
        r.family = 4;
        memcpy(r.src, &s->hdr.src_addr, 4);
        memcpy(r.smask, &m->hdr.src_addr, 4);
        memcpy(r.dst, &s->hdr.dst_addr, 4);
        memcpy(r.dmask, &m->hdr.dst_addr, 4);
        r.proto = s->hdr.next_proto_id;
        r.proto_mask = m->hdr.next_proto_id;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV6: {
        const auto* s = static_cast<const rte_flow_item_ipv6*>(it.spec);
        const auto* m = static_cast<const rte_flow_item_ipv6*>(it.mask);
        r.family = 6;
        memcpy(r.src, s->hdr.src_addr, 16);
        memcpy(r.smask, m->hdr.src_addr, 16);
        memcpy(r.dst, s->hdr.dst_addr, 16);
        memcpy(r.dmask, m->hdr.dst_addr, 16);
        r.proto = s->hdr.proto;
        r.proto_mask = m->hdr.proto;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_TCP: {
        const auto* s = static_cast<const rte_flow_item_tcp*>(it.spec);
        const auto* m = static_cast<const rte_flow_item_tcp*>(it.mask);
        r.l4 = IPPROTO_TCP;
        r.sport = ntohs(s->hdr.src_port);
        r.sport_mask = ntohs(m->hdr.src_port);
        r.dport = ntohs(s->hdr.dst_port);
        r.dport_mask = ntohs(m->hdr.dst_port);
        r.tcpf = s->hdr.tcp_flags;
        r.tcpf_mask = m->hdr.tcp_flags;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_UDP: {
        const auto* s = static_cast<const rte_flow_item_udp*>(it.spec);
        const auto* m = static_cast<const rte_flow_item_udp*>(it.mask);
        r.l4 = IPPROTO_UDP;
        r.sport = ntohs(s->hdr.src_port);
        r.sport_mask = ntohs(m->hdr.src_port);
        r.dport = ntohs(s->hdr.dst_port);
        r.dport_mask = ntohs(m->hdr.dst_port);
        break;
      }
      case RTE_FLOW_ITEM_TYPE_CONNTRACK:
        r.ct_item = true;
        r.ct_spec = static_cast<const rte_flow_item_conntrack*>(it.spec)->flags;
        r.ct_mask = static_cast<const rte_flow_item_conntrack*>(it.mask)->flags;
        break;
      default:
        return ENOTSUP;
    }
  }
  for (const auto& a : f.actions) {
    switch (a.type) {
      case RTE_FLOW_ACTION_TYPE_END:
      case RTE_FLOW_ACTION_TYPE_AGE:  // the provider reads last-hit times from the counter
        break;
      case RTE_FLOW_ACTION_TYPE_COUNT:
        r.count = true;
        break;
      case RTE_FLOW_ACTION_TYPE_INDIRECT: {
        auto h = reinterpret_cast<uintptr_t>(a.conf);
        if (h == 0 || h > cts.size() || !cts[h - 1].alive) return ENOENT;
        // mlx5: conntrack only in non-root groups and on TCP rules.
        if (r.group == 0 || r.l4 != IPPROTO_TCP) return ENOTSUP;
        r.ct = static_cast<int>(h - 1);
        r.ct_dir = cts[h - 1].orig_dir ? 0 : 1;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_JUMP:
        r.fate = EmuNic::Rule::kJump;
        r.jump = static_cast<const rte_flow_action_jump*>(a.conf)->group;
        if (r.jump <= r.group) return EINVAL;  // forward only, like our tables
        break;
      case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT:
        r.fate = EmuNic::Rule::kOut;
        r.out = static_cast<int16_t>(port_index(l, static_cast<const rte_flow_action_ethdev*>(a.conf)->port_id));
        if (r.out < 0) return ENODEV;
        break;
      case RTE_FLOW_ACTION_TYPE_PORT_REPRESENTOR:
      case RTE_FLOW_ACTION_TYPE_RSS:
      case RTE_FLOW_ACTION_TYPE_QUEUE:
        r.fate = EmuNic::Rule::kSw;
        break;
      case RTE_FLOW_ACTION_TYPE_MARK:
        r.mark = true;
        r.mark_id = static_cast<const rte_flow_action_mark*>(a.conf)->id;
        break;
      case RTE_FLOW_ACTION_TYPE_DROP:
        r.fate = EmuNic::Rule::kDrop;
        break;
      default:
        return ENOTSUP;
    }
  }
  // MARK without a fate: the packet goes to software with the mark.
  if (r.fate == EmuNic::Rule::kNone) r.fate = EmuNic::Rule::kSw;
  int alen = r.family == 4 ? 4 : 16;
  auto full = [&](const uint8_t* m) { return std::all_of(m, m + alen, [](uint8_t b) { return b == 0xFF; }); };
  r.exact = r.group != 0 && r.in_port >= 0 && r.family && full(r.smask) && full(r.dmask) && r.proto_mask == 0xFF &&
            r.l4 && r.sport_mask == 0xFFFF && r.dport_mask == 0xFFFF && !r.tcpf_mask && !r.ct_item && !r.need_vlan &&
            !r.eth_type_set;
  if (r.exact) {
    memcpy(r.key.src, r.src, static_cast<size_t>(alen));
    memcpy(r.key.dst, r.dst, static_cast<size_t>(alen));
    r.key.sport = r.sport;
    r.key.dport = r.dport;
    r.key.zone = static_cast<uint16_t>(r.in_port);
    r.key.proto = r.proto;
    r.key.family = static_cast<uint8_t>(r.family);
  }
  return 0;
}

}  // namespace

uint32_t EmuNic::service(unsigned qi, uint64_t now_ns) {
  Queue& q = *queues_[qi];
  uint32_t n = 0;
  while (Op* op = q.ops.front()) {
    if (op->due > now_ns || q.done.full()) break;  // a full completion ring waits for control
    int err = 0;
    switch (op->kind) {
      case Op::kFlowAdd: {
        if (op->id >= q.rules.size() || q.rules[op->id].live) {
          err = EEXIST;
          break;
        }
        Rule& r = q.rules[op->id];
        r = Rule{};
        r.id = op->id;
        if ((err = compile(op->flow, layout_, q.ct, r)) != 0) break;
        if (r.group >= q.groups.size()) q.groups.resize(r.group + 1);
        auto& g = q.groups[r.group];
        if (r.exact) {
          if (exact_used_.load(std::memory_order_relaxed) >= cfg_.table_size) {
            err = ENOSPC;
            break;
          }
          if (!q.exact.insert(&r)) {
            err = EEXIST;
            break;
          }
          exact_used_.fetch_add(1, std::memory_order_relaxed);
        } else {
          if (q.masked_used >= cfg_.rule_size) {
            err = ENOSPC;
            break;
          }
          auto at = std::upper_bound(g.masked.begin(), g.masked.end(), r.prio,
                                     [](uint32_t p, const Rule* x) { return p < x->prio; });
          g.masked.insert(at, &r);
          __atomic_store_n(&q.masked_used, q.masked_used + 1, __ATOMIC_RELAXED);
        }
        if (r.ct >= 0) q.ct[static_cast<size_t>(r.ct)].users++;
        reset_counter(op->id);
        r.live = true;
        break;
      }
      case Op::kFlowDel: {
        if (op->id >= q.rules.size() || !q.rules[op->id].live) {
          err = ENOENT;
          break;
        }
        Rule& r = q.rules[op->id];
        if (r.exact) {
          q.exact.erase(&r);
          exact_used_.fetch_sub(1, std::memory_order_relaxed);
        } else {
          auto& m = q.groups[r.group].masked;
          m.erase(std::find(m.begin(), m.end(), &r));
          __atomic_store_n(&q.masked_used, q.masked_used - 1, __ATOMIC_RELAXED);
        }
        if (r.ct >= 0) q.ct[static_cast<size_t>(r.ct)].users--;
        r.live = false;
        break;
      }
      case Op::kCtAdd: {
        if (op->id >= q.ct.size() || q.ct[op->id].alive) {
          err = op->id >= q.ct.size() ? ENOSPC : EEXIST;
          break;
        }
        CtCtx& c = q.ct[op->id];
        c = CtCtx{};
        c.alive = true;
        c.orig_dir = op->ct.is_original_dir;
        c.liberal = op->ct.liberal_mode;
        c.enable = op->ct.enable;
        load_dir(c.d[0], op->ct.original_dir);
        load_dir(c.d[1], op->ct.reply_dir);
        __atomic_store_n(&q.ct_used, q.ct_used + 1, __ATOMIC_RELAXED);
        break;
      }
      case Op::kCtUpd: {
        if (op->id >= q.ct.size() || !q.ct[op->id].alive) {
          err = ENOENT;
          break;
        }
        CtCtx& c = q.ct[op->id];
        if (op->mod.direction) c.orig_dir = op->mod.new_ct.is_original_dir;
        if (op->mod.state) {
          c.liberal = op->mod.new_ct.liberal_mode;
          c.enable = op->mod.new_ct.enable;
          load_dir(c.d[0], op->mod.new_ct.original_dir);
          load_dir(c.d[1], op->mod.new_ct.reply_dir);
        }
        break;
      }
      case Op::kCtDel: {
        if (op->id >= q.ct.size() || !q.ct[op->id].alive) {
          err = ENOENT;
          break;
        }
        if (q.ct[op->id].users) {  // mlx5 refuses to destroy a context rules still use
          err = EBUSY;
          break;
        }
        q.ct[op->id].alive = false;
        __atomic_store_n(&q.ct_used, q.ct_used - 1, __ATOMIC_RELAXED);
        break;
      }
    }
    q.done.push(Completion{op->cookie, err});
    op->flow = hw::Flow{};  // free its storage here, in the NIC's thread
    q.ops.pop();
    n++;
  }
  return n;
}

namespace {

// Linux tcp_in_window, as the NIC's conntrack module runs it.
uint32_t ct_check(CtCtx& c, int dir, const ctrack::Packet& p) {
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

bool match(const EmuNic::Rule& r, const ctrack::Parsed& pp, int in_port, uint32_t ct_flags) {
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
    if (p.key.proto != r.l4 || (p.meta & ctrack::kMetaFragment)) return false;
    if (((p.key.sport ^ r.sport) & r.sport_mask) || ((p.key.dport ^ r.dport) & r.dport_mask)) return false;
    if ((p.tcp_flags ^ r.tcpf) & r.tcpf_mask) return false;
  }
  if (r.ct_item && ((ct_flags ^ r.ct_spec) & r.ct_mask)) return false;
  return true;
}

}  // namespace

int16_t EmuNic::rx(unsigned qi, PacketIn& in, uint64_t now_ns) {
  Queue& q = *queues_[qi];
  q.st.rx++;
  ctrack::Parsed pp;
  if (ctrack::parse_packet(in.data, in.len, 0, &pp) != ctrack::Drop::kNone) {
    q.st.to_software++;  // software counts the reason
    return kNicMiss;
  }
  ctrack::Key k = pp.ct.key;
  k.zone = in.port;
  bool exact_ok = pp.kind == ctrack::L3Kind::kIp && !(pp.ct.meta & ctrack::kMetaFragment);
  uint32_t ct_flags = 0;
  uint32_t g = 0;
  for (int hops = 0; hops < 8 && g < q.groups.size(); hops++) {
    auto& grp = q.groups[g];
    Rule* r = nullptr;
    if (exact_ok && g != 0) r = q.exact.find(g, k);
    if (!r) {
      for (Rule* x : grp.masked)
        if (match(*x, pp, in.port, ct_flags)) {
          r = x;
          break;
        }
    }
    if (!r) break;
    if (r->count) {
      Counter& c = counters_[r->id];
      c.packets.fetch_add(1, std::memory_order_relaxed);
      c.bytes.fetch_add(in.pkt_len, std::memory_order_relaxed);
      c.last_hit_ns.store(now_ns, std::memory_order_relaxed);
    }
    if (r->ct >= 0) {
      ct_flags = ct_check(q.ct[static_cast<size_t>(r->ct)], r->ct_dir, pp.ct);
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_INVALID) q.st.ct_invalid++;
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_CHANGED) q.st.ct_changed++;
    }
    if (r->mark) {
      in.has_mark = true;
      in.mark = r->mark_id;
    }
    switch (r->fate) {
      case Rule::kOut:
        q.st.forwarded++;
        return r->out;
      case Rule::kDrop:
        q.st.dropped++;
        return -1;
      case Rule::kJump:
        g = r->jump;
        continue;
      default:
        q.st.to_software++;
        return kNicMiss;
    }
  }
  q.st.to_software++;
  return kNicMiss;
}

}  // namespace dp
