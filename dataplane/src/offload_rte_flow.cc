// The rte_flow provider: mlx5 (ConnectX-6 Dx, BlueField) with hardware
// steering (devargs dv_flow_en=2), DPDK 22.11 template/async API.
//
// Written against the 22.11 headers and the mlx5 guide; compiled and its
// translation golden-tested here, never run against a NIC (none on these
// machines). scripts/hw-check is the first thing to run on one.
//
// One flow queue (id 0), driven by the control thread only. Template tables
// are made lazily, one per rule shape (group, priority, item types + masks,
// action types): every value that differs per rule (addresses, ports,
// the conntrack handle, jump group, output port, age context) is a per-rule
// value in the actions template.
#include <rte_ethdev.h>
#include <rte_flow.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include "offload_impl.h"

namespace dp {

namespace {

std::string flow_err(const rte_flow_error& e, int rc) {
  std::string s = e.message ? e.message : strerror(rc < 0 ? -rc : rc);
  return s + " (type " + std::to_string(e.type) + ")";
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

// The template a flow belongs to.
std::string shape(const hw::Flow& f) {
  std::ostringstream o;
  o << f.attr.group << "/" << f.attr.priority << "/" << f.attr.transfer << ":";
  for (const auto& i : f.pattern) {
    o << i.type;
    if (i.mask) {
      const auto* b = static_cast<const uint8_t*>(i.mask);
      o << "[";
      for (size_t k = 0; k < item_size(i.type); k++) o << std::hex << int(b[k]) << ".";
      o << std::dec << "]";
    }
    o << ",";
  }
  o << ":";
  for (const auto& a : f.actions) o << a.type << ",";
  return o.str();
}

}  // namespace

HwCaps probe_rte_flow(uint16_t port_id) {
  HwCaps c;
  rte_flow_port_info pi{};
  rte_flow_queue_info qi{};
  rte_flow_error err{};
  int rc = rte_flow_info_get(port_id, &pi, &qi, &err);
  if (rc != 0) {
    c.missing.push_back("rte_flow_info_get: " + flow_err(err, rc) +
                        " (template API needs an mlx5 port with dv_flow_en=2)");
    return c;
  }
  c.info_ok = true;
  c.max_nb_counters = pi.max_nb_counters;
  c.max_nb_aging_objects = pi.max_nb_aging_objects;
  c.max_nb_conn_tracks = pi.max_nb_conn_tracks;
  c.max_nb_queues = pi.max_nb_queues;
  if (!pi.max_nb_queues) c.missing.push_back("flow queues");
  if (!pi.max_nb_counters) c.missing.push_back("counters");
  if (!pi.max_nb_conn_tracks) c.missing.push_back("conntrack objects");
  if (!pi.max_nb_aging_objects) c.missing.push_back("aging objects (idle connections leave only by ctrack's timeouts)");
  uint16_t proxy;
  c.transfer_proxy = rte_flow_pick_transfer_proxy(port_id, &proxy, &err) == 0;
  // What the synchronous path accepts (a non-root drop rule); with hardware
  // steering only the template path is expected to work.
  rte_flow_attr a{};
  a.group = 1;
  a.ingress = 1;
  rte_flow_item pat[] = {{RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
                         {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr}};
  rte_flow_action act[] = {{RTE_FLOW_ACTION_TYPE_DROP, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
  if (rte_flow_validate(port_id, &a, pat, act, &err) != 0)
    c.missing.push_back("note: rte_flow_validate(group 1 drop) refused: " + flow_err(err, -rte_errno) +
                        " (expected with dv_flow_en=2)");
  return c;
}

std::string HwCaps::str() const {
  std::ostringstream o;
  o << "info=" << (info_ok ? "ok" : "failed") << " queues=" << max_nb_queues << " counters=" << max_nb_counters
    << " aging=" << max_nb_aging_objects << " conntracks=" << max_nb_conn_tracks
    << " transfer_proxy=" << (transfer_proxy ? "yes" : "no");
  for (const auto& m : missing) o << "\n  missing: " << m;
  return o.str();
}

namespace {

class RteFlowProvider final : public FlowOffload {
 public:
  RteFlowProvider(const OffloadConfig& cfg, unsigned workers, bool is_auto)
      : FlowOffload(cfg, workers), auto_(is_auto) {}
  ~RteFlowProvider() override = default;

  const char* name() const override { return disabled_ ? "none (auto: no rte_flow port)" : "rte_flow"; }

  Status configure_port(uint16_t port) override {
    if (disabled_) return {};
    HwCaps c = probe_rte_flow(port);
    bool usable = c.info_ok && c.max_nb_conn_tracks && c.max_nb_counters && c.max_nb_queues;
    if (!usable) {
      if (auto_) {
        fprintf(stderr, "dataplane: offload auto: port %u cannot: %s; staying in software\n", port, c.str().c_str());
        disabled_ = true;
        return {};
      }
      return Status::error("rte_flow: port " + std::to_string(port) + ": " + c.str());
    }
    caps_ = c;
    size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
    rte_flow_port_attr pa{};
    pa.nb_counters = std::min<uint32_t>(c.max_nb_counters, static_cast<uint32_t>(2 * pool + 4096));
    pa.nb_aging_objects = std::min<uint32_t>(c.max_nb_aging_objects, static_cast<uint32_t>(2 * pool));
    pa.nb_conn_tracks = std::min<uint32_t>(c.max_nb_conn_tracks, static_cast<uint32_t>(pool + 1));
    rte_flow_queue_attr qa{};
    qa.size = std::max<uint32_t>(2 * cfg_.max_in_flight, 256);
    const rte_flow_queue_attr* qs[] = {&qa};
    rte_flow_error err{};
    if (int rc = rte_flow_configure(port, &pa, 1, qs, &err); rc != 0)
      return Status::error("rte_flow_configure port " + std::to_string(port) + ": " + flow_err(err, rc));
    return {};
  }

  Status start(OffloadHost& host) override {
    if (disabled_) return {};
    layout_.transfer = cfg_.transfer;
    layout_.port_ids = host.port_ids;
    layout_.nb_queues = static_cast<uint16_t>(workers_);
    layout_.age_s = cfg_.age_s;
    rte_flow_error err{};
    uint16_t proxy = host.port_ids.empty() ? 0 : host.port_ids[0];
    if (layout_.transfer && rte_flow_pick_transfer_proxy(proxy, &proxy, &err) != 0)
      return Status::error("rte_flow: no transfer proxy (is the port in switchdev mode?): " + flow_err(err, -1));
    layout_.proxy_port = proxy;
    return FlowOffload::start(host);
  }

  Status flush() override {
    if (disabled_) return {};
    Status s = FlowOffload::flush();
    rte_flow_error err{};
    for (auto& [k, t] : tables_) {
      rte_flow_template_table_destroy(t.port, t.table, &err);
      rte_flow_actions_template_destroy(t.port, t.at, &err);
      rte_flow_pattern_template_destroy(t.port, t.pt, &err);
    }
    tables_.clear();
    return s;
  }

  void on_pipeline(const Pipeline& pl) override {
    if (!disabled_) FlowOffload::on_pipeline(pl);
  }
  void on_ct_events(unsigned w, const ctrack::Event* ev, uint32_t n, uint64_t now) override {
    if (!disabled_) FlowOffload::on_ct_events(w, ev, n, now);
  }
  void poll(uint64_t now) override {
    if (!disabled_) FlowOffload::poll(now);
  }
  OffloadStats stats() const override {
    if (disabled_) return {};
    return FlowOffload::stats();
  }
  std::string testpmd_commands() const override {
    if (disabled_) return "# offload auto: no rte_flow port, nothing in hardware\n";
    return FlowOffload::testpmd_commands();
  }

 protected:
  bool transfer() const override { return cfg_.transfer; }

  struct Table {
    uint16_t port;
    rte_flow_pattern_template* pt;
    rte_flow_actions_template* at;
    rte_flow_template_table* table;
  };

  // The template table for a flow's shape, made on first use.
  rte_flow_template_table* table_for(const hw::Flow& f, uint32_t nb_flows, std::string* why) {
    std::string k = shape(f);
    auto it = tables_.find(k);
    if (it != tables_.end()) return it->second.table;
    rte_flow_error err{};
    rte_flow_pattern_template_attr pta{};
    pta.relaxed_matching = 0;
    pta.ingress = f.attr.ingress;
    pta.transfer = f.attr.transfer;
    std::vector<rte_flow_item> items = f.pattern;
    for (auto& i : items) i.spec = i.mask ? i.mask : nullptr;  // templates: the mask is the match
    rte_flow_pattern_template* pt = rte_flow_pattern_template_create(f.port_id, &pta, items.data(), &err);
    if (!pt) {
      *why = "pattern template: " + flow_err(err, -rte_errno);
      return nullptr;
    }
    rte_flow_actions_template_attr ata{};
    ata.ingress = f.attr.ingress;
    ata.transfer = f.attr.transfer;
    std::vector<rte_flow_action> masks = f.actions;
    for (auto& a : masks) a.conf = nullptr;  // every value comes with the rule
    rte_flow_actions_template* at = rte_flow_actions_template_create(f.port_id, &ata, f.actions.data(),
                                                                     masks.data(), &err);
    if (!at) {
      rte_flow_pattern_template_destroy(f.port_id, pt, &err);
      *why = "actions template: " + flow_err(err, -rte_errno);
      return nullptr;
    }
    rte_flow_template_table_attr ta{};
    ta.flow_attr = f.attr;
    ta.nb_flows = nb_flows;
    rte_flow_template_table* t = rte_flow_template_table_create(f.port_id, &ta, &pt, 1, &at, 1, &err);
    if (!t) {
      rte_flow_actions_template_destroy(f.port_id, at, &err);
      rte_flow_pattern_template_destroy(f.port_id, pt, &err);
      *why = "template table: " + flow_err(err, -rte_errno);
      return nullptr;
    }
    tables_.emplace(k, Table{f.port_id, pt, at, t});
    return t;
  }

  // Queues one flow; on a synchronous failure the completion is reported by
  // the next hw_poll with the errno.
  rte_flow* create(const hw::Flow& f, uint32_t nb_flows, uint64_t ck, bool postpone) {
    std::string why;
    rte_flow_template_table* t = table_for(f, nb_flows, &why);
    if (!t) {
      sync_done_.emplace_back(ck, ENOTSUP);
      log_once("template: " + why);
      return nullptr;
    }
    rte_flow_op_attr op{};
    op.postpone = postpone;
    rte_flow_error err{};
    rte_flow* fl = rte_flow_async_create(layout_.proxy_port, 0, &op, t, f.pattern.data(), 0, f.actions.data(), 0,
                                         reinterpret_cast<void*>(ck), &err);
    if (!fl) sync_done_.emplace_back(ck, rte_errno ? rte_errno : EIO);
    return fl;
  }

  unsigned hw_install(uint32_t id, Job& j, uint64_t) override {
    uint16_t port = layout_.proxy_port;
    rte_flow_error err{};
    rte_flow_op_attr op{};
    op.postpone = 1;
    unsigned n = 0;
    rte_flow_action_handle* ct = nullptr;
    if (j.tcp) {
      rte_flow_indir_action_conf ic{};
      ic.ingress = !layout_.transfer;
      ic.transfer = layout_.transfer;
      rte_flow_action a{RTE_FLOW_ACTION_TYPE_CONNTRACK, &j.prof};
      ct = rte_flow_async_action_handle_create(port, 0, &op, &ic, &a, reinterpret_cast<void*>(cookie(id, kOpCtCreate)),
                                               &err);
      n++;
      if (!ct) {
        sync_done_.emplace_back(cookie(id, kOpCtCreate), rte_errno ? rte_errno : EIO);
        // Nothing else can work without the context.
        return n;
      }
      j.hw_ct = ct;
    }
    void* age0 = reinterpret_cast<void*>(cookie(id, kOpFlow0));
    void* age1 = reinterpret_cast<void*>(cookie(id, kOpFlow1));
    j.hw_flow[0] = create(hw::conn_flow(layout_, j.conn, 0, ct, age0), cfg_.table_size, cookie(id, kOpFlow0), true);
    n++;
    if (j.tcp) {
      rte_flow_modify_conntrack m = hw::ct_reply_update(j.prof);
      if (rte_flow_async_action_handle_update(port, 0, &op, ct, &m, reinterpret_cast<void*>(cookie(id, kOpCtDir)),
                                              &err) != 0)
        sync_done_.emplace_back(cookie(id, kOpCtDir), rte_errno ? rte_errno : EIO);
      n++;
    }
    j.hw_flow[1] = create(hw::conn_flow(layout_, j.conn, 1, ct, age1), cfg_.table_size, cookie(id, kOpFlow1), false);
    n++;
    rte_flow_push(port, 0, &err);
    return n;
  }

  unsigned hw_remove(uint32_t id, Job& j, uint64_t) override {
    uint16_t port = layout_.proxy_port;
    rte_flow_error err{};
    rte_flow_op_attr op{};
    op.postpone = 1;
    unsigned n = 0;
    for (int d = 0; d < 2; d++) {
      if (!(j.made & (d ? kMadeFlow1 : kMadeFlow0))) continue;
      Tag t = d ? kOpDelFlow1 : kOpDelFlow0;
      if (rte_flow_async_destroy(port, 0, &op, static_cast<rte_flow*>(j.hw_flow[d]),
                                 reinterpret_cast<void*>(cookie(id, t)), &err) != 0)
        sync_done_.emplace_back(cookie(id, t), rte_errno ? rte_errno : EIO);
      n++;
    }
    if (j.made & kMadeCt) {
      if (rte_flow_async_action_handle_destroy(port, 0, &op, static_cast<rte_flow_action_handle*>(j.hw_ct),
                                               reinterpret_cast<void*>(cookie(id, kOpDelCt)), &err) != 0)
        sync_done_.emplace_back(cookie(id, kOpDelCt), rte_errno ? rte_errno : EIO);
      n++;
    }
    rte_flow_push(port, 0, &err);
    return n;
  }

  void hw_poll(std::vector<std::pair<uint64_t, int>>& out, uint64_t) override {
    out.insert(out.end(), sync_done_.begin(), sync_done_.end());
    sync_done_.clear();
    rte_flow_op_result res[64];
    rte_flow_error err{};
    int n;
    while ((n = rte_flow_pull(layout_.proxy_port, 0, res, 64, &err)) > 0) {
      for (int i = 0; i < n; i++)
        out.emplace_back(reinterpret_cast<uint64_t>(res[i].user_data),
                         res[i].status == RTE_FLOW_OP_SUCCESS ? 0 : EIO);
    }
  }

  void hw_counters(const Job& j, uint64_t pk[2], uint64_t by[2], uint64_t* last_hit, uint64_t now) override {
    *last_hit = 0;
    rte_flow_error err{};
    for (int d = 0; d < 2; d++) {
      pk[d] = by[d] = 0;
      if (!j.hw_flow[d]) continue;
      rte_flow_query_count qc{};
      rte_flow_action count[] = {{RTE_FLOW_ACTION_TYPE_COUNT, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
      if (rte_flow_query(layout_.proxy_port, static_cast<rte_flow*>(j.hw_flow[d]), count, &qc, &err) == 0) {
        pk[d] = qc.hits;
        by[d] = qc.bytes;
      }
      rte_flow_query_age qa{};
      rte_flow_action age[] = {{RTE_FLOW_ACTION_TYPE_AGE, nullptr}, {RTE_FLOW_ACTION_TYPE_END, nullptr}};
      if (rte_flow_query(layout_.proxy_port, static_cast<rte_flow*>(j.hw_flow[d]), age, &qa, &err) == 0 &&
          qa.sec_since_last_hit_valid && pk[d])
        *last_hit = std::max<uint64_t>(*last_hit, now - static_cast<uint64_t>(qa.sec_since_last_hit) * 1000000000ull);
    }
  }

  Status hw_shared(bool none, uint64_t now) override {
    rte_flow_error err{};
    rte_flow_op_attr op{};
    op.postpone = 1;
    // New rules first, then the old ones leave.
    std::vector<rte_flow*> made;
    std::string failures;
    if (!none) {
      for (auto& f : shared_flows()) {
        std::string why;
        rte_flow_template_table* t = table_for(f, 64, &why);
        if (!t) {
          failures += f.what + ": " + why + "; ";
          continue;
        }
        rte_flow* fl = rte_flow_async_create(layout_.proxy_port, 0, &op, t, f.pattern.data(), 0, f.actions.data(), 0,
                                             reinterpret_cast<void*>(cookie(0, kOpShared)), &err);
        if (!fl) {
          failures += f.what + ": " + flow_err(err, -rte_errno) + "; ";
          continue;
        }
        in_flight_++;
        made.push_back(fl);
      }
    }
    for (rte_flow* fl : shared_) {
      if (rte_flow_async_destroy(layout_.proxy_port, 0, &op, fl, reinterpret_cast<void*>(cookie(0, kOpShared)),
                                 &err) == 0)
        in_flight_++;
    }
    rte_flow_push(layout_.proxy_port, 0, &err);
    shared_ = std::move(made);
    (void)now;
    if (!failures.empty()) return Status::error(failures);
    return {};
  }

  void hw_drain(uint64_t) override {
    rte_flow_error err{};
    rte_flow_push(layout_.proxy_port, 0, &err);
    struct timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }

  void hw_stats(OffloadStats& s) const override {
    s.counters.insert(s.counters.end(), {{"hw_max_conn_tracks", caps_.max_nb_conn_tracks},
                                         {"hw_max_counters", caps_.max_nb_counters},
                                         {"hw_templates", tables_.size()}});
  }

 private:
  void log_once(const std::string& s) {
    if (logged_.insert(s).second) fprintf(stderr, "dataplane: rte_flow: %s\n", s.c_str());
  }
  bool auto_;
  bool disabled_ = false;
  HwCaps caps_;
  std::map<std::string, Table> tables_;
  std::vector<rte_flow*> shared_;
  std::vector<std::pair<uint64_t, int>> sync_done_;
  std::set<std::string> logged_;
};

}  // namespace

Result<std::unique_ptr<OffloadProvider>> make_rte_flow_provider(const OffloadConfig& cfg, unsigned workers) {
  return std::unique_ptr<OffloadProvider>(new RteFlowProvider(cfg, workers, cfg.provider == "auto"));
}

}  // namespace dp
