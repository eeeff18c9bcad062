// The offload provider: the one code path from ctrack's connections and the
// rule tables to a NIC, through the rte_flow seam (flow_api.h): DPDK's
// rte_flow on a ConnectX (`rte_flow`), or the mlx5 22.11 model (`emulated`).
//
// Lifecycle of a connection (control thread only):
//   established event -> trace both directions through the live tables ->
//   queue; at submission a fresh snapshot of ctrack's TCP state (what the
//   NIC's context starts from) -> CONNTRACK object + one exact rule per
//   direction, asynchronously, at most max_in_flight operations out ->
//   installed (ctrack marks it offloaded) -> counters folded back about once
//   a second, NIC aging -> removal on FIN/RST (the NIC hands them to
//   software), expiry, flush, a rule change, aging: the rules first, the
//   CONNTRACK object only once their destruction completed (the driver frees
//   its slot at once, mlx5_flow_hw.c:7653-7676).
// Resync: the context starts from software's state at submission, with a
// right edge one peer window past what each side sent (hwflow.h
// ct_profile). A segment that still reaches software (the NIC refused it:
// ctrack raises kResync) means the NIC's window may be behind. The provider
// queries the context, merges it with software's (each field at its
// furthest) and writes it back. The write lands one asynchronous round trip
// after the query, and the connection keeps moving meanwhile, so it can
// land stale: if the NIC refuses again within a second, the context is
// written liberal (no window check; SYN, FIN and RST still come to
// software), the same checking software applies to offloaded connections.
// Without any of this a connection whose gap exceeds the window headroom
// stays in software whole: each direction's packets are refused because
// the context never saw the other's.
#include "provider_internal.h"
#include "features/tunnels.h"

namespace dp {

NicStage* OffloadProvider::nic() { return model(); }

Status RteFlowProvider::prepare(const std::vector<uint16_t>& ports) {
  ports_ = ports;
  if (emulated_ && !given_api_)
    if (Status s = make_model(ports); !s) return s;
  return choose_domain();
}

// The domain from the ports, not a default: the e-switch (transfer) when
// every port has the same transfer proxy and switch domain (an E-Switch
// manager and its representors); else each port's NIC Rx domain. A NIC in
// legacy mode has no transfer proxy (mlx5_flow.c:11530-11543).
Status RteFlowProvider::choose_domain() {
  const FlowApi& a = api();
  std::string why_not;
  uint16_t proxy0 = 0, dom0 = 0;
  for (size_t i = 0; i < ports_.size() && why_not.empty(); i++) {
    uint16_t px = 0;
    rte_flow_error err{};
    rte_eth_switch_info si{};
    const std::string p = "port " + std::to_string(ports_[i]);
    if (a.pick_transfer_proxy(a.self, ports_[i], &px, &err) != 0)
      why_not = p + " has no transfer proxy (" + flow_err(err, rte_errno) + ")";
    else if (a.switch_info(a.self, ports_[i], &si) != 0 || si.domain_id == RTE_ETH_DEV_SWITCH_DOMAIN_ID_INVALID)
      why_not = p + " is in no switch domain";
    else if (i == 0)
      proxy0 = px, dom0 = si.domain_id;
    else if (px != proxy0 || si.domain_id != dom0)
      why_not = p + " is not on the e-switch of port " + std::to_string(ports_[0]) + " (proxy " +
                std::to_string(px) + " vs " + std::to_string(proxy0) + ", switch domain " +
                std::to_string(si.domain_id) + " vs " + std::to_string(dom0) + ")";
  }
  if (cfg_.domain == "transfer" && !why_not.empty())
    return Status::error("offload.domain: transfer: " + why_not);
  transfer_ = cfg_.domain == "transfer" || (cfg_.domain == "auto" && why_not.empty());
  proxy_ = proxy0;
  if (cfg_.domain != "auto") domain_why_ = "offload.domain: " + cfg_.domain;
  else if (transfer_) domain_why_ = "auto: the ports are one e-switch (transfer proxy port " + std::to_string(proxy0) + ")";
  else domain_why_ = "auto: " + why_not;
  log_info(LogType::kOffload, std::string("domain ") + (transfer_ ? "transfer" : "ingress") + ": " + domain_why_);
  return {};
}

std::vector<size_t> RteFlowProvider::start_order(size_t nports) const {
  std::vector<size_t> v = OffloadProvider::start_order(nports);
  if (!transfer_) return v;
  auto px = std::find_if(v.begin(), v.end(), [&](size_t i) { return i < ports_.size() && ports_[i] == proxy_; });
  if (px != v.end()) std::rotate(v.begin(), px, px + 1);  // the proxy first, the rest in config order
  return v;
}

Status RteFlowProvider::make_model(const std::vector<uint16_t>& ports) {
  Mlx5ModelConfig mc;
  if (!mc.apply_profile(cfg_.nic)) return Status::error("offload.nic: no NIC profile '" + cfg_.nic + "'");
  mc.rx_queues = workers_;
  // The engine the ports are probed with: what the daemon gives an mlx5 port
  // without dv_flow_en before EAL (engine_devarg), here from the profile's
  // firmware.
  mc.dv_flow_en = cfg_.engine == "hws"                                             ? 2
                  : cfg_.engine == "sws" || !hws_did_not_start_before().empty() ? 1
                  : firmware_has_hws(mc.fw)                                     ? 2
                                                                                : 1;
  mc.latency_us = cfg_.latency_us;
  mc.insert_rate = cfg_.insert_rate;
  mc.self_service = cfg_.model_self_service;
  uint32_t ts = 1;
  while (ts < cfg_.table_size) ts <<= 1;
  // A TCP and a UDP connection table per port (NIC Rx) or on the proxy,
  // and the shared tables' slots.
  uint64_t tables = 2 * std::max<size_t>(1, ports.size());
  mc.max_flows = static_cast<uint32_t>(std::min<uint64_t>(tables * ts + kSharedSlots, 1u << 24));
  uint32_t ring = 1024;
  while (ring < 2 * queue_size() * std::max<size_t>(1, ports.size()) + 1024) ring <<= 1;
  if (mc.dv_flow_en == 1) {
    // DV: each shape's rules in hidden tables that double as they fill; the
    // rings take what the synchronous calls write ahead of the workers.
    mc.max_flows = static_cast<uint32_t>(std::min<uint64_t>(2ull * mc.max_flows, 1u << 24));
    ring = std::max<uint32_t>(ring, 1u << 16);
  }
  mc.ring = ring;
  model_ = std::make_unique<Mlx5Model>(mc, ports);
  return {};
}

// A port without the template API takes DV software steering if the
// driver validates a rule on it; otherwise why not goes in c.missing.
bool RteFlowProvider::take_sws(uint16_t port, HwCaps& c) {
  std::string why;
  if (sws_probe(port, &why)) {
    if (!sws_ && configured_.empty())
      engine_why_ = cfg_.engine == "sws" ? "offload.engine: sws"
                    : !hws_did_not_start_before().empty()
                        ? "auto: hardware steering did not start on the last probe (" + hws_did_not_start_before() +
                              "); started again with dv_flow_en=1"
                        : "auto: port " + std::to_string(port) + " has no hardware steering (" + c.missing.front() +
                              ") and validates rules synchronously";
    sws_ = true;
    configured_.insert(port);
    if (!transfer_ || port == (ports_.empty() ? port : ports_[0])) caps_ = c;
    return true;
  }
  c.missing.push_back("rte_flow_validate: " + why);
  return false;
}

// rte_flow_configure refused for good. Under auto the port was probed with
// HWS because its firmware version has it; the steering engine is fixed at
// probe: the daemon starts again with the other one (hws_did_not_start),
// hw-check says how.
std::string RteFlowProvider::refused_configure(const std::string& pn, const std::string& msg,
                                               const std::string& first, uint32_t cts) const {
  return "rte_flow_configure " + pn + ": " + msg + (msg != first ? " (first asked: " + first + ")" : "") +
         (cts ? " (with " + std::to_string(cts) + " conntrack objects: offload.conntrack " + cfg_.conntrack + ")"
              : "") +
         (cfg_.engine == "auto" ? "; hardware steering did not start on this port: offload.engine: "
                                  "sws (or dv_flow_en=1 in its devargs) runs DV software steering"
                                : "");
}

Status RteFlowProvider::configure_port(uint16_t port) {
  if (disabled_) return {};
  const FlowApi& a = api();
  HwCaps c = probe_rte_flow(a, port, transfer_);
  if (c.info_ok && cfg_.engine == "sws")
    return Status::error("offload.engine: sws, but port " + std::to_string(port) +
                         " runs hardware steering (dv_flow_en=2 in its devargs; DV software steering is "
                         "dv_flow_en=1)");
  if (!c.info_ok && cfg_.engine != "hws") {
    // No template API: DV software steering (dv_flow_en=1) if the driver
    // judges a rule (flow_dv_validate); a port with no rte_flow at all
    // refuses that too.
    if (take_sws(port, c)) return {};
    if (cfg_.engine == "sws") return Status::error("offload.engine: sws: port " + std::to_string(port) + ": " + c.str());
  }
  if (c.info_ok) engine_why_ = cfg_.engine == "hws" ? "offload.engine: hws" : "auto: the ports have hardware steering";
  if (!c.info_ok) {
    // Not a hardware-steering port at all (so nothing to configure for it
    // to receive traffic).
    if (auto_) {
      log_warning(LogType::kOffload, "auto: port " + std::to_string(port) + ": " + c.str() + "; staying in software");
      disabled_ = true;
      return {};
    }
    return Status::error("rte_flow: port " + std::to_string(port) + ": " + c.str());
  }
  // Role: on an E-Switch only the proxy holds rules, counters and
  // conntrack objects; representors still need rte_flow_configure to start
  // and to receive anything (mlx5_trigger.c:1125-1130, mlx5_flow_hw.c:9820).
  bool proxy = true;
  if (transfer_) {
    uint16_t px = port;
    rte_flow_error err{};
    if (a.pick_transfer_proxy(a.self, port, &px, &err) != 0)
      return Status::error("rte_flow: port " + std::to_string(port) + ": no transfer proxy: " + flow_err(err, rte_errno));
    proxy = px == port;
  }
  bool usable = c.missing.empty();
  rte_flow_port_attr pa{};
  rte_flow_queue_attr qa{};
  qa.size = usable && proxy ? queue_size() : 64;
  if (usable && proxy) {
    size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
    // A counter per rule, and the ones freed in the last counter-service
    // cycle, which cannot be taken again until the next (counter-reuse).
    pa.nb_counters = std::min<uint32_t>(c.max_nb_counters, static_cast<uint32_t>(4 * pool + 4 * kSharedSlots));
    pa.nb_aging_objects = std::min<uint32_t>(c.max_nb_aging_objects, static_cast<uint32_t>(2 * pool));
    // Not bounded by max_nb_conn_tracks: 22.11 never reports it. A later
    // port asks what an earlier one was granted (the same firmware).
    if (aso_) pa.nb_conn_tracks = std::min(ct_pool_, static_cast<uint32_t>(pool));
  }
  const rte_flow_queue_attr* qs[] = {&qa};
  const std::string pn = "port " + std::to_string(port);
  auto attempt = [&](std::string* msg) {
    rte_flow_error err{};
    int rc = a.configure(a.self, port, &pa, 1, qs, &err);
    if (rc != 0) *msg = flow_err(err, rc);
    return rc;
  };
  // What the firmware may refuse, stepped down one thing at a time, each
  // step logged with the driver's message: the conntrack pool (only where
  // the same request without it is then taken: that is the diagnosis),
  // halved while it is refused (a firmware allocates conntrack objects in
  // bulks of at most 2^log_conn_track_max_alloc, which 22.11 does not read),
  // then the queue size.
  std::string first, msg;
  int rc = attempt(&first);
  msg = first;
  while (rc != 0) {
    if (pa.nb_conn_tracks) {
      const uint32_t ct = pa.nb_conn_tracks;
      pa.nb_conn_tracks = 0;
      std::string m2;
      if (attempt(&m2) == 0) {
        // The pool it was: a smaller one, or none.
        std::string step = msg;
        const uint32_t top = rte_align32pow2(ct) / 2;
        const std::string least = std::to_string(kCtPoolMin);
        const std::string smaller = top >= kCtPoolMin ? "every halving from " + std::to_string(top) + " down to " + least
                                                       : "nothing smaller tried (" + least + " is the least asked)";
        for (uint32_t half = top; half >= kCtPoolMin; half /= 2) {
          pa.nb_conn_tracks = half;
          if (attempt(&step) == 0) {
            log_warning(LogType::kOffload, pn + ": a conntrack pool of " + std::to_string(ct) + " refused (" + msg +
                                               "); took " + std::to_string(half) + ": at most " +
                                               std::to_string(half) + " connections in the NIC at once");
            ct_pool_ = std::min(ct_pool_, half);
            rc = 0;
            break;
          }
        }
        if (rc == 0) break;
        pa.nb_conn_tracks = 0;
        if (cfg_.conntrack == "auto" && attempt(&m2) == 0) {
          // The strategy, probed: no conntrack pool here (an E-Switch
          // manager whose firmware has no conntrack in the FDB): exact
          // 5-tuple rules.
          strategy_why_ = "auto: " + pn + " refused a conntrack pool of " + std::to_string(ct) + " (" + msg +
                          "), " + smaller + "; the same request without it was taken";
          log_warning(LogType::kOffload, "conntrack flows: " + strategy_why_);
          aso_ = false;
          rc = 0;
          break;
        }
        if (cfg_.conntrack != "auto") {
          pa.nb_conn_tracks = ct;
          msg += "; the same request without the pool was taken";
          if (top >= kCtPoolMin) msg += ", and with " + least + " to " + std::to_string(top) + " conntrack objects refused (" + step + ")";
          break;
        }
      }
      pa.nb_conn_tracks = ct;  // not the pool: keep it and look further
    }
    if (!(usable && proxy) || qa.size <= kQueueMin) break;
    log_warning(LogType::kOffload, "rte_flow_configure " + pn + " with flow queues of " + std::to_string(qa.size) +
                                       " refused (" + msg + "); trying " + std::to_string(qa.size / 2));
    qa.size /= 2;
    rc = attempt(&msg);
  }
  if (rc != 0 && cfg_.engine == "auto") hws_failed_ = pn + ": " + msg;
  if (rc != 0) return Status::error(refused_configure(pn, msg, first, pa.nb_conn_tracks));
  if (usable && proxy) {
    queue_ = qa.size;
    if (in_flight_cap() < cfg_.max_in_flight)
      log_info(LogType::kOffload, pn + ": flow queues of " + std::to_string(queue_) + ": at most " +
                                      std::to_string(in_flight_cap()) + " operations out (offload.max_in_flight " +
                                      std::to_string(cfg_.max_in_flight) + ")");
  }
  configured_.insert(port);
  if (!usable) {
    // Configured (so the port still receives traffic with hardware
    // steering), but it cannot take the offload.
    if (auto_) {
      log_warning(LogType::kOffload,
                  "auto: port " + std::to_string(port) + " cannot: " + c.str() + "; staying in software");
      disabled_ = true;
      return {};
    }
    return Status::error("rte_flow: port " + std::to_string(port) + ": " + c.str());
  }
  if (proxy) caps_ = c;
  return {};
}

Status RteFlowProvider::start(OffloadHost& host) {
  if (disabled_) return {};
  host_ = host;
  layout_.transfer = transfer_;
  layout_.port_ids = host.port_ids;
  layout_.nb_queues = static_cast<uint16_t>(workers_);
  layout_.age_s = cfg_.age_s;
  layout_.proxy_port = host.port_ids.empty() ? 0 : host.port_ids[0];
  if (transfer_ && !host.port_ids.empty()) {
    rte_flow_error err{};
    const FlowApi& a = api();
    if (a.pick_transfer_proxy(a.self, host.port_ids[0], &layout_.proxy_port, &err) != 0)
      return Status::error("rte_flow: no transfer proxy (is the port in switchdev mode?): " +
                           flow_err(err, rte_errno));
  }
  for (uint16_t p : host.port_ids)
    if (!configured_.count(p)) return Status::error("rte_flow: port " + std::to_string(p) + " was not configured");
  sub_.bind(&api(), sws_);
  layout_.age_action = !sws_;
  layout_.vxlan_flags = !sws_;
  if (sws_ && cfg_.conntrack == "auto") strategy_why_ = "auto: a conntrack object was taken (DV: no pool to configure)";
  if (aso_ && cfg_.conntrack == "auto")
    if (std::string why = probe_ct(); !why.empty()) {
      aso_ = false;
      strategy_why_ = "auto: a conntrack object was refused (" + why + ")";
      log_warning(LogType::kOffload, "conntrack flows: " + strategy_why_);
    }
  layout_.aso = aso_;
  size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
  // A conntrack object per connection: no more connections than the pool
  // the firmware granted (configure_port); after the probe, which may take
  // the flows strategy, which needs none.
  if (aso_ && !sws_ && ct_pool_ < pool) pool = ct_pool_;
  jobs_.assign(pool, Job{});
  free_jobs_.clear();
  for (size_t i = pool; i-- > 0;) free_jobs_.push_back(static_cast<uint32_t>(i));
  log_info(LogType::kOffload, std::string("engine ") + (sws_ ? "sws" : "hws") + ": " + engine_why_);
  log_info(LogType::kOffload, std::string("conntrack ") + (aso_ ? "aso" : "flows") + ": " + strategy_why_);
  if (host_.marks && !host_.marks->load()) {
    auto* t = new HwMarkTable();
    if (!transfer_)
      for (size_t p = 0; p < host_.port_ids.size(); p++) t->out_port.push_back(static_cast<int16_t>(p));
    host_.marks->store(t);
  }
  started_ = true;
  return {};
}

// Whether the port takes synchronous rules: a catch-all drop in group 0,
// validated (not created).
bool RteFlowProvider::sws_probe(uint16_t port, std::string* why) {
  const FlowApi& a = api();
  rte_flow_attr at{};
  if (transfer_) {  // in the domain the rules will go to: the e-switch, through its proxy
    rte_flow_error err{};
    if (a.pick_transfer_proxy(a.self, port, &port, &err) != 0) {
      *why = "no transfer proxy: " + flow_err(err, rte_errno);
      return false;
    }
    at.transfer = 1;
  } else {
    at.ingress = 1;
  }
  rte_flow_item items[] = {{RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr}, {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr}};
  rte_flow_action acts[] = {{RTE_FLOW_ACTION_TYPE_DROP, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
  rte_flow_error err{};
  int rc = a.validate(a.self, port, &at, items, acts, &err);
  if (rc != 0) *why = flow_err(err, rc);
  return rc == 0;
}

// One conntrack object made on the port that would hold them, a rule that
// uses it inserted in the domain the connections go to (an impossible TCP
// tuple, port 0 both ways: it matches nothing), both completed and
// destroyed: "" when the NIC took them, else the reason. A firmware that
// takes the object but not a rule with it in this domain shows only at the
// rule's completion, so the rule is part of the probe.
std::string RteFlowProvider::probe_ct() {
  const FlowApi& a = api();
  const uint16_t port = transfer_ ? layout_.proxy_port : layout_.port_ids[0];
  rte_flow_action_conntrack prof{};
  prof.enable = 1;
  prof.live_connection = 1;
  prof.state = RTE_FLOW_CONNTRACK_STATE_ESTABLISHED;
  prof.is_original_dir = 1;
  prof.peer_port = port;
  rte_flow_indir_action_conf ic{};
  ic.ingress = !transfer_;
  ic.transfer = transfer_;
  rte_flow_action act{RTE_FLOW_ACTION_TYPE_CONNTRACK, &prof};
  rte_flow_op_attr now{};
  rte_flow_error err{};
  auto wait = [&]() -> std::string {
    rte_flow_op_result res[4];
    for (int i = 0; i < 2000; i++) {
      if (Mlx5Model* model = given_nic_ ? given_nic_ : model_.get()) model->drain();  // no worker runs yet
      int n = a.pull(a.self, port, 0, res, 4, &err);
      if (n < 0) return "pull: " + flow_err(err, -n);
      if (n > 0) return res[0].status == RTE_FLOW_OP_SUCCESS ? "" : "the operation completed with an error";
      struct timespec ts{0, 500'000};
      nanosleep(&ts, nullptr);
    }
    return "no completion in 1 s";
  };
  // The rule: a connection's original direction as the provider writes it
  // (no AGE: nothing to age), in a small table of its own, gone after.
  hw::Layout pl = layout_;
  pl.aso = true;
  pl.age_action = false;
  const size_t out = transfer_ && pl.nports() > 1 ? 1 : 0;
  hw::Conn probe_conn{};
  probe_conn.orig.family = 4;
  probe_conn.orig.proto = IPPROTO_TCP;
  probe_conn.in_port[0] = 0;
  probe_conn.out_port[0] = static_cast<int16_t>(out);
  probe_conn.in_port[1] = static_cast<uint8_t>(out);
  probe_conn.out_port[1] = 0;
  probe_conn.aso = true;
  if (sws_) {
    rte_flow_action_handle* h = a.action_handle_create(a.self, port, &ic, &act, &err);
    if (!h) return flow_err(err, rte_errno);
    std::string why;
    int e = 0;
    hw::Flow f = hw::conn_flow(pl, probe_conn, 0, h, nullptr);
    if (rte_flow* fl = Submission::sws_create(a, f, &why, &e); !fl) {
      why = "a rule with it: " + why;
    } else {
      err = {};
      if (a.destroy(a.self, f.port_id, fl, &err) != 0) why = "a rule with it: destroy: " + flow_err(err, rte_errno);
    }
    err = {};
    if (a.action_handle_destroy(a.self, port, h, &err) != 0 && why.empty())
      why = "destroy: " + flow_err(err, rte_errno);
    return why;
  }
  rte_flow_action_handle* h = a.async_action_handle_create(a.self, port, 0, &now, &ic, &act, nullptr, &err);
  if (!h) return flow_err(err, rte_errno);
  a.push(a.self, port, 0, &err);
  std::string why = wait();
  if (why.empty()) {
    hw::Flow f = hw::conn_flow(pl, probe_conn, 0, h, nullptr);
    std::string twhy;
    rte_flow_template_table* t = sub_.templates().get(a, f, kProbeTable, &twhy);
    err = {};
    rte_flow* fl = t ? a.async_create(a.self, f.port_id, 0, &now, t, f.pattern.data(), 0, f.actions.data(), 0,
                                      nullptr, &err)
                     : nullptr;
    if (!t) {
      why = "a rule with it: " + twhy;
    } else if (!fl) {
      why = "a rule with it: " + flow_err(err, rte_errno);
    } else {
      a.push(a.self, f.port_id, 0, &err);
      if (std::string w = wait(); !w.empty()) why = "a rule with it: " + w;
      err = {};
      // A rule whose creation failed is destroyed all the same (its slot).
      if (a.async_destroy(a.self, f.port_id, 0, &now, fl, nullptr, &err) == 0) {
        a.push(a.self, f.port_id, 0, &err);
        if (std::string w = wait(); why.empty() && !w.empty()) why = "a rule with it: destroy: " + w;
      }
    }
    sub_.templates().drop(a, f);
  }
  err = {};
  if (a.async_action_handle_destroy(a.self, port, 0, &now, h, nullptr, &err) == 0) {
    a.push(a.self, port, 0, &err);
    if (std::string w = wait(); why.empty() && !w.empty()) why = "destroy: " + w;
  } else if (why.empty()) {
    why = "destroy: " + flow_err(err, rte_errno);
  }
  return why;
}

void RteFlowProvider::on_pipeline(const Pipeline& pl) {
  if (disabled_ || !started_) return;
  pl_ = &pl;
  const OverlayConfig& ov = pl.overlay();
  const TunnelConfig& vx = ov[TunnelKind::kVxlan];
  layout_.vxlan = vx.on;
  layout_.underlay = vx.port;
  memcpy(layout_.vtep, vx.local, 4);
  layout_.vxlan_port = vx.udp_port;
  // Geneve: in the NIC under DV only (GENEVE item; none in 22.11's HWS),
  // on the UDP port its parser takes Geneve on (6081: mlx5_flow_dv.c:9527-9534).
  const TunnelConfig& gn = ov[TunnelKind::kGeneve];
  layout_.geneve = gn.on && sws_ && gn.udp_port == net::kGenevePort;
  layout_.geneve_underlay = gn.port;
  memcpy(layout_.geneve_vtep, gn.local, 4);
  layout_.geneve_port = gn.udp_port;
  layout_.soft_decap.clear();
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    const char* why = T::kConnDecapRefuse ? T::kConnDecapRefuse : sws_ ? nullptr : T::kHwsDecapRefuse;
    if (ov[T::kKind].on && why) layout_.soft_decap.push_back({ov[T::kKind].port, why});
  });
  if (gn.on && sws_ && !layout_.geneve)
    layout_.soft_decap.push_back({gn.port, "Geneve decap: not on UDP 6081, the port the NIC's parser takes"});
  rule_flows_ = hw::translate_rules(layout_, pl.rules());
  uint64_t now = clock();
  replace_shared(false);
  // Connections whose path changed leave the NIC.
  for (uint32_t id = 0; id < jobs_.size(); id++) {
    Job& j = jobs_[id];
    if (!j.used || j.life.phase == life::Phase::kRemoving) continue;
    ctrack::Event e{};
    e.orig = j.orig;
    e.in_port[0] = j.conn.in_port[0];
    e.in_port[1] = j.conn.in_port[1];
    if (j.conn.dir[0].nat) {  // a translation is the connection's: kept across rule changes
      e.nat = ctrack::NatKind::kSrc;
      e.reply = j.conn.dir[1].wire;
    }
    hw::Conn c;
    std::string why;
    auto same_dir = [](const hw::Conn::Dir& a, const hw::Conn::Dir& b) {
      return a.vni == b.vni && a.encap == b.encap && memcmp(a.hdr, b.hdr, sizeof a.hdr) == 0;
    };
    bool same = translate(e, &c, &why) && c.out_port[0] == j.conn.out_port[0] && c.out_port[1] == j.conn.out_port[1] &&
                same_dir(c.dir[0], j.conn.dir[0]) && same_dir(c.dir[1], j.conn.dir[1]);
    life::Event le{life::EventKind::kRulesSwapped};
    le.ok = same;
    deliver(id, le, now);
  }
}

Status RteFlowProvider::flush() {
  if (disabled_ || !started_) return {};
  uint64_t now = clock();
  pending_.clear();
  retry_.clear();
  for (uint32_t id = 0; id < jobs_.size(); id++)
    if (jobs_[id].used) deliver(id, {life::EventKind::kFlush}, now);
  live_.clear();  // the queued ones (kFlush on kQueued: out of the live entries)
  replace_shared(true);
  for (int round = 0; round < 5000 && (sub_.in_flight() > 0 || !removals_.empty()); round++) {
    pump(clock());
    if (Mlx5Model* model = given_nic_ ? given_nic_ : model_.get()) model->drain();  // the workers have stopped
    struct timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
    pull_all(clock());
  }
  size_t left = 0;
  for (const Job& j : jobs_) left += j.used;
  std::string err;
  if (left || sub_.in_flight())
    err = std::to_string(left) + " connections and " + std::to_string(sub_.in_flight()) +
          " operations still in the NIC after flush; ";
  // Templates and tables go last (they are in use until the rules left).
  err += sub_.templates().destroy_all(api());
  if (!err.empty()) return Status::error(err);
  return {};
}

OffloadStats RteFlowProvider::stats() const {
  OffloadStats s;
  if (disabled_) return s;
  size_t used = jobs_.size() - free_jobs_.size();
  s.counters = {{"installed", installed_},
                {"offloads", offloads_},
                {"offloads_aso", offloads_aso_},
                {"offloads_flows", offloads_ - offloads_aso_},
                {"removed", removed_},
                {"aged", aged_},
                {"closing", closed_},
                {"revoked", revoked_},
                {"resyncs", resyncs_},
                {"resyncs_liberal", resyncs_liberal_},
                {"in_flight", sub_.in_flight()},
                {"pending", pending_.size() + removals_.size() + retry_.size()},
                {"retries", retries_},
                {"jobs_in_use", used},
                {"jobs_limit", jobs_.size()},
                {"backlog_drops", backlog_drop_},
                {"hw_templates", sub_.template_tables()},
                {"shared_rules", shared_.size()},
                {"hw_max_counters", caps_.max_nb_counters},
                {"domain_transfer", transfer_ ? 1u : 0u},
                {"conntrack_aso", aso_ ? 1u : 0u},
                {"ct_ops_outstanding", ct_ops_},
                {"ct_ops_outstanding_max", ct_ops_max_},
                {"ct_ops_limit", kCtOpsMax},
                {"engine_sws", sws_ ? 1u : 0u},
                {"flow_queue_size", queue_},
                {"in_flight_limit", in_flight_cap()},
                {"resync_deferred", resync_deferred_},
                {"aged_reports", aged_reports_},
                {"aged_reports_stale", aged_stale_}};
  uint64_t tiers[4] = {};
  for (const auto& rf : rule_flows_) tiers[static_cast<int>(rf.tier)]++;
  for (int t = 0; t < 4; t++)
    s.counters.emplace_back(std::string("rules_") + hw::tier_name(static_cast<hw::Tier>(t)), tiers[t]);
  s.notes = {{"engine", std::string(sws_ ? "sws" : "hws") + " (" + engine_why_ + ")"},
             {"domain", std::string(transfer_ ? "transfer" : "ingress") + " (" + domain_why_ + ")"},
             {"conntrack", std::string(aso_ ? "aso" : "flows") + " (" + strategy_why_ + ")"}};
  for (const auto& [k, v] : failed_) s.counters.emplace_back("failed_" + k, v);
  for (const auto& [k, v] : refused_) {
    std::string n = "refused_" + k;
    for (char& ch : n)
      if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
    s.counters.emplace_back(n, v);
  }
  // Levels (what is there now) rather than counts since start.
  s.gauges = {"installed",        "in_flight",          "pending",       "jobs_in_use",      "hw_templates",
              "shared_rules",     "hw_max_counters",    "domain_transfer", "conntrack_aso",  "ct_ops_outstanding",
              "ct_ops_outstanding_max", "ct_ops_limit", "jobs_limit", "flow_queue_size", "in_flight_limit", "engine_sws", "nic_rules_in_use", "nic_ct_in_use", "nic_counters_in_use",
              "nic_ct_wqes_max"};
  for (int t = 0; t < 4; t++) s.gauges.insert(std::string("rules_") + hw::tier_name(static_cast<hw::Tier>(t)));
  if (Mlx5Model* model = given_nic_ ? given_nic_ : model_.get()) {
    NicStats t;
    for (unsigned q = 0; q < workers_; q++) t += model->stats(q);
    s.counters.insert(s.counters.end(), {{"nic_rx", t.rx},
                                         {"nic_forwarded", t.forwarded},
                                         {"nic_dropped", t.dropped},
                                         {"nic_to_software", t.to_software},
                                         {"nic_ct_invalid", t.ct_invalid},
                                         {"nic_ct_changed", t.ct_changed},
                                         {"nic_no_rx_flows", t.no_rx_flows},
                                         {"nic_miss_dropped", t.miss_dropped},
                                         {"nic_rewritten", t.rewritten},
                                         {"nic_rss_off_port", t.rss_off_port},
                                         {"nic_rules_in_use", model->flows_in_use()},
                                         {"nic_ct_in_use", model->ct_in_use()},
                                         {"nic_ct_overruns", model->ct_overruns()},
                                         {"nic_counters_in_use", model->counters_in_use()},
                                         {"nic_ct_wqes_max", model->ct_wqes_max()},
                                         {"nic_refusals", model->refusals()}});
  }
  return s;
}

HwCaps probe_rte_flow(const FlowApi& api, uint16_t port_id, bool transfer) {
  HwCaps c;
  rte_flow_port_info pi{};
  rte_flow_queue_info qi{};
  rte_flow_error err{};
  int rc = api.info_get(api.self, port_id, &pi, &qi, &err);
  if (rc != 0) {
    c.missing.push_back("rte_flow_info_get: " + flow_err(err, rc) +
                        " (the template API needs an mlx5 port with dv_flow_en=2)");
    return c;
  }
  c.info_ok = true;
  c.max_nb_counters = pi.max_nb_counters;
  c.max_nb_aging_objects = pi.max_nb_aging_objects;
  c.max_nb_conn_tracks = pi.max_nb_conn_tracks;
  c.max_nb_queues = pi.max_nb_queues;
  if (!pi.max_nb_queues) c.missing.push_back("flow queues");
  if (!pi.max_nb_counters) c.missing.push_back("counters");
  if (!pi.max_nb_aging_objects) c.missing.push_back("aging objects");
  uint16_t proxy;
  c.transfer_proxy = transfer && api.pick_transfer_proxy(api.self, port_id, &proxy, &err) == 0;
  return c;
}

std::string HwCaps::str() const {
  std::ostringstream o;
  o << "info=" << (info_ok ? "ok" : "failed") << " queues=" << max_nb_queues << " counters=" << max_nb_counters
    << " aging=" << max_nb_aging_objects << " conntracks=" << max_nb_conn_tracks
    << " (22.11 mlx5 reports 0 and has them) transfer_proxy=" << (transfer_proxy ? "yes" : "no");
  for (const auto& m : missing) o << "\n  missing: " << m;
  return o.str();
}

Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg, unsigned workers,
                                                               const FlowApi* api, Mlx5Model* nic) {
  if (cfg.provider == "none") return std::unique_ptr<OffloadProvider>(new NoneProvider());
  if (cfg.provider == "emulated") {
    auto* p = new RteFlowProvider(cfg, workers, true, false);
    p->use(api, nic);
    return std::unique_ptr<OffloadProvider>(p);
  }
  if (cfg.provider == "rte_flow" || cfg.provider == "auto")
    return std::unique_ptr<OffloadProvider>(new RteFlowProvider(cfg, workers, false, cfg.provider == "auto"));
  return Status::error("offload provider '" + cfg.provider + "': expected none, emulated, rte_flow or auto");
}

}  // namespace dp
