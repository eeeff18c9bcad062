// `dataplane --hw-check PCI|model [--nic PROFILE] [--peer DEV]`: what
// scripts/hw-check runs on a machine with an mlx5 port, and what CI runs
// against the mlx5 22.11 model, once per NIC profile (nic_model.h).
//   1. probe (rte_flow_info_get) and configure every port (rte_flow_configure
//      between configure and start, proxy first); the provider picks the
//      domain from the ports and the conntrack strategy from what they take;
//   2. TCP connections made through ctrack and offloaded through the real
//      provider: a CONNTRACK object and a rule per direction (aso), or a
//      rule per direction that leaves SYN, FIN and RST to software (flows);
//      with two ports one across them and one that turns back on its port;
//   3. with a peer (a port cabled to the checked one: --peer DEV on a
//      machine, a ring "cable" per port for the model): the connections are
//      made by frames from the peer, which software forwards, then data
//      segments each way must come back to the peer with none of them
//      forwarded by software, and the NIC's counters, read back and folded
//      into ctrack, must count them. Without a peer it says so;
//   4. flush: nothing left (rules, conntrack objects, templates, tables).
// With two ports each cabled to a peer, steps 2-4 run again with the
// overlay+NAT rule set (a VM port, an underlay port: VXLAN and source NAT).
// Prints the testpmd commands of what it made, for reproducing by hand.
#include <netinet/in.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

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
#include "features/overlay/mbuf.h"
#include "sdn/clock.h"
#include "testbed/process.h"

namespace dp {

namespace {

using sdn::mono_ns;

int fail(const std::string& m) {
  fprintf(stderr, "hw-check: FAIL: %s\n", m.c_str());
  return 1;
}

void step(const std::string& m) { printf("hw-check: %s\n", m.c_str()); }

// The overlay+NAT rule set (configs/dataplane/overlay-nat.yaml's): VMs on
// `inside`, the underlay on `outside`, VNI 100 to the remote VTEP 192.0.2.2,
// source NAT to 203.0.113.7.
constexpr const char* kOverlayYaml = R"Y(
ports:
  - {name: inside, devargs: "x"}
  - {name: outside, devargs: "y"}
overlay:
  vxlan:
    local: 192.0.2.1
    port: outside
    mac: "02:00:00:00:01:01"
    vnis: [100]
    remotes:
      - {ip: 192.0.2.2, mac: "02:00:00:00:02:02"}
tables:
  0:
    - {priority: 50, match: "in_port=inside,eth_type=ipv4", actions: "ct(zone=1,table=1)"}
    - {priority: 50, match: "in_port=outside,tun_id=100,eth_type=ipv4", actions: "ct(zone=1,table=1)"}
    - {priority: 0,  match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new",
       actions: "ct(commit,zone=1,nat(src=203.0.113.7)),encap(vxlan,vni=100,remote=192.0.2.2),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "encap(vxlan,vni=100,remote=192.0.2.2),output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 0,   match: "", actions: "drop"}
)Y";

}  // namespace

struct Cabling {
  std::vector<uint16_t> dut;   // the ports checked
  std::vector<uint16_t> peer;  // peer[i] is cabled to dut[i]; empty: no data path
  std::string peer_what;       // what the peer is, for the output
};

int hw_check_run(const std::string& target, bool model, const std::string& profile, const Cabling& cab,
                 bool overlay = false);

// A cable between two ports of this process: a ring each way.
Status ring_cable(const std::string& name, uint16_t* a, uint16_t* b) {
  rte_ring* ab = rte_ring_create((name + "ab").c_str(), 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* ba = rte_ring_create((name + "ba").c_str(), 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!ab || !ba) return Status::error("ring for " + name + ": " + rte_strerror(rte_errno));
  int pa = rte_eth_from_rings((name + "a").c_str(), &ba, 1, &ab, 1, SOCKET_ID_ANY);
  int pb = rte_eth_from_rings((name + "b").c_str(), &ab, 1, &ba, 1, SOCKET_ID_ANY);
  if (pa < 0 || pb < 0) return Status::error("ring port for " + name + ": " + rte_strerror(rte_errno));
  *a = static_cast<uint16_t>(pa);
  *b = static_cast<uint16_t>(pb);
  return {};
}

// The port probed for a device argument ("0000:03:00.1,x=y", "net_af_packet0,iface=eth2").
int port_of(const std::string& dev) {
  std::string name = dev.substr(0, dev.find(','));
  uint16_t p;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &p) == 0) return p;
  RTE_ETH_FOREACH_DEV(p) {
    char n[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(p, n) == 0 && std::string(n).rfind(name, 0) == 0) return p;
  }
  return -1;
}

int hw_check(const std::string& target, bool no_huge, const std::string& nic, const std::string& peer) {
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
  if (model && !peer.empty()) {
    fprintf(stderr, "hw-check: --peer names a port cabled to a NIC port; the model is cabled by itself\n");
    return 2;
  }
  bool vdev = !model && target.rfind("net_", 0) == 0;  // a vdev: only to see the probe refuse it
  // A prefix of its own: two checks (or a daemon) may run at once.
  std::vector<std::string> args = {"dataplane-hw-check", "-l", "0", "--file-prefix",
                                   "hwcheck-" + std::to_string(getpid())};
  if (model) {
    args.insert(args.end(), {"--no-pci"});  // ring ports, made below
  } else if (vdev) {
    args.insert(args.end(), {"--vdev", target, "--no-pci"});
  } else {
    // Before anything else: the firmware, and with it the engine.
    const std::string fw = pci_firmware(target);
    std::string why;
    const std::string dev = engine_devargs(target, "auto", fw, &why);
    step("firmware " + (fw.empty() ? "unknown (no /sys/bus/pci/devices/" + target.substr(0, target.find(',')) +
                                         "/infiniband/*/fw_ver: not an mlx5 function bound to mlx5_core?)"
                                   : fw) +
         ": " + (firmware_has_hws(fw) ? "hardware steering (HWS) available"
                                      : "no hardware steering (it needs xx.35.1012 or newer): DV software steering; "
                                        "for HWS update the firmware (mlxfwmanager --online -u)"));
    step("probing " + dev + " (" + why + ")");
    int missing = 0;
    for (const BringupFact& f : bringup_facts(dev, "/sys", [](const std::vector<std::string>& argv, std::string* out) {
           auto r = testbed::run_capture(argv, nullptr, std::chrono::seconds(5));
           if (!r.ok()) return -1;
           *out = r->output;
           return r->status;
         })) {
      step(std::string(f.ok ? "" : "MISSING: ") + f.line);
      missing += !f.ok;
    }
    if (missing) step(std::to_string(missing) + " bring-up fact(s) missing: the probe below may fail or the offload stay off");
    args.insert(args.end(), {"-a", dev});
  }
  if (!peer.empty()) {
    if (peer.rfind("net_", 0) == 0) args.insert(args.end(), {"--vdev", peer});
    else args.insert(args.end(), {"-a", peer});
  }
  if (no_huge || model) args.insert(args.end(), {"--no-huge", "-m", "512"});
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  if (rte_eal_init(static_cast<int>(av.size()), av.data()) < 0)
    return fail("EAL init for " + target + ": " + rte_strerror(rte_errno));
  int rc = 0;
  Cabling cab;
  if (model) {
    // The model's two ports are ring ports, each cabled to a peer.
    for (int i = 0; i < 2; i++) {
      uint16_t d, q;
      if (Status s = ring_cable("hwc" + std::to_string(i), &d, &q); !s) return fail(s.message());
      cab.dut.push_back(d);
      cab.peer.push_back(q);
    }
    cab.peer_what = "a ring cable per port";
  } else {
    int pp = peer.empty() ? -1 : port_of(peer);
    if (!peer.empty() && pp < 0) return fail("--peer " + peer + ": no such port after probing");
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p) if (p != pp) {
      cab.dut.push_back(p);  // the PF: a connection turning back on one port is enough
      break;
    }
    if (cab.dut.empty()) return fail("no ethdev for " + target + " (is it bound to mlx5_core?)");
    if (pp >= 0) {
      cab.peer.push_back(static_cast<uint16_t>(pp));
      cab.peer_what = "port " + std::to_string(pp) + " (" + peer + ")";
    }
  }
  std::vector<std::string> summary;
  for (const auto& prof : profiles) {
    if (model) {
      const NicProfile* np = find_nic_profile(prof);
      printf("hw-check: --- NIC profile %s: %s\n", prof.c_str(), np->what);
      step(std::string("firmware ") + np->fw + ": " +
           (np->hws                       ? "hardware steering (HWS) available"
            : firmware_has_hws(np->fw) ? "its version has hardware steering (HWS), its capabilities do not start it"
                                       : "no hardware steering (it needs xx.35.1012 or newer)") +
           "; max_qp_wr " + std::to_string(np->limits.max_qp_wr) + "; conntrack objects per DevX create 2^" +
           std::to_string(np->limits.log_ct_max_alloc) + "; jumbo definers with 9 full dwords (format_select_dw_8_6_ext): " +
           (np->limits.full_dw_jumbo ? "yes" : "no") + " (no card's value read yet for either)");
    }
    int r = hw_check_run(target, model, prof, cab);  // everything DPDK-backed is gone before the cleanup
    rc |= r;
    if (model) summary.push_back(prof + ": " + (r ? "FAIL" : "PASS"));
    // Issue 22: the overlay+NAT rule set (a VM port, an underlay port).
    if (cab.dut.size() > 1 && cab.peer.size() > 1) {
      printf("hw-check: --- overlay + NAT%s\n", model ? (" on " + prof).c_str() : "");
      r = hw_check_run(target, model, prof, cab, true);
      rc |= r;
      if (model) summary.push_back(prof + " overlay+NAT: " + (r ? "FAIL" : "PASS"));
    } else {
      step("overlay + NAT not checked: it needs two ports, each cabled to a peer (the VM's side and the underlay)");
    }
  }
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) rte_eth_dev_close(p);
  rte_eal_cleanup();
  for (const auto& l : summary) printf("hw-check: %s\n", l.c_str());
  if (rc == 0) printf("hw-check: PASS\n");
  return rc;
}

namespace {

// One connection of the check: client and server, ports by index.
struct CheckConn {
  const char *cli, *srv;
  uint16_t cport, sport, in, out;
};

// One run of the check for one NIC (profile), step by step. Stands in for
// the daemon's worker where it must: its own forwarding between the checked
// ports, the peer side sending and receiving.
class HwCheck {
 public:
  HwCheck(bool model, const std::string& profile, const Cabling& cab, bool overlay)
      : model_(model), overlay_(overlay), profile_(profile), cab_(cab) {}
  int run();
  std::string hws_did_not_start() const { return off_ ? off_->hws_did_not_start() : ""; }

 private:
  int setup();                // 1. probe, configure, start; the rules; the provider started
  int handshakes();           // 2. TCP connections through ctrack, then offloaded
  int data_path();            // 3. data segments from the peer, each way, forwarded by the NIC
  int flush_leaves_nothing();  // 4.
  int wait_installed();

  void control();
  std::vector<uint8_t> tcp(const CheckConn& c, bool fwd, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t len) const;
  // overlay: a frame as its peer sends it (the reply in VXLAN to the
  // floating address and the port the SYN was translated to).
  std::vector<uint8_t> frame(const CheckConn& c, bool fwd, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t len) const;
  bool software(rte_mbuf* m, PacketIn& pk, int* out);
  void forward_overlay(rte_mbuf* m, PacketIn& pk);
  void learn(const uint8_t* d, uint32_t len);
  void to_ct(const std::vector<uint8_t>& f, uint16_t port);
  int setup_peers();
  bool send(uint16_t port, const std::vector<uint8_t>& f);
  int which(const uint8_t* d, uint32_t len, bool* fwd) const;
  void forward();
  void peer_rx();
  bool through(size_t c, bool fwd, const std::vector<uint8_t>& f);

  const bool model_, overlay_;
  const std::string profile_;
  const Cabling& cab_;
  const std::vector<uint16_t>& ports_ = cab_.dut;
  std::unique_ptr<OffloadProvider> off_;
  rte_mempool* pool_ = nullptr;
  std::unique_ptr<Pipeline> pl_;
  std::unique_ptr<ctrack::Tracker> ct_;
  std::atomic<const HwMarkTable*> marks_{nullptr};
  Mlx5Model* nic_ = nullptr;
  std::vector<CheckConn> conns_;
  // What handled the frames that reached the checked ports.
  struct Seen {
    uint64_t nic = 0, marked = 0, software = 0, dropped = 0;
  } seen_;
  std::vector<uint64_t> got_;  // frames back at the peer, per connection and direction
  // overlay: software's own pipeline for what the NIC leaves to it, and each
  // connection's translated port as the remote VTEP saw it.
  WorkerStats wst_;
  std::unique_ptr<Datapath> dp_;
  std::vector<uint16_t> xport_;
};

int HwCheck::run() {
  int rc = setup();
  if (rc) return rc;
  rc = handshakes();
  if (rc == 0) rc = wait_installed();
  if (rc == 0 && !cab_.peer.empty()) {
    rc = data_path();
  } else if (rc == 0) {
    step("the data path was not checked: no peer (--peer DEV: a port cabled to " + std::to_string(ports_.front()) +
         "'s; then a connection is sent through and must come back with the NIC's counters, not software, "
         "forwarding it)");
  }
  printf("%s", off_->testpmd_commands().c_str());
  if (int f = flush_leaves_nothing(); f) rc = f;
  stop_ports(*off_, ports_);
  for (uint16_t q : cab_.peer) rte_eth_dev_stop(q);
  delete marks_.load();
  if (nic_ && nic_->refusals()) printf("hw-check: the model refused %llu call(s); last: %s\n",
                                       static_cast<unsigned long long>(nic_->refusals()), nic_->last_error().c_str());
  return rc;
}

int HwCheck::setup() {
  OffloadConfig oc;
  oc.provider = model_ ? "emulated" : "rte_flow";
  if (model_) oc.nic = profile_;
  // The model's rules take effect a millisecond after their call (the
  // default is 50 us): longer than any step here takes, so a check that
  // sent a segment before its rule was in place fails in every build, not
  // only in a fast one.
  if (model_) oc.latency_us = 1000;
  oc.model_self_service = true;  // this thread is the model's worker too (control())
  oc.table_size = 1024;
  oc.max_in_flight = 64;
  oc.age_s = 30;
  auto off = make_offload_provider(oc, 1);
  if (!off) return fail(off.message());
  off_ = std::move(off.value());
  OffloadProvider& o = *off_;
  static rte_mempool* pool = rte_pktmbuf_pool_create("hwcheck", 4095, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (!pool) return fail("mbuf pool");
  pool_ = pool;
  // Probe, configure (rte_flow_configure before start), start proxy first.
  if (Status s = start_ports(o, ports_, pool_); !s) {
    // Not yet a failure where hw_check_run starts again with DV (as the daemon does).
    if (model_ && hws_did_not_start_before().empty() && !o.hws_did_not_start().empty()) {
      step("first start: " + s.message());
      return 1;
    }
    return fail(s.message());
  }
  const FlowApi& api = o.api();
  step(std::string("rte_flow calls go to ") + api.name);
  for (uint16_t port : ports_) step("port " + std::to_string(port) + ": " + probe_rte_flow(api, port, true).str());
  step("configured and started " + std::to_string(ports_.size()) + " port(s)");

  const std::vector<uint16_t>& ports = ports_;
  std::string yaml = overlay_ ? kOverlayYaml : ports.size() > 1 ? R"Y(
ports:
  - {name: inside, devargs: "x"}
  - {name: outside, devargs: "y"}
tables:
  0:
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 50, match: "eth_type=ipv6", actions: "ct(table=1)"}
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
    - {priority: 50, match: "eth_type=ipv6", actions: "ct(table=1)"}
  1:
    - {priority: 100, match: "ct_state=+trk+new", actions: "ct(commit),output:p0"}
    - {priority: 100, match: "ct_state=+trk+est", actions: "output:p0"}
)Y";
  auto cfg = parse_config(yaml, "hw-check");
  if (!cfg) return fail(cfg.message());
  auto pl = Pipeline::build(cfg->rules, 1, &cfg->overlay);
  if (!pl) return fail(pl.message());
  pl_ = std::move(pl.value());
  ctrack::Config cc = Datapath::tracker_config(cfg->ct);
  cc.capacity = 1024;
  cc.event_ring = 1024;
  auto ct = ctrack::Tracker::create(cc);
  if (!ct) return fail(ct.message());
  ct_ = std::move(ct.value());
  if (overlay_) {
    dp_ = std::make_unique<Datapath>(0, ct_.get(), &wst_);
    dp_->set_hw_marks(&marks_);
  }
  OffloadHost host{ports_, {ct_.get()}, &marks_};
  if (Status s = o.start(host); !s) return fail(s.message());
  o.on_pipeline(*pl_);
  nic_ = o.model();
  // Across the two ports, and (two ports) one that turns back on the port
  // it came in on.
  conns_ = {{"10.99.0.1", "10.99.0.2", 40000, 80, 0, static_cast<uint16_t>(ports_.size() > 1 ? 1 : 0)}};
  if (ports_.size() > 1) conns_.push_back({"10.99.0.1", "10.99.0.3", 40001, 8080, 0, 0});
  // DV software steering matches IPv6 5-tuples (HWS in 22.11 cannot,
  // mlx5.rst:163): an IPv6 connection too.
  if (!overlay_ && o.stats().get("engine_sws"))
    conns_.push_back({"fd00:99::1", "fd00:99::2", 40002, 80, 0, static_cast<uint16_t>(ports_.size() > 1 ? 1 : 0)});
  // overlay: two VMs, one port: the second's is translated too.
  if (overlay_) conns_ = {{"10.0.0.1", "198.51.100.20", 40000, 80, 0, 1}, {"10.0.0.3", "198.51.100.20", 40000, 80, 0, 1}};
  xport_.assign(conns_.size(), 0);
  got_.assign(conns_.size() * 2, 0);
  return setup_peers();
}

void HwCheck::control() {
  ctrack::Event ev[16];
  uint32_t n;
  while ((n = ct_->poll_events(ev, 16)) > 0) off_->on_ct_events(0, ev, n, mono_ns());
  off_->poll(mono_ns());
  if (nic_) nic_->service(0, mono_ns());  // the worker's part
}

std::vector<uint8_t> HwCheck::tcp(const CheckConn& c, bool fwd, uint8_t flags, uint32_t seq, uint32_t ack,
                                  uint16_t len) const {
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
}

void HwCheck::to_ct(const std::vector<uint8_t>& f, uint16_t port) {
  ctrack::Parsed pp;
  if (ctrack::parse_packet(f.data(), static_cast<uint32_t>(f.size()), 0, &pp) != ctrack::Drop::kNone) return;
  pp.ct.in_port = static_cast<uint8_t>(port);
  const ctrack::Packet* q = &pp.ct;
  ctrack::CtResult r;
  ct_->process(&q, 1, mono_ns(), true, &r);
}

// The peer side: frames go out a peer port and come back on one.
int HwCheck::setup_peers() {
  for (uint16_t q : cab_.peer) {
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(q, 1, 1, &conf) != 0 ||
        rte_eth_rx_queue_setup(q, 0, 512, SOCKET_ID_ANY, nullptr, pool_) != 0 ||
        rte_eth_tx_queue_setup(q, 0, 512, SOCKET_ID_ANY, nullptr) != 0 || rte_eth_dev_start(q) != 0)
      return fail("peer port " + std::to_string(q) + ": could not be set up");
    rte_eth_promiscuous_enable(q);
  }
  for (uint16_t d : ports_) rte_eth_promiscuous_enable(d);  // the peer's frames carry its MAC, not the port's
  return 0;
}

bool HwCheck::send(uint16_t port, const std::vector<uint8_t>& f) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return false;
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())));
  if (!d) {
    rte_pktmbuf_free(m);
    return false;
  }
  memcpy(d, f.data(), f.size());
  if (rte_eth_tx_burst(port, 0, &m, 1) == 1) return true;
  rte_pktmbuf_free(m);
  return false;
}

// Which connection and direction a frame is (-1: none of ours).
int HwCheck::which(const uint8_t* d, uint32_t len, bool* fwd) const {
  ctrack::Parsed pp;
  if (ctrack::parse_packet(d, len, 0, &pp) != ctrack::Drop::kNone) return -1;
  if (overlay_) {  // in VXLAN: the inner frame; the VM's side: as built
    if (pp.ct.key.proto == IPPROTO_UDP && pp.ct.key.dport == 4789 && len > pp.l4_off + 16u) {
      const uint32_t off = pp.l4_off + 16u;
      if (ctrack::parse_packet(d + off, len - off, 0, &pp) != ctrack::Drop::kNone) return -1;
    }
    for (size_t k = 0; k < conns_.size(); k++) {
      auto f = tcp(conns_[k], true, 0, 0, 0, 0);
      ctrack::Parsed a;
      ctrack::parse_packet(f.data(), static_cast<uint32_t>(f.size()), 0, &a);
      const ctrack::Key& x = pp.ct.key;
      const bool from_vm = x == a.ct.key, to_vm = x == a.ct.key.reversed();
      const bool translated = !from_vm && !to_vm && xport_[k] && x.sport == xport_[k] && x.dport == conns_[k].sport;
      if (from_vm || translated) return *fwd = true, static_cast<int>(k);
      if (to_vm) return *fwd = false, static_cast<int>(k);
    }
    return -1;
  }
  for (size_t k = 0; k < conns_.size(); k++) {
    auto f = tcp(conns_[k], true, 0, 0, 0, 0), r = tcp(conns_[k], false, 0, 0, 0, 0);
    ctrack::Parsed a, b;
    ctrack::parse_packet(f.data(), static_cast<uint32_t>(f.size()), 0, &a);
    ctrack::parse_packet(r.data(), static_cast<uint32_t>(r.size()), 0, &b);
    if (pp.ct.key == a.ct.key) return *fwd = true, static_cast<int>(k);
    if (pp.ct.key == b.ct.key) return *fwd = false, static_cast<int>(k);
  }
  return -1;
}

// The check's own forwarding, standing in for the daemon's worker: each
// frame through the NIC stage (the model; on a NIC that stage already ran,
// and what it forwarded never arrives here), a mark read as the NIC's
// verdict, the rest through ctrack to the connection's other side.
void HwCheck::forward() {
  for (size_t i = 0; i < ports_.size(); i++) {
    rte_mbuf* m[32];
    uint16_t n = rte_eth_rx_burst(ports_[i], 0, m, 32);
    for (uint16_t k = 0; k < n; k++) {
      uint8_t* d = rte_pktmbuf_mtod(m[k], uint8_t*);
      PacketIn pk{d, m[k]->data_len, m[k]->pkt_len, static_cast<uint16_t>(i), false, 0};
      if (m[k]->ol_flags & RTE_MBUF_F_RX_FDIR_ID) {
        pk.has_mark = true;
        pk.mark = m[k]->hash.fdir.hi;
      }
      int out = -1;
      if (overlay_) {
        forward_overlay(m[k], pk);
        continue;
      }
      int16_t r = nic_ ? nic_->rx(0, pk, mono_ns()) : kNicMiss;
      bool fwd;
      int c = which(d, m[k]->data_len, &fwd);
      if (r >= 0) {
        out = r;
        seen_.nic++;
      } else if (r != kNicMiss) {
        seen_.dropped++;
      } else if (pk.has_mark && (pk.mark & HwMarkTable::kTag) && !(pk.mark & HwMarkTable::kRule)) {
        out = static_cast<int>(pk.mark & ~HwMarkTable::kTag);
        seen_.marked++;
      } else if (c >= 0) {
        to_ct(std::vector<uint8_t>(d, d + m[k]->data_len), static_cast<uint16_t>(i));
        out = fwd ? conns_[c].out : conns_[c].in;
        seen_.software++;
      }
      if (out >= 0 && static_cast<size_t>(out) < ports_.size() && rte_eth_tx_burst(ports_[out], 0, &m[k], 1) == 1)
        continue;
      rte_pktmbuf_free(m[k]);
    }
  }
}

// overlay: the NIC stage (the model rewrites the frame: the buffer follows
// its start, as in the worker), then software's own pipeline, VXLAN and NAT
// included, for what the NIC leaves to it.
void HwCheck::forward_overlay(rte_mbuf* m, PacketIn& pk) {
  pk.headroom = rte_pktmbuf_headroom(m);
  int16_t r = nic_ ? nic_->rx(0, pk, mono_ns()) : kNicMiss;
  const uint8_t* start = rte_pktmbuf_mtod(m, uint8_t*);
  if (pk.data > start) rte_pktmbuf_adj(m, static_cast<uint16_t>(pk.data - start));
  else if (pk.data < start) rte_pktmbuf_prepend(m, static_cast<uint16_t>(start - pk.data));
  int out = -1;
  if (r >= 0) {
    out = r;
    seen_.nic++;
  } else if (r != kNicMiss) {
    seen_.dropped++;
  } else {
    const bool marked = pk.has_mark && (pk.mark & HwMarkTable::kTag) && !(pk.mark & HwMarkTable::kRule);
    if (software(m, pk, &out)) (marked ? seen_.marked : seen_.software)++;
  }
  if (out >= 0 && static_cast<size_t>(out) < ports_.size() && rte_eth_tx_burst(ports_[out], 0, &m, 1) == 1) return;
  rte_pktmbuf_free(m);
}

bool HwCheck::software(rte_mbuf* m, PacketIn& pk, int* out) {
  Verdict v{};
  dp_->run(*pl_, &pk, 1, mono_ns(), &v);
  if (v.out_port < 0) return false;
  if (!apply_tunnel(*pl_, m, v)) return false;
  *out = v.out_port;
  return true;
}

// overlay: a SYN the remote VTEP received names the port the connection
// being opened (handshakes run one at a time) was translated to.
void HwCheck::learn(const uint8_t* d, uint32_t len) {
  ctrack::Parsed pp;
  if (ctrack::parse_packet(d, len, 0, &pp) != ctrack::Drop::kNone || pp.ct.key.proto != IPPROTO_UDP ||
      pp.ct.key.dport != 4789 || len <= pp.l4_off + 16u)
    return;
  const uint32_t off = pp.l4_off + 16u;
  if (ctrack::parse_packet(d + off, len - off, 0, &pp) != ctrack::Drop::kNone) return;
  if ((pp.ct.tcp_flags & (ctrack::kSyn | ctrack::kAck)) != ctrack::kSyn) return;
  for (auto& x : xport_)
    if (!x) {
      x = pp.ct.key.sport;
      return;
    }
}

std::vector<uint8_t> HwCheck::frame(const CheckConn& c, bool fwd, uint8_t flags, uint32_t seq, uint32_t ack,
                                    uint16_t len) const {
  if (!overlay_ || fwd) return tcp(c, fwd, flags, seq, ack, len);
  ctrack::FrameSpec s;
  s.proto = IPPROTO_TCP;
  s.src = c.srv;
  s.dst = "203.0.113.7";
  s.sport = c.sport;
  s.dport = xport_[static_cast<size_t>(&c - conns_.data())];
  s.tcp_flags = flags;
  s.seq = seq;
  s.ack = ack;
  s.win = 8192;
  s.payload = len;
  ctrack::FrameSpec o;  // the remote VTEP's VXLAN, VNI 100
  o.src = "192.0.2.2";
  o.dst = "192.0.2.1";
  o.sport = 51000;
  memcpy(o.dst_mac, "\x02\x00\x00\x00\x01\x01", 6);
  return ctrack::vxlan_frame(o, 100, ctrack::build_frame(s));
}

// What arrived at the peer ports, per connection and direction.
void HwCheck::peer_rx() {
  for (uint16_t q : cab_.peer) {
    rte_mbuf* m[32];
    uint16_t n = rte_eth_rx_burst(q, 0, m, 32);
    for (uint16_t k = 0; k < n; k++) {
      const uint8_t* d = rte_pktmbuf_mtod(m[k], const uint8_t*);
      if (overlay_ && q == cab_.peer.back()) learn(d, m[k]->data_len);
      bool fwd;
      int c = which(d, m[k]->data_len, &fwd);
      if (c >= 0) got_[2 * c + (fwd ? 0 : 1)]++;
      rte_pktmbuf_free(m[k]);
    }
  }
}

// Sends a frame of connection c from the peer and waits until it is back.
bool HwCheck::through(size_t c, bool fwd, const std::vector<uint8_t>& f) {
  uint64_t before = got_[2 * c + (fwd ? 0 : 1)];
  const uint16_t idx = fwd ? conns_[c].in : conns_[c].out;
  if (!send(cab_.peer[cab_.peer.size() > 1 ? idx : 0], f)) return false;
  for (uint64_t end = mono_ns() + 1'000'000'000ull; mono_ns() < end;) {
    forward();
    peer_rx();
    control();
    if (got_[2 * c + (fwd ? 0 : 1)] > before) return true;
  }
  return false;
}

int HwCheck::handshakes() {
  int rc = 0;
  for (size_t k = 0; k < conns_.size(); k++) {
    const CheckConn& c = conns_[k];
    auto syn = tcp(c, true, ctrack::kSyn, 100, 0, 0), synack = tcp(c, false, ctrack::kSyn | ctrack::kAck, 500, 101, 0),
         ack = tcp(c, true, ctrack::kAck, 101, 501, 0);
    if (cab_.peer.empty()) {
      to_ct(syn, c.in);
      to_ct(synack, c.out);
      to_ct(ack, c.in);
    } else if (!through(k, true, syn) ||
               !through(k, false, overlay_ ? frame(c, false, ctrack::kSyn | ctrack::kAck, 500, 101, 0) : synack) ||
               !through(k, true, ack)) {
      rc = fail(std::string("the handshake of ") + c.cli + " -> " + c.srv + " did not come back to the peer (" +
                cab_.peer_what + ")");
    }
  }
  return rc;
}

int HwCheck::wait_installed() {
  uint64_t deadline = mono_ns() + 5'000'000'000ull;
  while (mono_ns() < deadline && off_->stats().get("installed") < conns_.size()) {
    control();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  OffloadStats st = off_->stats();
  for (const auto& [k, v] : st.notes) step(k + " " + v);
  if (st.get("installed") != conns_.size()) {
    printf("hw-check: provider counters:");
    for (const auto& [k, v] : st.counters) printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
    printf("\n");
    return fail("offloaded " + std::to_string(st.get("installed")) + " of " + std::to_string(conns_.size()) +
                " connections (see failed_* and the log above)");
  }
  step(std::to_string(conns_.size()) + " TCP connection(s) offloaded: " + std::to_string(st.get("offloads_aso")) +
       " with a CONNTRACK object, " + std::to_string(st.get("offloads_flows")) +
       " by exact rules (SYN/FIN/RST to software), a rule per direction each");
  return 0;
}

// Data segments from the peer, each way: back at the peer, none forwarded
// by software, and counted by the NIC.
//
// With HWS a rule is in place when its completion is pulled, which is when
// the provider counts it installed. DV's rte_flow_create returns once the
// driver has posted its writes to the NIC, not when the NIC has applied them
// (rdma-core's providers/mlx5/dr_send.c, as read at linux-rdma/rdma-core
// 1d07d99: each STE write is an RDMA WRITE and READ pair, signalled every
// signal_th = QUEUE_SIZE 128 / SIGNAL_PER_DIV_QUEUE 16 = 8 WQEs, and
// dr_handle_pending_wc polls the completion queue only once that many are
// pending; the model applies a DV rule latency_us after the call):
// a segment right behind it may still miss. So with DV each connection
// first takes segment pairs until the NIC forwards both of one pair (at most
// a second); what software forwarded meanwhile is reported, not failed. The
// counted segments come after; with HWS there is no such first step.
int HwCheck::data_path() {
  const bool lands = off_->stats().get("engine_sws") != 0;
  const int per = 10;
  int back = 0;
  uint64_t landing = 0;  // segments software forwarded while DV rules landed
  std::vector<uint32_t> seqs(conns_.size(), 101), peers(conns_.size(), 501);
  // Connection k's next data segment (100 bytes, client to server) and its
  // ACK: how many of the two came back to the peer.
  auto pair = [&](size_t k) {
    uint32_t &seq = seqs[k], &peer = peers[k];
    int n = through(k, true, frame(conns_[k], true, ctrack::kAck, seq, peer, 100));
    seq += 100;
    return n + through(k, false, frame(conns_[k], false, ctrack::kAck, peer, seq, 0));
  };
  for (size_t k = 0; lands && k < conns_.size(); k++) {
    bool landed = false;
    for (uint64_t end = mono_ns() + 1'000'000'000ull; !landed && mono_ns() < end;) {
      const Seen b = seen_;
      if (pair(k) != 2)
        return fail(std::string("a data segment of ") + conns_[k].cli + " -> " + conns_[k].srv + " did not come back to the peer (" +
                    cab_.peer_what + ")");
      landing += seen_.software - b.software;
      landed = seen_.nic + seen_.marked - b.nic - b.marked == 2;
    }
    if (!landed)
      return fail(std::string("the NIC forwarded no pair of ") + conns_[k].cli + " -> " + conns_[k].srv +
                  "'s data segments within a second of its rules being created");
  }
  const Seen before = seen_;
  for (size_t k = 0; k < conns_.size(); k++)
    for (int i = 0; i < per; i++) back += pair(k);
  const int want = 2 * per * static_cast<int>(conns_.size());
  const uint64_t sw = seen_.software - before.software, by_nic = seen_.nic - before.nic,
                 marked = seen_.marked - before.marked;
  if (back != want)
    return fail(std::to_string(back) + " of " + std::to_string(want) + " data segments came back to the peer (" +
                cab_.peer_what + ")");
  if (sw) return fail(std::to_string(sw) + " of " + std::to_string(want) + " data segments were forwarded by software");
  // The NIC's own counters, folded into ctrack: the handshake (3) and the
  // segments.
  uint64_t deadline = mono_ns() + 3'000'000'000ull;
  uint64_t least = 0;
  while (mono_ns() < deadline) {
    control();
    least = UINT64_MAX;
    ct_->for_each(mono_ns(), [&](const ctrack::ConnInfo& ci) {
      least = std::min<uint64_t>(least, ci.packets[0] + ci.packets[1]);
    });
    if (least >= 3 + 2 * per) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (least < 3 + 2 * per)
    return fail("the NIC's counters, folded into ctrack, show " + std::to_string(least) + " packets for a connection (" +
                std::to_string(3 + 2 * per) + " expected)");
  std::string how = marked ? std::to_string(marked) + " classified, tracked and marked with their output port by "
                                                      "the NIC, sent on by software without a lookup"
                           : std::to_string(want) + " forwarded by the NIC";
  if (by_nic && marked) how = std::to_string(by_nic) + " forwarded by the NIC, " + how;
  step(std::to_string(want) + " data segments through " + cab_.peer_what + " and back: " + how +
       ", 0 by software; the NIC's counters read back (each connection shows >= " + std::to_string(least) +
       " in ctrack)" +
       (lands ? "; before them, " + std::to_string(landing) + " forwarded by software while the DV rules landed (" +
                    std::to_string(off_->stats().get("resyncs")) + " conntrack object(s) brought up to date after)"
              : ""));
  return 0;
}

int HwCheck::flush_leaves_nothing() {
  if (Status s = off_->flush(); !s) return fail("flush: " + s.message());
  if (nic_ && (nic_->flows_in_use() || nic_->ct_in_use() || nic_->templates_in_use()))
    return fail("after flush the NIC still holds " + std::to_string(nic_->flows_in_use()) + " rules, " +
                std::to_string(nic_->ct_in_use()) + " conntrack objects, " + std::to_string(nic_->templates_in_use()) +
                " templates/tables");
  step("flush left nothing behind");
  return 0;
}

}  // namespace

int hw_check_run(const std::string&, bool model, const std::string& profile, const Cabling& cab, bool overlay) {
  std::string hws_failed;
  {
    HwCheck check(model, profile, cab, overlay);
    int rc = check.run();
    // The daemon starts again with DV software steering where hardware
    // steering did not start (a new EAL: the engine is fixed at probe); the
    // model's ports can be asked the same within this one.
    if (rc == 0 || !model || !hws_did_not_start_before().empty()) return rc;
    hws_failed = check.hws_did_not_start();
    if (hws_failed.empty()) return rc;
  }
  step("hardware steering did not start (" + hws_failed + "): the daemon starts again with dv_flow_en=1; so does this");
  setenv(kHwsDidNotStartEnv, hws_failed.c_str(), 1);
  HwCheck again(model, profile, cab, overlay);
  int rc = again.run();
  unsetenv(kHwsDidNotStartEnv);
  return rc;
}

}  // namespace dp
