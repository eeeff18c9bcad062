// `dataplane --hw-check PCI|model [--nic PROFILE]`: what scripts/hw-check
// runs on a machine with an mlx5 port, and what CI runs against the mlx5
// 22.11 model, once per NIC profile (nic_model.h).
//   1. probe (rte_flow_info_get) and configure every port (rte_flow_configure
//      between configure and start, proxy first); the provider picks the
//      domain from the ports and the conntrack strategy from what they take;
//   2. TCP connections made through ctrack and offloaded through the real
//      provider: a CONNTRACK object and a rule per direction (aso), or a
//      rule per direction that leaves SYN, FIN and RST to software (flows);
//      with two ports one across them and one that turns back on its port;
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

int hw_check_run(const std::string& target, bool model, const std::string& profile);

int hw_check(const std::string& target, bool no_huge, const std::string& nic) {
  const bool model = target == "model";
  std::vector<std::string> profiles;
  if (model) {
    if (!nic.empty() && !find_nic_profile(nic)) {
      std::string all;
      for (const auto& p : nic_profiles()) all += std::string(all.empty() ? "" : ", ") + p.name;
      fprintf(stderr, "hw-check: --nic '%s': no such NIC profile (%s)\n", nic.c_str(), all.c_str());
      return 2;
    }
    for (const auto& p : nic_profiles())
      if (nic.empty() || nic == p.name) profiles.push_back(p.name);
  } else {
    profiles.push_back("");
  }
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
  int rc = 0;
  std::vector<std::string> summary;
  for (const auto& prof : profiles) {
    if (model) printf("hw-check: --- NIC profile %s: %s\n", prof.c_str(), find_nic_profile(prof)->what);
    int r = hw_check_run(target, model, prof);  // everything DPDK-backed is gone before the cleanup
    rc |= r;
    if (model) summary.push_back(prof + ": " + (r ? "FAIL" : "PASS"));
  }
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) rte_eth_dev_close(p);
  rte_eal_cleanup();
  for (const auto& l : summary) printf("hw-check: %s\n", l.c_str());
  if (rc == 0) printf("hw-check: PASS\n");
  return rc;
}

int hw_check_run(const std::string& target, bool model, const std::string& profile) {
  std::vector<uint16_t> ports;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) ports.push_back(p);
  if (ports.empty()) return fail("no ethdev for " + target + " (is it bound to mlx5_core?)");
  if (!model) ports = {ports.front()};  // the PF: a hairpin connection on one port is enough

  OffloadConfig oc;
  oc.provider = model ? "emulated" : "rte_flow";
  if (model) oc.nic = profile;
  oc.table_size = 1024;
  oc.max_in_flight = 64;
  oc.age_s = 30;
  auto off = make_offload_provider(oc, 1);
  if (!off) return fail(off.message());
  OffloadProvider& o = *off.value();
  static rte_mempool* pool = rte_pktmbuf_pool_create("hwcheck", 4095, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
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
    - {priority: 110, match: "in_port=inside,ip_dst=10.99.0.3,ct_state=+trk+new", actions: "ct(commit),output:inside"}
    - {priority: 110, match: "in_port=inside,ip_dst=10.99.0.3,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 110, match: "in_port=inside,ip_src=10.99.0.3,ct_state=+trk+est", actions: "output:inside"}
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

  // 2. TCP connections through ctrack, then offloaded: across the two
  // ports, and (two ports) one that turns back on the port it came in on.
  struct C {
    const char *cli, *srv;
    uint16_t cport, sport, in, out;
  };
  std::vector<C> conns = {{"10.99.0.1", "10.99.0.2", 40000, 80, 0, static_cast<uint16_t>(ports.size() > 1 ? 1 : 0)}};
  if (ports.size() > 1) conns.push_back({"10.99.0.1", "10.99.0.3", 40001, 8080, 0, 0});
  auto tcp = [&](const C& c, bool fwd, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t len) {
    ctrack::FrameSpec s;
    s.proto = IPPROTO_TCP;
    s.src = fwd ? c.cli : c.srv;
    s.dst = fwd ? c.srv : c.cli;
    s.sport = fwd ? c.cport : c.sport;
    s.dport = fwd ? c.sport : c.cport;
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
  for (const C& c : conns) {
    to_ct(tcp(c, true, ctrack::kSyn, 100, 0, 0), c.in);
    to_ct(tcp(c, false, ctrack::kSyn | ctrack::kAck, 500, 101, 0), c.out);
    to_ct(tcp(c, true, ctrack::kAck, 101, 501, 0), c.in);
  }
  uint64_t deadline = mono_ns() + 5'000'000'000ull;
  while (mono_ns() < deadline && o.stats().get("installed") < conns.size()) {
    control();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  OffloadStats st = o.stats();
  for (const auto& [k, v] : st.notes) step(k + " " + v);
  int rc = 0;
  if (st.get("installed") != conns.size()) {
    printf("hw-check: provider counters:");
    for (const auto& [k, v] : st.counters) printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
    printf("\n");
    rc = fail("offloaded " + std::to_string(st.get("installed")) + " of " + std::to_string(conns.size()) +
              " connections (see failed_* and the log above)");
  } else {
    step(std::to_string(conns.size()) + " TCP connection(s) offloaded: " + std::to_string(st.get("offloads_aso")) +
         " with a CONNTRACK object, " + std::to_string(st.get("offloads_flows")) +
         " by exact rules (SYN/FIN/RST to software), a rule per direction each");
  }

  // 3. Packets through the NIC (model), counters read back.
  if (rc == 0 && nic) {
    // The NIC forwards a packet itself (the e-switch: out its port), or, in
    // a NIC Rx domain, hands it to software marked with the port to send it
    // to (the tracker and the rules already ran in the NIC).
    const bool transfer = st.get("domain_transfer") != 0;
    auto by_nic = [&](PacketIn& pk, uint16_t to) {
      int16_t r = nic->rx(0, pk, mono_ns());
      if (transfer) return r == static_cast<int16_t>(to);
      return r == kNicMiss && pk.has_mark && pk.mark == (HwMarkTable::kTag | to);
    };
    int forwarded = 0;
    for (const C& c : conns) {
      uint32_t seq = 101, peer = 501;
      for (int i = 0; i < 10; i++) {
        auto d = tcp(c, true, ctrack::kAck, seq, peer, 100);
        PacketIn pin{d.data(), static_cast<uint32_t>(d.size()), static_cast<uint32_t>(d.size()), c.in, false, 0};
        forwarded += by_nic(pin, c.out);
        seq += 100;
        auto a = tcp(c, false, ctrack::kAck, peer, seq, 0);
        PacketIn pa{a.data(), static_cast<uint32_t>(a.size()), static_cast<uint32_t>(a.size()), c.out, false, 0};
        forwarded += by_nic(pa, c.in);
      }
    }
    const int want = 20 * static_cast<int>(conns.size());
    if (forwarded != want)
      rc = fail("the NIC forwarded " + std::to_string(forwarded) + " of " + std::to_string(want) + " packets");
    deadline = mono_ns() + 3'000'000'000ull;
    uint64_t least = 0;
    while (rc == 0 && mono_ns() < deadline) {
      control();
      least = UINT64_MAX;
      ct.value()->for_each(mono_ns(), [&](const ctrack::ConnInfo& ci) {
        least = std::min<uint64_t>(least, ci.packets[0] + ci.packets[1]);
      });
      if (least >= 23) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (rc == 0 && least < 23)
      rc = fail("counters not folded back: a connection in ctrack has " + std::to_string(least) + " packets");
    if (rc == 0)
      step(std::to_string(want) + (transfer ? " packets forwarded by the NIC" : " packets classified, tracked and marked with their output port by the NIC") + "; counters read back (each connection shows >= " +
           std::to_string(least) + " in ctrack)");
  } else if (rc == 0) {
    step("the data path was not checked: no traffic sent (attach a peer and run the printed testpmd commands "
         "to pass packets by hand)");
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
  delete marks.load();
  if (nic && nic->refusals()) printf("hw-check: the model refused %llu call(s); last: %s\n",
                                     static_cast<unsigned long long>(nic->refusals()), nic->last_error().c_str());
  return rc;
}

}  // namespace dp
