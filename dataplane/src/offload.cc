#include "dataplane/offload.h"

#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "dataplane/emunic.h"
#include "offload_impl.h"
#include "sdn/clock.h"

namespace dp {

namespace {

using sdn::mono_ns;

// Everything stays in software.
class NoneProvider final : public OffloadProvider {
 public:
  const char* name() const override { return "none"; }
};

}  // namespace

std::string errno_reason(int err) {
  switch (err) {
    case ENOSPC: return "table_full";
    case EEXIST: return "exists";
    case ENOENT: return "no_such_object";
    case ENOTSUP: return "not_supported";
    case EINVAL: return "invalid";
    case ENODEV: return "no_device";
    case EBUSY: return "busy";
    case ENOMEM: return "no_memory";
    case EAGAIN: return "queue_full";
    case EIO: return "io_error";
    default: return "errno_" + std::to_string(err);
  }
}

// ------------------------------------------------------------------ lifecycle

FlowOffload::FlowOffload(const OffloadConfig& cfg, unsigned workers) : cfg_(cfg), workers_(workers) {}

Status FlowOffload::start(OffloadHost& host) {
  host_ = host;
  // Each connection takes two exact entries; room for the in-flight ones too.
  size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
  jobs_.assign(pool, Job{});
  free_jobs_.clear();
  for (size_t i = pool; i-- > 0;) free_jobs_.push_back(static_cast<uint32_t>(i));
  // Rule marks mean something once a table is published; port marks only
  // without transfer (with it, the NIC forwards those packets itself).
  if (host_.marks && !host_.marks->load()) {
    auto* t = new HwMarkTable();
    if (!transfer())
      for (size_t p = 0; p < host_.port_ids.size(); p++) t->out_port.push_back(static_cast<int16_t>(p));
    host_.marks->store(t);
  }
  return {};
}

void FlowOffload::fail(const std::string& reason) {
  uint64_t n = ++failed_[reason];
  uint64_t now = mono_ns();
  uint64_t& last = last_log_ns_[reason];
  if (now - last >= 1'000'000'000ull) {  // at most one line per reason per second
    last = now;
    fprintf(stderr, "dataplane: offload failed: %s (%llu so far); the connection stays in software\n", reason.c_str(),
            static_cast<unsigned long long>(n));
  }
}

void FlowOffload::refuse(const std::string& reason) { ++refused_[reason]; }

bool FlowOffload::translate(unsigned, const ctrack::Event& e, hw::Conn* c, std::string* why) const {
  if (e.orig.proto != IPPROTO_TCP && e.orig.proto != IPPROTO_UDP) {
    *why = "protocol";
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
    c->in_port[d] = e.in_port[d];
    c->out_port[d] = t.out_port;
  }
  return true;
}

void FlowOffload::established(unsigned w, const ctrack::Event& e) {
  hw::Conn c;
  std::string why;
  ctrack::Tracker* t = host_.shards[w];
  if (!translate(w, e, &c, &why)) {
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

void FlowOffload::gone(unsigned w, const ctrack::Event& e, const char* why, uint64_t now_ns) {
  auto it = live_.find(conn_key(w, e.conn));
  if (it == live_.end() || !(it->second.orig == e.orig)) return;
  int id = it->second.job;
  live_.erase(it);
  if (id < 0) return;  // still pending: start_pending skips it
  Job& j = jobs_[static_cast<size_t>(id)];
  if (j.state == Job::kInstalling) {
    j.doomed = true;
    j.why_removed = why;
  } else if (j.state == Job::kInstalled) {
    start_remove(static_cast<uint32_t>(id), why, now_ns);
  }
}

uint64_t FlowOffload::clock() const { return now_ ? now_ : mono_ns(); }

void FlowOffload::on_ct_events(unsigned w, const ctrack::Event* ev, uint32_t n, uint64_t now_ns) {
  now_ = now_ns;
  for (uint32_t i = 0; i < n; i++) {
    switch (ev[i].type) {
      case ctrack::EventType::kEstablished:
        established(w, ev[i]);
        break;
      case ctrack::EventType::kClosing:
        ++closed_;
        gone(w, ev[i], "closing", now_ns);
        break;
      case ctrack::EventType::kDestroyed:
        gone(w, ev[i], "destroyed", now_ns);
        break;
    }
  }
  pump(now_ns);
}

void FlowOffload::start_pending(uint64_t now_ns) {
  while (removals_.empty() && !pending_.empty() && in_flight_ + 4 <= cfg_.max_in_flight && !free_jobs_.empty()) {
    Req r = pending_.front();
    auto it = live_.find(conn_key(r.worker, r.ev.conn));
    if (it == live_.end() || it->second.job != -1 || !(it->second.orig == r.ev.orig)) {
      pending_.pop_front();
      continue;
    }
    // The rules may have changed while it waited.
    hw::Conn c;
    std::string why;
    if (!translate(r.worker, r.ev, &c, &why)) {
      pending_.pop_front();
      live_.erase(it);
      refuse(why);
      continue;
    }
    uint32_t id = free_jobs_.back();
    Job& j = jobs_[id];
    j = Job{};
    j.used = true;
    j.worker = r.worker;
    j.handle = r.ev.conn;
    j.orig = r.ev.orig;
    j.conn = c;
    j.tcp = r.ev.orig.proto == IPPROTO_TCP;
    if (j.tcp) j.prof = hw::ct_profile(r.ev, host_.port_ids[c.in_port[1]]);
    unsigned ops = hw_install(id, j, now_ns);
    if (ops == 0) {
      j.used = false;
      break;  // the NIC's queue is full; try again on the next poll
    }
    free_jobs_.pop_back();
    pending_.pop_front();
    j.pending = static_cast<uint8_t>(ops);
    in_flight_ += ops;
    it->second.job = static_cast<int>(id);
  }
}

void FlowOffload::fold(Job& j, uint64_t now_ns, uint64_t* last_hit) {
  uint64_t pk[2], by[2];
  hw_counters(j, pk, by, last_hit, now_ns);
  uint64_t dp[2] = {pk[0] - j.folded_pk[0], pk[1] - j.folded_pk[1]};
  uint64_t db[2] = {by[0] - j.folded_by[0], by[1] - j.folded_by[1]};
  // NICs count frame bytes, ctrack counts IP bytes (as Linux conntrack does):
  // take the Ethernet header off. (Runt-frame padding is not known here.)
  for (int d = 0; d < 2; d++) db[d] = db[d] > 14 * dp[d] ? db[d] - 14 * dp[d] : 0;
  if (dp[0] || dp[1]) {
    host_.shards[j.worker]->fold_hw_counters(j.handle, j.orig, dp, db, *last_hit ? *last_hit : now_ns);
    for (int d = 0; d < 2; d++) {
      j.folded_pk[d] = pk[d];
      j.folded_by[d] = by[d];
    }
  }
}

void FlowOffload::start_remove(uint32_t id, const char* why, uint64_t now_ns) {
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
    host_.shards[j.worker]->set_offloaded(j.handle, j.orig, false);
    free_job(id);
    return;
  }
  removals_.push_back(id);
  pump(now_ns);
}

// Submits queued work within the in-flight bound: removals first (they free
// table space), then installs.
void FlowOffload::pump(uint64_t now_ns) {
  while (!removals_.empty() && in_flight_ + 3 <= cfg_.max_in_flight) {
    uint32_t id = removals_.front();
    Job& j = jobs_[id];
    unsigned ops = hw_remove(id, j, now_ns);
    if (ops == 0) return;  // the NIC's queue is full: next poll
    removals_.pop_front();
    j.pending = static_cast<uint8_t>(ops);
    in_flight_ += ops;
  }
  start_pending(now_ns);
}

void FlowOffload::free_job(uint32_t id) {
  jobs_[id].used = false;
  free_jobs_.push_back(id);
}

void FlowOffload::complete(uint64_t ck, int err, uint64_t now_ns) {
  in_flight_--;
  auto tag = static_cast<Tag>(ck & 7);
  if (tag == kOpShared) {
    if (err) fail("shared rule: " + errno_reason(err));
    return;
  }
  uint32_t id = static_cast<uint32_t>(ck >> 3);
  Job& j = jobs_[id];
  j.pending--;
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
      default: break;
    }
  }
  if (j.pending) return;
  ctrack::Tracker* t = host_.shards[j.worker];
  if (j.state == Job::kInstalling) {
    if (j.err) {
      fail(errno_reason(j.err));
      t->set_no_offload(j.handle, j.orig);
      auto it = live_.find(conn_key(j.worker, j.handle));
      if (it != live_.end() && it->second.job == static_cast<int>(id)) live_.erase(it);
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
    return;
  }
  // Removing.
  if (j.err) fail("remove: " + errno_reason(j.err));
  t->set_offloaded(j.handle, j.orig, false);
  removed_++;
  free_job(id);
}

void FlowOffload::poll(uint64_t now_ns) {
  now_ = now_ns;
  std::vector<std::pair<uint64_t, int>> done;
  hw_poll(done, now_ns);
  for (auto& [ck, err] : done) complete(ck, err, now_ns);
  pump(now_ns);
  // Fold counters and age: every installed job about once a second (ages
  // are whole seconds; ctrack's shortest timeout for an offloaded connection
  // is tens of seconds).
  const uint64_t age_ns = static_cast<uint64_t>(cfg_.age_s) * 1'000'000'000ull;
  uint64_t dt = now_ns > last_scan_ns_ ? now_ns - last_scan_ns_ : 0;
  if (dt < 10'000'000) return;  // in slices of at least 10 ms
  size_t visits = std::min<size_t>(active_.size(), active_.size() * dt / 1'000'000'000 + 1);
  last_scan_ns_ = now_ns;
  for (size_t k = 0; k < visits && !active_.empty(); k++) {
    uint32_t id = active_[scan_++ % active_.size()];
    Job& j = jobs_[id];
    uint64_t lh = 0;
    fold(j, now_ns, &lh);
    uint64_t idle_from = std::max(lh, j.installed_ns);
    if (now_ns > idle_from && now_ns - idle_from > age_ns) {
      aged_++;
      live_.erase(conn_key(j.worker, j.handle));
      start_remove(id, "aged", now_ns);
    }
  }
}

std::vector<hw::Flow> FlowOffload::shared_flows() const {
  std::vector<hw::Flow> flows;
  if (!pl_) return flows;
  flows = hw::base_flows(layout_);
  for (auto& rf : hw::translate_rules(layout_, pl_->rules()))
    for (auto& f : rf.flows) flows.push_back(std::move(f));
  return flows;
}

void FlowOffload::on_pipeline(const Pipeline& pl) {
  pl_ = &pl;
  rule_flows_ = hw::translate_rules(layout_, pl.rules());
  uint64_t now = clock();
  if (Status s = hw_shared(false, now); !s) fail("shared rules: " + s.message());
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
    bool same = translate(j.worker, e, &c, &why) && c.out_port[0] == j.conn.out_port[0] &&
                c.out_port[1] == j.conn.out_port[1];
    if (same) continue;
    revoked_++;
    live_.erase(conn_key(j.worker, j.handle));
    if (j.state == Job::kInstalling) {
      j.doomed = true;
      j.why_removed = "rules changed";
    } else {
      start_remove(id, "rules changed", now);
    }
  }
}

Status FlowOffload::flush() {
  uint64_t now = clock();
  pending_.clear();
  live_.clear();
  for (uint32_t id = 0; id < jobs_.size(); id++) {
    Job& j = jobs_[id];
    if (!j.used) continue;
    if (j.state == Job::kInstalled) start_remove(id, "flush", now);
    else if (j.state == Job::kInstalling) j.doomed = true;
  }
  Status shared = hw_shared(true, now);
  std::vector<std::pair<uint64_t, int>> done;
  for (int round = 0; round < 1000 && (in_flight_ > 0 || !removals_.empty()); round++) {
    pump(now);
    hw_drain(now);
    done.clear();
    hw_poll(done, now);
    for (auto& [ck, err] : done) complete(ck, err, now);
  }
  size_t left = 0;
  for (const Job& j : jobs_) left += j.used;
  if (left || in_flight_) {
    return Status::error(std::to_string(left) + " connections and " + std::to_string(in_flight_) +
                         " operations still in the NIC after flush");
  }
  return shared;
}

OffloadStats FlowOffload::stats() const {
  OffloadStats s;
  size_t used = jobs_.size() - free_jobs_.size();
  s.counters = {{"installed", installed_},          {"offloads", offloads_},     {"removed", removed_},
                {"aged", aged_},                    {"closing", closed_},        {"revoked", revoked_},
                {"in_flight", in_flight_},          {"pending", pending_.size() + removals_.size()}, {"jobs_in_use", used},
                {"backlog_drops", backlog_drop_}};
  uint64_t tiers[4] = {};
  for (const auto& rf : rule_flows_) tiers[static_cast<int>(rf.tier)]++;
  for (int t = 0; t < 4; t++)
    s.counters.emplace_back(std::string("rules_") + hw::tier_name(static_cast<hw::Tier>(t)), tiers[t]);
  for (const auto& [k, v] : failed_) s.counters.emplace_back("failed_" + k, v);
  for (const auto& [k, v] : refused_) {
    std::string n = "refused_" + k;
    for (char& c : n)
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    s.counters.emplace_back(n, v);
  }
  hw_stats(s);
  return s;
}

std::string FlowOffload::testpmd_commands() const {
  std::ostringstream o;
  o << "# Reproduce by hand: dpdk-testpmd -a <PCI>,dv_flow_en=1,representor=... -- -i\n"
    << "# (these are the synchronous equivalents of the template rules the provider makes)\n";
  for (const auto& f : hw::base_flows(layout_)) o << testpmd_flow(f) << "   # " << f.what << "\n";
  for (const auto& rf : rule_flows_) {
    if (rf.tier == hw::Tier::kSoftware) {
      o << "# rule " << rf.rule_id << " stays in software: " << rf.why << "\n";
      continue;
    }
    for (const auto& f : rf.flows) o << testpmd_flow(f) << "   # " << f.what << "\n";
  }
  for (uint32_t id = 0; id < jobs_.size(); id++) {
    const Job& j = jobs_[id];
    if (!j.used || j.state != Job::kInstalled) continue;
    o << "# " << j.orig.str() << "\n";
    if (j.tcp) o << hw::testpmd_ct(layout_.proxy_port, static_cast<int>(id), j.prof, layout_.transfer);
    o << testpmd_flow(hw::conn_flow(layout_, j.conn, 0, nullptr, nullptr), static_cast<int>(id)) << "\n";
    if (j.tcp) {
      std::string upd = hw::testpmd_ct(layout_.proxy_port, static_cast<int>(id), hw::ct_reply_update(j.prof).new_ct,
                                       layout_.transfer);
      o << upd.substr(0, upd.find('\n') + 1) << "flow indirect_action " << layout_.proxy_port << " update " << id
        << " action conntrack_update dir / end\n";
    }
    o << testpmd_flow(hw::conn_flow(layout_, j.conn, 1, nullptr, nullptr), static_cast<int>(id)) << "\n";
  }
  return o.str();
}

// ------------------------------------------------------------------ emulated

namespace {

class EmulatedProvider final : public FlowOffload {
 public:
  using FlowOffload::FlowOffload;
  const char* name() const override { return "emulated"; }
  EmuNic* nic() override { return nic_.get(); }

  Status start(OffloadHost& host) override {
    layout_.transfer = true;
    layout_.port_ids = host.port_ids;
    layout_.proxy_port = host.port_ids.empty() ? 0 : host.port_ids[0];
    layout_.nb_queues = static_cast<uint16_t>(workers_);
    layout_.age_s = cfg_.age_s;
    if (Status s = FlowOffload::start(host); !s) return s;
    EmuNicConfig nc;
    nc.queues = workers_;
    nc.table_size = cfg_.table_size;
    nc.ct_contexts = static_cast<uint32_t>(jobs_.size());
    nc.insert_rate = cfg_.insert_rate;
    nc.latency_us = cfg_.latency_us;
    nc.rule_size = kShared;
    nc.flow_ids = 2 * static_cast<uint32_t>(jobs_.size()) + kShared;
    uint32_t ring = 1024;
    while (ring < 2 * cfg_.max_in_flight + 4 * kShared) ring <<= 1;
    nc.ring = ring;
    nic_ = std::make_unique<EmuNic>(nc, layout_);
    return {};
  }

 protected:
  static constexpr uint32_t kShared = 4096;

  unsigned hw_install(uint32_t id, Job& j, uint64_t now) override {
    unsigned q = j.worker;
    if (!nic_->can_submit(q, 4)) return 0;
    unsigned n = 0;
    if (j.tcp) n += nic_->ct_create(q, id, j.prof, cookie(id, kOpCtCreate), now);
    n += nic_->flow_create(q, 2 * id, hw::conn_flow(layout_, j.conn, 0, EmuNic::ct_handle(id), nullptr),
                           cookie(id, kOpFlow0), now);
    if (j.tcp) n += nic_->ct_update(q, id, hw::ct_reply_update(j.prof), cookie(id, kOpCtDir), now);
    n += nic_->flow_create(q, 2 * id + 1, hw::conn_flow(layout_, j.conn, 1, EmuNic::ct_handle(id), nullptr),
                           cookie(id, kOpFlow1), now);
    return n;
  }

  unsigned hw_remove(uint32_t id, Job& j, uint64_t now) override {
    unsigned q = j.worker, n = 0;
    if (!nic_->can_submit(q, 3)) return 0;
    if (j.made & kMadeFlow0) n += nic_->flow_destroy(q, 2 * id, cookie(id, kOpDelFlow0), now);
    if (j.made & kMadeFlow1) n += nic_->flow_destroy(q, 2 * id + 1, cookie(id, kOpDelFlow1), now);
    if (j.made & kMadeCt) n += nic_->ct_destroy(q, id, cookie(id, kOpDelCt), now);
    return n;
  }

  void hw_poll(std::vector<std::pair<uint64_t, int>>& out, uint64_t) override {
    EmuNic::Completion c[256];
    for (unsigned q = 0; q < workers_; q++) {
      uint32_t n;
      while ((n = nic_->poll(q, c, 256)) > 0)
        for (uint32_t i = 0; i < n; i++) out.emplace_back(c[i].cookie, c[i].err);
    }
  }

  void hw_counters(const Job& j, uint64_t pk[2], uint64_t by[2], uint64_t* last_hit, uint64_t) override {
    *last_hit = 0;
    uint32_t id = static_cast<uint32_t>(&j - jobs_.data());
    for (int d = 0; d < 2; d++) {
      const EmuNic::Counter& c = nic_->counter(2 * id + static_cast<uint32_t>(d));
      pk[d] = c.packets.load(std::memory_order_relaxed);
      by[d] = c.bytes.load(std::memory_order_relaxed);
      *last_hit = std::max(*last_hit, c.last_hit_ns.load(std::memory_order_relaxed));
    }
  }

  Status hw_shared(bool none, uint64_t now) override {
    const uint32_t base = 2 * static_cast<uint32_t>(jobs_.size());
    // The old and new sets use alternate halves of the shared id range, so
    // the new rules go in before the old ones leave.
    uint32_t from = shared_half_ ? base + kShared / 2 : base;
    size_t count = 0;
    for (unsigned q = 0; q < workers_; q++) {
      std::vector<hw::Flow> flows;
      if (!none) flows = shared_flows();  // each queue's table gets its own copy
      if (flows.size() > kShared / 2)
        return Status::error(std::to_string(flows.size()) + " shared rules; the model takes " +
                             std::to_string(kShared / 2));
      count = flows.size();
      for (size_t i = 0; i < flows.size(); i++)
        in_flight_ += nic_->flow_create(q, from + static_cast<uint32_t>(i), std::move(flows[i]),
                                        cookie(0, kOpShared), now);
      for (uint32_t id : shared_ids_) in_flight_ += nic_->flow_destroy(q, id, cookie(0, kOpShared), now);
    }
    shared_half_ = !shared_half_;
    shared_ids_.clear();
    for (size_t i = 0; i < count; i++) shared_ids_.push_back(from + static_cast<uint32_t>(i));
    return {};
  }

  void hw_drain(uint64_t) override {
    for (unsigned q = 0; q < workers_; q++) nic_->service(q, UINT64_MAX);
  }

  void hw_stats(OffloadStats& s) const override {
    EmuNic::QueueStats t;
    for (unsigned q = 0; q < workers_; q++) t += nic_->stats(q);
    s.counters.insert(s.counters.end(), {{"nic_rx", t.rx},
                                         {"nic_forwarded", t.forwarded},
                                         {"nic_dropped", t.dropped},
                                         {"nic_to_software", t.to_software},
                                         {"nic_ct_invalid", t.ct_invalid},
                                         {"nic_ct_changed", t.ct_changed},
                                         {"nic_exact_in_use", nic_->exact_in_use()},
                                         {"nic_rules_in_use", nic_->rules_in_use()},
                                         {"nic_ct_in_use", nic_->ct_in_use()}});
  }

 private:
  std::unique_ptr<EmuNic> nic_;
  std::vector<uint32_t> shared_ids_;
  bool shared_half_ = false;
};

}  // namespace

Result<std::unique_ptr<OffloadProvider>> make_rte_flow_provider(const OffloadConfig& cfg, unsigned workers);

Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg, unsigned workers) {
  if (cfg.provider == "none") return std::unique_ptr<OffloadProvider>(new NoneProvider());
  if (cfg.provider == "emulated") return std::unique_ptr<OffloadProvider>(new EmulatedProvider(cfg, workers));
  if (cfg.provider == "rte_flow" || cfg.provider == "auto") return make_rte_flow_provider(cfg, workers);
  return Status::error("offload provider '" + cfg.provider + "': expected none, emulated, rte_flow or auto");
}

}  // namespace dp
