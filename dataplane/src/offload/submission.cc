#include "submission.h"

#include "provider_internal.h"

namespace dp {

void LimitedLog::warn(const std::string& key, const std::string& line) {
  uint64_t now = mono_ns();
  uint64_t& last = last_ns_[key];
  if (now - last >= 1'000'000'000ull) {
    last = now;
    log_warning(LogType::kOffload, line);
  }
}

int Submission::last_errno(int dflt) const { return rte_errno ? rte_errno : dflt; }

void Submission::fail(uintptr_t ck, int err, const std::string& msg) {
  sync_done_.push_back({ck, err});
  if (!msg.empty()) log_.warn("op_" + errno_reason(err), "operation refused: " + msg);
}

void Submission::result(uintptr_t ck, bool ok, const rte_flow_error& err) {
  if (ok) sync_done_.push_back({ck, 0});
  else fail(ck, last_errno(EIO), flow_err(err, rte_errno));
}

rte_flow* Submission::sws_create(const FlowApi& a, const hw::Flow& f, std::string* why, int* errno_out) {
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

rte_flow* Submission::flow_create(const hw::Flow& f, uint32_t nb_flows, uintptr_t ck, bool postpone) {
  const FlowApi& a = *api_;
  out();
  std::string why;
  if (sws_) {
    int e = 0;
    rte_flow* fl = sws_create(a, f, &why, &e);
    if (fl) sync_done_.push_back({ck, 0});
    else fail(ck, e, f.what + ": " + why);
    return fl;
  }
  rte_flow_template_table* t = templates_.get(a, f, nb_flows, &why);
  if (!t) {
    fail(ck, last_errno(ENOTSUP), why);
    return nullptr;
  }
  rte_flow_op_attr op{};
  op.postpone = postpone;
  rte_flow_error err{};
  rte_flow* fl = a.async_create(a.self, f.port_id, 0, &op, t, f.pattern.data(), 0, f.actions.data(), 0,
                                reinterpret_cast<void*>(ck), &err);
  if (!fl) fail(ck, last_errno(EIO), f.what + ": " + flow_err(err, rte_errno));
  return fl;
}

void Submission::flow_destroy(uint16_t port, rte_flow* fl, uintptr_t ck, bool postpone) {
  const FlowApi& a = *api_;
  out();
  rte_flow_op_attr op{};
  op.postpone = postpone;
  rte_flow_error err{};
  if (sws_) result(ck, a.destroy(a.self, port, fl, &err) == 0, err);
  else if (a.async_destroy(a.self, port, 0, &op, fl, reinterpret_cast<void*>(ck), &err) != 0)
    fail(ck, last_errno(EIO), flow_err(err, rte_errno));
}

rte_flow_action_handle* Submission::ct_create(uint16_t port, const rte_flow_indir_action_conf& ic,
                                              const rte_flow_action& act, uintptr_t ck) {
  const FlowApi& a = *api_;
  out();
  rte_flow_error err{};
  rte_flow_action_handle* h;
  if (sws_) {
    h = a.action_handle_create(a.self, port, &ic, &act, &err);
    result(ck, h != nullptr, err);
    return h;
  }
  rte_flow_op_attr post{};
  post.postpone = 1;
  h = a.async_action_handle_create(a.self, port, 0, &post, &ic, &act, reinterpret_cast<void*>(ck), &err);
  if (!h) fail(ck, last_errno(EIO), flow_err(err, rte_errno));
  return h;
}

void Submission::ct_update(uint16_t port, rte_flow_action_handle* h, const rte_flow_modify_conntrack& m, uintptr_t ck,
                           bool postpone) {
  const FlowApi& a = *api_;
  out();
  rte_flow_error err{};
  if (sws_) {
    result(ck, a.action_handle_update(a.self, port, h, &m, &err) == 0, err);
    return;
  }
  rte_flow_op_attr op{};
  op.postpone = postpone;
  if (a.async_action_handle_update(a.self, port, 0, &op, h, &m, reinterpret_cast<void*>(ck), &err) != 0)
    fail(ck, last_errno(EIO), flow_err(err, rte_errno));
}

void Submission::ct_query(uint16_t port, rte_flow_action_handle* h, rte_flow_action_conntrack* qout, uintptr_t ck) {
  const FlowApi& a = *api_;
  out();
  rte_flow_error err{};
  if (sws_) {
    result(ck, a.action_handle_query(a.self, port, h, qout, &err) == 0, err);
    return;
  }
  rte_flow_op_attr now{};
  if (a.async_action_handle_query(a.self, port, 0, &now, h, qout, reinterpret_cast<void*>(ck), &err) != 0)
    fail(ck, last_errno(EIO), flow_err(err, rte_errno));
}

void Submission::ct_destroy(uint16_t port, rte_flow_action_handle* h, uintptr_t ck) {
  const FlowApi& a = *api_;
  out();
  rte_flow_error err{};
  if (sws_) {
    result(ck, a.action_handle_destroy(a.self, port, h, &err) == 0, err);
    return;
  }
  rte_flow_op_attr now{};
  if (a.async_action_handle_destroy(a.self, port, 0, &now, h, reinterpret_cast<void*>(ck), &err) != 0)
    fail(ck, last_errno(EIO), flow_err(err, rte_errno));
}

void Submission::push(const std::set<uint16_t>& ports) {
  if (sws_) return;
  const FlowApi& a = *api_;
  for (uint16_t p : ports) {
    rte_flow_error err{};
    a.push(a.self, p, 0, &err);
  }
}

std::vector<Submission::Done> Submission::pull(const std::vector<uint16_t>& queue_ports) {
  std::vector<Done> done;
  done.swap(sync_done_);
  if (!sws_) {
    const FlowApi& a = *api_;
    rte_flow_op_result res[64];
    for (uint16_t p : queue_ports) {
      int n;
      rte_flow_error err{};
      while ((n = a.pull(a.self, p, 0, res, 64, &err)) > 0)
        for (int i = 0; i < n; i++)
          done.push_back({reinterpret_cast<uintptr_t>(res[i].user_data), res[i].status == RTE_FLOW_OP_SUCCESS ? 0 : EIO});
    }
  }
  in_flight_ -= std::min<uint32_t>(in_flight_, static_cast<uint32_t>(done.size()));
  return done;
}

bool Submission::query_count(uint16_t port, rte_flow* fl, uint64_t* hits, uint64_t* bytes) const {
  const FlowApi& a = *api_;
  rte_flow_error err{};
  rte_flow_query_count qc{};
  rte_flow_action count[] = {{RTE_FLOW_ACTION_TYPE_COUNT, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
  if (a.query(a.self, port, fl, count, &qc, &err) != 0) return false;
  *hits = qc.hits;
  *bytes = qc.bytes;
  return true;
}

bool Submission::query_age(uint16_t port, rte_flow* fl, rte_flow_query_age* qa) const {
  const FlowApi& a = *api_;
  rte_flow_error err{};
  rte_flow_action age[] = {{RTE_FLOW_ACTION_TYPE_AGE, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
  return a.query(a.self, port, fl, age, qa, &err) == 0;
}

int Submission::aged_flows(uint16_t port, void** ctx, uint32_t n, std::string* why) const {
  const FlowApi& a = *api_;
  rte_flow_error err{};
  int got = a.get_q_aged_flows(a.self, port, 0, ctx, n, &err);
  if (got < 0) *why = flow_err(err, -got);
  return got;
}

}  // namespace dp
