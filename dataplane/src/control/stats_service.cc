// Stats and telemetry: `stats` text and /dataplane/stats from the same
// counter lists (WorkerStats::visit, PortService::counters, ct and offload stats).
#include "daemon_internal.h"


#include "version.h"  // DP_VERSION, DP_REVISION (meson vcs_tag)
#include "dataplane/log.h"
#include "sdn/clock.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_telemetry.h>
#include <rte_version.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include "sdn/json.h"

namespace dp {


// What needs DPDK calls (the ports' ethdev counters, the mempools): read
// on the control thread only.
StatsService::DpdkReads StatsService::dpdk_reads() {
  DpdkReads r;
  r.ports = ports_.counters();
  rte_mempool_walk(
      [](rte_mempool* mp, void* arg) {
        auto* pools = static_cast<std::vector<StatsSnapshot::Mempool>*>(arg);
        const unsigned avail = rte_mempool_avail_count(mp);
        pools->push_back({mp->name, mp->size, avail, mp->size > avail ? mp->size - avail : 0});
      },
      &r.mempools);
  return r;
}

// The control loop, each turn: reads for whoever asked since the last.
void StatsService::serve_dpdk_reads() {
  if (!reads_wanted_.exchange(false, std::memory_order_acq_rel)) return;
  DpdkReads r = dpdk_reads();
  std::lock_guard<std::mutex> lk(reads_mu_);
  reads_ = std::move(r);
  reads_gen_++;
  reads_cv_.notify_all();
}

// Another thread's (metrics, telemetry): asks the control loop, which
// answers within a turn (<= 20 ms); the last reads if it does not in 250 ms
// (before the loop runs, or after it stopped).
StatsService::DpdkReads StatsService::dpdk_reads_from_loop() {
  std::unique_lock<std::mutex> lk(reads_mu_);
  const uint64_t gen = reads_gen_;
  reads_wanted_.store(true, std::memory_order_release);
  reads_cv_.wait_for(lk, std::chrono::milliseconds(250), [&] { return reads_gen_ != gen; });
  return reads_;
}

// Every counter, read once. `control_thread`: called by the control loop,
// which owns the offload provider and makes the DPDK calls; other threads
// (metrics, telemetry) read the copy the loop refreshes, and ask it for
// the ports' and mempools'.
StatsSnapshot StatsService::snapshot(bool control_thread) {
  StatsSnapshot s;
  const DpdkReads reads = control_thread ? dpdk_reads() : dpdk_reads_from_loop();
  s.mempools = reads.mempools;
  s.tsc_hz = static_cast<double>(rte_get_tsc_hz());
  s.process = read_process();
  s.build = {DP_VERSION, DP_REVISION, rte_version()};
  WorkerStats sum;
  for (auto& w : run_.workers) {
    const WorkerStats ws = w->stats.snapshot();
    StatsSnapshot::Worker x;
    x.id = w->id;
    x.lcore = w->lcore;
    ws.visit([&](const char* k, uint64_t v) { x.counters.emplace_back(k, v); });
    ws.ratios([&](const char* k, uint64_t v) { x.ratios.emplace_back(k, v); });
    s.workers.push_back(std::move(x));
    for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) sum.parse_drop[i] += ws.parse_drop[i];
    for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) sum.drop[i] += ws.drop[i];
    for (int i = 0; i < static_cast<int>(Tunnel::kCount); i++) sum.tunnel[i] += ws.tunnel[i];
  }
  for (auto& [k, v] : reads.ports) {
    size_t i = 0;
    for (; i < run_.cfg.ports.size(); i++)
      if (k.rfind(run_.cfg.ports[i].name + "_", 0) == 0) break;
    if (i == run_.cfg.ports.size()) {
      s.host.emplace_back(k, v);
      continue;
    }
    if (s.ports.empty() || s.ports.back().name != run_.cfg.ports[i].name) s.ports.push_back({run_.cfg.ports[i].name, {}});
    s.ports.back().counters.emplace_back(k.substr(run_.cfg.ports[i].name.size() + 1), v);
  }
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++)
    s.drops.emplace_back(drop_why_name(static_cast<DropWhy>(i)), sum.drop[i]);
  for (int i = 1; i < static_cast<int>(ctrack::Drop::kCount); i++)
    s.drops.emplace_back(std::string("parse_") + ctrack::drop_name(static_cast<ctrack::Drop>(i)), sum.parse_drop[i]);
  for (int i = 0; i < static_cast<int>(Tunnel::kCount); i++)
    s.overlay.emplace_back(tunnel_name(static_cast<Tunnel>(i)), sum.tunnel[i]);
  rules_.with_pipeline([&](const Pipeline& pl) {
    for (size_t i = 0; i < pl.rules().size(); i++) {
      const RuleCounters c = rules_.counters(pl, i);
      s.rules.push_back({pl.rules()[i].id, pl.rules()[i].table, c.packets, c.bytes});
    }
  });
  ctrack::Stats cs;
  for (auto& sh : run_.shards) cs += sh->stats();
  cs.visit([&](const std::string& k, uint64_t v) { s.ct.emplace_back(k, v); });
  OffloadStats os;
  if (control_thread) {
    os = run_.offload->stats();
  } else {
    std::lock_guard<std::mutex> lk(off_mu_);
    os = off_snap_;
  }
  s.offload_provider = run_.offload->name();
  s.offload = std::move(os.counters);
  s.offload_gauges = std::move(os.gauges);
  s.offload_notes = std::move(os.notes);
  return s;
}

// /dataplane/stats: the snapshot `stats` and /metrics are written from, as
// telemetry's dicts (ports, workers as w<N>_<counter>, overlay, drops,
// rule_hits for the first 120 rules, ct, offload).
void StatsService::telemetry(rte_tel_data* d) {
  const StatsSnapshot s = snapshot(false);
  rte_tel_data_start_dict(d);
  auto dict = [&](const char* name, const auto& fill) {
    rte_tel_data* x = rte_tel_data_alloc();
    rte_tel_data_start_dict(x);
    fill(x);
    rte_tel_data_add_dict_container(d, name, x, 0);
  };
  auto counters = [](rte_tel_data* x, const StatsSnapshot::Counters& c, const std::string& prefix = "") {
    for (const auto& [k, v] : c) rte_tel_data_add_dict_u64(x, (prefix + k).c_str(), v);
  };
  dict("ports", [&](rte_tel_data* x) {
    for (const auto& p : s.ports) counters(x, p.counters, p.name + "_");
    counters(x, s.host);
  });
  dict("workers", [&](rte_tel_data* x) {
#define DP_ONE(name, what) +1
    static_assert(kMaxWorkers * (1 DP_WORKER_COUNTERS(DP_ONE)) <= RTE_TEL_MAX_DICT_ENTRIES,
                  "every worker's counters fit telemetry's dict");
#undef DP_ONE
    for (const auto& w : s.workers) {
      const std::string p = "w" + std::to_string(w.id) + "_";
      rte_tel_data_add_dict_u64(x, (p + "lcore").c_str(), w.lcore);
      counters(x, w.counters, p);
    }
  });
  dict("overlay", [&](rte_tel_data* x) { counters(x, s.overlay); });
  dict("drops", [&](rte_tel_data* x) { counters(x, s.drops); });
  dict("rule_hits", [&](rte_tel_data* x) {
    for (size_t i = 0; i < s.rules.size() && i < 120; i++)
      rte_tel_data_add_dict_u64(x, std::to_string(s.rules[i].id).c_str(), s.rules[i].packets);
  });
  dict("ct", [&](rte_tel_data* x) { counters(x, s.ct); });
  dict("offload", [&](rte_tel_data* x) {
    rte_tel_data_add_dict_string(x, "provider", s.offload_provider.c_str());
    counters(x, s.offload);
    for (const auto& [k, v] : s.offload_notes)
      rte_tel_data_add_dict_string(x, k.c_str(), v.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
  });
}

Status StatsService::register_commands(CommandTable& t) {
  using C = CommandTable;
  SDN_TRY(t.add("stats", [this](const CommandArgs&, Format f) {
    StatsSnapshot s = snapshot(true);
    return C::text(f == Format::kJson ? sdn::json_dump(stats_json(s)) + "\n" : stats_text(s));
  }));
  SDN_TRY(t.add_text("offload testpmd", [this](const CommandArgs&) { return C::text("ok\n" + run_.offload->testpmd_commands()); }));
  return {};
}

}  // namespace dp
