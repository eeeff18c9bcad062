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
#include <netinet/in.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "dataplane/hwflow.h"
#include "dataplane/nic_model.h"
#include "dataplane/log.h"
#include "dataplane/offload.h"
#include "sdn/clock.h"

namespace dp {

namespace {

using sdn::mono_ns;

std::string flow_err(const rte_flow_error& e, int err) {
  std::string s = e.message ? e.message : strerror(err < 0 ? -err : err);
  return s;
}

std::string errno_reason(int err) {
  switch (err) {
    case ENOSPC: return "table_full";
    case ENOMEM: return "table_or_queue_full";  // mlx5: a full template table and a full flow queue alike
    case EEXIST: return "exists";
    case ENOENT: return "no_such_object";
    case ENXIO: return "freed_object";
    case ENOTSUP: return "not_supported";
    case EINVAL: return "invalid";
    case ENODEV: return "no_device";
    case EBUSY: return "busy";
    case EACCES: return "not_owner";
    case EAGAIN: return "resources_busy";  // mlx5: counters waiting for the service cycle, a full ASO queue
    case EIO: return "io_error";
    default: return "errno_" + std::to_string(err);
  }
}

size_t item_size(rte_flow_item_type t) {
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

// The template a flow belongs to: port, attributes, item types and masks,
// action types (raw bytes: it is computed for every rule).
std::string shape(const hw::Flow& f) {
  std::string k;
  k.reserve(256);
  auto put = [&](const void* p, size_t n) { k.append(static_cast<const char*>(p), n); };
  put(&f.port_id, sizeof f.port_id);
  put(&f.attr.group, sizeof f.attr.group);
  put(&f.attr.priority, sizeof f.attr.priority);
  uint8_t dir = static_cast<uint8_t>(f.attr.ingress | f.attr.egress << 1 | f.attr.transfer << 2);
  put(&dir, 1);
  for (const auto& i : f.pattern) {
    put(&i.type, sizeof i.type);
    if (i.mask) put(i.mask, item_size(i.type));
  }
  k.push_back('|');
  for (const auto& a : f.actions) put(&a.type, sizeof a.type);
  return k;
}

class NoneProvider final : public OffloadProvider {
 public:
  const char* name() const override { return "none"; }
};

class RteFlowProvider final : public OffloadProvider {
 public:
  RteFlowProvider(const OffloadConfig& cfg, unsigned workers, bool emulated, bool is_auto)
      : cfg_(cfg), workers_(workers), emulated_(emulated), auto_(is_auto), aso_(cfg.conntrack != "flows") {
    strategy_why_ = cfg.conntrack == "auto" ? "auto: the ports took a conntrack pool" : "offload.conntrack: " + cfg.conntrack;
  }

  const char* name() const override {
    if (disabled_) return "none (auto: no rte_flow port)";
    return emulated_ ? "emulated" : "rte_flow";
  }
  const FlowApi& api() const override {
    if (given_api_) return *given_api_;
    return model_ ? model_->api() : FlowApi::dpdk();
  }
  Mlx5Model* nic() override { return given_nic_ ? given_nic_ : model_.get(); }
  void use(const FlowApi* api, Mlx5Model* nic) {
    given_api_ = api;
    given_nic_ = nic;
  }

  Status prepare(const std::vector<uint16_t>& ports) override {
    ports_ = ports;
    if (emulated_ && !given_api_)
      if (Status s = make_model(ports); !s) return s;
    return choose_domain();
  }

  // The domain from the ports, not a default: the e-switch (transfer) when
  // every port has the same transfer proxy and switch domain (an E-Switch
  // manager and its representors); else each port's NIC Rx domain. A NIC in
  // legacy mode has no transfer proxy (mlx5_flow.c:11530-11543).
  Status choose_domain() {
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
    if (cfg_.domain != "auto") domain_why_ = "offload.domain: " + cfg_.domain;
    else if (transfer_) domain_why_ = "auto: the ports are one e-switch (transfer proxy port " + std::to_string(proxy0) + ")";
    else domain_why_ = "auto: " + why_not;
    log_info(LogType::kOffload, std::string("domain ") + (transfer_ ? "transfer" : "ingress") + ": " + domain_why_);
    return {};
  }

  Status make_model(const std::vector<uint16_t>& ports) {
    Mlx5ModelConfig mc;
    if (!mc.apply_profile(cfg_.nic)) return Status::error("offload.nic: no NIC profile '" + cfg_.nic + "'");
    mc.rx_queues = workers_;
    mc.latency_us = cfg_.latency_us;
    mc.insert_rate = cfg_.insert_rate;
    uint32_t ts = 1;
    while (ts < cfg_.table_size) ts <<= 1;
    // A TCP and a UDP connection table per port (NIC Rx) or on the proxy,
    // and the shared tables' slots.
    uint64_t tables = 2 * std::max<size_t>(1, ports.size());
    mc.max_flows = static_cast<uint32_t>(std::min<uint64_t>(tables * ts + kSharedSlots, 1u << 24));
    uint32_t ring = 1024;
    while (ring < 2 * queue_size() * std::max<size_t>(1, ports.size()) + 1024) ring <<= 1;
    mc.ring = ring;
    model_ = std::make_unique<Mlx5Model>(mc, ports);
    return {};
  }

  Status configure_port(uint16_t port) override {
    if (disabled_) return {};
    const FlowApi& a = api();
    HwCaps c = probe_rte_flow(a, port, transfer_);
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
      // Not bounded by max_nb_conn_tracks: 22.11 never reports it.
      if (aso_) pa.nb_conn_tracks = static_cast<uint32_t>(pool);
    }
    const rte_flow_queue_attr* qs[] = {&qa};
    rte_flow_error err{};
    int rc = a.configure(a.self, port, &pa, 1, qs, &err);
    if (rc != 0 && pa.nb_conn_tracks && cfg_.conntrack == "auto") {
      // The strategy, probed: no conntrack pool here (an E-Switch manager
      // whose firmware has no conntrack in the FDB): exact 5-tuple rules.
      strategy_why_ = "auto: port " + std::to_string(port) + " refused a conntrack pool (" + flow_err(err, rc) + ")";
      log_warning(LogType::kOffload, "conntrack flows: " + strategy_why_);
      aso_ = false;
      pa.nb_conn_tracks = 0;
      err = {};
      rc = a.configure(a.self, port, &pa, 1, qs, &err);
    }
    if (rc != 0)
      return Status::error("rte_flow_configure port " + std::to_string(port) + ": " + flow_err(err, rc) +
                           (pa.nb_conn_tracks ? " (with " + std::to_string(pa.nb_conn_tracks) +
                                                    " conntrack objects: offload.conntrack " + cfg_.conntrack + ")"
                                              : ""));
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

  Status start(OffloadHost& host) override {
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
    size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
    jobs_.assign(pool, Job{});
    free_jobs_.clear();
    for (size_t i = pool; i-- > 0;) free_jobs_.push_back(static_cast<uint32_t>(i));
    if (aso_ && cfg_.conntrack == "auto")
      if (std::string why = probe_ct(); !why.empty()) {
        aso_ = false;
        strategy_why_ = "auto: a conntrack object was refused (" + why + ")";
        log_warning(LogType::kOffload, "conntrack flows: " + strategy_why_);
      }
    layout_.aso = aso_;
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

  // One conntrack object made, completed and destroyed on the port that
  // would hold them: "" when the NIC took it, else the reason.
  std::string probe_ct() {
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
    rte_flow_action_handle* h = a.async_action_handle_create(a.self, port, 0, &now, &ic, &act, nullptr, &err);
    if (!h) return flow_err(err, rte_errno);
    a.push(a.self, port, 0, &err);
    std::string why = wait();
    err = {};
    if (a.async_action_handle_destroy(a.self, port, 0, &now, h, nullptr, &err) == 0) {
      a.push(a.self, port, 0, &err);
      if (std::string w = wait(); why.empty() && !w.empty()) why = "destroy: " + w;
    } else if (why.empty()) {
      why = "destroy: " + flow_err(err, rte_errno);
    }
    return why;
  }

  void on_pipeline(const Pipeline& pl) override {
    if (disabled_ || !started_) return;
    pl_ = &pl;
    rule_flows_ = hw::translate_rules(layout_, pl.rules());
    uint64_t now = clock();
    replace_shared(false);
    // Connections whose path changed leave the NIC.
    for (uint32_t id = 0; id < jobs_.size(); id++) {
      Job& j = jobs_[id];
      if (!j.used || j.state == Job::kRemoving) continue;
      ctrack::Event e{};
      e.orig = j.orig;
      e.in_port[0] = j.conn.in_port[0];
      e.in_port[1] = j.conn.in_port[1];
      hw::Conn c;
      std::string why;
      bool same = translate(e, &c, &why) && c.out_port[0] == j.conn.out_port[0] && c.out_port[1] == j.conn.out_port[1];
      if (same) continue;
      revoked_++;
      live_.erase(conn_key(j.worker, j.handle));
      request_remove(id, "rules changed", now);
    }
  }

  void on_ct_events(unsigned w, const ctrack::Event* ev, uint32_t n, uint64_t now_ns) override {
    if (disabled_ || !started_) return;
    now_ = now_ns;
    for (uint32_t i = 0; i < n; i++) {
      switch (ev[i].type) {
        case ctrack::EventType::kEstablished: established(w, ev[i]); break;
        case ctrack::EventType::kClosing:
          ++closed_;
          gone(w, ev[i], "closing", now_ns);
          break;
        case ctrack::EventType::kDestroyed: gone(w, ev[i], "destroyed", now_ns); break;
        case ctrack::EventType::kResync: resync_requested(w, ev[i]); break;
      }
    }
    pump(now_ns);
  }

  void poll(uint64_t now_ns) override {
    if (disabled_ || !started_) return;
    now_ = now_ns;
    pull_all(now_ns);
    pump(now_ns);
    uint64_t dt = now_ns > last_scan_ns_ ? now_ns - last_scan_ns_ : 0;
    if (dt < 10'000'000) return;
    drain_aged(now_ns);
    // Fold counters: every installed job about once a second, in slices of
    // at least 10 ms.
    size_t visits = std::min<size_t>(active_.size(), active_.size() * dt / 1'000'000'000 + 1);
    last_scan_ns_ = now_ns;
    for (size_t k = 0; k < visits && !active_.empty(); k++) {
      uint32_t id = active_[scan_++ % active_.size()];
      uint64_t lh = 0;
      fold(jobs_[id], now_ns, &lh);
    }
  }

  // The NIC's aged-flow ring, drained (left alone, it fills and new aged
  // flows go unreported). A report names one direction's rule; the
  // connection leaves the NIC when both directions have been idle age_s.
  void drain_aged(uint64_t now_ns) {
    const FlowApi& a = api();
    void* ctx[256];
    for (uint16_t p : configured_) {
      if (!has_queue(p)) continue;
      for (int rounds = 0; rounds < 64; rounds++) {
        rte_flow_error err{};
        int n = a.get_q_aged_flows(a.self, p, 0, ctx, 256, &err);
        if (n < 0) {
          log_limited("aged_flows", "aged-flow ring of port " + std::to_string(p) + ": " + flow_err(err, -n));
          break;
        }
        aged_reports_ += static_cast<uint64_t>(n);
        for (int i = 0; i < n; i++) aged_report(reinterpret_cast<uintptr_t>(ctx[i]), now_ns);
        if (n < 256) break;
      }
    }
  }
  void aged_report(uintptr_t ck, uint64_t now_ns) {
    const uint32_t id = static_cast<uint32_t>((ck & 0xFFFFFFFFu) >> 4), gen = static_cast<uint32_t>(ck >> 32);
    if (id >= jobs_.size()) return;
    Job& j = jobs_[id];
    if (!j.used || j.gen != gen || j.state != Job::kInstalled || j.doomed) {
      ++aged_stale_;  // a rule of an earlier connection in this slot
      return;
    }
    uint64_t lh = 0;
    fold(j, now_ns, &lh);
    const uint64_t idle_from = std::max(lh, j.installed_ns);
    if (now_ns <= idle_from || now_ns - idle_from < static_cast<uint64_t>(cfg_.age_s) * 1'000'000'000ull) return;
    aged_++;
    live_.erase(conn_key(j.worker, j.handle));
    request_remove(id, "aged", now_ns);
  }

  bool busy() const override { return in_flight_ || !pending_.empty() || !removals_.empty() || !retry_.empty(); }

  Status flush() override {
    if (disabled_ || !started_) return {};
    uint64_t now = clock();
    pending_.clear();
    retry_.clear();
    live_.clear();
    for (uint32_t id = 0; id < jobs_.size(); id++)
      if (jobs_[id].used) request_remove(id, "flush", now);
    replace_shared(true);
    for (int round = 0; round < 5000 && (in_flight_ > 0 || !removals_.empty()); round++) {
      pump(clock());
      if (Mlx5Model* model = given_nic_ ? given_nic_ : model_.get()) model->drain();  // the workers have stopped
      struct timespec ts{0, 200'000};
      nanosleep(&ts, nullptr);
      pull_all(clock());
    }
    size_t left = 0;
    for (const Job& j : jobs_) left += j.used;
    std::string err;
    if (left || in_flight_)
      err = std::to_string(left) + " connections and " + std::to_string(in_flight_) +
            " operations still in the NIC after flush; ";
    // Templates and tables go last (they are in use until the rules left).
    const FlowApi& a = api();
    for (auto& [k, t] : tables_) {
      rte_flow_error e{};
      if (a.template_table_destroy(a.self, t.port, t.table, &e) != 0) err += "table: " + flow_err(e, rte_errno) + "; ";
      if (a.actions_template_destroy(a.self, t.port, t.at, &e) != 0) err += "actions template: " + flow_err(e, rte_errno) + "; ";
      if (a.pattern_template_destroy(a.self, t.port, t.pt, &e) != 0) err += "pattern template: " + flow_err(e, rte_errno) + "; ";
    }
    tables_.clear();
    if (!err.empty()) return Status::error(err);
    return {};
  }

  OffloadStats stats() const override {
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
                  {"in_flight", in_flight_},
                  {"pending", pending_.size() + removals_.size() + retry_.size()},
                  {"retries", retries_},
                  {"jobs_in_use", used},
                  {"backlog_drops", backlog_drop_},
                  {"hw_templates", tables_.size()},
                  {"shared_rules", shared_.size()},
                  {"hw_max_counters", caps_.max_nb_counters},
                  {"domain_transfer", transfer_ ? 1u : 0u},
                  {"conntrack_aso", aso_ ? 1u : 0u},
                  {"ct_ops_outstanding", ct_ops_},
                  {"ct_ops_outstanding_max", ct_ops_max_},
                  {"ct_ops_limit", kCtOpsMax},
                  {"resync_deferred", resync_deferred_},
                  {"aged_reports", aged_reports_},
                  {"aged_reports_stale", aged_stale_}};
    uint64_t tiers[4] = {};
    for (const auto& rf : rule_flows_) tiers[static_cast<int>(rf.tier)]++;
    for (int t = 0; t < 4; t++)
      s.counters.emplace_back(std::string("rules_") + hw::tier_name(static_cast<hw::Tier>(t)), tiers[t]);
    s.notes = {{"domain", std::string(transfer_ ? "transfer" : "ingress") + " (" + domain_why_ + ")"},
               {"conntrack", std::string(aso_ ? "aso" : "flows") + " (" + strategy_why_ + ")"}};
    for (const auto& [k, v] : failed_) s.counters.emplace_back("failed_" + k, v);
    for (const auto& [k, v] : refused_) {
      std::string n = "refused_" + k;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      s.counters.emplace_back(n, v);
    }
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
                                           {"nic_rules_in_use", model->flows_in_use()},
                                           {"nic_ct_in_use", model->ct_in_use()},
                                           {"nic_counters_in_use", model->counters_in_use()},
                                           {"nic_ct_wqes_max", model->ct_wqes_max()},
                                           {"nic_refusals", model->refusals()}});
    }
    return s;
  }

  std::string testpmd_commands() const override;

 private:
  static constexpr uint32_t kSharedSlots = 16384;
  static constexpr uint32_t kCtOpsMax = 1024 - 64;  // the ASO queue (mlx5.h:592), less a margin
  // A transient refusal pauses installs this long; a connection is tried
  // this often (together longer than the counter service's 500 ms cycle).
  static constexpr uint64_t kBusyBackoffNs = 100'000'000;
  static constexpr uint8_t kBusyTries = 10;
  static constexpr uint32_t kSharedTable = 64;

  struct Job {
    bool used = false;
    unsigned worker = 0;
    uint32_t handle = 0;
    ctrack::Key orig{};
    hw::Conn conn{};
    bool ct_obj = false;  // a conntrack object tracks it (aso)
    rte_flow_action_conntrack prof{};  // as handed to the NIC
    rte_flow_action_conntrack qbuf{};  // a query's result lands here
    enum State : uint8_t { kInstalling, kInstalled, kRemoving } state = kInstalling;
    uint8_t pending = 0;  // operations not completed
    uint8_t made = 0;     // kMadeCt | kMadeFlow0 | kMadeFlow1: what exists in the NIC
    int err = 0;          // first failure of the current batch
    bool doomed = false;  // remove once the operations out complete
    bool resyncing = false;
    bool liberal = false;         // the context was written liberal (see the resync note above)
    uint64_t last_resync_ns = 0;  // when the last resync was written
    const char* why_removed = "";
    uint64_t folded_pk[2] = {}, folded_by[2] = {};
    uint64_t installed_ns = 0;
    rte_flow* flow[2] = {};
    rte_flow_action_handle* ct = nullptr;
    uint32_t active_pos = 0;
    uint32_t gen = 0;  // which use of this slot (aged-flow reports name it)
    uint8_t l2_len = 14;  // the Ethernet header of its packets, VLAN tags included
    bool retry = false;   // failed for a resource that frees by itself: offered again once removed
    uint8_t tries = 0;    // installs tried for this connection
    ctrack::Event ev{};   // the event that asked for it (for a retry)
  };
  enum Made : uint8_t { kMadeCt = 1, kMadeFlow0 = 2, kMadeFlow1 = 4 };
  enum Tag : uint8_t {
    kOpCtCreate,
    kOpFlow0,
    kOpCtDir,
    kOpFlow1,
    kOpDelFlow0,
    kOpDelFlow1,
    kOpDelCt,
    kOpQuery,
    kOpResync,
    kOpShared,
  };
  // A rule's AGE context: the job, its generation and the direction.
  static void* age_cookie(const Job& j, uint32_t id, Tag t) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(j.gen) << 32 | static_cast<uintptr_t>(id) << 4 | t);
  }
  static void* cookie(uint32_t job, Tag t) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(job) << 4 | t);
  }
  struct Req {
    unsigned worker;
    ctrack::Event ev;
    uint8_t tries = 0;
  };
  struct Live {
    int job;  // -1: waiting in pending_
    ctrack::Key orig;
  };
  struct Table {
    uint16_t port;
    int id;
    rte_flow_pattern_template* pt;
    rte_flow_actions_template* at;
    rte_flow_template_table* table;
    uint32_t rules;
  };
  struct Shared {
    uint16_t port;
    rte_flow* flow;
  };

  static uint64_t conn_key(unsigned w, uint32_t h) { return static_cast<uint64_t>(w) << 32 | h; }
  uint32_t queue_size() const {
    uint32_t q = 256;
    while (q < 2 * cfg_.max_in_flight + kSharedTable) q <<= 1;
    return q;
  }
  uint64_t clock() const { return now_ ? now_ : mono_ns(); }
  uint16_t flow_port(const Job& j, int d) const {
    return transfer_ ? layout_.proxy_port : layout_.port_ids[j.conn.in_port[d]];
  }
  uint16_t ct_port(const Job& j) const { return flow_port(j, 0); }

  void log_limited(const std::string& key, const std::string& line) {
    uint64_t now = mono_ns();
    uint64_t& last = last_log_ns_[key];
    if (now - last >= 1'000'000'000ull) {  // at most one line per reason per second
      last = now;
      log_warning(LogType::kOffload, line);
    }
  }
  void fail(const std::string& reason, const std::string& detail) {
    uint64_t n = ++failed_[reason];
    log_limited("failed_" + reason, "failed: " + reason + (detail.empty() ? "" : " (" + detail + ")") + ", " +
                                        std::to_string(n) + " so far; the connection stays in software");
  }
  void refuse(const std::string& reason) { ++refused_[reason]; }

  bool translate(const ctrack::Event& e, hw::Conn* c, std::string* why) const {
    if (e.orig.proto != IPPROTO_TCP && e.orig.proto != IPPROTO_UDP) {
      *why = "protocol";
      return false;
    }
    if (e.orig.family == 6) {
      *why = "ipv6";  // no IPv6 5-tuple definer in 22.11 (doc/guides/nics/mlx5.rst:163)
      return false;
    }
    if (!pl_) {
      *why = "no rules";
      return false;
    }
    c->orig = e.orig;
    for (int d = 0; d < 2; d++) {
      if (e.in_port[d] >= host_.port_ids.size()) {
        *why = "unknown port";
        return false;
      }
      ctrack::Key k = d ? e.orig.reversed() : e.orig;
      Pipeline::Trace t = pl_->trace_established(k, e.in_port[d], d == 1);
      if (t.refuse) {
        *why = t.refuse;
        return false;
      }
      // The connection's rules are reached only through its table-0 ct()
      // rule in the NIC: without it every packet goes to software while the
      // tracker believes the connection is in hardware.
      if (t.ct_table != 0) {
        *why = "its ct() rule is not in table 0";
        return false;
      }
      bool in_nic = false;
      for (const auto& rf : rule_flows_)
        if (rf.rule_id == t.ct_rule && rf.tier == hw::Tier::kJumpCt) in_nic = true;
      if (!in_nic) {
        *why = "its table-0 ct() rule is not in the NIC";
        return false;
      }
      c->in_port[d] = e.in_port[d];
      c->out_port[d] = t.out_port;
    }
    // Without an E-Switch each direction's rule is on the port it arrives
    // on, and a CONNTRACK object serves only rules of its own port (the
    // driver looks it up in the rule's port pool, mlx5_flow_hw.c:410-418):
    // a TCP connection across two ports is tracked by exact rules (the
    // flows strategy) even where conntrack objects exist.
    c->aso = aso_ && e.orig.proto == IPPROTO_TCP && (transfer_ || c->in_port[0] == c->in_port[1]);
    return true;
  }

  void established(unsigned w, const ctrack::Event& e) {
    hw::Conn c;
    std::string why;
    ctrack::Tracker* t = host_.shards[w];
    if (!translate(e, &c, &why)) {
      refuse(why);
      t->set_no_offload(e.conn, e.orig);
      return;
    }
    if (pending_.size() >= std::max<size_t>(65536, jobs_.size())) {
      ++backlog_drop_;
      refuse("backlog");
      t->set_no_offload(e.conn, e.orig);
      return;
    }
    uint64_t k = conn_key(w, e.conn);
    if (live_.count(k)) return;
    live_[k] = Live{-1, e.orig};
    pending_.push_back(Req{w, e});
  }

  void gone(unsigned w, const ctrack::Event& e, const char* why, uint64_t now_ns) {
    auto it = live_.find(conn_key(w, e.conn));
    if (it == live_.end() || !(it->second.orig == e.orig)) return;
    int id = it->second.job;
    live_.erase(it);
    if (id >= 0) request_remove(static_cast<uint32_t>(id), why, now_ns);
  }

  void resync_requested(unsigned w, const ctrack::Event& e) {
    auto it = live_.find(conn_key(w, e.conn));
    if (it == live_.end() || !(it->second.orig == e.orig) || it->second.job < 0) {
      host_.shards[w]->resync_done(e.conn, e.orig);
      return;
    }
    Job& j = jobs_[static_cast<size_t>(it->second.job)];
    if (!j.ct_obj) {  // flows: no context to resync (the segment raced the rules going in)
      host_.shards[w]->resync_done(e.conn, e.orig);
      return;
    }
    if (j.state == Job::kInstalled && !j.resyncing && !j.doomed) {
      if (ct_ops_ + 2 > kCtOpsMax) {
        ++resync_deferred_;  // the conntrack queue is busy: the next refused segment asks again
        host_.shards[w]->resync_done(e.conn, e.orig);
        return;
      }
      start_resync(static_cast<uint32_t>(it->second.job));
    }
  }

  // Removes now, or once the operations out complete.
  void request_remove(uint32_t id, const char* why, uint64_t now_ns) {
    Job& j = jobs_[id];
    if (j.state == Job::kRemoving) return;
    if (j.pending) {
      j.doomed = true;
      j.why_removed = why;
      return;
    }
    start_remove(id, why, now_ns);
  }

  void start_remove(uint32_t id, const char* why, uint64_t now_ns) {
    Job& j = jobs_[id];
    if (j.state == Job::kInstalled) {
      uint64_t lh;
      fold(j, now_ns, &lh);
      installed_--;
      uint32_t last = active_.back();
      active_[j.active_pos] = last;
      jobs_[last].active_pos = j.active_pos;
      active_.pop_back();
    }
    j.state = Job::kRemoving;
    j.why_removed = why;
    j.err = 0;
    if (!j.made) {
      finish_remove(id);
      return;
    }
    removals_.push_back(id);
    pump(now_ns);
  }

  void finish_remove(uint32_t id) {
    Job& j = jobs_[id];
    if (j.installed_ns) removed_++;  // an offload removed (not the remains of a failed install)
    j.used = false;
    free_jobs_.push_back(id);
    if (j.retry) {
      // Still wanted (gone() erases the entry) and nothing of it is left in
      // the NIC: offered again when the pause is over.
      auto it = live_.find(conn_key(j.worker, j.handle));
      if (it != live_.end() && it->second.job == -1 && it->second.orig == j.orig) {
        retry_.push_back(Req{j.worker, j.ev, j.tries});
        return;
      }
    }
    host_.shards[j.worker]->set_offloaded(j.handle, j.orig, false);
  }

  // Submits queued work within the in-flight bound: removals first (they
  // free table space), then installs.
  void pump(uint64_t now_ns) {
    while (!removals_.empty() && in_flight_ + 2 <= cfg_.max_in_flight) {
      uint32_t id = removals_.front();
      removals_.pop_front();
      submit_remove(id);
    }
    if (now_ns < hold_until_ns_) return;
    while (!retry_.empty()) {  // retries first, in their order
      pending_.push_front(retry_.back());
      retry_.pop_back();
    }
    while (removals_.empty() && !pending_.empty() && in_flight_ + 6 <= cfg_.max_in_flight && !free_jobs_.empty() &&
           ct_ops_ + 1 <= kCtOpsMax) {
      Req r = pending_.front();
      pending_.pop_front();
      auto it = live_.find(conn_key(r.worker, r.ev.conn));
      if (it == live_.end() || it->second.job != -1 || !(it->second.orig == r.ev.orig)) continue;
      // The rules may have changed while it waited.
      hw::Conn c;
      std::string why;
      if (!translate(r.ev, &c, &why)) {
        live_.erase(it);
        refuse(why);
        host_.shards[r.worker]->set_no_offload(r.ev.conn, r.ev.orig);
        continue;
      }
      uint32_t id = free_jobs_.back();
      free_jobs_.pop_back();
      Job& j = jobs_[id];
      const uint32_t gen = j.gen + 1;
      j = Job{};
      j.gen = gen;
      j.used = true;
      j.worker = r.worker;
      j.handle = r.ev.conn;
      j.orig = r.ev.orig;
      j.conn = c;
      j.ct_obj = c.aso;  // a conntrack object tracks it
      if (r.ev.l2_len) j.l2_len = r.ev.l2_len;
      j.ev = r.ev;
      j.tries = static_cast<uint8_t>(r.tries + 1);
      it->second.job = static_cast<int>(id);
      submit_install(id, now_ns);
    }
  }

  // A failed submission completes at once with its errno.
  void sync_fail(void* ck, int err, const std::string& msg) {
    sync_done_.push_back({reinterpret_cast<uintptr_t>(ck), err});
    if (!msg.empty()) log_limited("op_" + errno_reason(err), "operation refused: " + msg);
  }
  void op_out(Job& j) {
    j.pending++;
    in_flight_++;
  }
  // Conntrack operations (creates, context updates, queries) share the
  // driver's ASO work queue of 1024 per flow queue (ct-queue-depth in the
  // model): at most kCtOpsMax out at once, below it.
  void ct_op_out() {
    ct_ops_++;
    ct_ops_max_ = std::max(ct_ops_max_, ct_ops_);
  }

  void submit_install(uint32_t id, uint64_t) {
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
      j.ct = a.async_action_handle_create(a.self, cp, 0, &post, &ic, &act, cookie(id, kOpCtCreate), &err);
      if (!j.ct) {
        sync_fail(cookie(id, kOpCtCreate), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
        a.push(a.self, cp, 0, &err);
        return;  // nothing else works without the context
      }
    }
    j.flow[0] = create(hw::conn_flow(layout_, j.conn, 0, j.ct, age_cookie(j, id, kOpFlow0)), cfg_.table_size,
                       cookie(id, kOpFlow0), true, &j);
    if (j.ct_obj) {
      // Direction only: no WQE (mlx5_flow_hw.c:7738-7745 posts one only
      // for a state update), so not a conntrack queue operation.
      rte_flow_modify_conntrack m = hw::ct_reply_update(j.prof);
      op_out(j);
      if (a.async_action_handle_update(a.self, cp, 0, &post, j.ct, &m, cookie(id, kOpCtDir), &err) != 0)
        sync_fail(cookie(id, kOpCtDir), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
    }
    j.flow[1] = create(hw::conn_flow(layout_, j.conn, 1, j.ct, age_cookie(j, id, kOpFlow1)), cfg_.table_size,
                       cookie(id, kOpFlow1), true, &j);
    std::set<uint16_t> ports = {cp, flow_port(j, 0), flow_port(j, 1)};
    for (uint16_t p : ports) a.push(a.self, p, 0, &err);
  }

  void submit_remove(uint32_t id) {
    Job& j = jobs_[id];
    const FlowApi& a = api();
    rte_flow_op_attr now{};
    rte_flow_error err{};
    if (j.made & (kMadeFlow0 | kMadeFlow1)) {
      for (int d = 0; d < 2; d++) {
        if (!(j.made & (d ? kMadeFlow1 : kMadeFlow0))) continue;
        Tag t = d ? kOpDelFlow1 : kOpDelFlow0;
        op_out(j);
        if (a.async_destroy(a.self, flow_port(j, d), 0, &now, j.flow[d], cookie(id, t), &err) != 0)
          sync_fail(cookie(id, t), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
      }
      return;
    }
    // The rules are gone (their destruction completed): now the context.
    if (j.made & kMadeCt) {
      op_out(j);
      if (a.async_action_handle_destroy(a.self, ct_port(j), 0, &now, j.ct, cookie(id, kOpDelCt), &err) != 0)
        sync_fail(cookie(id, kOpDelCt), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
    }
  }

  void start_resync(uint32_t id) {
    Job& j = jobs_[id];
    const FlowApi& a = api();
    rte_flow_op_attr now{};
    rte_flow_error err{};
    j.resyncing = true;
    j.qbuf = {};
    op_out(j);
    ct_op_out();
    if (a.async_action_handle_query(a.self, ct_port(j), 0, &now, j.ct, &j.qbuf, cookie(id, kOpQuery), &err) != 0)
      sync_fail(cookie(id, kOpQuery), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
  }

  // The query came back: merge and write the context back.
  void resync_update(uint32_t id) {
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
    if (a.async_action_handle_update(a.self, ct_port(j), 0, &op, j.ct, &m, cookie(id, kOpResync), &err) != 0)
      sync_fail(cookie(id, kOpResync), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
  }

  // The template table for a flow's shape, made on first use.
  rte_flow_template_table* table_for(const hw::Flow& f, uint32_t nb_flows, std::string* why) {
    std::string k = shape(f);
    auto it = tables_.find(k);
    if (it != tables_.end()) return it->second.table;
    const FlowApi& a = api();
    rte_flow_error err{};
    rte_flow_pattern_template_attr pta{};
    pta.relaxed_matching = 0;
    pta.ingress = f.attr.ingress;
    pta.transfer = f.attr.transfer;
    std::vector<rte_flow_item> items = f.pattern;
    for (auto& i : items) i.spec = nullptr;  // a pattern template is its masks
    rte_flow_pattern_template* pt = a.pattern_template_create(a.self, f.port_id, &pta, items.data(), &err);
    if (!pt) {
      *why = "pattern template: " + flow_err(err, rte_errno);
      return nullptr;
    }
    rte_flow_actions_template_attr ata{};
    ata.ingress = f.attr.ingress;
    ata.transfer = f.attr.transfer;
    // Every value comes with the rule; an indirect action's mask names its
    // real type (mlx5_flow_hw.c:3675-3741).
    std::vector<rte_flow_action> masks = f.actions;
    for (auto& m : masks) {
      m.conf = nullptr;
      if (m.type == RTE_FLOW_ACTION_TYPE_INDIRECT) m.type = RTE_FLOW_ACTION_TYPE_CONNTRACK;
    }
    rte_flow_actions_template* at =
        a.actions_template_create(a.self, f.port_id, &ata, f.actions.data(), masks.data(), &err);
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

  // Queues one flow; a synchronous failure completes with its errno.
  rte_flow* create(const hw::Flow& f, uint32_t nb_flows, void* ck, bool postpone, Job* j) {
    const FlowApi& a = api();
    if (j) op_out(*j);
    else in_flight_++;
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
  void replace_shared(bool none) {
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
      if (a.async_destroy(a.self, s.port, 0, &post, s.flow, cookie(0, kOpShared), &err) != 0)
        sync_fail(cookie(0, kOpShared), rte_errno ? rte_errno : EIO, flow_err(err, rte_errno));
      ports.insert(s.port);
    }
    for (uint16_t p : ports) {
      rte_flow_error err{};
      a.push(a.self, p, 0, &err);
    }
    shared_ = std::move(made);
  }

  void pull_all(uint64_t now_ns) {
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
  bool has_queue(uint16_t p) const { return !transfer_ || p == layout_.proxy_port; }

  void complete(uintptr_t ck, int err, uint64_t now_ns) {
    in_flight_--;
    auto tag = static_cast<Tag>(ck & 15);
    if (tag == kOpCtCreate || tag == kOpQuery || tag == kOpResync) ct_ops_--;
    if (tag == kOpShared) {
      if (err) fail("shared_rule_" + errno_reason(err), "");
      return;
    }
    uint32_t id = static_cast<uint32_t>(ck >> 4);
    Job& j = jobs_[id];
    j.pending--;
    ctrack::Tracker* t = host_.shards[j.worker];
    if (err) {
      if (!j.err) j.err = err;
    } else {
      switch (tag) {
        case kOpCtCreate: j.made |= kMadeCt; break;
        case kOpFlow0: j.made |= kMadeFlow0; break;
        case kOpFlow1: j.made |= kMadeFlow1; break;
        case kOpDelFlow0: j.made &= static_cast<uint8_t>(~kMadeFlow0); break;
        case kOpDelFlow1: j.made &= static_cast<uint8_t>(~kMadeFlow1); break;
        case kOpDelCt: j.made &= static_cast<uint8_t>(~kMadeCt); break;
        case kOpQuery:
          if (!j.doomed && j.state == Job::kInstalled) resync_update(id);
          break;
        default: break;
      }
    }
    if (tag == kOpQuery || tag == kOpResync) {
      if (err) {
        fail("resync_" + errno_reason(err), "");
        j.err = 0;
      }
      if (tag == kOpResync && !err) resyncs_++;
    }
    if (j.pending) return;
    if (j.state == Job::kInstalling) {
      if (j.err) {
        auto it = live_.find(conn_key(j.worker, j.handle));
        const bool mine = it != live_.end() && it->second.job == static_cast<int>(id);
        // A resource that frees by itself (EAGAIN: freed counters wait for
        // the counter service's cycle, up to 500 ms; EBUSY: a full conntrack
        // queue): installs pause for kBusyBackoffNs, and the connection is
        // tried again once what was made of it is gone, up to kBusyTries
        // times. After that, or for anything else, it stays in software
        // (after EAGAIN/EBUSY its next packet offers it again).
        if ((j.err == EAGAIN || j.err == EBUSY) && mine && !j.doomed && j.tries < kBusyTries) {
          hold_until_ns_ = now_ns + kBusyBackoffNs;
          j.retry = true;
          it->second.job = -1;
          ++retries_;
        } else {
          fail(errno_reason(j.err), "");
          if (j.err != EAGAIN && j.err != EBUSY) t->set_no_offload(j.handle, j.orig);
          if (mine) live_.erase(it);
        }
        start_remove(id, "failed", now_ns);
        return;
      }
      if (j.doomed || !t->set_offloaded(j.handle, j.orig, true)) {
        start_remove(id, j.doomed ? j.why_removed : "destroyed", now_ns);
        return;
      }
      j.state = Job::kInstalled;
      j.installed_ns = now_ns;
      j.active_pos = static_cast<uint32_t>(active_.size());
      active_.push_back(id);
      installed_++;
      offloads_++;
      if (j.ct_obj) offloads_aso_++;
      return;
    }
    if (j.state == Job::kInstalled) {  // a resync finished
      j.resyncing = false;
      t->resync_done(j.handle, j.orig);
      if (j.doomed) start_remove(id, j.why_removed, now_ns);
      return;
    }
    // Removing.
    if (j.err) {
      fail("remove_" + errno_reason(j.err), "");
      j.err = 0;
    }
    if (j.made & (kMadeFlow0 | kMadeFlow1)) {
      // A destruction failed: the rules may still be in the NIC, so the
      // context must stay. Try again.
      removals_.push_back(id);
      return;
    }
    if (j.made & kMadeCt) {
      submit_remove(id);  // the rules are gone: now the context
      return;
    }
    finish_remove(id);
  }

  void fold(Job& j, uint64_t now_ns, uint64_t* last_hit) {
    const FlowApi& a = api();
    *last_hit = 0;
    uint64_t pk[2] = {}, by[2] = {};
    for (int d = 0; d < 2; d++) {
      if (!(j.made & (d ? kMadeFlow1 : kMadeFlow0))) continue;
      rte_flow_error err{};
      rte_flow_query_count qc{};
      rte_flow_action count[] = {{RTE_FLOW_ACTION_TYPE_COUNT, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
      if (a.query(a.self, flow_port(j, d), j.flow[d], count, &qc, &err) == 0) {
        pk[d] = qc.hits;
        by[d] = qc.bytes;
      }
      rte_flow_query_age qa{};
      rte_flow_action age[] = {{RTE_FLOW_ACTION_TYPE_AGE, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
      if (a.query(a.self, flow_port(j, d), j.flow[d], age, &qa, &err) == 0 && qa.sec_since_last_hit_valid && pk[d])
        *last_hit = std::max<uint64_t>(*last_hit,
                                       now_ns - std::min<uint64_t>(now_ns, qa.sec_since_last_hit * 1'000'000'000ull));
    }
    uint64_t dpk[2] = {pk[0] - j.folded_pk[0], pk[1] - j.folded_pk[1]};
    uint64_t dby[2] = {by[0] - j.folded_by[0], by[1] - j.folded_by[1]};
    // NICs count frame bytes, ctrack counts IP bytes (as Linux conntrack
    // does): take the Ethernet header off, with the VLAN tags the
    // connection's packets carry (the rules match the IP 5-tuple whatever
    // the tags).
    const uint64_t l2 = j.l2_len ? j.l2_len : 14;
    for (int d = 0; d < 2; d++) dby[d] = dby[d] > l2 * dpk[d] ? dby[d] - l2 * dpk[d] : 0;
    if (dpk[0] || dpk[1]) {
      host_.shards[j.worker]->fold_hw_counters(j.handle, j.orig, dpk, dby, *last_hit ? *last_hit : now_ns);
      for (int d = 0; d < 2; d++) {
        j.folded_pk[d] = pk[d];
        j.folded_by[d] = by[d];
      }
    }
  }

  OffloadConfig cfg_;
  unsigned workers_;
  bool emulated_, auto_;
  bool disabled_ = false, started_ = false;
  std::unique_ptr<Mlx5Model> model_;
  const FlowApi* given_api_ = nullptr;
  Mlx5Model* given_nic_ = nullptr;
  std::vector<uint16_t> ports_;
  std::set<uint16_t> configured_;
  HwCaps caps_;
  hw::Layout layout_;
  OffloadHost host_;
  const Pipeline* pl_ = nullptr;
  uint64_t now_ = 0;
  std::vector<Job> jobs_;
  std::vector<uint32_t> free_jobs_;
  std::vector<uint32_t> active_;
  std::unordered_map<uint64_t, Live> live_;
  std::deque<Req> pending_;
  std::deque<Req> retry_;  // transient failures, offered again after the pause
  uint64_t hold_until_ns_ = 0;  // no installs before (a transient failure's pause)
  std::deque<uint32_t> removals_;
  std::vector<hw::RuleFlows> rule_flows_;
  std::map<std::string, Table> tables_;
  int next_table_id_ = 0;
  std::vector<Shared> shared_;
  std::vector<std::pair<uintptr_t, int>> sync_done_;
  uint32_t in_flight_ = 0;
  uint32_t scan_ = 0;
  uint64_t last_scan_ns_ = 0;
  std::map<std::string, uint64_t> failed_, refused_;
  std::map<std::string, uint64_t> last_log_ns_;
  uint64_t installed_ = 0, offloads_ = 0, removed_ = 0, aged_ = 0, closed_ = 0, revoked_ = 0, resyncs_ = 0,
           resyncs_liberal_ = 0, backlog_drop_ = 0, resync_deferred_ = 0, retries_ = 0;
  uint32_t ct_ops_ = 0, ct_ops_max_ = 0;
  uint64_t aged_reports_ = 0, aged_stale_ = 0, offloads_aso_ = 0;
  bool transfer_ = true, aso_ = true;
  std::string domain_why_, strategy_why_;
};

std::string RteFlowProvider::testpmd_commands() const {
  std::ostringstream o;
  if (disabled_) return "# offload auto: no rte_flow port, nothing in hardware\n";
  size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
  o << "# dpdk-testpmd -a <PCI>,dv_flow_en=2" << (transfer_ ? ",representor=..." : "")
    << " -- -i\n"
       "# Hardware steering (the template/queue API), as the provider issues it. The\n"
       "# synchronous form (dv_flow_en=1) is not printed: the provider needs dv_flow_en=2.\n"
       "port stop all\n";
  for (uint16_t p : ports_) {
    bool proxy = !transfer_ || p == layout_.proxy_port;
    o << "flow configure " << p << " queues_number 1 queues_size " << (proxy ? queue_size() : 64);
    if (proxy) {
      o << " counters_number " << 4 * pool + 4 * kSharedSlots << " aging_counters_number " << 2 * pool;
      if (aso_) o << " conn_tracks_number " << pool;
    }
    o << "\n";
  }
  o << "port start all\n";
  // One set of templates and a table per rule shape; ids as the provider
  // numbers its tables.
  std::map<std::string, int> ids;
  int next_id = 0;
  auto table_of = [&](const hw::Flow& f, uint32_t rules, int indirect) {
    std::string k = shape(f);
    auto it = ids.find(k);
    if (it != ids.end()) return it->second;
    int id = next_id++;
    ids[k] = id;
    o << hw::testpmd_templates(f, id, rules, indirect);
    return id;
  };
  std::vector<hw::Flow> shared = hw::base_flows(layout_);
  for (const auto& rf : rule_flows_) {
    if (rf.tier == hw::Tier::kSoftware) {
      o << "# rule " << rf.rule_id << " stays in software: " << rf.why << "\n";
      continue;
    }
    for (const auto& f : rf.flows) {
      int t = table_of(f, kSharedTable, 0);
      o << hw::testpmd_queue_create(f, t, 0) << "   # " << f.what << "\n";
    }
  }
  for (const auto& f : shared) {
    int t = table_of(f, kSharedTable, 0);
    o << hw::testpmd_queue_create(f, t, 0) << "   # " << f.what << "\n";
  }
  std::set<uint16_t> qports;
  for (uint32_t id = 0; id < jobs_.size(); id++) {
    const Job& j = jobs_[id];
    if (!j.used || j.state != Job::kInstalled) continue;
    o << "# " << j.orig.str() << (j.ct_obj ? " (conntrack object)" : " (exact rules, SYN/FIN/RST to software)") << "\n";
    uint16_t cp = ct_port(j);
    int ind = static_cast<int>(id);
    hw::Flow f0 = hw::conn_flow(layout_, j.conn, 0, nullptr, nullptr);
    hw::Flow f1 = hw::conn_flow(layout_, j.conn, 1, nullptr, nullptr);
    if (!j.ct_obj) {
      o << hw::testpmd_queue_create(f0, table_of(f0, cfg_.table_size, 0), 0) << "\n";
      o << hw::testpmd_queue_create(f1, table_of(f1, cfg_.table_size, 0), 0) << "\n";
    } else {
      // testpmd 22.11 copies the `set conntrack` context into the object
      // only in the non-queued create (app/test-pmd/config.c:1762-1767; the
      // queued one, config.c:2780-2832, passes it as parsed), and its queued
      // update hands the driver the action instead of its configuration
      // (config.c:2932-2951; the non-queued one passes action->conf,
      // config.c:1888-1891). An actions template's `indirect N` with a
      // `conntrack` mask puts that object, and its direction at that moment,
      // into the table (mlx5_flow_hw.c:1394-1398, 421-423; testpmd's mask has
      // a configuration, so no rule can bring its own): each direction of
      // each connection gets a table of its own here, made after the object
      // has that direction. (The provider's own table leaves the handle to
      // each rule: a NULL mask configuration.)
      o << hw::testpmd_ct(j.prof) << "flow indirect_action " << cp << " create action_id " << ind
        << (transfer_ ? " transfer" : " ingress") << " action conntrack / end\n";
      const int t0 = next_id++;
      o << hw::testpmd_templates(f0, t0, 1, ind);
      o << hw::testpmd_queue_create(f0, t0, ind) << "\n";
      rte_flow_action_conntrack rd = hw::ct_reply_update(j.prof).new_ct;
      std::string set = hw::testpmd_ct(rd);
      o << set.substr(0, set.find('\n') + 1) << "flow indirect_action " << cp << " update " << ind
        << " action conntrack_update dir / end\n";
      const int t1 = next_id++;
      o << hw::testpmd_templates(f1, t1, 1, ind);
      o << hw::testpmd_queue_create(f1, t1, ind) << "\n";
    }
    qports.insert(cp);
    qports.insert(f0.port_id);
    qports.insert(f1.port_id);
  }
  for (uint16_t p : ports_)
    if (!transfer_ || p == layout_.proxy_port) qports.insert(p);
  for (uint16_t p : qports) o << "flow push " << p << " queue 0\nflow pull " << p << " queue 0\n";
  return o.str();
}

}  // namespace

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
