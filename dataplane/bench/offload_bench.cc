// offload-bench: connection offloads per second through the provider, and
// a churn run that checks nothing leaks. A program that prints numbers, not
// a timed test.
//
//   offload-bench [--json] [--conns N] [--churn N] [--in-flight N]
//                 [--insert-rate OPS] [--latency-us US] [--nic PROFILE]
//
// --nic picks the model's NIC profile and with it the strategy: conntrack
// objects (cx6dx-switchdev-ct-fdb, cx6dx-legacy: aso) or exact rules that
// leave SYN/FIN/RST to software (cx6dx-switchdev, bf2-switchdev: flows).
//
// Set-up as in the daemon: the one rte_flow provider over the mlx5 22.11
// model (`emulated`) on two net_null ports; the model's rx queue is serviced
// by a worker on the second lcore (needs 2 cores); the main lcore is the
// control loop. Connections are real ctrack TCP connections (SYN, SYN-ACK,
// ACK through the tracker), so every offload goes event -> translation -> ct
// context + two flows -> completion -> set_offloaded, and every removal the
// way back.
//
// `rate`: N connections established at once; the time until the last is in
// the NIC. The baseline from the same run is the NIC's own ceiling: its
// insertion rate divided by the operations a TCP offload took (4 with a
// conntrack object, 2 without). Conntrack operations out at once are
// counted (they share the driver's queue of 1024).
// `churn`: N connections in batches of 10K: established, offloaded, closed
// (flushed from ctrack), removed. Then the objects left: must all be zero.
#include <netinet/in.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/config.h"
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dataplane/nic_model.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"
#include "sdn/clock.h"

using Clock = std::chrono::steady_clock;

namespace {

using sdn::mono_ns;

const char* kRules = R"Y(
ports:
  - {name: inside, devargs: "net_null0"}
  - {name: outside, devargs: "net_null1"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 0, match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new", actions: "ct(commit),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 0, match: "", actions: "drop"}
)Y";

struct Rig {
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<dp::Pipeline> pl;
  std::unique_ptr<dp::OffloadProvider> off;
  std::atomic<const dp::HwMarkTable*> marks{nullptr};
  dp::OffloadHost host;
  std::atomic<bool> stop{false};
  uint64_t max_in_flight_seen = 0;
  uint64_t calls = 0;

  Rig(const dp::OffloadConfig& oc, uint32_t capacity) {
    auto cfg = dp::parse_config(kRules, "offload-bench");
    ctrack::Config cc;
    cc.capacity = capacity;
    cc.event_ring = 1 << 16;
    ct = std::move(ctrack::Tracker::create(cc).value());
    pl = std::move(dp::Pipeline::build(cfg->rules, 1).value());
    off = std::move(dp::make_offload_provider(oc, 1).value());
    std::vector<uint16_t> ports = {0, 1};
    static rte_mempool* pool =
        rte_pktmbuf_pool_create("offload_bench", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (dp::Status st = dp::start_ports(*off, ports, pool); !st) {
      fprintf(stderr, "offload-bench: %s\n", st.message().c_str());
      abort();
    }
    host.port_ids = ports;
    host.shards = {ct.get()};
    host.marks = &marks;
    if (!off->start(host)) abort();
    off->poll(mono_ns());
    off->on_pipeline(*pl);
    // The worker on its own lcore, as in the daemon: two busy loops
    // sharing one core measured the scheduler (23K-143K offloads/s).
    if (rte_eal_remote_launch(&Rig::work, this, rte_get_next_lcore(-1, 1, 0)) != 0) abort();
    while (stat("in_flight") > 0) control();  // the shared rules are in
  }
  static int work(void* arg) {
    auto* r = static_cast<Rig*>(arg);
    dp::Mlx5Model* nic = r->off->model();
    while (!r->stop.load(std::memory_order_relaxed)) nic->service(0, mono_ns());
    return 0;
  }
  // The provider's flush runs with the workers stopped (it services the
  // NIC's queues itself), as in the daemon.
  void stop_worker() {
    stop = true;
    rte_eal_mp_wait_lcore();
  }
  ~Rig() {
    stop_worker();
    if (dp::Status st = off->flush(); !st) fprintf(stderr, "offload-bench: flush: %s\n", st.message().c_str());
    dp::stop_ports(*off, {0, 1});
    delete marks.load();
  }
  void control() {
    ctrack::Event ev[512];
    uint32_t n;
    uint64_t now = mono_ns();
    while ((n = ct->poll_events(ev, 512)) > 0) off->on_ct_events(0, ev, n, now);
    off->poll(now);
    if (++calls % 64 == 0) max_in_flight_seen = std::max(max_in_flight_seen, off->stats().get("in_flight"));
  }
  uint64_t stat(const char* k) const { return off->stats().get(k); }
};

// The handshake of connection x through the tracker.
void open_conn(ctrack::Tracker& t, uint32_t x) {
  ctrack::Packet p{};
  p.key.family = 4;
  p.key.proto = IPPROTO_TCP;
  p.key.src[0] = 10;
  p.key.src[1] = static_cast<uint8_t>(x >> 16);
  p.key.src[2] = static_cast<uint8_t>(x >> 8);
  p.key.src[3] = static_cast<uint8_t>(x);
  p.key.dst[0] = 172;
  p.key.dst[1] = 16;
  p.key.sport = static_cast<uint16_t>(1024 + (x >> 24));
  p.key.dport = 80;
  p.l3_len = 40;
  p.win = 8192;
  p.in_port = 0;
  ctrack::Packet syn = p, synack = p, ack = p;
  syn.tcp_flags = ctrack::kSyn;
  syn.seq = 100;
  synack.key = p.key.reversed();
  synack.in_port = 1;
  synack.tcp_flags = ctrack::kSyn | ctrack::kAck;
  synack.seq = 500;
  synack.ack = 101;
  ack.tcp_flags = ctrack::kAck;
  ack.seq = 101;
  ack.ack = 501;
  ctrack::CtResult r;
  uint64_t now = mono_ns();
  for (const ctrack::Packet* q : {&syn, &synack, &ack}) t.process(&q, 1, now, true, &r);
}

bool g_json = false;

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  uint32_t conns = 200000, churn = 1000000;
  dp::OffloadConfig oc;
  oc.provider = "emulated";
  oc.max_in_flight = 4096;
  oc.insert_rate = 1000000;
  oc.latency_us = 50;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto num = [&](uint32_t* v) {
      if (i + 1 >= argc) {
        fprintf(stderr, "offload-bench: %s needs a number\n", a.c_str());
        exit(2);
      }
      char* end;
      unsigned long x = strtoul(argv[++i], &end, 10);
      if (*end || x == 0) {
        fprintf(stderr, "offload-bench: %s: '%s' is not a positive number\n", a.c_str(), argv[i]);
        exit(2);
      }
      *v = static_cast<uint32_t>(x);
    };
    if (a == "--json") g_json = true;
    else if (a == "--conns") num(&conns);
    else if (a == "--churn") num(&churn);
    else if (a == "--in-flight") num(&oc.max_in_flight);
    else if (a == "--insert-rate") num(&oc.insert_rate);
    else if (a == "--latency-us") num(&oc.latency_us);
    else if (a == "--nic" && i + 1 < argc) {
      oc.nic = argv[++i];
      if (!dp::find_nic_profile(oc.nic)) {
        fprintf(stderr, "offload-bench: --nic '%s': no such NIC profile\n", oc.nic.c_str());
        return 2;
      }
    }
    else {
      fprintf(stderr,
              "usage: offload-bench [--json] [--conns N] [--churn N] [--in-flight N] [--insert-rate OPS] [--nic PROFILE] "
              "[--latency-us US]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  std::string prefix = "offload-bench-" + std::to_string(getpid());
  const char* eal[] = {"offload-bench", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--no-telemetry",
                       "-l", "0,1", "--log-level", "*:error", "--file-prefix", prefix.c_str(),
                       "--vdev=net_null0", "--vdev=net_null1"};
  if (rte_eal_init(sizeof eal / sizeof eal[0], const_cast<char**>(eal)) < 0) {
    fprintf(stderr, "offload-bench: rte_eal_init failed\n");
    return 1;
  }

  {  // rate
    oc.table_size = 2 * conns;
    Rig r(oc, 2 * conns);
    auto t0 = Clock::now();
    for (uint32_t x = 0; x < conns; x++) {
      open_conn(*r.ct, x);
      if (x % 256 == 0) r.control();
    }
    while (r.stat("offloads") < conns && Clock::now() - t0 < std::chrono::seconds(120)) r.control();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t done = r.stat("offloads");
    const bool aso = r.stat("conntrack_aso") != 0;
    // A connection with a conntrack object takes 4 operations (object,
    // direction, two rules), one by rules 2 (a NIC Rx domain offloads a
    // connection across two ports by rules even under aso).
    const double n_aso = r.stat("offloads_aso"), n_flows = r.stat("offloads_flows");
    const double ops = n_aso + n_flows > 0 ? (4 * n_aso + 2 * n_flows) / (n_aso + n_flows) : 2;
    double rate = done / s, ceiling = oc.insert_rate / ops;
    unsigned long long ct_max = r.stat("ct_ops_outstanding_max"), ct_limit = r.stat("ct_ops_limit"),
                       wqes = r.off->model()->ct_wqes_max();
    if (g_json)
      printf("{\"bench\": \"offload_rate\", \"provider\": \"rte_flow+model\", \"nic\": \"%s\", \"engine\": \"%s\", "
             "\"conntrack\": \"%s\", "
             "\"transfer\": %s, \"offloads_aso\": %.0f, \"conns\": %u, \"offloaded\": %llu, \"offloads_per_s\": %.0f, "
             "\"nic_ceiling_per_s\": %.0f, \"ratio_to_ceiling\": %.3f, \"max_in_flight\": %u, "
             "\"max_in_flight_seen\": %llu, \"ct_ops_outstanding_max\": %llu, \"ct_ops_limit\": %llu, "
             "\"nic_ct_queue_max\": %llu, \"nic_ct_queue_depth\": 1024}\n",
             oc.nic.c_str(), r.stat("engine_sws") ? "sws" : "hws", aso ? "aso" : "flows",
             r.stat("domain_transfer") ? "true" : "false", n_aso, conns,
             (unsigned long long)done, rate, ceiling, rate / ceiling, oc.max_in_flight,
             (unsigned long long)r.max_in_flight_seen, ct_max, ct_limit, wqes);
    else
      printf("offload rate (%s, %s): %llu of %u connections in %.2f s = %.0f offloads/s (NIC ceiling %.0f/s, ratio "
             "%.3f); in flight at most %llu (bound %u); conntrack operations out at most %llu (limit %llu, the "
             "NIC's queue saw %llu of 1024)\n",
             oc.nic.c_str(), aso ? "aso" : "flows", (unsigned long long)done, conns, s, rate, ceiling, rate / ceiling,
             (unsigned long long)r.max_in_flight_seen, oc.max_in_flight, ct_max, ct_limit, wqes);
  }

  {  // churn
    const uint32_t kBatch = 10000;
    oc.table_size = 4 * kBatch;
    Rig r(oc, 4 * kBatch);
    uint64_t base_rules = r.off->model()->flows_in_use();
    auto t0 = Clock::now();
    for (uint32_t done = 0; done < churn; done += kBatch) {
      for (uint32_t x = 0; x < kBatch; x++) {
        open_conn(*r.ct, done + x);
        if (x % 256 == 0) r.control();
      }
      while (r.stat("pending") + r.stat("in_flight") > 0) r.control();
      r.ct->flush();
      while (r.stat("jobs_in_use") > 0) r.control();
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    dp::Mlx5Model* nic = r.off->model();
    unsigned long long ct_max = r.stat("ct_ops_outstanding_max"), wqes = nic->ct_wqes_max(),
                       failed = 0;
    for (const auto& [k, v] : r.off->stats().counters)
      if (k.rfind("failed_", 0) == 0) failed += v;
    unsigned long long leaked_jobs = r.stat("jobs_in_use"), leaked_exact = nic->flows_in_use() - base_rules,
                       leaked_ct = nic->ct_in_use(), leaked_rules = 0,
                       leaked_flag = r.ct->stats().offloaded, offloads = r.stat("offloads"),
                       removed = r.stat("removed"), retries = r.stat("retries");
    // And after the flush, nothing at all: no rule, object, template or table.
    r.stop_worker();
    if (dp::Status st = r.off->flush(); !st) fprintf(stderr, "offload-bench: flush: %s\n", st.message().c_str());
    leaked_rules = nic->flows_in_use() + nic->ct_in_use() + nic->templates_in_use();
    if (g_json)
      printf("{\"bench\": \"offload_churn\", \"provider\": \"rte_flow+model\", \"conns\": %u, \"offloads\": %llu, "
             "\"removed\": %llu, \"cycles_per_s\": %.0f, \"leaked_jobs\": %llu, \"leaked_nic_entries\": %llu, "
             "\"leaked_ct_contexts\": %llu, \"left_after_flush\": %llu, \"leaked_offloaded_flags\": %llu, "
             "\"model_refusals\": %llu, \"retries\": %llu, \"failed\": %llu, \"ct_ops_outstanding_max\": %llu, \"nic_ct_queue_max\": %llu, "
             "\"nic\": \"%s\"}\n",
             churn, offloads, removed, offloads / s, leaked_jobs, leaked_exact, leaked_ct, leaked_rules, leaked_flag,
             static_cast<unsigned long long>(nic->refusals()), retries, failed, ct_max, wqes, oc.nic.c_str());
    else
      printf("churn: %u connections, %llu offloaded and %llu removed in %.1f s (%.0f/s); left behind: jobs %llu, "
             "NIC entries %llu, ct contexts %llu, after flush %lld, offloaded flags %llu; retried %llu, failed %llu; "
             "conntrack "
             "operations out at most %llu (NIC queue %llu of 1024)\n",
             churn, offloads, removed, s, offloads / s, leaked_jobs, leaked_exact, leaked_ct,
             static_cast<long long>(leaked_rules), leaked_flag, retries, failed, ct_max, wqes);
  }
  rte_eal_cleanup();
  return 0;
}
