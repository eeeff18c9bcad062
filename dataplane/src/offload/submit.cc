// The rte_flow provider: the operations each submit effect of a
// connection's lifecycle (lifecycle_sm.h) stands for (Submission carries
// them out on either engine, and the machine counts them), and the shared
// rules of the rule tables.
#include "provider_internal.h"

namespace dp {

// Its conntrack object, from the tracker's snapshot start_next() took.
// The driver's answer (a handle or none) is the machine's kSubmitted: with
// it, DV submits the rules at once and HWS once the create has completed
// (the driver takes a rule naming an object still WAIT_ASYNC,
// mlx5_flow_aso.c:1753-1756, and it may go live before the context is
// written).
void RteFlowProvider::submit_ct_create(uint32_t id) {
  Job& j = jobs_[id];
  uint16_t cp = ct_port(j);
  j.prof = hw::ct_profile(snap_, flow_port(j, 1));
  rte_flow_indir_action_conf ic{};
  ic.ingress = !transfer_;
  ic.transfer = transfer_;
  rte_flow_action act{RTE_FLOW_ACTION_TYPE_CONNTRACK, &j.prof};
  ct_op_out();
  j.ct = sub_.ct_create(cp, ic, act, cookie(id, kOpCtCreate));
  push_all({cp});
  life::Event le{life::EventKind::kSubmitted};
  le.ok = j.ct != nullptr;
  deliver(id, le, clock());
}

// A connection's two rules (and, with a conntrack object, its direction
// update between them).
void RteFlowProvider::submit_rules(uint32_t id) {
  Job& j = jobs_[id];
  uint16_t cp = ct_port(j);
  j.flow[0] = sub_.flow_create(hw::conn_flow(layout_, j.conn, 0, j.ct, age_cookie(j, id, kOpFlow0)), cfg_.table_size,
                               cookie(id, kOpFlow0), true);
  if (j.life.ct_obj) {
    // Direction only: no WQE (mlx5_flow_hw.c:7738-7745 posts one only
    // for a state update), so not a conntrack queue operation.
    rte_flow_modify_conntrack m = hw::ct_reply_update(j.prof);
    sub_.ct_update(cp, j.ct, m, cookie(id, kOpCtDir), true);
  }
  j.flow[1] = sub_.flow_create(hw::conn_flow(layout_, j.conn, 1, j.ct, age_cookie(j, id, kOpFlow1)), cfg_.table_size,
                               cookie(id, kOpFlow1), true);
  push_all({cp, flow_port(j, 0), flow_port(j, 1)});
}

// The rules in `flows` (life::Made bits), or with none the conntrack
// object (its rules are gone).
void RteFlowProvider::submit_destroy(uint32_t id, uint8_t flows) {
  Job& j = jobs_[id];
  if (!flows) {
    sub_.ct_destroy(ct_port(j), j.ct, cookie(id, kOpDelCt));
    return;
  }
  for (int d = 0; d < 2; d++)
    if (flows & (d ? life::kMadeFlow1 : life::kMadeFlow0))
      sub_.flow_destroy(flow_port(j, d), j.flow[d], cookie(id, d ? kOpDelFlow1 : kOpDelFlow0), false);
}

void RteFlowProvider::submit_query(uint32_t id) {
  Job& j = jobs_[id];
  j.qbuf = {};
  ct_op_out();
  sub_.ct_query(ct_port(j), j.ct, &j.qbuf, cookie(id, kOpQuery));
}

// The query came back: merge with software's state (snap_, taken at its
// completion) and write the context back.
void RteFlowProvider::resync_update(uint32_t id) {
  Job& j = jobs_[id];
  rte_flow_action_conntrack sw = hw::ct_profile(snap_, flow_port(j, 1));
  rte_flow_modify_conntrack m{};
  m.new_ct = hw::ct_merge(j.qbuf, sw);
  m.new_ct.is_original_dir = 0;
  m.state = 1;  // the direction (set for the reply rule) stays
  uint64_t now = clock();
  if (j.last_resync_ns && now - j.last_resync_ns < 1'000'000'000ull && !j.liberal) {
    j.liberal = true;  // the last strict write did not hold
    resyncs_liberal_++;
  }
  m.new_ct.liberal_mode = j.liberal || m.new_ct.liberal_mode;
  j.last_resync_ns = now;
  j.prof = m.new_ct;
  ct_op_out();
  sub_.ct_update(ct_port(j), j.ct, m, cookie(id, kOpResync), false);
}

// Replaces the shared rules (group 0 and the verdict groups) with those
// of the current pipeline, or with nothing: the new ones first.
void RteFlowProvider::replace_shared(bool none) {
  std::vector<Shared> made;
  std::set<uint16_t> ports;
  if (!none && pl_) {
    std::vector<hw::Flow> flows = hw::base_flows(layout_);
    for (auto& rf : hw::translate_rules(layout_, pl_->rules()))
      for (auto& f : rf.flows) flows.push_back(std::move(f));
    for (auto& f : flows) {
      rte_flow* fl = sub_.flow_create(f, kSharedTable, cookie(0, kOpShared), true);
      if (fl) made.push_back(Shared{f.port_id, fl});
      ports.insert(f.port_id);
    }
  }
  for (const Shared& s : shared_) {
    sub_.flow_destroy(s.port, s.flow, cookie(0, kOpShared), true);
    ports.insert(s.port);
  }
  push_all(ports);
  shared_ = std::move(made);
}

void RteFlowProvider::pull_all(uint64_t now_ns) {
  for (const Submission::Done& d : sub_.pull(queue_ports())) complete(d.cookie, d.err, now_ns);
}

}  // namespace dp
