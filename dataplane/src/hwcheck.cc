// `dataplane --hw-check PCI`: what scripts/hw-check runs on a machine with an
// mlx5 port. Probes the port's rte_flow capabilities, then a self-test
// through the real rte_flow provider: one TCP connection (made through
// ctrack) offloaded, its counters read back, removed, and everything flushed.
// Prints the testpmd commands of what it made, for debugging by hand.
#include <netinet/in.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/config.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"
#include "sdn/clock.h"

namespace dp {

namespace {

using sdn::mono_ns;

int fail(const std::string& m) {
  fprintf(stderr, "hw-check: FAIL: %s\n", m.c_str());
  return 1;
}

}  // namespace

int hw_check(const std::string& pci, bool no_huge) {
  bool vdev = pci.rfind("net_", 0) == 0;  // a vdev: only to see the probe refuse it
  std::string dev = vdev || pci.find("dv_flow_en") != std::string::npos ? pci : pci + ",dv_flow_en=2";
  std::vector<std::string> args = {"dataplane-hw-check", "-l", "0", "--file-prefix", "hwcheck"};
  if (vdev) args.insert(args.end(), {"--vdev", dev, "--no-pci"});
  else args.insert(args.end(), {"-a", dev});
  if (no_huge) args.insert(args.end(), {"--no-huge", "-m", "512"});
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  if (rte_eal_init(static_cast<int>(av.size()), av.data()) < 0)
    return fail(std::string("EAL init with ") + dev + ": " + rte_strerror(rte_errno));
  uint16_t port = RTE_MAX_ETHPORTS;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) {
    port = p;
    break;
  }
  if (port == RTE_MAX_ETHPORTS) return fail("no ethdev for " + dev + " (is it bound to mlx5_core?)");
  rte_eth_conf conf{};
  if (int rc = rte_eth_dev_configure(port, 1, 1, &conf); rc != 0) return fail("configure: " + std::string(strerror(-rc)));

  HwCaps caps = probe_rte_flow(port);
  printf("hw-check: port %u (%s): %s\n", port, dev.c_str(), caps.str().c_str());

  OffloadConfig oc;
  oc.provider = "rte_flow";
  oc.table_size = 1024;
  oc.max_in_flight = 64;
  auto off = make_offload_provider(oc, 1);
  if (!off) return fail(off.message());
  if (Status s = off.value()->configure_port(port); !s) return fail(s.message());
  rte_mempool* pool = rte_pktmbuf_pool_create("hwcheck", 4095, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (!pool) return fail("mbuf pool");
  if (rte_eth_rx_queue_setup(port, 0, 512, SOCKET_ID_ANY, nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(port, 0, 512, SOCKET_ID_ANY, nullptr) != 0)
    return fail("queue setup");
  if (int rc = rte_eth_dev_start(port); rc != 0) return fail("start: " + std::string(strerror(-rc)));

  // One port both ways: a hairpin connection is enough to exercise the API.
  const char* yaml = R"Y(
ports:
  - {name: p0, devargs: "x"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
  1:
    - {priority: 100, match: "ct_state=+trk+new", actions: "ct(commit),output:p0"}
    - {priority: 100, match: "ct_state=+trk+est", actions: "output:p0"}
)Y";
  auto cfg = parse_config(yaml, "hw-check");
  if (!cfg) return fail(cfg.message());
  auto pl = Pipeline::build(cfg->rules, 1);
  if (!pl) return fail(pl.message());
  ctrack::Config cc;
  cc.capacity = 1024;
  cc.event_ring = 1024;
  auto ct = ctrack::Tracker::create(cc);
  if (!ct) return fail(ct.message());
  std::atomic<const HwMarkTable*> marks{nullptr};
  OffloadHost host{{port}, {ct.value().get()}, &marks};
  OffloadProvider& o = *off.value();
  if (Status s = o.start(host); !s) return fail(s.message());
  o.poll(mono_ns());
  o.on_pipeline(*pl.value());

  ctrack::Packet syn{};
  syn.key.family = 4;
  syn.key.proto = IPPROTO_TCP;
  syn.key.src[0] = 10, syn.key.src[1] = 99, syn.key.src[3] = 1;
  syn.key.dst[0] = 10, syn.key.dst[1] = 99, syn.key.dst[3] = 2;
  syn.key.sport = 40000;
  syn.key.dport = 80;
  syn.tcp_flags = ctrack::kSyn;
  syn.seq = 100;
  syn.win = 8192;
  syn.l3_len = 40;
  ctrack::Packet sa = syn, ack = syn;
  sa.key = syn.key.reversed();
  sa.tcp_flags = ctrack::kSyn | ctrack::kAck;
  sa.seq = 500;
  sa.ack = 101;
  ack.tcp_flags = ctrack::kAck;
  ack.seq = 101;
  ack.ack = 501;
  ctrack::CtResult r;
  for (const ctrack::Packet* q : {&syn, &sa, &ack}) ct.value()->process(&q, 1, mono_ns(), true, &r);
  ctrack::Event ev[16];
  uint64_t deadline = mono_ns() + 5'000'000'000ull;
  while (mono_ns() < deadline && o.stats().get("installed") == 0 && o.stats().get("failed_table_full") == 0) {
    uint32_t n = ct.value()->poll_events(ev, 16);
    if (n) o.on_ct_events(0, ev, n, mono_ns());
    o.poll(mono_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  OffloadStats st = o.stats();
  printf("hw-check: provider counters:");
  for (const auto& [k, v] : st.counters) printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
  printf("\n%s", o.testpmd_commands().c_str());
  int rc = 0;
  if (st.get("installed") != 1) {
    rc = fail("the connection was not offloaded (see failed_* above)");
  } else {
    printf("hw-check: connection offloaded; counters read back (no traffic sent: attach a peer and run the\n"
           "          printed testpmd commands to pass packets by hand)\n");
  }
  if (Status s = o.flush(); !s) rc = fail("flush: " + s.message());
  else printf("hw-check: flush left nothing behind\n");
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_eal_cleanup();
  if (rc == 0) printf("hw-check: PASS\n");
  return rc;
}

}  // namespace dp
