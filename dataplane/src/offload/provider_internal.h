// Internal to the rte_flow provider (dataplane/src/offload/): the class and
// its connection lifecycle (lifecycle.cc: events, install and removal
// decisions, completions, aging, counter folding; submit.cc: which
// operations each step of a connection asks for), apart from the
// submission itself (submission.h: the seam's calls on either engine, the
// operations out) and the template cache (template_cache.h); set-up,
// domain and strategy in provider.cc; testpmd.cc prints the rules as
// testpmd commands.
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
  static constexpr uint64_t kBusyBackoffNs = 100'000'000;
  static constexpr uint8_t kBusyTries = 10;
  static constexpr uint32_t kSharedTable = 64;
  static constexpr uint32_t kProbeTable = 16;  // the conntrack probe's own table (probe_ct)
  static constexpr uint32_t kRulesAfterCt = 3;  // a conntrack connection's operations after its object's create

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
    uint64_t moved_ns = 0;  // SWS: when its counters last moved (a fold saw them change)
    rte_flow* flow[2] = {};
    rte_flow_action_handle* ct = nullptr;
    uint32_t active_pos = 0;
    uint32_t gen = 0;  // which use of this slot (aged-flow reports name it)
    uint8_t l2_len = 14;  // the Ethernet header of its packets, VLAN tags included
    bool retry = false;   // failed for a resource that frees by itself: offered again once removed
    bool rules_reserved = false;  // HWS: its rules' queue room is held until its conntrack object is ready
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
  static uintptr_t cookie(uint32_t job, Tag t) { return static_cast<uintptr_t>(job) << 4 | t; }
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

  void request_remove(uint32_t id, const char* why, uint64_t now_ns);

  void start_remove(uint32_t id, const char* why, uint64_t now_ns);

  void finish_remove(uint32_t id);

  void pump(uint64_t now_ns);

  // An operation of the job's submitted (Submission counts all of them).
  static void op_out(Job& j) { j.pending++; }
  // Conntrack operations (creates, context updates, queries) share the
  // driver's ASO work queue of 1024 per flow queue (ct-queue-depth in the
  // model): at most kCtOpsMax out at once, below it.
  void ct_op_out() {
    ct_ops_++;
    ct_ops_max_ = std::max(ct_ops_max_, ct_ops_);
  }

  void submit_install(uint32_t id, uint64_t);
  void submit_rules(uint32_t id);

  void submit_remove(uint32_t id);

  void start_resync(uint32_t id);

  void resync_update(uint32_t id);

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
  bool transfer_ = true, aso_ = true;
  uint16_t proxy_ = 0;  // transfer: the E-Switch manager's port id (choose_domain)
  // DV software steering (dv_flow_en=1): synchronous rte_flow_validate and
  // rte_flow_create per rule; Submission completes them at the next pull.
  bool sws_ = false;
  std::string domain_why_, strategy_why_, engine_why_;
  std::string hws_failed_;  // hws_did_not_start()
};

}  // namespace dp
