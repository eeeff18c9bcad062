// Internal: the connection lifecycle shared by the rte_flow and emulated
// providers. Subclasses only submit operations to their NIC and report the
// completions; everything about when to offload, when to remove, aging,
// counter folding, in-flight bounds and failure reasons lives here once.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <unordered_map>

#include "dataplane/hwflow.h"
#include "dataplane/offload.h"

namespace dp {

class FlowOffload : public OffloadProvider {
 public:
  explicit FlowOffload(const OffloadConfig& cfg, unsigned workers);

  Status start(OffloadHost& host) override;
  void on_pipeline(const Pipeline& pl) override;
  void on_ct_events(unsigned worker, const ctrack::Event* ev, uint32_t n, uint64_t now_ns) override;
  void poll(uint64_t now_ns) override;
  Status flush() override;
  OffloadStats stats() const override;
  std::string testpmd_commands() const override;

  // One offloaded (or offloading) connection.
  struct Job {
    bool used = false;
    unsigned worker = 0;
    uint32_t handle = 0;
    ctrack::Key orig{};
    hw::Conn conn{};
    bool tcp = false;
    rte_flow_action_conntrack prof{};
    enum State : uint8_t { kInstalling, kInstalled, kRemoving } state = kInstalling;
    uint8_t pending = 0;  // operations not completed
    uint8_t made = 0;     // kMadeCt | kMadeFlow0 | kMadeFlow1: what exists in the NIC
    int err = 0;          // first failure of the current operation batch
    bool doomed = false;  // remove as soon as the install completes
    const char* why_removed = "";
    uint64_t folded_pk[2] = {}, folded_by[2] = {};
    uint64_t installed_ns = 0;
    void* hw_flow[2] = {};  // rte_flow handles
    void* hw_ct = nullptr;
    uint32_t active_pos = 0;  // index in active_ while installed
  };
  enum Made : uint8_t { kMadeCt = 1, kMadeFlow0 = 2, kMadeFlow1 = 4 };
  // Operation tags carried in completion cookies: cookie = job << 3 | tag.
  enum Tag : uint8_t { kOpCtCreate, kOpFlow0, kOpCtDir, kOpFlow1, kOpDelFlow0, kOpDelFlow1, kOpDelCt, kOpShared };
  static uint64_t cookie(uint32_t job, Tag t) { return static_cast<uint64_t>(job) << 3 | t; }

 protected:
  // --- what a NIC implements. Submissions return how many operations went
  // out (0: nothing could be queued now; the job is retried later).
  virtual unsigned hw_install(uint32_t job, Job& j, uint64_t now_ns) = 0;
  virtual unsigned hw_remove(uint32_t job, Job& j, uint64_t now_ns) = 0;
  // Completed operations: (cookie, errno).
  virtual void hw_poll(std::vector<std::pair<uint64_t, int>>& out, uint64_t now_ns) = 0;
  // Packets and bytes per direction since the flows were made, and the last
  // time either direction hit (0: never).
  virtual void hw_counters(const Job& j, uint64_t pk[2], uint64_t by[2], uint64_t* last_hit_ns, uint64_t now_ns) = 0;
  // Replaces the shared rules (group 0 and the connection/verdict groups)
  // with shared_flows(), or with nothing.
  virtual Status hw_shared(bool none, uint64_t now_ns) = 0;
  // The shared rules for the current pipeline (a fresh copy per call).
  std::vector<hw::Flow> shared_flows() const;
  // Runs outstanding operations to completion (workers are stopped).
  virtual void hw_drain(uint64_t now_ns) = 0;
  virtual void hw_stats(OffloadStats& /*s*/) const {}
  virtual bool transfer() const { return true; }

  OffloadConfig cfg_;
  unsigned workers_;
  hw::Layout layout_;
  OffloadHost host_;
  std::vector<Job> jobs_;
  uint32_t in_flight_ = 0;  // operations submitted, not completed

 private:
  struct Req {
    unsigned worker;
    ctrack::Event ev;
  };
  struct Live {
    int job;  // -1: waiting in pending_
    ctrack::Key orig;
  };
  static uint64_t conn_key(unsigned w, uint32_t h) { return static_cast<uint64_t>(w) << 32 | h; }
  void established(unsigned w, const ctrack::Event& e);
  void gone(unsigned w, const ctrack::Event& e, const char* why, uint64_t now_ns);
  void start_pending(uint64_t now_ns);
  void start_remove(uint32_t id, const char* why, uint64_t now_ns);
  void pump(uint64_t now_ns);
  void complete(uint64_t cookie, int err, uint64_t now_ns);
  void fold(Job& j, uint64_t now_ns, uint64_t* last_hit);
  void free_job(uint32_t id);
  void fail(const std::string& reason);
  void refuse(const std::string& reason);
  bool translate(unsigned w, const ctrack::Event& e, hw::Conn* c, std::string* why) const;

  const Pipeline* pl_ = nullptr;
  uint64_t now_ = 0;  // the clock of the last event or poll (tests run on their own clock)
  uint64_t clock() const;
  std::vector<uint32_t> free_jobs_;
  std::vector<uint32_t> active_;  // installed jobs, for the counter and aging scan
  std::unordered_map<uint64_t, Live> live_;
  std::deque<Req> pending_;
  std::deque<uint32_t> removals_;  // jobs waiting for room to be removed
  std::vector<hw::RuleFlows> rule_flows_;  // last translation (for listings)
  uint32_t scan_ = 0;
  uint64_t last_scan_ns_ = 0;
  std::map<std::string, uint64_t> failed_, refused_;
  std::map<std::string, uint64_t> last_log_ns_;
  uint64_t installed_ = 0, offloads_ = 0, removed_ = 0, aged_ = 0, closed_ = 0, revoked_ = 0, backlog_drop_ = 0;
};

std::string errno_reason(int err);

}  // namespace dp
