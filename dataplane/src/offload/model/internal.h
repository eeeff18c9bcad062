// Internal to the mlx5 model (dataplane/src/offload/model/): the model's
// state (Mlx5Model::Impl), the data side's replicas, and ModelCalls, the
// calls the rte_flow seam table points at. Split by concern: control.cc
// (info, configure, ports), templates.cc (pattern and actions templates,
// tables), queues.cc (flow queues, push, pull, aging), flows.cc (rules,
// queries), conntrack.cc (indirect conntrack objects), steering.cc (the data
// side), model.cc (the seam table, introspection), rules.cc (the model's
// rules and profiles).
#pragma once

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
#include "net/geneve.h"
#include "net/headers.h"
#include "sdn/clock.h"

namespace dp {
namespace mlx5_model {


using sdn::mono_ns;

constexpr uint32_t kMarkMax = 0xfffff0;  // MLX5_FLOW_MARK_MAX
constexpr uint32_t kMaxGroups = 4096;    // model limit on internal group ids
constexpr size_t kConfMax = 64;          // bytes of an item mask / action conf kept per template

inline const char* rule_source(const char* name) {
  for (const auto& [n, s] : Mlx5Model::rules())
    if (!strcmp(n, name)) return s;
  return "?";
}

// Steering action types in the order the hardware runs them (mlx5dr).
enum Dr : uint8_t { kDrTag, kDrCtr, kDrAsoCt, kDrFt, kDrTir, kDrDrop, kDrVport, kDrDecap, kDrModify, kDrEncap, kDrLast };
constexpr uint32_t bit(Dr d) { return 1u << d; }
// hws/mlx5dr_action.c:17-73, the entries our action types can take: decap
// (TNL_L2_TO_L2) first after the tag, the modify header and the encap
// (L2_TO_TNL_L2) after the counter and conntrack, the fate last.
inline const std::vector<uint32_t> kOrderRx = {bit(kDrTag),    bit(kDrDecap),  bit(kDrCtr),
                                               bit(kDrAsoCt),  bit(kDrModify), bit(kDrEncap),
                                               bit(kDrFt) | bit(kDrTir) | bit(kDrDrop)};
inline const std::vector<uint32_t> kOrderFdb = {bit(kDrDecap),  bit(kDrCtr),   bit(kDrAsoCt), bit(kDrModify),
                                                bit(kDrEncap), bit(kDrFt) | bit(kDrVport) | bit(kDrDrop)};

// VXLAN as the model knows it: over IPv4 without options or VLAN.
inline constexpr uint16_t kVxlanPort = net::kVxlanPort;  // the definer's implicit L4 destination port (mlx5dr_definer.c:1028-1045)
inline constexpr uint8_t kVxlanEncapLen = 14 + 20 + 8 + 8;
// Geneve (DV only): the UDP port DV's matcher fills in when the rule
// leaves it open (mlx5_flow_dv.c:9527-9534, MLX5_UDP_PORT_GENEVE
// mlx5_flow.h:361), the one the model's parser takes Geneve on.
inline constexpr uint16_t kGenevePort = net::kGenevePort;
// The longest reformat header the driver holds (MLX5_ENCAP_MAX_LEN,
// mlx5_flow.h:537 and 546).
inline constexpr uint8_t kEncapMax = 132;
// At most this long, a RAW_ENCAP/RAW_DECAP is an L2 one, longer an L3 one
// (MLX5_ENCAPSULATION_DECISION_SIZE, Ethernet + IPv4: mlx5_flow.h:453-454).
inline constexpr uint8_t kEncapDecision = 14 + 20;
inline constexpr uint8_t kMaxMods = 4;
// An exact rule below a VXLAN item: its key is the inner tuple, its zone
// the ingress port with this bit.
inline constexpr uint16_t kTunnelZone = 0x8000;

// MODIFY_FIELD destinations the model applies (SET from an immediate value).
enum ModField : uint8_t { kModIp4Src, kModIp4Dst, kModTcpSport, kModTcpDport, kModUdpSport, kModUdpDport };
struct Mod {
  uint8_t field = 0, len = 0;
  uint8_t value[4] = {};  // network order, as the rte_flow item holds it (rte_flow.h, modify_data.value)
};

inline bool combo_ok(const std::vector<Dr>& acts, bool fdb) {
  const auto& order = fdb ? kOrderFdb : kOrderRx;
  size_t u = 0;
  for (uint32_t o : order)
    if (u < acts.size() && (bit(acts[u]) & o)) u++;
  return u == acts.size();
}

// The tunnel items the model knows: the items before one are outer headers.
inline bool tunnel_item(rte_flow_item_type t) { return t == RTE_FLOW_ITEM_TYPE_VXLAN || t == RTE_FLOW_ITEM_TYPE_GENEVE; }

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
  uint64_t rss_types = 0;  // kSw by RSS: its types (0 taken as RTE_ETH_RSS_IP, mlx5_flow_hw.c:396)
  // VXLAN or Geneve: the pattern's items before its tunnel item are the
  // outer headers (o_*); the fields above are then the inner ones.
  bool tunnel = false;
  bool geneve = false;  // the tunnel item is GENEVE (else VXLAN)
  uint8_t o_src[4] = {}, o_smask[4] = {}, o_dst[4] = {}, o_dmask[4] = {};
  uint16_t o_dport = kVxlanPort;
  uint32_t vni = 0, vni_mask = 0;
  uint8_t vx_flags = 0, vx_flags_mask = 0;
  // GENEVE: Opt Len (words), the O bit and the protocol type, as DV's
  // matcher takes them (mlx5_flow_dv.c:9548-9567).
  uint8_t gn_optlen = 0, gn_optlen_mask = 0, gn_oam = 0, gn_oam_mask = 0;
  uint16_t gn_proto = 0, gn_proto_mask = 0;
  // Header actions, run in this order (kOrderRx/kOrderFdb): decap, modify, encap.
  bool decap = false;
  uint8_t nmod = 0, encap_len = 0;
  Mod mod[kMaxMods];
  uint8_t encap[kEncapMax] = {};
};

struct CtDir {
  uint8_t scale = 0;
  uint32_t sent_end = 0, reply_end = 0, max_win = 0, max_ack = 0;
};
struct CtState {
  bool alive = false, liberal = false, enable = true;
  CtDir d[2];
};

inline void load_ct(CtState& c, const rte_flow_action_conntrack& p) {
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

inline void store_ct(rte_flow_action_conntrack& p, const CtState& c) {
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


}  // namespace mlx5_model
using namespace mlx5_model;  // this folder's own names

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
    bool decap = false, encap = false, modify = false;
    uint8_t mods = 0;
    uint8_t encap_size = 0;  // RAW_ENCAP: its data's length (the template's, for every rule)
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
    bool ready = false;  // its create completed (before: the driver's WAIT_ASYNC state)
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
    bool ct_create = false;  // a conntrack object's create: the object is ready once pulled
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
  Port& proxy_port(size_t proxy_index) { return ports[proxy_index < ports.size() ? proxy_index : 0]; }

  explicit Impl(const Mlx5ModelConfig& c, const std::vector<uint16_t>& ids) : counters(c.max_flows) {
    for (size_t i = 0; i < ids.size(); i++) {
      Port p;
      p.id = ids[i];
      p.index = i;
      p.proxy = c.esw && i == c.proxy_index;
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
  uint32_t age_cursor = 0;                 // where the next aged-flow sweep starts (in age_ids)
  // Rules made with AGE, as the driver's aging list holds them (each id
  // once, age_listed; dropped at a sweep once the rule is gone).
  std::vector<uint32_t> age_ids;
  std::vector<uint8_t> age_listed;
  std::vector<uint32_t> qslots;           // free conntrack query slots
  uint64_t flows_used = 0;
  // Rules given a conntrack object whose create had not completed: the
  // driver takes them (mlx5_flow_aso.c:1753-1756, the object still
  // WAIT_ASYNC) and the rule may go live before the context is written.
  uint64_t ct_unready_refs = 0;
  uint64_t ct_overruns = 0;  // creates past the pool (ct-pool-bound)
  // The synchronous calls run the model's own template/queue machinery:
  // while set, the HWS-only refusals (steering mode, HWS firmware, queue
  // WQEs, the IPv6 5-tuple definer) do not apply.
  bool inside = false;
  struct SwsTable {
    std::string shape;
    Table* t;
  };
  std::vector<SwsTable> sws_tables;  // the hidden tables of the synchronous rules, by shape (several when full)
};

// The HWS match definer a non-root table's pattern template needs
// (definer.cc): a match definer, a jumbo one, or none that can select its
// fields (hws/mlx5dr_definer.c:1808-1843). implicit_port: the driver
// prepends the port's own match (mlx5_flow_hw.c:4916-4935).
enum class DefinerFit { kMatch, kJumbo, kNone };
DefinerFit definer_fit(const std::vector<Mlx5Model::Impl::ItemShape>& items, bool implicit_port, bool full_dw_jumbo);

// ------------------------------------------------------------------ helpers


struct Ctx {
  Mlx5Model* m;
  Mlx5Model::Impl* s;
};
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
  template <typename V, typename T>
  static V* find_owned(std::vector<std::unique_ptr<V>>& v, T* h) {
    for (auto& x : v)
      if (reinterpret_cast<T*>(x.get()) == h) return x.get();
    return nullptr;
  }

  static void release_port(Impl& s, Impl::Port* p);
  static bool hws_ok(Mlx5Model& m, Impl::Port* p, rte_flow_error* e);

  static int info_get(void* self, uint16_t port, rte_flow_port_info* pi, rte_flow_queue_info* qi, rte_flow_error* e);

  static int configure(void* self, uint16_t port, const rte_flow_port_attr* pa, uint16_t nb_queue,
                       const rte_flow_queue_attr* qa[], rte_flow_error* e);

  // Every mlx5 port has a switch domain (linux/mlx5_os.c:1326-1347): an
  // E-Switch's manager and representors share one, each PF of a NIC in
  // legacy mode has its own (mlx5_ethdev.c:394-417).
  static int switch_info(void* self, uint16_t port, rte_eth_switch_info* out);

  static int pick_transfer_proxy(void* self, uint16_t port, uint16_t* proxy, rte_flow_error* e);

  // DV (dv_flow_en=1): flow_dv_validate (sync.cc). HWS: the driver's NULL .validate.
  static int validate(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                      const rte_flow_action actions[], rte_flow_error* e);


  static bool zero(const void* p, size_t n);

  // What the hardware can match in one item's mask (mlx5dr_definer.c), and
  // what this model interprets. Empty: fine.
  static std::pair<const char*, std::string> check_mask(const rte_flow_item& it);

  static rte_flow_pattern_template* pattern_template_create(void* self, uint16_t port,
                                                            const rte_flow_pattern_template_attr* a,
                                                            const rte_flow_item items[], rte_flow_error* e);

  static int pattern_template_destroy(void* self, uint16_t, rte_flow_pattern_template* t, rte_flow_error* e);

  static rte_flow_actions_template* actions_template_create(void* self, uint16_t port,
                                                            const rte_flow_actions_template_attr* a,
                                                            const rte_flow_action actions[],
                                                            const rte_flow_action masks[], rte_flow_error* e);

  static int actions_template_destroy(void* self, uint16_t, rte_flow_actions_template* t, rte_flow_error* e);

  // __flow_hw_actions_translate's root-table refusals and mlx5dr's checks
  // for non-root tables (run at table create on a started port, else at
  // port start).
  static int translate(Mlx5Model& m, Impl::Table& t, rte_flow_error* e);

  static rte_flow_template_table* template_table_create(void* self, uint16_t port,
                                                        const rte_flow_template_table_attr* a,
                                                        rte_flow_pattern_template* pts[], uint8_t nb_pts,
                                                        rte_flow_actions_template* ats[], uint8_t nb_ats,
                                                        rte_flow_error* e);

  static int template_table_destroy(void* self, uint16_t, rte_flow_template_table* h, rte_flow_error* e);

  static Impl::FlowQueue* job(Mlx5Model& m, Impl::Port* p, uint32_t queue, rte_flow_error* e);

  // Queues an operation for the replicas; it is sent at push (or now, when
  // not postponed).
  static void enqueue(Mlx5Model& m, Impl::FlowQueue& q, Op op, Impl::Pending pd, bool postpone);

  static void send(Mlx5Model& m, Impl::FlowQueue& q);

  // The aged-flow ring (mlx5_flow_hw.c:8613-8658): each rule with AGE whose
  // counter saw no packet for its timeout is reported once, by its AGE
  // context. The hardware sweeps its aging objects in the background; the
  // model sweeps a slice of the rules per call.
  static int get_q_aged_flows(void* self, uint16_t port, uint32_t, void** contexts, uint32_t n, rte_flow_error* e);

  static int push(void* self, uint16_t port, uint32_t queue, rte_flow_error* e);

  static int pull(void* self, uint16_t port, uint32_t queue, rte_flow_op_result res[], uint16_t n, rte_flow_error* e);
  static void complete(Mlx5Model& m, Impl::FlowQueue& q, Impl::Pending& pd, uint64_t now);

  // DV software steering (dv_flow_en=1; sync.cc): the synchronous calls.
  static int sws_setup(Mlx5Model& m, Impl::Port& p);
  static bool sws_settle(Mlx5Model& m, Impl::Port& p);
  static bool sws_room(Mlx5Model& m, rte_flow_error* e);
  static int sync_validate(Mlx5Model& m, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                           const rte_flow_action actions[], rte_flow_error* e);
  static int dv_validate(Mlx5Model& m, Impl::Port& p, const rte_flow_attr* a, const rte_flow_item items[],
                         const rte_flow_action actions[], rte_flow_error* e);
  static Impl::Table* sws_table(Mlx5Model& m, Impl::Port& p, const rte_flow_attr& a, const rte_flow_item items[],
                                const rte_flow_action actions[], rte_flow_error* e);
  static Impl::Port* sws_port(Mlx5Model& m, uint16_t port, bool rule, rte_flow_error* e);
  static rte_flow* sync_create(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                               const rte_flow_action actions[], rte_flow_error* e);
  static int sync_destroy(void* self, uint16_t port, rte_flow* f, rte_flow_error* e);
  static rte_flow_action_handle* sync_ah_create(void* self, uint16_t port, const rte_flow_indir_action_conf* conf,
                                                const rte_flow_action* action, rte_flow_error* e);
  static int sync_ah_update(void* self, uint16_t port, rte_flow_action_handle* h, const void* update,
                            rte_flow_error* e);
  static int sync_ah_query(void* self, uint16_t port, const rte_flow_action_handle* h, void* data,
                           rte_flow_error* e);
  static int sync_ah_destroy(void* self, uint16_t port, rte_flow_action_handle* h, rte_flow_error* e);

  // Builds the rule the hardware will run from the rule's items/actions and
  // its templates; refuses what the driver or the model would not take.
  // A rule's items and actions against its table's templates, into r.
  static int compile_items(Mlx5Model& m, Impl::Table& t, const rte_flow_item items[], MRule& r, rte_flow_error* e);
  static int compile_actions(Mlx5Model& m, Impl::Table& t, const rte_flow_action actions[], MRule& r, int32_t* ct_out,
                             rte_flow_error* e);
  static int compile(Mlx5Model& m, Impl::Table& t, const rte_flow_item items[], const rte_flow_action actions[],
                     MRule& r, int32_t* ct_out, rte_flow_error* e);

  static rte_flow* async_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                rte_flow_template_table* th, const rte_flow_item items[], uint8_t pt_index,
                                const rte_flow_action actions[], uint8_t at_index, void* user_data,
                                rte_flow_error* e);

  static int async_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow* f,
                           void* user_data, rte_flow_error* e);

  static rte_flow_action_handle* ah_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                           const rte_flow_indir_action_conf*, const rte_flow_action* action,
                                           void* user_data, rte_flow_error* e);

  static Impl::CtObj* ct_of(Mlx5Model& m, rte_flow_action_handle* h, uint32_t* idx_out);

  static int ah_update(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                       rte_flow_action_handle* h, const void* update, void* user_data, rte_flow_error* e);

  static int ah_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                        rte_flow_action_handle* h, void* user_data, rte_flow_error* e);

  static int ah_query(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                      const rte_flow_action_handle* h, void* data, void* user_data, rte_flow_error* e);

  static int query(void* self, uint16_t port, rte_flow* f, const rte_flow_action* actions, void* data,
                   rte_flow_error* e);

  static int dev_start(void* self, uint16_t port);

  static int dev_stop(void* self, uint16_t port);
};

}  // namespace dp
