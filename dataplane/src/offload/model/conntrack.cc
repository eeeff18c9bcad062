// The model: indirect conntrack objects (create, update, destroy, query).
#include "internal.h"

namespace dp {

rte_flow_action_handle* ModelCalls::ah_create(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
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
  if (q->ct_wqes >= m.cfg_.limits.ct_queue_depth)
    return refuse_null<R>(m, e, EBUSY, "ct-queue-depth",
                          "Failed to update CT (SQ is full: " + std::to_string(q->ct_wqes) + " WQEs out)");
  const auto* prof = static_cast<const rte_flow_action_conntrack*>(action->conf);
  if (prof->state > RTE_FLOW_CONNTRACK_STATE_TIME_WAIT)
    return refuse_null<R>(m, e, EINVAL, "ct-profile", "Invalid CT state");
  if (prof->last_index > RTE_FLOW_CONNTRACK_FLAG_RST)
    return refuse_null<R>(m, e, EINVAL, "ct-profile", "Invalid last TCP packet flag");
  if (p->ct_free.empty()) {
    // 22.11 does not refuse here: its object pool grows past the DevX
    // object, whose contexts then lie outside it (rule ct-pool-bound). The
    // model refuses and counts it; a provider must never get here.
    s.ct_overruns++;
    return refuse_null<R>(m, e, ENOMEM, "ct-pool-bound",
                          "conntrack object " + std::to_string(p->ct_cap + 1) + " of a pool of " +
                              std::to_string(p->ct_cap) + " (the driver would hand out one outside its DevX object)");
  }
  uint32_t idx = p->ct_free.back();
  p->ct_free.pop_back();
  s.ct_live++;
  Impl::CtObj& c = s.cts[idx];
  c = Impl::CtObj{};
  c.used = true;
  c.is_original = prof->is_original_dir != 0;
  c.owner = port;
  Op o;
  o.kind = Op::kCtSet;
  o.id = idx;
  load_ct(o.ct, *prof);
  Impl::Pending pd{0, 0, user_data, true, Impl::Pending::kCt, idx};
  pd.wqe = true;
  pd.ct_create = true;
  q->ct_wqes++;
  s.ct_wqes_max = std::max(s.ct_wqes_max, q->ct_wqes);
  enqueue(m, *q, o, pd, op && op->postpone);
  return reinterpret_cast<R*>((1ull << 62) | (static_cast<uint64_t>(port) << 32) | (idx + 1));
}

Mlx5Model::Impl::CtObj* ModelCalls::ct_of(Mlx5Model& m, rte_flow_action_handle* h, uint32_t* idx_out) {
  Impl& s = *m.impl_;
  auto v = reinterpret_cast<uintptr_t>(h);
  uint32_t idx = static_cast<uint32_t>(v & 0xFFFFFFFFu) - 1;
  if ((v >> 62) != 1 || idx >= s.cts.size() || !s.cts[idx].used) return nullptr;
  *idx_out = idx;
  return &s.cts[idx];
}

int ModelCalls::ah_update(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
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
    if (q->ct_wqes >= m.cfg_.limits.ct_queue_depth)  // mlx5_flow_hw.c:7748-7753
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

int ModelCalls::ah_destroy(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
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

int ModelCalls::ah_query(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
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
  if (q->ct_wqes >= m.cfg_.limits.ct_queue_depth)  // mlx5_flow_hw.c:7704-7708
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

}  // namespace dp
