// The model: DV software steering (dv_flow_en=1, the driver's default and
// what firmware older than xx.35.1012 runs). The calls are synchronous:
// rte_flow_validate / rte_flow_create / rte_flow_destroy and the indirect
// conntrack action's create / update / query / destroy. The driver
// validates each rule itself (flow_dv_validate, mlx5_flow_dv.c:7085-8480);
// the model checks the DV rules below, each citing its line, and then runs
// the rule through its own steering tables: a hidden template table per
// rule shape on a flow queue of its own, every operation completed on the
// control side before the call returns, so the data side is the one the
// HWS calls use. What the model does not know DV to take is refused.
#include <sched.h>

#include "internal.h"

namespace dp {

namespace {

constexpr uint32_t kSwsQueue = 1024;           // the hidden flow queue (never more out: every call settles)
constexpr uint32_t kSwsCtPool = 1u << 16;      // DV grows its conntrack pools on demand (mlx5_flow_dv.c:13017-13106)
constexpr uint32_t kSwsFirstTable = 64;        // a shape's first hidden table; each next one twice the last
constexpr uint64_t kQueryWaitNs = 1'000'000'000;

struct Inside {
  explicit Inside(Mlx5Model::Impl& s) : s_(s), was_(s.inside) { s.inside = true; }
  ~Inside() { s_.inside = was_; }
  Mlx5Model::Impl& s_;
  bool was_;
};

// mlx5_flow_validate_item_geneve (mlx5_flow.c:3316-3385) and the GENEVE_OPT
// item's (3405-3530), as flow_dv_validate calls them (mlx5_flow_dv.c:7395-7413),
// for the items of one pattern. `tunnel`: a tunnel item came before.
int dv_geneve(Mlx5Model& m, const NicLimits& caps, const rte_flow_item* items, rte_flow_error* e) {
  using C = ModelCalls;
  bool udp = false, tunnel = false;
  uint16_t dport = 0;
  for (const rte_flow_item* it = items; it->type != RTE_FLOW_ITEM_TYPE_END; it++) {
    if (it->type == RTE_FLOW_ITEM_TYPE_UDP && !tunnel) {
      udp = true;
      if (it->spec && it->mask)
        dport = ntohs(static_cast<const rte_flow_item_udp*>(it->spec)->hdr.dst_port &
                      static_cast<const rte_flow_item_udp*>(it->mask)->hdr.dst_port);
    }
    if (it->type == RTE_FLOW_ITEM_TYPE_GENEVE_OPT) {
      if (!caps.geneve_tlv_opt) return C::refuse(m, e, ENOTSUP, "dv-geneve-opt", "Geneve TLV opt not supported");
      return C::refuse(m, e, ENOTSUP, "not-modelled", "Geneve option matching (one TLV option object per device)");
    }
    if (it->type == RTE_FLOW_ITEM_TYPE_VXLAN) tunnel = true;
    if (it->type != RTE_FLOW_ITEM_TYPE_GENEVE) continue;
    if (!caps.geneve_rx)
      return C::refuse(m, e, ENOTSUP, "dv-geneve-caps",
                       "L3 Geneve is not enabled by device parameter and/or not configured in firmware");
    if (tunnel) return C::refuse(m, e, ENOTSUP, "dv-geneve-item", "multiple tunnel layers not supported");
    tunnel = true;
    if (!udp) return C::refuse(m, e, EINVAL, "dv-geneve-item", "no outer UDP layer found");
    rte_flow_item_geneve mk{};  // rte_flow_item_geneve_mask (rte_flow.h, C only): the VNI
    mk.vni[0] = mk.vni[1] = mk.vni[2] = 0xFF;
    if (it->mask) mk = *static_cast<const rte_flow_item_geneve*>(it->mask);
    if ((mk.ver_opt_len_o_c_rsvd0 & ~htons(0x3F80)) || mk.rsvd1)
      return C::refuse(m, e, ENOTSUP, "dv-geneve-item", "mask enables non supported bits");
    if (!it->spec && it->mask) return C::refuse(m, e, EINVAL, "dv-geneve-item", "mask/last without a spec is not supported");
    if (it->spec) {
      const auto& sp = *static_cast<const rte_flow_item_geneve*>(it->spec);
      const uint16_t h = ntohs(sp.ver_opt_len_o_c_rsvd0);
      if ((h >> 14) || (h & 0x40) || (h & 0x3F) || sp.rsvd1)
        return C::refuse(m, e, ENOTSUP, "dv-geneve-item", "Geneve protocol unsupported fields are being used");
      if ((h >> 8 & 0x3F) > (caps.geneve_max_opt_len ? 63 : 14))
        return C::refuse(m, e, ENOTSUP, "dv-geneve-item", "Unsupported Geneve options length");
    }
    // The driver takes any outer port; the hardware's parser (and the
    // model's) finds Geneve on 6081, which DV fills in when left open.
    if (dport && dport != kGenevePort)
      return C::refuse(m, e, ENOTSUP, "not-modelled", "Geneve on UDP port " + std::to_string(dport));
  }
  return 0;
}

// DV's reformat actions (rules dv-decap, dv-raw-encap): flow_dv_validate's
// cases at mlx5_flow_dv.c:7782-7819. `vxlan`: the pattern has a VXLAN item.
int dv_reformat(Mlx5Model& m, const rte_flow_action* actions, bool vxlan, rte_flow_error* e) {
  using C = ModelCalls;
  bool decap = false, encap = false, modify = false;
  for (const rte_flow_action* x = actions; x->type != RTE_FLOW_ACTION_TYPE_END; x++) {
    switch (x->type) {
      case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD: modify = true; break;
      case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP:
      case RTE_FLOW_ACTION_TYPE_RAW_DECAP: {
        if (decap || encap)
          return C::refuse(m, e, ENOTSUP, "dv-decap",
                           decap ? "can only have a single decap action" : "decap after encap is not supported");
        if (modify) return C::refuse(m, e, EINVAL, "dv-decap", "can't have decap action after modify action");
        if (x->type == RTE_FLOW_ACTION_TYPE_VXLAN_DECAP && !vxlan)
          return C::refuse(m, e, ENOTSUP, "dv-decap", "VXLAN item should be present for VXLAN decap");
        const rte_flow_action* nx = x + 1;
        while (nx->type == RTE_FLOW_ACTION_TYPE_VOID) nx++;
        if (x->type == RTE_FLOW_ACTION_TYPE_RAW_DECAP && nx->type == RTE_FLOW_ACTION_TYPE_RAW_ENCAP)
          return C::refuse(m, e, ENOTSUP, "not-modelled", "RAW_DECAP and RAW_ENCAP together (an L3 tunnel)");
        decap = true;
        break;
      }
      case RTE_FLOW_ACTION_TYPE_RAW_ENCAP: {
        const auto* c = static_cast<const rte_flow_action_raw_encap*>(x->conf);
        if (!c || !c->size || !c->data) return C::refuse(m, e, EINVAL, "dv-raw-encap", "raw encap data cannot be empty");
        if (c->size <= kEncapDecision) return C::refuse(m, e, ENOTSUP, "dv-raw-encap", "small raw encap size");
        if (encap) return C::refuse(m, e, EINVAL, "dv-raw-encap", "more than one encap action");
        if (c->size > kEncapMax)
          return C::refuse(m, e, ENOTSUP, "dv-raw-encap",
                           "raw encap of " + std::to_string(c->size) + " bytes: the driver copies it into 132");
        encap = true;
        break;
      }
      default: break;
    }
  }
  return 0;
}

}  // namespace

// At the port's start (before rte_eth_dev_start): its tables, counters and
// conntrack pool. DV has conntrack in the NIC Rx domain only: with an
// E-Switch it is N/A (mlx5.rst:1548-1551), so a switchdev port gets no pool.
int ModelCalls::sws_setup(Mlx5Model& m, Impl::Port& p) {
  Impl& s = *m.impl_;
  Inside in(s);
  rte_flow_port_attr pa{};
  pa.nb_counters = m.cfg_.limits.max_counters;
  pa.nb_conn_tracks = m.cfg_.esw ? 0 : kSwsCtPool;
  rte_flow_queue_attr qa{};
  qa.size = kSwsQueue;
  const rte_flow_queue_attr* qs[] = {&qa};
  rte_flow_error e{};
  return configure(&m, p.id, &pa, 1, qs, &e);
}

// Completes on the control side what the synchronous calls queued: a
// synchronous call returns once its operation is done. Replicas apply the
// operations in order from their rings; only a query needs them to have
// (its answer is their copy of the context). False: a query's answer did
// not come (nobody serviced the replicas).
bool ModelCalls::sws_settle(Mlx5Model& m, Impl::Port& p) {
  Impl& s = *m.impl_;
  Impl::FlowQueue& q = p.q[0];
  send(m, q);
  bool answered = true;
  const uint64_t t0 = mono_ns();
  while (!q.inflight.empty()) {
    Impl::Pending& pd = q.inflight.front();
    if (pd.kind == Impl::Pending::kCtQuery) {
      if (m.cfg_.self_service)  // as a worker would: each operation when it is due
        for (auto& r : s.replicas) m.service_replica(r.get(), m.now());
      uint64_t applied = UINT64_MAX;
      for (auto& r : s.replicas) applied = std::min(applied, r->applied.load(std::memory_order_acquire));
      if (pd.seq > applied && mono_ns() - t0 < kQueryWaitNs) {
        sched_yield();
        continue;
      }
      if (pd.seq > applied) {
        answered = false;
        s.qslots.push_back(pd.slot);
        pd.kind = Impl::Pending::kCt;  // nothing to read
      }
    }
    complete(m, q, pd, m.now());
    q.jobs--;
    q.inflight.pop_front();
  }
  return answered;
}

// Room in every replica's ring for the next operation: the workers drain
// them; a synchronous call waits for them as the driver waits for its
// own writes. After a second (nobody services the replicas): refused.
bool ModelCalls::sws_room(Mlx5Model& m, rte_flow_error* e) {
  Impl& s = *m.impl_;
  const uint64_t t0 = mono_ns();
  for (;;) {
    bool ok = true;
    for (auto& r : s.replicas) ok = ok && r->ops.space() > 2;
    if (ok) return true;
    if (m.cfg_.self_service)
      for (auto& r : s.replicas) m.service_replica(r.get(), UINT64_MAX);
    else if (mono_ns() - t0 > kQueryWaitNs)
      return refuse(m, e, EAGAIN, "not-modelled", "the model's operation rings are full (no worker serviced them)"),
             false;
    else
      sched_yield();
  }
}

// A port for a synchronous call. Its DV state is made at its start, or at
// the first call before it (validation and indirect actions need no started
// port; a rule does).
Mlx5Model::Impl::Port* ModelCalls::sws_port(Mlx5Model& m, uint16_t port, bool rule, rte_flow_error* e) {
  Impl::Port* p = m.impl_->port(port);
  if (!p) return refuse_null<Impl::Port>(m, e, ENODEV, "rule-port", "no such port in the model");
  if (m.cfg_.dv_flow_en == 2)
    return refuse_null<Impl::Port>(m, e, ENOTSUP, "steering-mode", "Flow non-Q creation not supported");
  if (rule && !p->started) return refuse_null<Impl::Port>(m, e, ENODEV, "sws-started", "port not started");
  if (!p->hws && sws_setup(m, *p) != 0) return refuse_null<Impl::Port>(m, e, ENODEV, "sws-started", "port not set up");
  return p;
}

// flow_dv_validate, the parts the provider's rules meet.
int ModelCalls::dv_validate(Mlx5Model& m, Impl::Port& p, const rte_flow_attr* a, const rte_flow_item items[],
                            const rte_flow_action actions[], rte_flow_error* e) {
  if (!a) return refuse(m, e, EINVAL, "dv-attr", "NULL attribute");
  if (a->ingress + a->egress + a->transfer != 1)
    return refuse(m, e, EINVAL, "dv-attr", "must specify exactly one of ingress, egress or transfer");
  if (a->transfer && !m.cfg_.esw) return refuse(m, e, ENOTSUP, "dv-attr", "E-Switch dr is not supported");
  if (a->transfer && !p.proxy)
    return refuse(m, e, ENOTSUP, "not-modelled", "transfer rules on a representor (the model takes them on the proxy)");
  if (a->egress) return refuse(m, e, ENOTSUP, "not-modelled", "egress rules");
  bool outer_tcp = false, tunnel = false, vxlan = false;
  for (const rte_flow_item* it = items; it->type != RTE_FLOW_ITEM_TYPE_END; it++) {
    // (Item types the model does not know are refused by its pattern
    // template, which the rule goes through next: sws_table.)
    if (tunnel_item(it->type)) tunnel = true;
    if (it->type == RTE_FLOW_ITEM_TYPE_VXLAN) vxlan = true;
    if (it->type == RTE_FLOW_ITEM_TYPE_TCP) outer_tcp = outer_tcp || !tunnel;
  }
  if (int rc = dv_geneve(m, m.cfg_.limits, items, e); rc != 0) return rc;
  if (int rc = dv_reformat(m, actions, vxlan, e); rc != 0) return rc;
  bool fate = false, age = false, encap = false, ct = false;
  for (const rte_flow_action* x = actions; x->type != RTE_FLOW_ACTION_TYPE_END; x++) {
    switch (x->type) {
      case RTE_FLOW_ACTION_TYPE_INDIRECT:
      case RTE_FLOW_ACTION_TYPE_CONNTRACK:
        ct = true;
        if (a->group == 0) return refuse(m, e, ENOTSUP, "dv-ct-action", "Only support non-root table");
        if (fate) return refuse(m, e, ENOTSUP, "dv-ct-action", "CT cannot follow a fate action");
        if (age) return refuse(m, e, EINVAL, "dv-ct-action", "Only one ASO action is supported");
        if (encap) return refuse(m, e, EINVAL, "dv-ct-action", "Encap cannot exist before CT");
        if (!outer_tcp) return refuse(m, e, EINVAL, "dv-ct-action", "Not a outer TCP packet");
        break;
      case RTE_FLOW_ACTION_TYPE_AGE:
        if (ct) return refuse(m, e, EINVAL, "dv-ct-action", "Only one ASO action is supported");
        age = true;
        break;
      case RTE_FLOW_ACTION_TYPE_RAW_ENCAP: encap = true; break;
      case RTE_FLOW_ACTION_TYPE_QUEUE:
      case RTE_FLOW_ACTION_TYPE_RSS:
        if (a->transfer) return refuse(m, e, ENOTSUP, "dv-fate", "unsupported action QUEUE/RSS in a transfer rule");
        fate = true;
        break;
      case RTE_FLOW_ACTION_TYPE_JUMP:
      case RTE_FLOW_ACTION_TYPE_DROP:
      case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT: fate = true; break;
      case RTE_FLOW_ACTION_TYPE_VOID:
      case RTE_FLOW_ACTION_TYPE_MARK:
      case RTE_FLOW_ACTION_TYPE_COUNT:
      case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP:
      case RTE_FLOW_ACTION_TYPE_RAW_DECAP:
      case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD: break;
      default: return refuse(m, e, ENOTSUP, "not-modelled", "an action type the provider does not use");
    }
  }
  if (!fate) return refuse(m, e, EINVAL, "dv-fate", "no fate action is found");
  // DV ages through ASO objects or counters (flow_dv_validate_action_age);
  // the model has only the HWS aged-flow ring.
  if (age) return refuse(m, e, ENOTSUP, "not-modelled", "AGE on DV software steering");
  return 0;
}

// The hidden table for a rule's shape, with a free slot; made on first use
// (and again, twice as large, when the last is full).
Mlx5Model::Impl::Table* ModelCalls::sws_table(Mlx5Model& m, Impl::Port& p, const rte_flow_attr& a,
                                              const rte_flow_item items[], const rte_flow_action actions[],
                                              rte_flow_error* e) {
  Impl& s = *m.impl_;
  const std::string k = flow_shape(p.id, a, items, actions);
  uint32_t last = 0;
  for (auto& h : s.sws_tables)
    if (h.shape == k) {
      if (!h.t->free.empty()) return h.t;
      last = std::max(last, h.t->cap);
    }
  Inside in(s);
  FlowTemplates tp;
  flow_templates(items, actions, &tp);
  rte_flow_pattern_template_attr pta{};
  pta.ingress = a.ingress;
  pta.transfer = a.transfer;
  rte_flow_pattern_template* pt = pattern_template_create(&m, p.id, &pta, tp.items.data(), e);
  if (!pt) return nullptr;
  rte_flow_actions_template_attr ata{};
  ata.ingress = a.ingress;
  ata.transfer = a.transfer;
  rte_flow_actions_template* at = actions_template_create(&m, p.id, &ata, actions, tp.masks.data(), e);
  if (!at) {
    pattern_template_destroy(&m, p.id, pt, nullptr);
    return nullptr;
  }
  rte_flow_template_table_attr ta{};
  ta.flow_attr = a;
  ta.nb_flows = last ? 2 * last : kSwsFirstTable;
  rte_flow_template_table* th = template_table_create(&m, p.id, &ta, &pt, 1, &at, 1, e);
  if (!th) {
    actions_template_destroy(&m, p.id, at, nullptr);
    pattern_template_destroy(&m, p.id, pt, nullptr);
    return nullptr;
  }
  Impl::Table* t = find_owned(s.tables, th);
  s.sws_tables.push_back({k, t});
  return t;
}

int ModelCalls::sync_validate(Mlx5Model& m, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                              const rte_flow_action actions[], rte_flow_error* e) {
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return -rte_errno;
  if (int rc = dv_validate(m, *p, a, items, actions, e); rc != 0) return rc;
  Impl::Table* t = sws_table(m, *p, *a, items, actions, e);
  if (!t) return -rte_errno;
  Inside in(*m.impl_);
  MRule r;
  int32_t ct = -1;
  return compile(m, *t, items, actions, r, &ct, e);
}

rte_flow* ModelCalls::sync_create(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                                  const rte_flow_action actions[], rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = sws_port(m, port, true, e);
  if (!p) return nullptr;
  if (dv_validate(m, *p, a, items, actions, e) != 0) return nullptr;
  Impl::Table* t = sws_table(m, *p, *a, items, actions, e);
  if (!t) return nullptr;
  if (!sws_room(m, e)) return nullptr;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  rte_flow* f = async_create(self, port, 0, &op, reinterpret_cast<rte_flow_template_table*>(t), items, 0, actions, 0,
                             nullptr, e);
  sws_settle(m, *p);
  return f;
}

int ModelCalls::sync_destroy(void* self, uint16_t port, rte_flow* f, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return -rte_errno;
  if (!sws_room(m, e)) return -rte_errno;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  int rc = async_destroy(self, port, 0, &op, f, nullptr, e);
  sws_settle(m, *p);
  return rc;
}

rte_flow_action_handle* ModelCalls::sync_ah_create(void* self, uint16_t port, const rte_flow_indir_action_conf* conf,
                                                   const rte_flow_action* action, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  using R = rte_flow_action_handle;
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return nullptr;
  if (!conf || conf->ingress + conf->egress + conf->transfer != 1)
    return refuse_null<R>(m, e, EINVAL, "dv-attr", "must specify exactly one of ingress, egress or transfer");
  if (action->type == RTE_FLOW_ACTION_TYPE_CONNTRACK && (conf->transfer || m.cfg_.esw))
    return refuse_null<R>(m, e, ENOTSUP, "dv-ct-esw", "Connection is not supported");
  if (!sws_room(m, e)) return nullptr;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  R* h = ah_create(self, port, 0, &op, conf, action, nullptr, e);
  sws_settle(m, *p);
  return h;
}

int ModelCalls::sync_ah_update(void* self, uint16_t port, rte_flow_action_handle* h, const void* update,
                               rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return -rte_errno;
  if (!sws_room(m, e)) return -rte_errno;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  int rc = ah_update(self, port, 0, &op, h, update, nullptr, e);
  sws_settle(m, *p);
  return rc;
}

int ModelCalls::sync_ah_query(void* self, uint16_t port, const rte_flow_action_handle* h, void* data,
                              rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return -rte_errno;
  if (!sws_room(m, e)) return -rte_errno;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  int rc = ah_query(self, port, 0, &op, h, data, nullptr, e);
  if (rc != 0) return rc;
  if (!sws_settle(m, *p))
    return refuse(m, e, ETIMEDOUT, "not-modelled", "the query's answer did not come (no worker serviced the model)");
  return 0;
}

int ModelCalls::sync_ah_destroy(void* self, uint16_t port, rte_flow_action_handle* h, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = sws_port(m, port, false, e);
  if (!p) return -rte_errno;
  if (!sws_room(m, e)) return -rte_errno;
  Inside in(*m.impl_);
  rte_flow_op_attr op{};
  int rc = ah_destroy(self, port, 0, &op, h, nullptr, e);
  sws_settle(m, *p);
  return rc;
}

}  // namespace dp
