// The mlx5 22.11 hardware-steering model behind the rte_flow seam. See
// nic_model.h. Driver citations are relative to
// ../shared/reference/dpdk-v22.11.11/ (drivers/net/mlx5/ unless a path says
// otherwise); the rule table below lists every one.
#include "dataplane/nic_model.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>

#include "ctrack/parse.h"
#include "sdn/clock.h"

namespace dp {

// ------------------------------------------------------------------ rules

const std::vector<NicProfile>& nic_profiles() {
  static const std::vector<NicProfile> p = {
      {"cx6dx-legacy", false, false,
       "ConnectX-6 Dx as shipped: e-switch in legacy mode, each PF its own NIC Rx domain, conntrack per port"},
      {"cx6dx-switchdev", true, false,
       "ConnectX-6 Dx in switchdev mode: PF (E-Switch manager) and representors; no conntrack in the FDB"},
      {"bf2-switchdev", true, false,
       "BlueField-2 Arm side (switchdev): uplink p0 (E-Switch manager) and representors; no conntrack in the FDB"},
      {"cx6dx-switchdev-ct-fdb", true, true,
       "switchdev with a firmware that takes conntrack in the FDB (model option: keeps that path tested)"},
  };
  return p;
}

const NicProfile* find_nic_profile(const std::string& name) {
  for (const auto& p : nic_profiles())
    if (name == p.name) return &p;
  return nullptr;
}

bool Mlx5ModelConfig::apply_profile(const std::string& name) {
  const NicProfile* p = find_nic_profile(name);
  if (!p) return false;
  profile = name;
  esw = p->esw;
  ct_in_fdb = p->ct_in_fdb;
  return true;
}

const std::vector<std::pair<const char*, const char*>>& Mlx5Model::rules() {
  static const std::vector<std::pair<const char*, const char*>> r = {
      {"no-validate", "mlx5_flow.c:3890-3902 calls fops->validate; the HWS ops table mlx5_flow_hw.c:8692-8719 has none"},
      {"info-get", "mlx5_flow_hw.c:5024-5046: queues and counters reported, max_nb_conn_tracks left 0"},
      {"configure-port-state", "lib/ethdev/rte_flow.c:1488-1499: configured and not started"},
      {"configure-queues", "mlx5_flow_hw.c:7055-7073: at least one queue, all the same size"},
      {"configure-busy", "mlx5_flow_hw.c:7127-7136: reconfigure with operations in flight is EBUSY"},
      {"configure-age-counters", "mlx5_flow_hw.c:7316-7326: aging objects need counters"},
      {"configure-ct-pool", "mlx5_flow_hw.c:7327-7339: a conntrack pool only when nb_conn_tracks > 0"},
      {"proxy-needs-esw",
       "linux/mlx5_os.c:186-187 (dv_esw_en only in switchdev mode) and mlx5_flow.c:11530-11543: no transfer proxy "
       "without an E-Switch, nor for a port that is neither its manager nor a representor"},
      {"ct-fdb",
       "mlx5_flow_hw.c:6602-6606 and 7302-7304: the E-Switch manager's conntrack pool takes the FDB flag; "
       "mlx5.rst:1548-1551 lists conntrack with E-Switch as N/A in 22.11 (profile option ct_in_fdb)"},
      {"ct-port-limit", "mlx5_flow_hw.c:7786-7792, mlx5_flow.h:76-92: conntrack objects only on port ids below 16"},
      {"ct-queue-depth",
       "mlx5.h:592 (22.11.11: MLX5_ASO_QUEUE_LOG_DESC 10), mlx5_flow_aso.c:1137-1141 and 1190-1196, "
       "mlx5_flow_hw.c:7805-7810 (create: EBUSY), 7748-7753 and 7704-7708 (update, query: EIO): 1024 conntrack "
       "WQEs per queue; a full queue fails the call at once"},
      {"counter-reuse",
       "mlx5_hws_cnt.h:384-388 and 436-452, mlx5_hws_cnt.c:63-92, mlx5_defs.h:188 (22.11.11): a freed counter "
       "waits for the counter service's next cycle (500 ms); none free but waiting is EAGAIN, none at all ENOENT"},
      {"hws-configured", "mlx5_flow_hw.c:56-66 (mlx5_hw_ctx_validate): template calls need rte_flow_configure"},
      {"pt-direction", "mlx5_flow_hw.c:4704-4736: direction attributes per port role"},
      {"pt-represented-port", "mlx5_flow_hw.c:4786-4795: no REPRESENTED_PORT item with ingress (repr_matching)"},
      {"pt-item-type", "mlx5_flow_hw.c:4738-4853: supported pattern items"},
      {"pt-item-mask", "hws/mlx5dr_definer.c:420,497,549-553,766: reserved/length/checksum masks are ENOTSUP"},
      {"at-transfer-proxy", "mlx5_flow_hw.c:3956-3962: transfer actions only on the proxy port"},
      {"at-mask-type", "mlx5_flow_hw.c:3968-3973: mask type must equal action type (INDIRECT excepted)"},
      {"at-indirect-mask", "mlx5_flow_hw.c:3675-3741: the INDIRECT mask carries the real action type"},
      {"at-action-type", "mlx5_flow_hw.c:3975-4108: actions supported in the template API"},
      {"at-count-pool", "mlx5_flow_hw.c:3593-3616: COUNT needs the counter pool, once per rule"},
      {"at-age-pool", "mlx5_flow_hw.c:3547-3571: AGE needs the aging pool, once per rule"},
      {"table-templates", "mlx5_flow_hw.c:3097-3113: the root table takes one pattern template"},
      {"table-attr", "mlx5_flow_hw.c:3136-3142: pattern template direction must match the table's"},
      {"table-group", "mlx5_flow_hw.c:3271-3297: transfer group N is table N+1 (fdb_def_rule)"},
      {"root-indirect", "mlx5_flow_hw.c:1389-1393: no indirect action in the root table"},
      {"root-count-age", "mlx5_flow_hw.c:1590-1622: no COUNT or AGE in the root table"},
      {"action-order", "hws/mlx5dr_action.c:11-73 checked by hws/mlx5dr_matcher.c:359-366 for non-root tables"},
      {"ipv6-5tuple", "doc/guides/nics/mlx5.rst:163 and hws/mlx5dr_definer.c:1820-1842: no IPv6 5-tuple definer"},
      {"rule-port", "mlx5_flow_hw.c:2517-2600: a rule goes to the port whose HWS context owns the table"},
      {"rule-queue", "mlx5_flow_hw.c:2542-2545, 7938-7944: queue id and free job slot (ENOMEM when full)"},
      {"rule-table-full", "mlx5_flow_hw.c:2546-2548 with 3094/3102: nb_flows (power of two) rules per table"},
      {"rule-shape", "mlx5_flow_hw.c:2566-2583: a rule's items and actions follow its templates"},
      {"mark-range", "mlx5_flow.c:1896-1901: MARK id below MLX5_FLOW_MARK_MAX (0xfffff0; the CQE flow tag)"},
      {"vport-domain", "mlx5_flow_hw.c:3484-3530: REPRESENTED_PORT only to ports of the same E-Switch"},
      {"ct-pool", "mlx5_flow_hw.c:7779-7785: conntrack objects need a CT pool (CT is not enabled)"},
      {"ct-profile", "mlx5_flow.c:2311-2326: state <= TIME_WAIT, last_index <= RST"},
      {"ct-alloc", "mlx5_flow_hw.c:7795-7800: no free conntrack object"},
      {"ct-owner", "mlx5_flow_hw.c:7727-7731: update only on the owning port"},
      {"ct-in-use", "mlx5_flow_hw.c:7653-7676: destroy frees the slot at once; rules still using it would share it"},
      {"ct-freed", "mlx5_flow_hw.c:416-418 and mlx5_flow_aso.c:1750-1752: a rule on a freed object is refused"},
      {"template-in-use", "mlx5_flow_hw.c:3377-3395, 4635-4648, 4990-5000: EBUSY while referenced"},
      {"start-order", "mlx5_trigger.c:1089-1131, 1160-1175: representors start after the proxy, HWS-configured"},
      {"stop-order", "mlx5_trigger.c:1391-1420, 1440-1456: the proxy stops after its representors"},
      {"no-rx-flows", "mlx5_flow_hw.c:9820-9825, mlx5_trigger.c:1112-1118: no rte_flow_configure, no Rx flows"},
      {"fdb-miss", "hws/mlx5dr_table.c:17-52,100-120: an FDB miss goes to the E-Switch manager"},
      {"nic-miss", "hws/mlx5dr_table.c:100-120: NIC Rx tables get no miss table: a non-root miss drops"},
      {"query", "mlx5_flow_hw.c:8292-8405: COUNT and AGE queries only"},
      {"aged-flows", "mlx5_flow_hw.c:8613-8658: the aged-flow ring, each aged rule's AGE context once"},
      {"not-modelled", "model: accepted by the driver but not interpreted by this model"},
  };
  return r;
}

namespace {

using sdn::mono_ns;

constexpr uint32_t kMarkMax = 0xfffff0;  // MLX5_FLOW_MARK_MAX
constexpr uint32_t kMaxGroups = 4096;    // model limit on internal group ids
constexpr size_t kConfMax = 64;          // bytes of an item mask / action conf kept per template

const char* rule_source(const char* name) {
  for (const auto& [n, s] : Mlx5Model::rules())
    if (!strcmp(n, name)) return s;
  return "?";
}

// Steering action types in the order the hardware runs them (mlx5dr).
enum Dr : uint8_t { kDrTag, kDrCtr, kDrAsoCt, kDrFt, kDrTir, kDrDrop, kDrVport, kDrLast };
constexpr uint32_t bit(Dr d) { return 1u << d; }
// hws/mlx5dr_action.c:17-73, the entries our action types can take.
const std::vector<uint32_t> kOrderRx = {bit(kDrTag), bit(kDrCtr), bit(kDrAsoCt),
                                        bit(kDrFt) | bit(kDrTir) | bit(kDrDrop)};
const std::vector<uint32_t> kOrderFdb = {bit(kDrCtr), bit(kDrAsoCt),
                                         bit(kDrFt) | bit(kDrVport) | bit(kDrDrop)};

bool combo_ok(const std::vector<Dr>& acts, bool fdb) {
  const auto& order = fdb ? kOrderFdb : kOrderRx;
  size_t u = 0;
  for (uint32_t o : order)
    if (u < acts.size() && (bit(acts[u]) & o)) u++;
  return u == acts.size();
}

inline bool after(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

// Single producer (control), single consumer (one worker).
template <typename T>
class Ring {
 public:
  explicit Ring(uint32_t pow2) : v_(pow2), mask_(pow2 - 1) {}
  bool push(const T& x) {
    uint32_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_.load(std::memory_order_acquire) == v_.size()) return false;
    v_[h & mask_] = x;
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  T* front() {
    uint32_t t = tail_.load(std::memory_order_relaxed);
    if (t == head_.load(std::memory_order_acquire)) return nullptr;
    return &v_[t & mask_];
  }
  void pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  uint32_t space() const {
    return static_cast<uint32_t>(v_.size()) -
           (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
  }

 private:
  std::vector<T> v_;
  uint32_t mask_;
  alignas(64) std::atomic<uint32_t> head_{0};
  alignas(64) std::atomic<uint32_t> tail_{0};
};

// A rule as the hardware runs it (plain data: it crosses the ring).
struct MRule {
  uint32_t id = 0, group = 0, prio = 0, order = 0;
  uint16_t dom = 0;       // FDB: 0xFFFF; NIC Rx: config index of the port
  int16_t in_port = -1;   // config index, -1 any
  bool eth_type_set = false, need_vlan = false, vid_set = false;
  uint16_t eth_type = 0, vid = 0;
  uint8_t family = 0;
  uint8_t src[16] = {}, smask[16] = {}, dst[16] = {}, dmask[16] = {};
  uint8_t proto = 0, proto_mask = 0, l4 = 0;
  uint16_t sport = 0, sport_mask = 0, dport = 0, dport_mask = 0;
  uint8_t tcpf = 0, tcpf_mask = 0;
  bool ct_item = false;
  uint8_t ct_spec = 0, ct_mask = 0;
  bool exact = false;
  ctrack::Key key{};  // exact rules: zone = in_port
  // actions
  bool count = false, age = false;
  uint32_t age_s = 0;
  int32_t ct = -1;
  uint8_t ct_dir = 0;  // 0 initiator, 1 responder
  enum Fate : uint8_t { kNone, kOut, kDrop, kSw, kJump } fate = kNone;
  int16_t out = -1;
  uint32_t jump = 0;  // internal group
  bool mark = false;
  uint32_t mark_id = 0;
};

struct CtDir {
  uint8_t scale = 0;
  uint32_t sent_end = 0, reply_end = 0, max_win = 0, max_ack = 0;
};
struct CtState {
  bool alive = false, liberal = false, enable = true;
  CtDir d[2];
};

void load_ct(CtState& c, const rte_flow_action_conntrack& p) {
  c.alive = true;
  c.liberal = p.liberal_mode;
  c.enable = p.enable;
  const rte_flow_tcp_dir_param* src[2] = {&p.original_dir, &p.reply_dir};
  for (int d = 0; d < 2; d++) {
    c.d[d].scale = static_cast<uint8_t>(src[d]->scale == 0xF ? 0 : src[d]->scale);
    c.d[d].sent_end = src[d]->sent_end;
    c.d[d].reply_end = src[d]->reply_end;
    c.d[d].max_win = src[d]->max_win;
    c.d[d].max_ack = src[d]->max_ack;
  }
}

void store_ct(rte_flow_action_conntrack& p, const CtState& c) {
  p.enable = c.enable;
  p.liberal_mode = c.liberal;
  p.state = RTE_FLOW_CONNTRACK_STATE_ESTABLISHED;
  rte_flow_tcp_dir_param* dst[2] = {&p.original_dir, &p.reply_dir};
  for (int d = 0; d < 2; d++) {
    dst[d]->scale = c.d[d].scale;
    dst[d]->sent_end = c.d[d].sent_end;
    dst[d]->reply_end = c.d[d].reply_end;
    dst[d]->max_win = c.d[d].max_win;
    dst[d]->max_ack = c.d[d].max_ack;
  }
}

struct Op {
  enum Kind : uint8_t { kFlowAdd, kFlowDel, kCtSet, kCtDel, kCtQuery, kNop } kind = kFlowAdd;
  uint32_t slot = 0;  // kCtQuery: where each replica leaves the context
  uint64_t seq = 0, due = 0;
  uint32_t id = 0;
  MRule rule;
  CtState ct;
};

// Exact-match entries: open addressing, linear probing, backward-shift
// deletion; preallocated like the NIC's own tables.
class Exact {
 public:
  explicit Exact(uint32_t entries) {
    uint32_t n = 1024;
    while (n < 2 * entries) n <<= 1;
    slot_.assign(n, nullptr);
    mask_ = n - 1;
  }
  const MRule* find(uint32_t group, const ctrack::Key& k) const {
    for (uint32_t i = home(group, k);; i = (i + 1) & mask_) {
      const MRule* r = slot_[i];
      if (!r) return nullptr;
      if (r->group == group && r->key == k) return r;
    }
  }
  bool insert(const MRule* r) {
    for (uint32_t i = home(r->group, r->key);; i = (i + 1) & mask_) {
      if (!slot_[i]) {
        slot_[i] = r;
        return true;
      }
      if (slot_[i]->group == r->group && slot_[i]->key == r->key) return false;
    }
  }
  void erase(const MRule* r) {
    uint32_t i = home(r->group, r->key);
    while (slot_[i] != r) {
      if (!slot_[i]) return;
      i = (i + 1) & mask_;
    }
    for (uint32_t j = (i + 1) & mask_; slot_[j]; j = (j + 1) & mask_) {
      uint32_t h = home(slot_[j]->group, slot_[j]->key);
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
  std::vector<const MRule*> slot_;
  uint32_t mask_;
};

struct Counter {
  std::atomic<uint64_t> packets{0}, bytes{0}, last_hit_ns{0};
};

// One rx queue's copy of the steering state.
struct Replica {
  Replica(const Mlx5ModelConfig& c, size_t nports)
      : ops(c.ring), exact(c.max_flows), rules(c.max_flows), qout(c.ring), port_hws(nports, 0) {
    masked.reserve(c.max_masked);
  }
  Ring<Op> ops;
  std::atomic<uint64_t> applied{0};
  Exact exact;
  std::vector<MRule> rules;        // by flow id
  std::vector<const MRule*> masked;  // sorted by (group, prio, order); never grows past its reservation
  std::vector<CtState> ct;         // by object index (sized at configure, before workers run)
  std::vector<CtState> qout;       // conntrack query results, by query slot
  std::vector<uint8_t> port_hws;   // rte_flow_configure ran on the port (set at configure, before workers run)
  NicStats st;
};

}  // namespace

NicStats& NicStats::operator+=(const NicStats& o) {
  rx += o.rx;
  forwarded += o.forwarded;
  dropped += o.dropped;
  to_software += o.to_software;
  ct_invalid += o.ct_invalid;
  ct_changed += o.ct_changed;
  no_rx_flows += o.no_rx_flows;
  miss_dropped += o.miss_dropped;
  return *this;
}

// ------------------------------------------------------------------ control state

struct Mlx5Model::Impl {
  struct ItemShape {
    rte_flow_item_type type;
    bool has_mask = false;
    alignas(8) std::array<uint8_t, kConfMax> mask{};
  };
  struct PT {
    uint16_t port;
    rte_flow_pattern_template_attr attr;
    std::vector<ItemShape> items;
    bool implicit_port = false;
    uint32_t refs = 1;
  };
  struct ActShape {
    rte_flow_action_type type;
    rte_flow_action_type ind = RTE_FLOW_ACTION_TYPE_END;  // INDIRECT: the mask's type
    bool masked = false;                                  // conf fixed by the template
    alignas(8) std::array<uint8_t, kConfMax> conf{};
  };
  struct AT {
    uint16_t port;
    rte_flow_actions_template_attr attr;
    std::vector<ActShape> acts;
    std::vector<Dr> dr;
    bool has_count = false, has_age = false, has_indirect = false;
    uint32_t refs = 1;
  };
  struct Table {
    uint16_t port;
    rte_flow_template_table_attr attr;
    uint32_t igroup;
    bool root, fdb;
    PT* pt;
    AT* at;
    uint32_t cap, base, used = 0;
    std::vector<uint32_t> free;
    bool translated = false;
    uint32_t refs = 0;  // rules
  };
  struct FlowRec {
    enum St : uint8_t { kFree, kLive, kDestroying } st = kFree;
    Table* t = nullptr;
    int32_t ct = -1;
    bool exact = false;
    uint32_t age_s = 0;
    bool counter = false;  // holds a counter of its table's port
    void* age_ctx = nullptr;  // AGE: what the aged-flow ring reports
    bool aged = false;        // reported (again only after a hit)
    uint64_t aged_last = 0;   // the last hit when it was reported
  };
  struct CtObj {
    bool used = false, is_original = true;
    uint16_t owner = 0;
    uint32_t refs = 0;  // rules that reference it in hardware (live, being created or being destroyed)
  };
  struct Pending {
    uint64_t seq;
    uint64_t due;
    void* user;
    bool ok;
    enum Kind : uint8_t { kFlowCreate, kFlowDestroy, kCt, kCtQuery } kind;
    uint32_t id;
    void* data = nullptr;  // kCtQuery: the caller's rte_flow_action_conntrack
    uint32_t slot = 0;
    bool wqe = false;      // holds a conntrack WQE until pulled
  };
  struct FlowQueue {
    uint32_t size = 0, jobs = 0;  // jobs: taken, not yet pulled
    uint32_t ct_wqes = 0;         // conntrack WQEs posted, completion not yet pulled
    std::vector<Op> unpushed;
    std::vector<Pending> unpushed_done;
    std::deque<Pending> inflight;
  };
  struct Port {
    uint16_t id;
    size_t index;
    bool proxy = false;
    bool started = false;
    bool hws = false;  // rte_flow_configure succeeded (priv->dr_ctx)
    uint32_t counters = 0, aging = 0;
    std::vector<uint32_t> ct_free;        // this port's conntrack pool (global object indexes)
    uint32_t ct_cap = 0;
    uint32_t cnt_taken = 0;               // counters held by rules (COUNT or AGE)
    std::deque<uint64_t> cnt_waiting;     // freed counters: when each can be taken again
    uint64_t cnt_t0 = 0;                  // the counter service's cycles count from configure
    std::vector<FlowQueue> q;
    bool ct_pool = false;
  };

  explicit Impl(const Mlx5ModelConfig& c, const std::vector<uint16_t>& ids) : counters(c.max_flows) {
    for (size_t i = 0; i < ids.size(); i++) {
      Port p;
      p.id = ids[i];
      p.index = i;
      p.proxy = c.esw && i == 0;
      ports.push_back(std::move(p));
    }
    for (unsigned q = 0; q < std::max(1u, c.rx_queues); q++)
      replicas.push_back(std::make_unique<Replica>(c, ids.size()));
    flows.resize(c.max_flows);
    for (uint32_t i = c.ring; i-- > 0;) qslots.push_back(i);
  }

  Port* port(uint16_t id) {
    for (auto& p : ports)
      if (p.id == id) return &p;
    return nullptr;
  }
  int index_of(uint16_t id) const {
    for (const auto& p : ports)
      if (p.id == id) return static_cast<int>(p.index);
    return -1;
  }

  std::vector<Port> ports;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<Counter> counters;  // by flow id
  std::vector<FlowRec> flows;
  std::vector<std::pair<uint32_t, uint32_t>> id_ranges_free;  // [base, base+cap) ranges returned by tables
  uint32_t next_id = 0;
  std::vector<std::unique_ptr<PT>> pts;
  std::vector<std::unique_ptr<AT>> ats;
  std::vector<std::unique_ptr<Table>> tables;
  std::vector<CtObj> cts;  // the CT pool (one owner: the port it was configured on)
  uint32_t ct_live = 0;  // conntrack objects allocated, over every port
  uint32_t ct_wqes_max = 0;  // the most conntrack WQEs out on one queue at once
  uint64_t seq = 0;
  uint64_t next_slot_ns = 0;
  uint32_t order = 0;
  uint32_t masked_count = 0;
  std::vector<uint64_t> flow_created_ns;  // for AGE queries
  uint32_t age_cursor = 0;                 // where the next aged-flow sweep starts
  std::vector<uint32_t> qslots;           // free conntrack query slots
  uint64_t flows_used = 0;
};

// ------------------------------------------------------------------ helpers

namespace {

struct Ctx {
  Mlx5Model* m;
  Mlx5Model::Impl* s;
};

}  // namespace

// The calls the seam table points at, with access to the model's insides.
struct ModelCalls {
  using Impl = Mlx5Model::Impl;

  static Mlx5Model& M(void* self) { return *static_cast<Mlx5Model*>(self); }

  static int refuse(Mlx5Model& m, rte_flow_error* e, int err, const char* rule, const std::string& msg) {
    m.refusals_++;
    m.last_error_ = std::string(rule) + ": " + msg + " [" + rule_source(rule) + "]";
    rte_errno = err;
    if (e) {
      e->type = RTE_FLOW_ERROR_TYPE_UNSPECIFIED;
      e->cause = nullptr;
      // The driver's messages are static strings; ours live in last_error_
      // until the next refusal.
      e->message = m.last_error_.c_str();
    }
    return -err;
  }
  template <typename T>
  static T* refuse_null(Mlx5Model& m, rte_flow_error* e, int err, const char* rule, const std::string& msg) {
    refuse(m, e, err, rule, msg);
    return nullptr;
  }

  static bool hws_ok(Mlx5Model& m, Impl::Port* p, rte_flow_error* e) {
    if (!p) {
      refuse(m, e, ENODEV, "rule-port", "no such port in the model");
      return false;
    }
    if (!p->hws) {
      refuse(m, e, EINVAL, "hws-configured", "non-template flow engine was not configured");
      return false;
    }
    return true;
  }

  // ---------------------------------------------------------------- info, configure

  static int info_get(void* self, uint16_t port, rte_flow_port_info* pi, rte_flow_queue_info* qi, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    if (!m.impl_->port(port)) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
    // mlx5_flow_hw.c:5034-5045
    memset(pi, 0, sizeof *pi);
    pi->max_nb_queues = UINT32_MAX;
    qi->max_size = UINT32_MAX;
    pi->max_nb_counters = m.cfg_.max_counters;
    pi->max_nb_aging_objects = pi->max_nb_counters;
    return 0;
  }

  static int configure(void* self, uint16_t port, const rte_flow_port_attr* pa, uint16_t nb_queue,
                       const rte_flow_queue_attr* qa[], rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    if (!p) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
    rte_eth_dev_info di{};
    if (rte_eth_dev_info_get(port, &di) != 0 || di.nb_rx_queues == 0)
      return refuse(m, e, EINVAL, "configure-port-state", "Device with port_id=" + std::to_string(port) +
                                                              " is not configured.");
    if (p->started)
      return refuse(m, e, EINVAL, "configure-port-state",
                    "Device with port_id=" + std::to_string(port) + " already started.");
    if (!pa) return refuse(m, e, EINVAL, "configure-queues", "Port attributes must be non-NULL");
    if (nb_queue == 0) return refuse(m, e, EINVAL, "configure-queues", "At least one flow queue is required");
    if (!qa) return refuse(m, e, EINVAL, "configure-queues", "Queue attributes must be non-NULL");
    for (uint16_t i = 1; i < nb_queue; i++)
      if (qa[i]->size != qa[0]->size)
        return refuse(m, e, EINVAL, "configure-queues", "All flow queues must have the same size");
    for (const auto& q : p->q)
      if (q.jobs || !q.inflight.empty() || !q.unpushed.empty())
        return refuse(m, e, EBUSY, "configure-busy", "operations still queued on port " + std::to_string(port));
    if (pa->nb_aging_objects && !pa->nb_counters)
      return refuse(m, e, EINVAL, "configure-age-counters",
                    "Port " + std::to_string(port) + " AGE objects are requested (" +
                        std::to_string(pa->nb_aging_objects) + ") without counters requesting.");
    if (pa->nb_counters > m.cfg_.max_counters)
      return refuse(m, e, ENOMEM, "info-get", "more counters than the device has");
    uint64_t total = static_cast<uint64_t>(qa[0]->size) * nb_queue;
    for (const auto& o : s.ports)
      if (o.id != port)
        for (const auto& q : o.q) total += q.size;
    if (total > m.cfg_.ring)
      return refuse(m, e, ENOMEM, "not-modelled",
                    "flow queues of " + std::to_string(total) + " jobs exceed the model's ring of " +
                        std::to_string(m.cfg_.ring));
    p->q.assign(nb_queue + 1u, {});  // + the PMD's own queue (mlx5_flow_hw.c:7139-7141)
    for (uint16_t i = 0; i < nb_queue; i++) p->q[i].size = qa[i]->size;
    p->q[nb_queue].size = qa[0]->size;
    p->counters = pa->nb_counters;
    p->aging = pa->nb_aging_objects;
    if (pa->nb_conn_tracks > 0 && m.cfg_.esw && p->proxy && !m.cfg_.ct_in_fdb) {
      // The manager port's pool asks for the FDB too, which this firmware
      // refuses: the whole configure fails and leaves the port unconfigured.
      p->hws = false;
      return refuse(m, e, ENOTSUP, "ct-fdb",
                    "fail to configure port: conntrack (" + std::to_string(pa->nb_conn_tracks) +
                        " objects) on the E-Switch manager port " + std::to_string(port) +
                        " is not supported by this NIC profile (" + m.cfg_.profile + ")");
    }
    p->ct_pool = pa->nb_conn_tracks > 0;  // mlx5_flow_hw.c:7327
    if (p->ct_pool && p->ct_cap == 0) {
      // Each port has its own pool (priv->hws_ctpool); the model numbers every
      // port's objects in one index space.
      uint32_t base = static_cast<uint32_t>(s.cts.size());
      s.cts.resize(base + pa->nb_conn_tracks);
      p->ct_free.clear();
      for (uint32_t i = base + pa->nb_conn_tracks; i-- > base;) p->ct_free.push_back(i);
      p->ct_cap = pa->nb_conn_tracks;
      for (auto& r : s.replicas) r->ct.resize(s.cts.size(), CtState{});  // before any worker runs
    }
    p->cnt_taken = 0;
    p->cnt_waiting.clear();
    p->cnt_t0 = m.now();
    p->hws = true;
    for (auto& r : s.replicas) r->port_hws[p->index] = 1;
    return 0;
  }

  // Every mlx5 port has a switch domain (linux/mlx5_os.c:1326-1347): an
  // E-Switch's manager and representors share one, each PF of a NIC in
  // legacy mode has its own (mlx5_ethdev.c:394-417).
  static int switch_info(void* self, uint16_t port, rte_eth_switch_info* out) {
    Mlx5Model& m = M(self);
    Impl::Port* p = m.impl_->port(port);
    if (!p) return -ENODEV;
    *out = rte_eth_switch_info{};
    out->name = "mlx5 model";
    out->domain_id = m.cfg_.esw ? 0 : static_cast<uint16_t>(p->index);
    out->port_id = p->proxy || !m.cfg_.esw ? UINT16_MAX : static_cast<uint16_t>(p->index - 1);
    return 0;
  }

  static int pick_transfer_proxy(void* self, uint16_t port, uint16_t* proxy, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    if (!m.impl_->port(port)) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
    if (!m.cfg_.esw)
      return refuse(m, e, EINVAL, "proxy-needs-esw", "unable to provide a proxy port without E-Switch configured");
    *proxy = m.impl_->ports[0].id;
    return 0;
  }

  static int validate(void*, uint16_t port, const rte_flow_attr*, const rte_flow_item[], const rte_flow_action[],
                      rte_flow_error*) {
    fprintf(stderr,
            "mlx5 model: rte_flow_validate(port %u) on a dv_flow_en=2 port: the driver calls a NULL .validate "
            "here [%s]\n",
            port, rule_source("no-validate"));
    abort();
  }

  // ---------------------------------------------------------------- templates

  static size_t item_size(rte_flow_item_type t) {
    switch (t) {
      case RTE_FLOW_ITEM_TYPE_ETH: return sizeof(rte_flow_item_eth);
      case RTE_FLOW_ITEM_TYPE_VLAN: return sizeof(rte_flow_item_vlan);
      case RTE_FLOW_ITEM_TYPE_IPV4: return sizeof(rte_flow_item_ipv4);
      case RTE_FLOW_ITEM_TYPE_IPV6: return sizeof(rte_flow_item_ipv6);
      case RTE_FLOW_ITEM_TYPE_TCP: return sizeof(rte_flow_item_tcp);
      case RTE_FLOW_ITEM_TYPE_UDP: return sizeof(rte_flow_item_udp);
      case RTE_FLOW_ITEM_TYPE_CONNTRACK: return sizeof(rte_flow_item_conntrack);
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT: return sizeof(rte_flow_item_ethdev);
      default: return 0;
    }
  }

  static bool zero(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    return std::all_of(b, b + n, [](uint8_t x) { return x == 0; });
  }

  // What the hardware can match in one item's mask (mlx5dr_definer.c), and
  // what this model interprets. Empty: fine.
  static std::pair<const char*, std::string> check_mask(const rte_flow_item& it) {
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
      default:
        return {nullptr, ""};
    }
  }

  static rte_flow_pattern_template* pattern_template_create(void* self, uint16_t port,
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
          break;
        case RTE_FLOW_ITEM_TYPE_GTP:
        case RTE_FLOW_ITEM_TYPE_GTP_PSC:
        case RTE_FLOW_ITEM_TYPE_VXLAN:
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
        memcpy(sh.mask.data(), it->mask, item_size(it->type));
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

  template <typename V, typename T>
  static V* find_owned(std::vector<std::unique_ptr<V>>& v, T* h) {
    for (auto& x : v)
      if (reinterpret_cast<T*>(x.get()) == h) return x.get();
    return nullptr;
  }

  static int pattern_template_destroy(void* self, uint16_t, rte_flow_pattern_template* t, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl::PT* pt = find_owned(m.impl_->pts, t);
    if (!pt) return refuse(m, e, EINVAL, "template-in-use", "unknown pattern template");
    if (pt->refs > 1) return refuse(m, e, EBUSY, "template-in-use", "item template is in use");
    std::erase_if(m.impl_->pts, [&](const auto& x) { return x.get() == pt; });
    return 0;
  }

  static rte_flow_actions_template* actions_template_create(void* self, uint16_t port,
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
        case RTE_FLOW_ACTION_TYPE_CONNTRACK:
        case RTE_FLOW_ACTION_TYPE_VXLAN_ENCAP:
        case RTE_FLOW_ACTION_TYPE_NVGRE_ENCAP:
        case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP:
        case RTE_FLOW_ACTION_TYPE_NVGRE_DECAP:
        case RTE_FLOW_ACTION_TYPE_RAW_ENCAP:
        case RTE_FLOW_ACTION_TYPE_RAW_DECAP:
        case RTE_FLOW_ACTION_TYPE_METER_MARK:
        case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD:
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

  static int actions_template_destroy(void* self, uint16_t, rte_flow_actions_template* t, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl::AT* at = find_owned(m.impl_->ats, t);
    if (!at) return refuse(m, e, EINVAL, "template-in-use", "unknown actions template");
    if (at->refs > 1) return refuse(m, e, EBUSY, "template-in-use", "action template is in use");
    std::erase_if(m.impl_->ats, [&](const auto& x) { return x.get() == at; });
    return 0;
  }

  // __flow_hw_actions_translate's root-table refusals and mlx5dr's checks
  // for non-root tables (run at table create on a started port, else at
  // port start).
  static int translate(Mlx5Model& m, Impl::Table& t, rte_flow_error* e) {
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

  static rte_flow_template_table* template_table_create(void* self, uint16_t port,
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
    // IPv6 5-tuple: both addresses and L4 ports in one definer do not fit.
    {
      bool v6src = false, v6dst = false, ports = false;
      for (const auto& it : pt->items) {
        if (!it.has_mask) continue;
        if (it.type == RTE_FLOW_ITEM_TYPE_IPV6) {
          const auto* k = reinterpret_cast<const rte_flow_item_ipv6*>(it.mask.data());
          v6src = !zero(k->hdr.src_addr, 16);
          v6dst = !zero(k->hdr.dst_addr, 16);
        }
        if (it.type == RTE_FLOW_ITEM_TYPE_TCP) {
          const auto* k = reinterpret_cast<const rte_flow_item_tcp*>(it.mask.data());
          ports = k->hdr.src_port || k->hdr.dst_port;
        }
        if (it.type == RTE_FLOW_ITEM_TYPE_UDP) {
          const auto* k = reinterpret_cast<const rte_flow_item_udp*>(it.mask.data());
          ports = k->hdr.src_port || k->hdr.dst_port;
        }
      }
      if (v6src && v6dst && ports && !root)
        return refuse_null<R>(m, e, ENOTSUP, "ipv6-5tuple", "Unable to find supporting match/jumbo definer combination");
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

  static int template_table_destroy(void* self, uint16_t, rte_flow_template_table* h, rte_flow_error* e) {
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

  // ---------------------------------------------------------------- queues

  static Impl::FlowQueue* job(Mlx5Model& m, Impl::Port* p, uint32_t queue, rte_flow_error* e) {
    if (!hws_ok(m, p, e)) return nullptr;
    if (queue + 1 >= p->q.size()) {
      refuse(m, e, EINVAL, "rule-queue", "flow queue " + std::to_string(queue) + " was not configured");
      return nullptr;
    }
    Impl::FlowQueue& q = p->q[queue];
    if (q.jobs >= q.size) {
      refuse(m, e, ENOMEM, "rule-queue", "Flow queue full.");
      return nullptr;
    }
    return &q;
  }

  // Queues an operation for the replicas; it is sent at push (or now, when
  // not postponed).
  static void enqueue(Mlx5Model& m, Impl::FlowQueue& q, Op op, Impl::Pending pd, bool postpone) {
    Impl& s = *m.impl_;
    op.seq = pd.seq = ++s.seq;
    q.jobs++;
    q.unpushed.push_back(std::move(op));
    q.unpushed_done.push_back(pd);
    if (!postpone) send(m, q);
  }

  static void send(Mlx5Model& m, Impl::FlowQueue& q) {
    Impl& s = *m.impl_;
    uint64_t now = m.now();
    for (size_t i = 0; i < q.unpushed.size(); i++) {
      Op& op = q.unpushed[i];
      // One NIC: every queue shares its insertion rate.
      uint64_t due = std::max<uint64_t>(now + m.cfg_.latency_us * 1000ull, s.next_slot_ns);
      s.next_slot_ns = due + (m.cfg_.insert_rate ? 1'000'000'000ull / m.cfg_.insert_rate : 0);
      op.due = due;
      for (auto& r : s.replicas) {
        // The rings hold every job the queues can have out.
        if (!r->ops.push(op)) abort();  // configure keeps every job's operation within the ring
      }
      Impl::Pending pd = q.unpushed_done[i];
      pd.due = due;
      q.inflight.push_back(pd);
    }
    q.unpushed.clear();
    q.unpushed_done.clear();
  }

  // The aged-flow ring (mlx5_flow_hw.c:8613-8658): each rule with AGE whose
  // counter saw no packet for its timeout is reported once, by its AGE
  // context. The hardware sweeps its aging objects in the background; the
  // model sweeps a slice of the rules per call.
  static int get_q_aged_flows(void* self, uint16_t port, uint32_t, void** contexts, uint32_t n, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    if (!hws_ok(m, p, e)) return -rte_errno;
    if (n && !contexts) return refuse(m, e, EINVAL, "aged-flows", "empty context");
    if (!p->aging) return refuse(m, e, ENOENT, "aged-flows", "No aging initialized");
    const uint64_t now = m.now();
    auto aged = [&](uint32_t id) {
      Impl::FlowRec& f = s.flows[id];
      if (f.st != Impl::FlowRec::kLive || !f.age_s || f.t->port != port) return false;
      uint64_t last = std::max(s.counters[id].last_hit_ns.load(std::memory_order_relaxed), s.flow_created_ns[id]);
      if (f.aged && last != f.aged_last) f.aged = false;  // hit since: it may age again
      if (f.aged || now <= last || now - last < f.age_s * 1'000'000'000ull) return false;
      f.aged_last = last;
      return true;
    };
    const uint32_t total = static_cast<uint32_t>(std::min<size_t>(s.flows.size(), s.flow_created_ns.size()));
    if (n == 0) {
      int c = 0;
      for (uint32_t id = 0; id < total; id++) {
        const bool was = s.flows[id].aged;
        c += aged(id);
        s.flows[id].aged = was;  // counting reports nothing
      }
      return c;
    }
    uint32_t k = 0;
    for (uint32_t scanned = 0; scanned < std::min<uint32_t>(total, 65536) && k < n; scanned++) {
      uint32_t id = s.age_cursor++ % std::max<uint32_t>(total, 1);
      if (!aged(id)) continue;
      s.flows[id].aged = true;
      contexts[k++] = s.flows[id].age_ctx;
    }
    return static_cast<int>(k);
  }

  static int push(void* self, uint16_t port, uint32_t queue, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl::Port* p = m.impl_->port(port);
    if (!hws_ok(m, p, e)) return -rte_errno;
    if (queue + 1 >= p->q.size())
      return refuse(m, e, EINVAL, "rule-queue", "flow queue " + std::to_string(queue) + " was not configured");
    send(m, p->q[queue]);
    return 0;
  }

  static int pull(void* self, uint16_t port, uint32_t queue, rte_flow_op_result res[], uint16_t n, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    if (!hws_ok(m, p, e)) return -rte_errno;
    if (queue + 1 >= p->q.size())
      return refuse(m, e, EINVAL, "rule-queue", "flow queue " + std::to_string(queue) + " was not configured");
    uint64_t now = m.now();
    if (m.cfg_.self_service)
      for (auto& r : s.replicas) m.service_replica(r.get(), now);
    uint64_t applied = UINT64_MAX;
    for (auto& r : s.replicas) applied = std::min(applied, r->applied.load(std::memory_order_acquire));
    Impl::FlowQueue& q = p->q[queue];
    int k = 0;
    while (k < n && !q.inflight.empty()) {
      Impl::Pending& pd = q.inflight.front();
      if (pd.due > now || pd.seq > applied) break;
      if (pd.wqe) q.ct_wqes--;
      if (pd.kind == Impl::Pending::kFlowDestroy) {
        // The slot returns to the table when the destruction is pulled
        // (mlx5_flow_hw.c:2824-2839); its counter waits for the service's
        // next cycle (counter-reuse).
        Impl::FlowRec& f = s.flows[pd.id];
        if (f.counter) {
          if (Impl::Port* cp = s.port(f.t->port)) {
            cp->cnt_taken--;
            const uint64_t cyc = m.cfg_.counter_cycle_ms * 1'000'000ull;
            cp->cnt_waiting.push_back(cyc ? cp->cnt_t0 + ((now - cp->cnt_t0) / cyc + 1) * cyc : now);
          }
        }
        f.t->used--;
        f.t->free.push_back(pd.id);
        if (f.ct >= 0) s.cts[static_cast<size_t>(f.ct)].refs--;
        f = Impl::FlowRec{};
        s.flows_used--;
      }
      if (pd.kind == Impl::Pending::kCtQuery) {
        // The context as the NIC has it: every replica's copy, each field at
        // its furthest (only the queue that sees the traffic moves it).
        CtState st = s.replicas[0]->qout[pd.slot];
        for (auto& r : s.replicas) {
          const CtState& o = r->qout[pd.slot];
          for (int d = 0; d < 2; d++) {
            if (after(o.d[d].sent_end, st.d[d].sent_end)) st.d[d].sent_end = o.d[d].sent_end;
            if (after(o.d[d].reply_end, st.d[d].reply_end)) st.d[d].reply_end = o.d[d].reply_end;
            if (after(o.d[d].max_ack, st.d[d].max_ack)) st.d[d].max_ack = o.d[d].max_ack;
            st.d[d].max_win = std::max(st.d[d].max_win, o.d[d].max_win);
          }
        }
        store_ct(*static_cast<rte_flow_action_conntrack*>(pd.data), st);
        s.qslots.push_back(pd.slot);
      }
      res[k].status = pd.ok ? RTE_FLOW_OP_SUCCESS : RTE_FLOW_OP_ERROR;
      res[k].user_data = pd.user;
      k++;
      q.jobs--;
      q.inflight.pop_front();
    }
    return k;
  }

  // ---------------------------------------------------------------- rules

  // Builds the rule the hardware will run from the rule's items/actions and
  // its templates; refuses what the driver or the model would not take.
  static int compile(Mlx5Model& m, Impl::Table& t, const rte_flow_item items[], const rte_flow_action actions[],
                     MRule& r, int32_t* ct_out, rte_flow_error* e) {
    Impl& s = *m.impl_;
    r.group = t.igroup;
    r.prio = t.attr.flow_attr.priority;
    r.dom = t.fdb ? 0xFFFF : static_cast<uint16_t>(s.index_of(t.port));
    if (!t.fdb || t.pt->implicit_port) r.in_port = static_cast<int16_t>(s.index_of(t.port));
    size_t k = 0;
    for (const rte_flow_item* it = items; it->type != RTE_FLOW_ITEM_TYPE_END; it++) {
      if (it->type == RTE_FLOW_ITEM_TYPE_VOID) continue;
      if (k >= t.pt->items.size() || t.pt->items[k].type != it->type)
        return refuse(m, e, EINVAL, "rule-shape", "rule items do not follow pattern template item " + std::to_string(k));
      const Impl::ItemShape& sh = t.pt->items[k++];
      const void* mk = sh.has_mask ? sh.mask.data() : nullptr;
      if (mk && !it->spec) return refuse(m, e, EINVAL, "rule-shape", "masked item without a spec");
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
    // Actions.
    k = 0;
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
        case RTE_FLOW_ACTION_TYPE_RSS:
        case RTE_FLOW_ACTION_TYPE_QUEUE: r.fate = MRule::kSw; break;
        case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT: {
          int idx = s.index_of(static_cast<const rte_flow_action_ethdev*>(conf)->port_id);
          if (idx < 0) return refuse(m, e, EINVAL, "vport-domain", "cannot forward to port from a different E-Switch");
          r.fate = MRule::kOut;
          r.out = static_cast<int16_t>(idx);
          break;
        }
        case RTE_FLOW_ACTION_TYPE_COUNT: r.count = true; break;
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
      r.key.zone = static_cast<uint16_t>(r.in_port);
      r.key.proto = r.l4;
      r.key.family = r.family;
    }
    return 0;
  }

  static rte_flow* async_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
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
    enqueue(m, *q, o, Impl::Pending{0, 0, user_data, true, Impl::Pending::kFlowCreate, id}, op && op->postpone);
    return reinterpret_cast<rte_flow*>(static_cast<uintptr_t>(id) + 1);
  }

  static int async_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow* f,
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

  static rte_flow_action_handle* ah_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                           const rte_flow_indir_action_conf*, const rte_flow_action* action,
                                           void* user_data, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    using R = rte_flow_action_handle;
    Impl::FlowQueue* q = job(m, p, queue, e);
    if (!q) return nullptr;
    if (action->type != RTE_FLOW_ACTION_TYPE_CONNTRACK)
      return refuse_null<R>(m, e, ENOTSUP, "not-modelled", "indirect actions other than CONNTRACK");
    if (!p->ct_pool) return refuse_null<R>(m, e, EINVAL, "ct-pool", "CT is not enabled");
    if (port >= 16) return refuse_null<R>(m, e, EINVAL, "ct-port-limit", "CT supports port indexes up to 16");
    if (q->ct_wqes >= m.cfg_.ct_queue_depth)
      return refuse_null<R>(m, e, EBUSY, "ct-queue-depth",
                            "Failed to update CT (SQ is full: " + std::to_string(q->ct_wqes) + " WQEs out)");
    const auto* prof = static_cast<const rte_flow_action_conntrack*>(action->conf);
    if (prof->state > RTE_FLOW_CONNTRACK_STATE_TIME_WAIT)
      return refuse_null<R>(m, e, EINVAL, "ct-profile", "Invalid CT state");
    if (prof->last_index > RTE_FLOW_CONNTRACK_FLAG_RST)
      return refuse_null<R>(m, e, EINVAL, "ct-profile", "Invalid last TCP packet flag");
    if (p->ct_free.empty()) return refuse_null<R>(m, e, ENOMEM, "ct-alloc", "Failed to allocate CT object");
    uint32_t idx = p->ct_free.back();
    p->ct_free.pop_back();
    s.ct_live++;
    Impl::CtObj& c = s.cts[idx];
    c = Impl::CtObj{true, prof->is_original_dir != 0, port, 0};
    Op o;
    o.kind = Op::kCtSet;
    o.id = idx;
    load_ct(o.ct, *prof);
    Impl::Pending pd{0, 0, user_data, true, Impl::Pending::kCt, idx};
    pd.wqe = true;
    q->ct_wqes++;
    s.ct_wqes_max = std::max(s.ct_wqes_max, q->ct_wqes);
    enqueue(m, *q, o, pd, op && op->postpone);
    return reinterpret_cast<R*>((1ull << 62) | (static_cast<uint64_t>(port) << 32) | (idx + 1));
  }

  static Impl::CtObj* ct_of(Mlx5Model& m, rte_flow_action_handle* h, uint32_t* idx_out) {
    Impl& s = *m.impl_;
    auto v = reinterpret_cast<uintptr_t>(h);
    uint32_t idx = static_cast<uint32_t>(v & 0xFFFFFFFFu) - 1;
    if ((v >> 62) != 1 || idx >= s.cts.size() || !s.cts[idx].used) return nullptr;
    *idx_out = idx;
    return &s.cts[idx];
  }

  static int ah_update(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                       rte_flow_action_handle* h, const void* update, void* user_data, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl::Port* p = m.impl_->port(port);
    Impl::FlowQueue* q = job(m, p, queue, e);
    if (!q) return -rte_errno;
    uint32_t idx;
    Impl::CtObj* c = ct_of(m, h, &idx);
    if (!c) return refuse(m, e, EINVAL, "ct-freed", "Invalid CT update index");
    if (c->owner != port) return refuse(m, e, EACCES, "ct-owner", "Can't update CT object owned by another port");
    const auto* mod = static_cast<const rte_flow_modify_conntrack*>(update);
    if (mod->direction) c->is_original = mod->new_ct.is_original_dir;  // applied at once (7738-7739)
    Op o;
    o.kind = Op::kNop;  // a direction-only update has no hardware part; it still completes through the queue
    o.id = idx;
    Impl::Pending pd{0, 0, user_data, true, Impl::Pending::kCt, idx};
    if (mod->state) {
      if (mod->new_ct.state > RTE_FLOW_CONNTRACK_STATE_TIME_WAIT)
        return refuse(m, e, EINVAL, "ct-profile", "Invalid CT state");
      if (mod->new_ct.last_index > RTE_FLOW_CONNTRACK_FLAG_RST)
        return refuse(m, e, EINVAL, "ct-profile", "Invalid last TCP packet flag");
      if (q->ct_wqes >= m.cfg_.ct_queue_depth)  // mlx5_flow_hw.c:7748-7753
        return refuse(m, e, EIO, "ct-queue-depth",
                      "Failed to send CT context update WQE (SQ is full: " + std::to_string(q->ct_wqes) + " WQEs out)");
      o.kind = Op::kCtSet;
      load_ct(o.ct, mod->new_ct);
      pd.wqe = true;
      q->ct_wqes++;
      m.impl_->ct_wqes_max = std::max(m.impl_->ct_wqes_max, q->ct_wqes);
    }
    enqueue(m, *q, o, pd, op && op->postpone);
    return 0;
  }

  static int ah_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                        rte_flow_action_handle* h, void* user_data, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    Impl::FlowQueue* q = job(m, p, queue, e);
    if (!q) return -rte_errno;
    uint32_t idx;
    Impl::CtObj* c = ct_of(m, h, &idx);
    if (!c) return refuse(m, e, EINVAL, "ct-freed", "Invalid CT destruction index");
    if (c->refs)
      return refuse(m, e, EBUSY, "ct-in-use",
                    "conntrack object " + std::to_string(idx) + " is still used by " + std::to_string(c->refs) +
                        " rule(s) in hardware; the driver would free its slot at once and a new connection could "
                        "share it: destroy the rules and pull their completions first");
    c->used = false;
    if (Impl::Port* owner = s.port(c->owner)) owner->ct_free.push_back(idx);
    s.ct_live--;
    Op o;
    o.kind = Op::kCtDel;
    o.id = idx;
    enqueue(m, *q, o, Impl::Pending{0, 0, user_data, true, Impl::Pending::kCt, idx}, op && op->postpone);
    return 0;
  }

  static int ah_query(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                      const rte_flow_action_handle* h, void* data, void* user_data, rte_flow_error* e) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    Impl::FlowQueue* q = job(m, p, queue, e);
    if (!q) return -rte_errno;
    uint32_t idx;
    Impl::CtObj* c = ct_of(m, const_cast<rte_flow_action_handle*>(h), &idx);
    if (!c) return refuse(m, e, EINVAL, "ct-freed", "Invalid CT query index");
    if (c->owner != port) return refuse(m, e, EACCES, "ct-owner", "Can't query CT object owned by another port");
    if (q->ct_wqes >= m.cfg_.ct_queue_depth)  // mlx5_flow_hw.c:7704-7708
      return refuse(m, e, EIO, "ct-queue-depth",
                    "Failed to query CT context (SQ is full: " + std::to_string(q->ct_wqes) + " WQEs out)");
    auto* out = static_cast<rte_flow_action_conntrack*>(data);
    out->peer_port = 0;
    out->is_original_dir = c->is_original;  // filled at once (mlx5_flow_hw.c:7702-7703)
    uint32_t slot = s.qslots.back();
    s.qslots.pop_back();
    Op o;
    o.kind = Op::kCtQuery;
    o.id = idx;
    o.slot = slot;
    Impl::Pending pd{0, 0, user_data, true, Impl::Pending::kCtQuery, idx};
    pd.data = data;
    pd.slot = slot;
    pd.wqe = true;
    q->ct_wqes++;
    s.ct_wqes_max = std::max(s.ct_wqes_max, q->ct_wqes);
    enqueue(m, *q, o, pd, op && op->postpone);
    return 0;
  }

  static int query(void* self, uint16_t port, rte_flow* f, const rte_flow_action* actions, void* data,
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

  static int dev_start(void* self, uint16_t port) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    if (!p) return -ENODEV;
    if (m.cfg_.esw && !p->proxy) {
      Impl::Port& px = s.ports[0];
      if (px.hws && !px.started) {
        refuse(m, nullptr, EAGAIN, "start-order",
               "Failed to start port " + std::to_string(port) + ": transfer proxy (port " + std::to_string(px.id) +
                   ") must be started");
        return -EAGAIN;
      }
      if (m.cfg_.repr_matching && !p->hws) {
        refuse(m, nullptr, EINVAL, "start-order",
               "Failed to start port " + std::to_string(port) +
                   ": with representor matching enabled, port must be configured for HWS");
        return -EINVAL;
      }
    }
    // Tables made before the start are translated now (flow_hw_table_update).
    for (auto& t : s.tables)
      if (t->port == port && !t->translated && translate(m, *t, nullptr) != 0) return -rte_errno;
    int rc = rte_eth_dev_start(port);
    if (rc == 0) p->started = true;
    return rc;
  }

  static int dev_stop(void* self, uint16_t port) {
    Mlx5Model& m = M(self);
    Impl& s = *m.impl_;
    Impl::Port* p = s.port(port);
    if (!p) return -ENODEV;
    if (m.cfg_.esw && p->proxy && p->hws) {
      for (size_t i = 1; i < s.ports.size(); i++)
        if (s.ports[i].started) {
          refuse(m, nullptr, EBUSY, "stop-order",
                 "Failed to stop port " + std::to_string(port) +
                     ": attached representor ports must be stopped before stopping transfer proxy port");
          return -EBUSY;
        }
    }
    int rc = rte_eth_dev_stop(port);
    if (rc == 0) p->started = false;
    return rc;
  }
};

// ------------------------------------------------------------------ model

Mlx5Model::Mlx5Model(const Mlx5ModelConfig& cfg, std::vector<uint16_t> ports)
    : cfg_(cfg), impl_(std::make_unique<Impl>(cfg, ports)) {
  api_.self = this;
  api_.name = "mlx5-model";
  api_.info_get = ModelCalls::info_get;
  api_.configure = ModelCalls::configure;
  api_.pick_transfer_proxy = ModelCalls::pick_transfer_proxy;
  api_.switch_info = ModelCalls::switch_info;
  api_.get_q_aged_flows = ModelCalls::get_q_aged_flows;
  api_.validate = ModelCalls::validate;
  api_.pattern_template_create = ModelCalls::pattern_template_create;
  api_.pattern_template_destroy = ModelCalls::pattern_template_destroy;
  api_.actions_template_create = ModelCalls::actions_template_create;
  api_.actions_template_destroy = ModelCalls::actions_template_destroy;
  api_.template_table_create = ModelCalls::template_table_create;
  api_.template_table_destroy = ModelCalls::template_table_destroy;
  api_.async_create = ModelCalls::async_create;
  api_.async_destroy = ModelCalls::async_destroy;
  api_.async_action_handle_create = ModelCalls::ah_create;
  api_.async_action_handle_update = ModelCalls::ah_update;
  api_.async_action_handle_destroy = ModelCalls::ah_destroy;
  api_.async_action_handle_query = ModelCalls::ah_query;
  api_.push = ModelCalls::push;
  api_.pull = ModelCalls::pull;
  api_.query = ModelCalls::query;
  api_.dev_start = ModelCalls::dev_start;
  api_.dev_stop = ModelCalls::dev_stop;
}

Mlx5Model::~Mlx5Model() = default;

uint64_t Mlx5Model::now() const { return clock_ ? clock_(clock_ctx_) : mono_ns(); }

uint64_t Mlx5Model::flows_in_use() const { return impl_->flows_used; }

uint64_t Mlx5Model::ct_in_use() const { return impl_->ct_live; }

uint64_t Mlx5Model::counters_in_use() const {
  uint64_t n = 0;
  for (const auto& p : impl_->ports) n += p.cnt_taken + p.cnt_waiting.size();
  return n;
}

uint32_t Mlx5Model::ct_wqes_max() const { return impl_->ct_wqes_max; }

uint64_t Mlx5Model::templates_in_use() const {
  return impl_->pts.size() + impl_->ats.size() + impl_->tables.size();
}

NicStats Mlx5Model::stats(unsigned q) const {
  const NicStats& s = impl_->replicas[q]->st;
  NicStats r;
  r.rx = __atomic_load_n(&s.rx, __ATOMIC_RELAXED);
  r.forwarded = __atomic_load_n(&s.forwarded, __ATOMIC_RELAXED);
  r.dropped = __atomic_load_n(&s.dropped, __ATOMIC_RELAXED);
  r.to_software = __atomic_load_n(&s.to_software, __ATOMIC_RELAXED);
  r.ct_invalid = __atomic_load_n(&s.ct_invalid, __ATOMIC_RELAXED);
  r.ct_changed = __atomic_load_n(&s.ct_changed, __ATOMIC_RELAXED);
  r.no_rx_flows = __atomic_load_n(&s.no_rx_flows, __ATOMIC_RELAXED);
  r.miss_dropped = __atomic_load_n(&s.miss_dropped, __ATOMIC_RELAXED);
  return r;
}

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

bool match(const MRule& r, const ctrack::Parsed& pp, int in_port, uint8_t ct_flags) {
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

}  // namespace

int16_t Mlx5Model::rx(unsigned qi, PacketIn& in, uint64_t now_ns, ctrack::Parsed* parsed, ctrack::Drop* drop) {
  Impl& s = *impl_;
  Replica& q = *s.replicas[qi];
  q.st.rx++;
  // A port (or, on an E-Switch, its proxy) never rte_flow_configure'd has
  // no Rx control flows: nothing reaches its queues.
  if (!q.port_hws[in.port] || (cfg_.esw && !q.port_hws[0])) {
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
  ctrack::Key k = pp.ct.key;
  k.zone = in.port;
  const bool exact_ok = pp.kind == ctrack::L3Kind::kIp && !(pp.ct.meta & ctrack::kMetaFragment);
  const uint16_t dom = cfg_.esw ? 0xFFFF : in.port;
  uint8_t ct_flags = 0;
  uint32_t g = cfg_.esw && cfg_.fdb_def_rule ? 1 : 0;
  for (int hops = 0; hops < 16; hops++) {
    const MRule* best = exact_ok && g != 0 ? q.exact.find(g, k) : nullptr;
    if (best && best->dom != dom) best = nullptr;
    // An exact rule may also match TCP flags (the flows strategy's
    // connection rules leave SYN, FIN and RST to software).
    if (best && best->tcpf_mask && ((pp.ct.tcp_flags ^ best->tcpf) & best->tcpf_mask)) best = nullptr;
    auto it = std::lower_bound(q.masked.begin(), q.masked.end(), g,
                               [](const MRule* a, uint32_t grp) { return a->group < grp; });
    for (; it != q.masked.end() && (*it)->group == g; ++it) {
      const MRule* x = *it;
      if (best && x->prio >= best->prio) break;
      if (x->dom == dom && match(*x, pp, in.port, ct_flags)) {
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
    if (r.ct >= 0 && pp.ct.key.proto == IPPROTO_TCP) {
      ct_flags = ct_check(q.ct[static_cast<size_t>(r.ct)], r.ct_dir, pp.ct);
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_INVALID) q.st.ct_invalid++;
      if (ct_flags & RTE_FLOW_CONNTRACK_PKT_STATE_CHANGED) q.st.ct_changed++;
    }
    if (r.mark) {
      in.has_mark = true;
      in.mark = r.mark_id;
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
        return kNicMiss;
    }
  }
  q.st.to_software++;
  return kNicMiss;
}

}  // namespace dp
