// The rte_flow provider: which operations each step of a connection's
// lifecycle submits (Submission carries them out on either engine), and
// the shared rules of the rule tables.
#include "provider_internal.h"

namespace dp {

void RteFlowProvider::submit_install(uint32_t id, uint64_t) {
  Job& j = jobs_[id];
  uint16_t cp = ct_port(j);
  if (j.ct_obj) {
    // Software's state now, not at the event: packets forwarded since
    // moved the window.
    ctrack::Event snap;
    if (!host_.shards[j.worker]->snapshot(j.handle, j.orig, &snap)) {
      live_.erase(conn_key(j.worker, j.handle));
      j.used = false;
      free_jobs_.push_back(id);
      refuse("gone");
      return;
    }
    j.prof = hw::ct_profile(snap, flow_port(j, 1));
    rte_flow_indir_action_conf ic{};
    ic.ingress = !transfer_;
    ic.transfer = transfer_;
    rte_flow_action act{RTE_FLOW_ACTION_TYPE_CONNTRACK, &j.prof};
    op_out(j);
    ct_op_out();
    j.ct = sub_.ct_create(cp, ic, act, cookie(id, kOpCtCreate));
    push_all({cp});
    // The rules go in once the object's create has completed (complete()
    // calls submit_rules): the driver takes a rule naming an object still
    // WAIT_ASYNC (mlx5_flow_aso.c:1753-1756), and it may go live before the
    // context is written. (SWS: the create has completed already.)
    if (!j.ct) return;
    if (!sws_) {
      j.rules_reserved = true;  // the two rules and the direction update, submitted from complete()
      reserved_ += kRulesAfterCt;
      return;
    }
  }
  submit_rules(id);
}

// A connection's two rules (and, with a conntrack object, its direction
// update between them).
void RteFlowProvider::submit_rules(uint32_t id) {
  Job& j = jobs_[id];
  uint16_t cp = ct_port(j);
  op_out(j);
  j.flow[0] = sub_.flow_create(hw::conn_flow(layout_, j.conn, 0, j.ct, age_cookie(j, id, kOpFlow0)), cfg_.table_size,
                               cookie(id, kOpFlow0), true);
  if (j.ct_obj) {
    // Direction only: no WQE (mlx5_flow_hw.c:7738-7745 posts one only
    // for a state update), so not a conntrack queue operation.
    rte_flow_modify_conntrack m = hw::ct_reply_update(j.prof);
    op_out(j);
    sub_.ct_update(cp, j.ct, m, cookie(id, kOpCtDir), true);
  }
  op_out(j);
  j.flow[1] = sub_.flow_create(hw::conn_flow(layout_, j.conn, 1, j.ct, age_cookie(j, id, kOpFlow1)), cfg_.table_size,
                               cookie(id, kOpFlow1), true);
  push_all({cp, flow_port(j, 0), flow_port(j, 1)});
}

void RteFlowProvider::submit_remove(uint32_t id) {
  Job& j = jobs_[id];
  if (j.made & (kMadeFlow0 | kMadeFlow1)) {
    for (int d = 0; d < 2; d++) {
      if (!(j.made & (d ? kMadeFlow1 : kMadeFlow0))) continue;
      op_out(j);
      sub_.flow_destroy(flow_port(j, d), j.flow[d], cookie(id, d ? kOpDelFlow1 : kOpDelFlow0), false);
    }
    return;
  }
  // The rules are gone (their destruction completed): now the context.
  if (j.made & kMadeCt) {
    op_out(j);
    sub_.ct_destroy(ct_port(j), j.ct, cookie(id, kOpDelCt));
  }
}

void RteFlowProvider::start_resync(uint32_t id) {
  Job& j = jobs_[id];
  j.resyncing = true;
  j.qbuf = {};
  op_out(j);
  ct_op_out();
  sub_.ct_query(ct_port(j), j.ct, &j.qbuf, cookie(id, kOpQuery));
}

// The query came back: merge and write the context back.
void RteFlowProvider::resync_update(uint32_t id) {
  Job& j = jobs_[id];
  ctrack::Event snap;
  if (!host_.shards[j.worker]->snapshot(j.handle, j.orig, &snap)) return;
  rte_flow_action_conntrack sw = hw::ct_profile(snap, flow_port(j, 1));
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
  op_out(j);
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
