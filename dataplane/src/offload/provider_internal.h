// Internal to the rte_flow provider (dataplane/src/offload/): the class and
// its connection lifecycle. What happens to a connection is decided by the
// pure state machine (lifecycle_sm.h); lifecycle.cc finds the connection,
// observes the facts an event carries and applies the effects; submit.cc:
// the operations each submit effect stands for, carried out by Submission
// (submission.h: the seam's calls on either engine, the operations out) with
// the template cache (template_cache.h); set-up, domain and strategy in
// provider.cc; testpmd.cc prints the rules as testpmd commands.
#pragma once

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
#include "lifecycle_sm.h"
#include "submission.h"

namespace dp {

using sdn::mono_ns;



inline std::string flow_err(const rte_flow_error& e, int err) {
  std::string s = e.message ? e.message : strerror(err < 0 ? -err : err);
  return s;
}

inline std::string errno_reason(int err) {
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

// The template a flow belongs to (flow_shape).
inline std::string shape(const hw::Flow& f) {
  return flow_shape(f.port_id, f.attr, f.pattern.data(), f.actions.data());
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
  Mlx5Model* model() override { return given_nic_ ? given_nic_ : model_.get(); }
  void use(const FlowApi* api, Mlx5Model* nic) {
    given_api_ = api;
    given_nic_ = nic;
  }

  Status prepare(const std::vector<uint16_t>& ports) override;
  std::vector<size_t> start_order(size_t nports) const override;

  Status choose_domain();

  Status make_model(const std::vector<uint16_t>& ports);

  Status configure_port(uint16_t port) override;

  Status start(OffloadHost& host) override;

  std::string hws_did_not_start() const override { return hws_failed_; }
  std::string probe_ct();
  bool sws_probe(uint16_t port, std::string* why);
  bool take_sws(uint16_t port, HwCaps& c);
  std::string refused_configure(const std::string& pn, const std::string& msg, const std::string& first,
                                uint32_t cts) const;

  void on_pipeline(const Pipeline& pl) override;

  void on_ct_events(unsigned w, const ctrack::Event* ev, uint32_t n, uint64_t now_ns) override;

  void poll(uint64_t now_ns) override;

  void drain_aged(uint64_t now_ns);
  void aged_report(uintptr_t ck, uint64_t now_ns);

  void on_ports_stopped() override;

  bool busy() const override { return sub_.in_flight() || !pending_.empty() || !removals_.empty() || !retry_.empty(); }

  Status flush() override;

  OffloadStats stats() const override;

  std::string testpmd_commands() const override;
  std::string testpmd_sws() const;
  static std::string fit_lines(const std::string& text);

 private:
  static constexpr uint32_t kSharedSlots = 16384;
  static constexpr uint32_t kCtOpsMax = 1024 - 64;  // the ASO queue (mlx5.h:592), less a margin
  // A transient refusal pauses installs this long; a connection is tried
  // this often (together longer than the counter service's 500 ms cycle).
  static constexpr uint64_t kBusyBackoffNs = 100'000'000;  // (tries: life::kBusyTries)
  static constexpr uint32_t kSharedTable = 64;
  static constexpr uint32_t kProbeTable = 16;  // the conntrack probe's own table (probe_ct)
  static constexpr uint32_t kRulesAfterCt = 3;  // a conntrack connection's operations after its object's create

  // A slot: one connection from the submission of its first operation to
  // its removal. Its lifecycle state (what is out, what exists in the NIC,
  // where it stands) is `life`, moved only by life::step (lifecycle_sm.h);
  // the rest is what the operations need and what they gave back.
  struct Job {
    bool used = false;
    unsigned worker = 0;
    uint32_t handle = 0;
    ctrack::Key orig{};
    hw::Conn conn{};
    life::State life{};
    rte_flow_action_conntrack prof{};  // as handed to the NIC
    rte_flow_action_conntrack qbuf{};  // a query's result lands here
    bool liberal = false;         // the context was written liberal (see the resync note above)
    uint64_t last_resync_ns = 0;  // when the last resync was written
    uint64_t folded_pk[2] = {}, folded_by[2] = {};
    uint64_t installed_ns = 0;
    uint64_t moved_ns = 0;  // SWS: when its counters last moved (a fold saw them change)
    rte_flow* flow[2] = {};
    rte_flow_action_handle* ct = nullptr;
    uint32_t active_pos = 0;
    uint32_t gen = 0;  // which use of this slot (aged-flow reports name it)
    uint8_t l2_len = 14;  // the Ethernet header of its packets, VLAN tags included
    ctrack::Event ev{};   // the event that asked for it (for a retry)
  };
  // A completion's cookie: the job and the operation (life::Op, or the
  // shared rules').
  enum Tag : uint8_t {
    kOpCtCreate = static_cast<uint8_t>(life::Op::kCtCreate),
    kOpFlow0 = static_cast<uint8_t>(life::Op::kFlow0),
    kOpCtDir = static_cast<uint8_t>(life::Op::kCtDir),
    kOpFlow1 = static_cast<uint8_t>(life::Op::kFlow1),
    kOpDelFlow0 = static_cast<uint8_t>(life::Op::kDelFlow0),
    kOpDelFlow1 = static_cast<uint8_t>(life::Op::kDelFlow1),
    kOpDelCt = static_cast<uint8_t>(life::Op::kDelCt),
    kOpQuery = static_cast<uint8_t>(life::Op::kQuery),
    kOpResync = static_cast<uint8_t>(life::Op::kResync),
    kOpShared,
  };
  // A rule's AGE context: the job, its generation and the direction.
  static void* age_cookie(const Job& j, uint32_t id, Tag t) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(j.gen) << 32 | static_cast<uintptr_t>(id) << 4 | t);
  }
  static uintptr_t cookie(uint32_t job, Tag t) { return static_cast<uintptr_t>(job) << 4 | t; }
  // A connection queued (life::Phase::kQueued): tries and translation are
  // looked at again when its turn comes.
  struct Req {
    unsigned worker;
    ctrack::Event ev;
    uint8_t tries = 0;
  };
  struct Live {
    int job;  // -1: waiting in pending_
    ctrack::Key orig;
  };
  struct Shared {
    uint16_t port;
    rte_flow* flow;
  };

  static uint64_t conn_key(unsigned w, uint32_t h) { return static_cast<uint64_t>(w) << 32 | h; }
  // The flow queue asked for: the next power of two >= 2 x max_in_flight +
  // the shared rules, but no more than kQueueStart. HWS gives each queue a
  // send queue of size x MAX_WQES_PER_RULE (32) WQEBBs (hws/mlx5dr_send.c
  // 535-536, mlx5dr_send.h:13), and a ConnectX-6 Dx / BlueField-2 grants
  // 2^15 (max_qp_wr): 1,024 entries. A refusal steps it down (configure_port).
  static constexpr uint32_t kQueueStart = 1024;
  static constexpr uint32_t kQueueMin = 256;
  uint32_t queue_size() const {
    uint32_t q = 256;
    while (q < 2 * cfg_.max_in_flight + kSharedTable) q <<= 1;
    return std::min(q, kQueueStart);
  }
  // Operations out at once: what the configured queue holds (SWS: the
  // synchronous calls one poll makes, so the control loop keeps its pace).
  static constexpr uint32_t kSwsPerPoll = 256;
  uint32_t in_flight_cap() const {
    if (sws_) return std::min(cfg_.max_in_flight, kSwsPerPoll);
    return queue_ > kSharedTable ? std::min<uint32_t>(cfg_.max_in_flight, (queue_ - kSharedTable) / 2)
                                 : cfg_.max_in_flight;
  }
  uint64_t clock() const { return now_ ? now_ : mono_ns(); }
  uint16_t flow_port(const Job& j, int d) const {
    return transfer_ ? layout_.proxy_port : layout_.port_ids[j.conn.in_port[d]];
  }
  uint16_t ct_port(const Job& j) const { return flow_port(j, 0); }

  void log_limited(const std::string& key, const std::string& line) { log_.warn(key, line); }
  void fail(const std::string& reason, const std::string& detail) {
    uint64_t n = ++failed_[reason];
    log_limited("failed_" + reason, "failed: " + reason + (detail.empty() ? "" : " (" + detail + ")") + ", " +
                                        std::to_string(n) + " so far; the connection stays in software");
  }
  void refuse(const std::string& reason) { ++refused_[reason]; }

  bool translate(const ctrack::Event& e, hw::Conn* c, std::string* why) const;

  void established(unsigned w, const ctrack::Event& e);

  void gone(unsigned w, const ctrack::Event& e, const char* why, uint64_t now_ns);

  void resync_requested(unsigned w, const ctrack::Event& e);

  void pump(uint64_t now_ns);
  void start_next(const Req& r, uint64_t now_ns);

  // The lifecycle: an event for a job's connection (life::step), its
  // effects carried out in order (apply); `deliver_free` for a connection
  // without a slot (idle or queued).
  void deliver(uint32_t id, const life::Event& e, uint64_t now_ns);
  void deliver_free(unsigned w, const ctrack::Event& ev, const life::State& s, const life::Event& e);
  void apply(uint32_t id, const life::Effect& fx, uint64_t now_ns);
  bool apply_counter(const life::Effect& fx);
  void apply_conn(unsigned w, uint32_t handle, const ctrack::Key& orig, const life::Effect& fx);
  void illegal(const life::State& s, const life::Event& e, life::Illegal why);
  // Conntrack operations (creates, context updates, queries) share the
  // driver's ASO work queue of 1024 per flow queue (ct-queue-depth in the
  // model): at most kCtOpsMax out at once, below it.
  void ct_op_out() {
    ct_ops_++;
    ct_ops_max_ = std::max(ct_ops_max_, ct_ops_);
  }

  void submit_ct_create(uint32_t id);
  void submit_rules(uint32_t id);
  void submit_destroy(uint32_t id, uint8_t flows);
  void submit_query(uint32_t id);
  void resync_update(uint32_t id);
  void deactivate(Job& j);

  // The queue ports (HWS: those holding flow queues; DV: none).
  std::vector<uint16_t> queue_ports() const {
    std::vector<uint16_t> v;
    for (uint16_t p : configured_)
      if (has_queue(p)) v.push_back(p);
    return v;
  }

  void replace_shared(bool none);

  void pull_all(uint64_t now_ns);
  bool has_queue(uint16_t p) const { return !sws_ && (!transfer_ || p == layout_.proxy_port); }
  void push_all(const std::set<uint16_t>& ports) { sub_.push(ports); }

  void complete(uintptr_t ck, int err, uint64_t now_ns);

  void fold(Job& j, uint64_t now_ns, uint64_t* last_hit);

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
  Submission sub_;  // the seam's calls, the operations out, the template tables
  LimitedLog log_;
  std::vector<Shared> shared_;
  uint32_t reserved_ = 0;  // queue room held for the rules of connections whose conntrack object is being made
  uint32_t queue_ = 0;  // the flow queue size the proxy's rte_flow_configure took
  // The conntrack pool every port took (the smallest, stepped down from
  // table_size / 2 + max_in_flight); UINT32_MAX: as asked.
  uint32_t ct_pool_ = UINT32_MAX;
  static constexpr uint32_t kCtPoolMin = 1024;
  uint32_t scan_ = 0;
  uint64_t last_scan_ns_ = 0;
  std::map<std::string, uint64_t> failed_, refused_;
  uint64_t installed_ = 0, offloads_ = 0, removed_ = 0, aged_ = 0, closed_ = 0, revoked_ = 0, resyncs_ = 0,
           resyncs_liberal_ = 0, backlog_drop_ = 0, resync_deferred_ = 0, retries_ = 0;
  uint32_t ct_ops_ = 0, ct_ops_max_ = 0;
  uint64_t aged_reports_ = 0, aged_stale_ = 0, offloads_aso_ = 0;
  ctrack::Event snap_{};  // the tracker's snapshot an event's effects use (a create's profile, a resync)
  bool transfer_ = true, aso_ = true;
  uint16_t proxy_ = 0;  // transfer: the E-Switch manager's port id (choose_domain)
  // DV software steering (dv_flow_en=1): synchronous rte_flow_validate and
  // rte_flow_create per rule; Submission completes them at the next pull.
  bool sws_ = false;
  std::string domain_why_, strategy_why_, engine_why_;
  std::string hws_failed_;  // hws_did_not_start()
};

}  // namespace dp
