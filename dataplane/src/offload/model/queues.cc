// The model: flow queues (enqueue, push, pull) and the aged-flow reports.
#include "internal.h"

namespace dp {

Mlx5Model::Impl::FlowQueue* ModelCalls::job(Mlx5Model& m, Impl::Port* p, uint32_t queue, rte_flow_error* e) {
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

void ModelCalls::enqueue(Mlx5Model& m, Impl::FlowQueue& q, Op op, Impl::Pending pd, bool postpone) {
  Impl& s = *m.impl_;
  op.seq = pd.seq = ++s.seq;
  q.jobs++;
  q.unpushed.push_back(std::move(op));
  q.unpushed_done.push_back(pd);
  if (!postpone) send(m, q);
}

void ModelCalls::send(Mlx5Model& m, Impl::FlowQueue& q) {
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

int ModelCalls::get_q_aged_flows(void* self, uint16_t port, uint32_t, void** contexts, uint32_t n, rte_flow_error* e) {
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
  if (n == 0) {
    int c = 0;
    for (uint32_t id : s.age_ids) {
      const bool was = s.flows[id].aged;
      c += aged(id);
      s.flows[id].aged = was;  // counting reports nothing
    }
    return c;
  }
  // One call makes at most as many visits as there are listed rules (the
  // driver's service thread fills the ring as rules age): going round a
  // short list thousands of times per call would read the counters the
  // workers write on every packet. Removing a gone rule is not a visit.
  uint32_t k = 0;
  const uint32_t budget = static_cast<uint32_t>(std::min<size_t>(s.age_ids.size(), 65536));
  for (uint32_t visits = 0; visits < budget && k < n && !s.age_ids.empty();) {
    const uint32_t at = s.age_cursor % static_cast<uint32_t>(s.age_ids.size());
    const uint32_t id = s.age_ids[at];
    if (s.flows[id].st != Impl::FlowRec::kLive || !s.flows[id].age_s) {  // gone: off the list
      s.age_listed[id] = 0;
      s.age_ids[at] = s.age_ids.back();
      s.age_ids.pop_back();
      continue;
    }
    s.age_cursor = at + 1;
    visits++;
    if (!aged(id)) continue;
    s.flows[id].aged = true;
    contexts[k++] = s.flows[id].age_ctx;
  }
  return static_cast<int>(k);
}

int ModelCalls::push(void* self, uint16_t port, uint32_t queue, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl::Port* p = m.impl_->port(port);
  if (!hws_ok(m, p, e)) return -rte_errno;
  if (queue + 1 >= p->q.size())
    return refuse(m, e, EINVAL, "rule-queue", "flow queue " + std::to_string(queue) + " was not configured");
  send(m, p->q[queue]);
  return 0;
}

// What a completion does on the control side: a destroyed rule's slot and
// counter, a query's result.
void ModelCalls::complete(Mlx5Model& m, Impl::FlowQueue& q, Impl::Pending& pd, uint64_t now) {
  Impl& s = *m.impl_;
  if (pd.wqe) q.ct_wqes--;
  if (pd.ct_create && s.cts[pd.id].used) s.cts[pd.id].ready = true;
  if (pd.kind == Impl::Pending::kFlowDestroy) {
    // The slot returns to the table when the destruction is pulled
    // (mlx5_flow_hw.c:2824-2839); its counter waits for the service's
    // next cycle (counter-reuse).
    Impl::FlowRec& f = s.flows[pd.id];
    if (f.counter) {
      if (Impl::Port* cp = s.port(f.t->port)) {
        cp->cnt_taken--;
        // (HWS's counter service; DV's counters are free again at once.)
        const uint64_t cyc = s.inside ? 0 : m.cfg_.limits.counter_cycle_ms * 1'000'000ull;
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
}

int ModelCalls::pull(void* self, uint16_t port, uint32_t queue, rte_flow_op_result res[], uint16_t n, rte_flow_error* e) {
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
    complete(m, q, pd, now);
    res[k].status = pd.ok ? RTE_FLOW_OP_SUCCESS : RTE_FLOW_OP_ERROR;
    res[k].user_data = pd.user;
    k++;
    q.jobs--;
    q.inflight.pop_front();
  }
  return k;
}

}  // namespace dp
