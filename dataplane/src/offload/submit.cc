// The rte_flow provider: what it submits through the seam (templates,
// tables, rules, conntrack objects, their updates and queries).
#include "provider_internal.h"

namespace dp {

void RteFlowProvider::submit_install(uint32_t id, uint64_t) {
  Job& j = jobs_[id];
  const FlowApi& a = api();
  rte_flow_op_attr post{};
  post.postpone = 1;
  rte_flow_error err{};
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
    if (sws_) {
      j.ct = a.action_handle_create(a.self, cp, &ic, &act, &err);
      sync_result(cookie(id, kOpCtCreate), j.ct != nullptr, err);
    } else {
      j.ct = a.async_action_handle_create(a.self, cp, 0, &post, &ic, &act, cookie(id, kOpCtCreate), &err);
      if (!j.ct) sync_fail(cookie(id, kOpCtCreate), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
    }
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
  const FlowApi& a = api();
  rte_flow_op_attr post{};
  post.postpone = 1;
  rte_flow_error err{};
  uint16_t cp = ct_port(j);
  j.flow[0] = create(hw::conn_flow(layout_, j.conn, 0, j.ct, age_cookie(j, id, kOpFlow0)), cfg_.table_size,
                     cookie(id, kOpFlow0), true, &j);
  if (j.ct_obj) {
    // Direction only: no WQE (mlx5_flow_hw.c:7738-7745 posts one only
    // for a state update), so not a conntrack queue operation.
    rte_flow_modify_conntrack m = hw::ct_reply_update(j.prof);
    op_out(j);
    if (sws_)
      sync_result(cookie(id, kOpCtDir), a.action_handle_update(a.self, cp, j.ct, &m, &err) == 0, err);
    else if (a.async_action_handle_update(a.self, cp, 0, &post, j.ct, &m, cookie(id, kOpCtDir), &err) != 0)
      sync_fail(cookie(id, kOpCtDir), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
  }
  j.flow[1] = create(hw::conn_flow(layout_, j.conn, 1, j.ct, age_cookie(j, id, kOpFlow1)), cfg_.table_size,
                     cookie(id, kOpFlow1), true, &j);
  push_all({cp, flow_port(j, 0), flow_port(j, 1)});
}

void RteFlowProvider::submit_remove(uint32_t id) {
  Job& j = jobs_[id];
  const FlowApi& a = api();
  rte_flow_op_attr now{};
  rte_flow_error err{};
  if (j.made & (kMadeFlow0 | kMadeFlow1)) {
    for (int d = 0; d < 2; d++) {
      if (!(j.made & (d ? kMadeFlow1 : kMadeFlow0))) continue;
      Tag t = d ? kOpDelFlow1 : kOpDelFlow0;
      op_out(j);
      if (sws_)
        sync_result(cookie(id, t), a.destroy(a.self, flow_port(j, d), j.flow[d], &err) == 0, err);
      else if (a.async_destroy(a.self, flow_port(j, d), 0, &now, j.flow[d], cookie(id, t), &err) != 0)
        sync_fail(cookie(id, t), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
    }
    return;
  }
  // The rules are gone (their destruction completed): now the context.
  if (j.made & kMadeCt) {
    op_out(j);
    if (sws_)
      sync_result(cookie(id, kOpDelCt), a.action_handle_destroy(a.self, ct_port(j), j.ct, &err) == 0, err);
    else if (a.async_action_handle_destroy(a.self, ct_port(j), 0, &now, j.ct, cookie(id, kOpDelCt), &err) != 0)
      sync_fail(cookie(id, kOpDelCt), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
  }
}

void RteFlowProvider::start_resync(uint32_t id) {
  Job& j = jobs_[id];
  const FlowApi& a = api();
  rte_flow_op_attr now{};
  rte_flow_error err{};
  j.resyncing = true;
  j.qbuf = {};
  op_out(j);
  ct_op_out();
  if (sws_)
    sync_result(cookie(id, kOpQuery), a.action_handle_query(a.self, ct_port(j), j.ct, &j.qbuf, &err) == 0, err);
  else if (a.async_action_handle_query(a.self, ct_port(j), 0, &now, j.ct, &j.qbuf, cookie(id, kOpQuery), &err) != 0)
    sync_fail(cookie(id, kOpQuery), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
}

// The query came back: merge and write the context back.
void RteFlowProvider::resync_update(uint32_t id) {
  Job& j = jobs_[id];
  const FlowApi& a = api();
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
  rte_flow_op_attr op{};
  rte_flow_error err{};
  op_out(j);
  ct_op_out();
  if (sws_)
    sync_result(cookie(id, kOpResync), a.action_handle_update(a.self, ct_port(j), j.ct, &m, &err) == 0, err);
  else if (a.async_action_handle_update(a.self, ct_port(j), 0, &op, j.ct, &m, cookie(id, kOpResync), &err) != 0)
    sync_fail(cookie(id, kOpResync), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
}

// The template table for a flow's shape, made on first use.
rte_flow_template_table* RteFlowProvider::table_for(const hw::Flow& f, uint32_t nb_flows, std::string* why) {
  std::string k = shape(f);
  auto it = tables_.find(k);
  if (it != tables_.end()) return it->second.table;
  const FlowApi& a = api();
  rte_flow_error err{};
  rte_flow_pattern_template_attr pta{};
  pta.relaxed_matching = 0;
  pta.ingress = f.attr.ingress;
  pta.transfer = f.attr.transfer;
  FlowTemplates tp;
  flow_templates(f.pattern.data(), f.actions.data(), &tp);
  rte_flow_pattern_template* pt = a.pattern_template_create(a.self, f.port_id, &pta, tp.items.data(), &err);
  if (!pt) {
    *why = "pattern template: " + flow_err(err, rte_errno);
    return nullptr;
  }
  rte_flow_actions_template_attr ata{};
  ata.ingress = f.attr.ingress;
  ata.transfer = f.attr.transfer;
  rte_flow_actions_template* at =
      a.actions_template_create(a.self, f.port_id, &ata, f.actions.data(), tp.masks.data(), &err);
  if (!at) {
    a.pattern_template_destroy(a.self, f.port_id, pt, &err);
    *why = "actions template: " + flow_err(err, rte_errno);
    return nullptr;
  }
  rte_flow_template_table_attr ta{};
  ta.flow_attr = f.attr;
  ta.nb_flows = nb_flows;
  rte_flow_template_table* t = a.template_table_create(a.self, f.port_id, &ta, &pt, 1, &at, 1, &err);
  if (!t) {
    a.actions_template_destroy(a.self, f.port_id, at, &err);
    a.pattern_template_destroy(a.self, f.port_id, pt, &err);
    *why = "template table: " + flow_err(err, rte_errno);
    return nullptr;
  }
  tables_.emplace(k, Table{f.port_id, next_table_id_++, pt, at, t, nb_flows});
  return t;
}

// SWS: the driver judges the rule itself (flow_dv_validate), then writes it.
// nullptr with the driver's message and errno when either call refuses.
rte_flow* RteFlowProvider::sws_create(const hw::Flow& f, std::string* why, int* errno_out) {
  const FlowApi& a = api();
  rte_flow_error err{};
  if (a.validate(a.self, f.port_id, &f.attr, f.pattern.data(), f.actions.data(), &err) != 0) {
    *errno_out = rte_errno ? rte_errno : EINVAL;
    *why = "rte_flow_validate: " + flow_err(err, rte_errno);
    return nullptr;
  }
  err = {};
  rte_flow* fl = a.create(a.self, f.port_id, &f.attr, f.pattern.data(), f.actions.data(), &err);
  if (!fl) {
    *errno_out = rte_errno ? rte_errno : EIO;
    *why = flow_err(err, rte_errno);
  }
  return fl;
}

// Queues one flow; a synchronous failure completes with its errno.
rte_flow* RteFlowProvider::create(const hw::Flow& f, uint32_t nb_flows, void* ck, bool postpone, Job* j) {
  const FlowApi& a = api();
  if (j) op_out(*j);
  else in_flight_++;
  if (sws_) {
    std::string why;
    int e = 0;
    rte_flow* fl = sws_create(f, &why, &e);
    if (fl) sync_done_.push_back({reinterpret_cast<uintptr_t>(ck), 0});
    else sync_fail(ck, e, f.what + ": " + why);
    return fl;
  }
  std::string why;
  rte_flow_template_table* t = table_for(f, nb_flows, &why);
  if (!t) {
    sync_fail(ck, rte_errno ? rte_errno : ENOTSUP, why);
    return nullptr;
  }
  rte_flow_op_attr op{};
  op.postpone = postpone;
  rte_flow_error err{};
  rte_flow* fl = a.async_create(a.self, f.port_id, 0, &op, t, f.pattern.data(), 0, f.actions.data(), 0, ck, &err);
  if (!fl) sync_fail(ck, rte_errno ? rte_errno : EIO, f.what + ": " + flow_err(err, rte_errno));
  return fl;
}

// Replaces the shared rules (group 0 and the verdict groups) with those
// of the current pipeline, or with nothing: the new ones first.
void RteFlowProvider::replace_shared(bool none) {
  const FlowApi& a = api();
  std::vector<Shared> made;
  std::set<uint16_t> ports;
  if (!none && pl_) {
    std::vector<hw::Flow> flows = hw::base_flows(layout_);
    for (auto& rf : hw::translate_rules(layout_, pl_->rules()))
      for (auto& f : rf.flows) flows.push_back(std::move(f));
    for (auto& f : flows) {
      rte_flow* fl = create(f, kSharedTable, cookie(0, kOpShared), true, nullptr);
      if (fl) made.push_back(Shared{f.port_id, fl});
      ports.insert(f.port_id);
    }
  }
  rte_flow_op_attr post{};
  post.postpone = 1;
  for (const Shared& s : shared_) {
    rte_flow_error err{};
    in_flight_++;
    if (sws_)
      sync_result(cookie(0, kOpShared), a.destroy(a.self, s.port, s.flow, &err) == 0, err);
    else if (a.async_destroy(a.self, s.port, 0, &post, s.flow, cookie(0, kOpShared), &err) != 0)
      sync_fail(cookie(0, kOpShared), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
    ports.insert(s.port);
  }
  push_all(ports);
  shared_ = std::move(made);
}

void RteFlowProvider::pull_all(uint64_t now_ns) {
  const FlowApi& a = api();
  std::vector<std::pair<uintptr_t, int>> done;
  done.swap(sync_done_);
  rte_flow_op_result res[64];
  for (uint16_t p : configured_) {
    if (!has_queue(p)) continue;
    int n;
    rte_flow_error err{};
    while ((n = a.pull(a.self, p, 0, res, 64, &err)) > 0)
      for (int i = 0; i < n; i++)
        done.emplace_back(reinterpret_cast<uintptr_t>(res[i].user_data),
                          res[i].status == RTE_FLOW_OP_SUCCESS ? 0 : EIO);
  }
  for (auto& [ck, err] : done) complete(ck, err, now_ns);
}

}  // namespace dp
