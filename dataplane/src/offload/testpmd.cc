// The rte_flow provider's rules as dpdk-testpmd commands (dataplane-ctl
// offload testpmd), in the forms testpmd 22.11 applies.
#include "provider_internal.h"

namespace dp {

namespace {
constexpr size_t kTestpmdLine = 511;  // RDLINE_BUF_SIZE 512 with its terminating byte
}  // namespace

std::string RteFlowProvider::testpmd_commands() const {
  std::ostringstream o;
  if (disabled_) return "# offload auto: no rte_flow port, nothing in hardware\n";
  if (sws_) return testpmd_sws();
  size_t pool = cfg_.table_size / 2 + cfg_.max_in_flight;
  o << "# dpdk-testpmd -a <PCI>,dv_flow_en=2" << (transfer_ ? ",representor=..." : "")
    << " -- -i\n"
       "# Hardware steering (the template/queue API), as the provider issues it. On DV\n"
       "# software steering (dv_flow_en=1) the provider prints the synchronous form.\n"
       "port stop all\n";
  for (uint16_t p : ports_) {
    bool proxy = !transfer_ || p == layout_.proxy_port;
    o << "flow configure " << p << " queues_number 1 queues_size " << (proxy ? queue_ : 64);
    if (proxy) {
      o << " counters_number " << 4 * pool + 4 * kSharedSlots << " aging_counters_number " << 2 * pool;
      if (aso_) o << " conn_tracks_number " << std::min<size_t>(pool, ct_pool_);
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
    if (!j.used || !life::installed(j.life)) continue;
    o << "# " << j.orig.str() << (j.life.ct_obj ? " (conntrack object)" : " (exact rules, SYN/FIN/RST to software)") << "\n";
    uint16_t cp = ct_port(j);
    int ind = static_cast<int>(id);
    hw::Flow f0 = hw::conn_flow(layout_, j.conn, 0, nullptr, nullptr);
    hw::Flow f1 = hw::conn_flow(layout_, j.conn, 1, nullptr, nullptr);
    if (!j.life.ct_obj) {
      // testpmd's raw_encap in an actions template (and its mask) takes the
      // data of `set raw_encap`, so its rules share it: a direction that
      // encapsulates (its own UDP source port) gets a table of its own.
      for (const hw::Flow* f : {&f0, &f1}) {
        int t = 0;
        if (f->find_action(RTE_FLOW_ACTION_TYPE_RAW_ENCAP)) {
          t = next_id++;
          o << hw::testpmd_templates(*f, t, 1, 0);
        } else {
          t = table_of(*f, cfg_.table_size, 0);
        }
        o << hw::testpmd_queue_create(*f, t, 0) << "\n";
      }
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
  return fit_lines(o.str());
}

// DV software steering: what the provider creates, one synchronous call
// each (`flow create`, `flow indirect_action ... create`).
std::string RteFlowProvider::testpmd_sws() const {
  std::ostringstream o;
  o << "# dpdk-testpmd -a <PCI>,dv_flow_en=1" << (transfer_ ? ",representor=..." : "")
    << " -- -i\n"
       "# DV software steering (synchronous rte_flow), as the provider issues it:\n"
       "# the driver validates each rule.\n";
  for (const auto& rf : rule_flows_) {
    if (rf.tier == hw::Tier::kSoftware) {
      o << "# rule " << rf.rule_id << " stays in software: " << rf.why << "\n";
      continue;
    }
    for (const auto& f : rf.flows) o << hw::testpmd_create(f, 0) << "   # " << f.what << "\n";
  }
  for (const auto& f : hw::base_flows(layout_)) o << hw::testpmd_create(f, 0) << "   # " << f.what << "\n";
  for (uint32_t id = 0; id < jobs_.size(); id++) {
    const Job& j = jobs_[id];
    if (!j.used || !life::installed(j.life)) continue;
    o << "# " << j.orig.str() << (j.life.ct_obj ? " (conntrack object)" : " (exact rules, SYN/FIN/RST to software)") << "\n";
    const int ind = static_cast<int>(id);
    hw::Flow f0 = hw::conn_flow(layout_, j.conn, 0, nullptr, nullptr);
    hw::Flow f1 = hw::conn_flow(layout_, j.conn, 1, nullptr, nullptr);
    if (j.life.ct_obj) {
      const uint16_t cp = ct_port(j);
      o << hw::testpmd_ct(j.prof) << "flow indirect_action " << cp << " create action_id " << ind
        << (transfer_ ? " transfer" : " ingress") << " action conntrack / end\n";
      o << hw::testpmd_create(f0, ind) << "\n";
      rte_flow_action_conntrack rd = hw::ct_reply_update(j.prof).new_ct;
      std::string set = hw::testpmd_ct(rd);
      o << set.substr(0, set.find('\n') + 1) << "flow indirect_action " << cp << " update " << ind
        << " action conntrack_update dir / end\n";
      o << hw::testpmd_create(f1, ind) << "\n";
    } else {
      o << hw::testpmd_create(f0, 0) << "\n" << hw::testpmd_create(f1, 0) << "\n";
    }
  }
  return fit_lines(o.str());
}

// testpmd reads a command into a 512-byte line (lib/cmdline/cmdline_rdline.h,
// RDLINE_BUF_SIZE) and refuses a longer one: such commands (two
// MODIFY_FIELDs with their masks, NIC Rx RSS with its key in template and
// mask) are printed, but commented, with their length.
std::string RteFlowProvider::fit_lines(const std::string& text) {
  std::istringstream in(text);
  std::ostringstream out;
  for (std::string l; std::getline(in, l);) {
    if (l.size() > kTestpmdLine && l[0] != '#')
      out << "# (" << l.size() << " bytes: over testpmd's " << kTestpmdLine << "-byte command line) ";
    out << l << "\n";
  }
  return out.str();
}

}  // namespace dp
