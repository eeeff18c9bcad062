// `dataplane --hw-check PCI|model`: what scripts/hw-check runs on a machine
// with an mlx5 port, and what CI runs against the mlx5 22.11 model.
//   1. probe (rte_flow_info_get) and configure every port (rte_flow_configure
//      between configure and start, proxy first);
//   2. one TCP connection, made through ctrack, offloaded through the real
//      provider: CONNTRACK object + one rule per direction;
//   3. (model) packets of that connection steered by the NIC, its counters
//      read back and folded into ctrack;
//   4. flush: nothing left (rules, conntrack objects, templates, tables).
// Prints the testpmd commands of what it made, for reproducing by hand.
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
#include <unistd.h>
#include <vector>

#include "ctrack/frame.h"
#include "dataplane/config.h"
#include "dataplane/nic_model.h"
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

void step(const std::string& m) { printf("hw-check: %s\n", m.c_str()); }

}  // namespace

int hw_check_run(const std::string& target, bool model);

int hw_check(const std::string& target, bool no_huge) {
  const bool model = target == "model";
  bool vdev = !model && target.rfind("net_", 0) == 0;  // a vdev: only to see the probe refuse it
  // A prefix of its own: two checks (or a daemon) may run at once.
  std::vector<std::string> args = {"dataplane-hw-check", "-l", "0", "--file-prefix",
                                   "hwcheck-" + std::to_string(getpid())};
  if (model) {
    args.insert(args.end(), {"--vdev", "net_null0", "--vdev", "net_null1", "--no-pci"});
  } else if (vdev) {
    args.insert(args.end(), {"--vdev", target, "--no-pci"});
  } else {
    std::string dev = target.find("dv_flow_en") != std::string::npos ? target : target + ",dv_flow_en=2";
    args.insert(args.end(), {"-a", dev});
  }
  if (no_huge || model) args.insert(args.end(), {"--no-huge", "-m", "512"});
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  if (rte_eal_init(static_cast<int>(av.size()), av.data()) < 0)
    return fail("EAL init for " + target + ": " + rte_strerror(rte_errno));
  int rc = hw_check_run(target, model);  // everything DPDK-backed is gone before the cleanup
  rte_eal_cleanup();
  if (rc == 0) printf("hw-check: PASS\n");
  return rc;
}

int hw_check_run(const std::string& target, bool model) {
  std::vector<uint16_t> ports;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) ports.push_back(p);
  if (ports.empty()) return fail("no ethdev for " + target + " (is it bound to mlx5_core?)");
  if (!model) ports = {ports.front()};  // the PF: a hairpin connection on one port is enough

  OffloadConfig oc;
  oc.provider = model ? "emulated" : "rte_flow";
  oc.table_size = 1024;
  oc.max_in_flight = 64;
  oc.age_s = 30;
  auto off = make_offload_provider(oc, 1);
  if (!off) return fail(off.message());
  OffloadProvider& o = *off.value();
  rte_mempool* pool = rte_pktmbuf_pool_create("hwcheck", 4095, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (!pool) return fail("mbuf pool");
  // 1. Probe, configure (rte_flow_configure before start), start proxy first.
  if (Status s = start_ports(o, ports, pool); !s) return fail(s.message());
  const FlowApi& api = o.api();
  step(std::string("rte_flow calls go to ") + api.name);
  for (uint16_t port : ports) step("port " + std::to_string(port) + ": " + probe_rte_flow(api, port, true).str());
  step("configured and started " + std::to_string(ports.size()) + " port(s)");

  std::string yaml = ports.size() > 1 ? R"Y(
ports:
  - {name: inside, devargs: "x"}
  - {name: outside, devargs: "y"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new", actions: "ct(commit),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
)Y"
                                      : R"Y(
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
  OffloadHost host{ports, {ct.value().get()}, &marks};
  if (Status s = o.start(host); !s) return fail(s.message());
  o.on_pipeline(*pl.value());
  Mlx5Model* nic = o.nic();
  auto control = [&] {
    ctrack::Event ev[16];
    uint32_t n;
    while ((n = ct.value()->poll_events(ev, 16)) > 0) o.on_ct_events(0, ev, n, mono_ns());
    o.poll(mono_ns());
    if (nic) nic->service(0, mono_ns());  // the worker's part
  };

  // 2. One TCP connection through ctrack, then offloaded.
  const uint16_t in = 0, out = ports.size() > 1 ? 1 : 0;
  auto tcp = [&](bool fwd, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t len) {
    ctrack::FrameSpec s;
    s.proto = IPPROTO_TCP;
    s.src = fwd ? "10.99.0.1" : "10.99.0.2";
    s.dst = fwd ? "10.99.0.2" : "10.99.0.1";
    s.sport = fwd ? 40000 : 80;
    s.dport = fwd ? 80 : 40000;
    s.tcp_flags = flags;
    s.seq = seq;
    s.ack = ack;
    s.win = 8192;
    s.payload = len;
    return ctrack::build_frame(s);
  };
  auto to_ct = [&](const std::vector<uint8_t>& f, uint16_t port) {
    ctrack::Parsed pp;
    if (ctrack::parse_packet(f.data(), static_cast<uint32_t>(f.size()), 0, &pp) != ctrack::Drop::kNone) return;
    pp.ct.in_port = static_cast<uint8_t>(port);
    const ctrack::Packet* q = &pp.ct;
    ctrack::CtResult r;
    ct.value()->process(&q, 1, mono_ns(), true, &r);
  };
  to_ct(tcp(true, ctrack::kSyn, 100, 0, 0), in);
  to_ct(tcp(false, ctrack::kSyn | ctrack::kAck, 500, 101, 0), out);
  to_ct(tcp(true, ctrack::kAck, 101, 501, 0), in);
  uint64_t deadline = mono_ns() + 5'000'000'000ull;
  while (mono_ns() < deadline && o.stats().get("installed") == 0) {
    control();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  OffloadStats st = o.stats();
  int rc = 0;
  if (st.get("installed") != 1) {
    printf("hw-check: provider counters:");
    for (const auto& [k, v] : st.counters) printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
    printf("\n");
    rc = fail("the connection was not offloaded (see failed_* and the log above)");
  } else {
    step("TCP connection offloaded: CONNTRACK object + a rule per direction");
  }

  // 3. Packets through the NIC (model), counters read back.
  if (rc == 0 && nic) {
    int forwarded = 0;
    uint32_t seq = 101, peer = 501;
    for (int i = 0; i < 10; i++) {
      auto d = tcp(true, ctrack::kAck, seq, peer, 100);
      PacketIn pin{d.data(), static_cast<uint32_t>(d.size()), static_cast<uint32_t>(d.size()), in, false, 0};
      forwarded += nic->rx(0, pin, mono_ns()) == out;
      seq += 100;
      auto a = tcp(false, ctrack::kAck, peer, seq, 0);
      PacketIn pa{a.data(), static_cast<uint32_t>(a.size()), static_cast<uint32_t>(a.size()), out, false, 0};
      forwarded += nic->rx(0, pa, mono_ns()) == in;
    }
    if (forwarded != 20) rc = fail("the NIC forwarded " + std::to_string(forwarded) + " of 20 packets");
    deadline = mono_ns() + 3'000'000'000ull;
    uint64_t pk = 0;
    while (rc == 0 && mono_ns() < deadline) {
      control();
      pk = 0;
      ct.value()->for_each(mono_ns(), [&](const ctrack::ConnInfo& c) { pk = c.packets[0] + c.packets[1]; });
      if (pk >= 23) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (rc == 0 && pk < 23) rc = fail("counters not folded back: ctrack has " + std::to_string(pk) + " packets");
    if (rc == 0) step("20 packets forwarded by the NIC; counters read back (ctrack shows " + std::to_string(pk) + ")");
  } else if (rc == 0) {
    step("no traffic sent (attach a peer and run the printed testpmd commands to pass packets by hand)");
  }
  printf("%s", o.testpmd_commands().c_str());

  // 4. Flush leaves nothing.
  if (Status s = o.flush(); !s) {
    rc = fail("flush: " + s.message());
  } else if (nic && (nic->flows_in_use() || nic->ct_in_use() || nic->templates_in_use())) {
    rc = fail("after flush the NIC still holds " + std::to_string(nic->flows_in_use()) + " rules, " +
              std::to_string(nic->ct_in_use()) + " conntrack objects, " + std::to_string(nic->templates_in_use()) +
              " templates/tables");
  } else {
    step("flush left nothing behind");
  }
  stop_ports(o, ports);
  for (uint16_t port : ports) rte_eth_dev_close(port);
  delete marks.load();
  if (nic && nic->refusals()) printf("hw-check: the model refused %llu call(s); last: %s\n",
                                     static_cast<unsigned long long>(nic->refusals()), nic->last_error().c_str());
  return rc;
}

}  // namespace dp
