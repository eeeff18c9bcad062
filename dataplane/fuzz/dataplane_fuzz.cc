// libFuzzer target: raw frames through the NIC stage (the mlx5 22.11 model,
// programmed by the one rte_flow provider from the tracker's events, as in
// the daemon with `emulated`), then the parser and the whole pipeline (firewall tables in
// rte_acl, conntrack, actions), with arbitrary NIC marks. No input may crash
// it; verdicts stay in range and the tracker's invariants hold after each
// burst. The rules decapsulate VXLAN (VNI 100 on `outside`), source-NAT and
// encapsulate. The same frames also go through a one-zone rule set twice,
// with the established-flow cache and without: the verdicts and the frames
// they leave must agree.
#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <memory>
#include <string>

#include "features/fragments/table.h"
#include "dataplane/config.h"
#include <rte_mbuf.h>

#include "dataplane/nic_model.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"

namespace {

const char* kRules = R"Y(
ports:
  - {name: inside, devargs: "net_null0"}
  - {name: outside, devargs: "net_null1"}
overlay:
  vxlan:
    local: 192.0.2.1
    port: outside
    mac: "02:00:00:00:00:01"
    vnis: [100]
    remotes: [{ip: 192.0.2.2, mac: "02:00:00:00:00:02"}]
tables:
  0:
    - {priority: 100, match: "eth_type=arp,in_port=inside", actions: "output:outside"}
    - {priority: 70, match: "in_port=outside,tun_id=100", actions: "ct(table=1)"}
    - {priority: 100, match: "eth_type=nd", actions: "goto_table:2"}
    - {priority: 60, match: "ip_proto=udp,tp_dst=53", actions: "ct(commit,zone=7,table=1)"}
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 50, match: "eth_type=ipv6", actions: "ct(table=1)"}
    - {priority: 0, match: "", actions: "drop"}
  1:
    - {priority: 100, match: "in_port=inside,ct_state=+trk+new,ip_proto=tcp", actions: "set_mark:5,ct(commit),output:outside"}
    - {priority: 99, match: "in_port=inside,ct_state=+trk+new",
       actions: "ct(commit,nat(src=203.0.113.1-203.0.113.2:1024-1040)),encap(vxlan,vni=100,remote=192.0.2.2),output:outside"}
    - {priority: 100, match: "ct_state=+trk+est", actions: "count,goto_table:2"}
    - {priority: 90, match: "ct_state=+trk+rel", actions: "output:inside"}
    - {priority: 50, match: "ip_proto=tcp,tcp_flags=+syn-ack", actions: "drop"}
    - {priority: 0, match: "", actions: "drop"}
  2:
    - {priority: 10, match: "in_port=inside", actions: "output:outside"}
    - {priority: 10, match: "in_port=outside", actions: "output:inside"}
)Y";

// kRules without the second zone and the tcp_flags rule: every established
// path can be cached.
std::string one_zone_rules() {
  std::string r = kRules;
  for (const char* gone : {"    - {priority: 60, match: \"ip_proto=udp,tp_dst=53\", actions: \"ct(commit,zone=7,table=1)\"}\n",
                           "    - {priority: 50, match: \"ip_proto=tcp,tcp_flags=+syn-ack\", actions: \"drop\"}\n"}) {
    size_t p = r.find(gone);
    if (p == std::string::npos) abort();
    r.erase(p, strlen(gone));
  }
  return r;
}

struct Twin {  // one datapath of the cache comparison
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<dp::Pipeline> pl;
  dp::WorkerStats st;
  std::unique_ptr<dp::Datapath> dp;
};

struct State {
  Twin twin[2];  // [0] with the flow cache, [1] without
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<dp::Pipeline> pl;
  dp::WorkerStats st;
  std::unique_ptr<dp::Datapath> dp;
  std::unique_ptr<dp::OffloadProvider> off;
  std::atomic<const dp::HwMarkTable*> marks{nullptr};
  dp::OffloadHost host;
  uint64_t now = 1'000'000'000'000ull;
  uint64_t start_refusals = 0;  // the conntrack-pool probe of `conntrack: auto` (a refusal is its answer)
};

State* g;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string prefix = "dpfuzz" + std::to_string(getpid());
  const char* eal[] = {"dataplane-fuzz", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--no-telemetry",
                       "-l", "0", "--log-level", "*:error", "--file-prefix", prefix.c_str(),
                       "--vdev=net_null0", "--vdev=net_null1"};
  if (rte_eal_init(sizeof eal / sizeof eal[0], const_cast<char**>(eal)) < 0) abort();
  g = new State;
  auto cfg = dp::parse_config(kRules, "fuzz");
  if (!cfg) abort();
  ctrack::Config cc;
  cc.capacity = 128;
  cc.event_ring = 256;
  cc.nat = cfg->ct.nat;
  g->ct = std::move(ctrack::Tracker::create(cc).value());
  g->pl = std::move(dp::Pipeline::build(cfg->rules, 1, &cfg->overlay).value());
  g->dp = std::make_unique<dp::Datapath>(0, g->ct.get(), &g->st);
  g->dp->set_hw_marks(&g->marks);
  auto one = dp::parse_config(one_zone_rules(), "fuzz-one-zone");
  if (!one) abort();
  ctrack::Config tc = cc;
  tc.event_ring = 0;      // nobody reads them here
  tc.sweep_per_call = 0;  // as the daemon: expiry is the worker's, not the lookups'
  for (int t = 0; t < 2; t++) {
    Twin& w = g->twin[t];
    w.ct = std::move(ctrack::Tracker::create(tc).value());
    w.pl = std::move(dp::Pipeline::build(one->rules, 1, &one->overlay).value());
    w.dp = std::make_unique<dp::Datapath>(0, w.ct.get(), &w.st);
    w.dp->set_flow_cache(t == 0);
  }
  dp::OffloadConfig oc;
  oc.provider = "emulated";
  oc.table_size = 16;  // small: the full-table path runs too
  oc.max_in_flight = 16;
  oc.latency_us = 0;
  g->off = std::move(dp::make_offload_provider(oc, 1).value());
  rte_mempool* pool = rte_pktmbuf_pool_create("fuzz", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (!pool || !dp::start_ports(*g->off, {0, 1}, pool)) abort();
  g->off->model()->set_clock([](void* now) { return *static_cast<uint64_t*>(now); }, &g->now);
  g->host.port_ids = {0, 1};
  g->host.shards = {g->ct.get()};
  g->host.marks = &g->marks;
  if (!g->off->start(g->host)) abort();
  g->off->poll(g->now);
  g->off->on_pipeline(*g->pl);
  g->start_refusals = g->off->model()->refusals();
  if (g->start_refusals > 1) {
    fprintf(stderr, "the NIC model refused %llu calls at start: %s\n",
            static_cast<unsigned long long>(g->start_refusals), g->off->model()->last_error().c_str());
    abort();
  }
  return 0;
}

// Fragments the table held or let go name frames of an earlier input
// (gone now): the table's entries stay, what it gave back is forgotten.
static void forget_fragments(dp::Datapath& d) {
  d.fragments().released().clear();
  d.fragments().dropped().clear();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  // The pipeline writes into frames (NAT): a copy of the fuzzer's bytes.
  static std::vector<uint8_t> copy;
  copy.assign(input, input + size);
  uint8_t* data = copy.data();
  dp::PacketIn in[dp::kMaxBurst];
  dp::Verdict v[dp::kMaxBurst];
  uint32_t n = 0;
  size_t off = 0;
  dp::Mlx5Model& nic = *g->off->model();
  nic.service(0, g->now);
  // Per frame: [flags: bit0 port, bit1 carries a mark][len][mark: 4 bytes if bit1][frame]
  dp::PacketIn all[dp::kMaxBurst];
  uint32_t na = 0;
  while (off + 2 <= size && na < dp::kMaxBurst) {
    uint16_t port = data[off] & 1;
    bool marked = data[off] & 2;
    size_t len = data[off + 1];
    off += 2;
    uint32_t mark = 0;
    if (marked && off + 4 <= size) {
      memcpy(&mark, data + off, 4);
      off += 4;
    }
    if (len > size - off) len = size - off;
    dp::PacketIn p{data + off, static_cast<uint32_t>(len), static_cast<uint32_t>(len), port, marked, mark};
    all[na] = p;
    all[na++].has_mark = false;
    off += len;
    int16_t o = nic.rx(0, p, g->now);
    if (o < dp::kNicMiss || o > 1) abort();
    if (o == dp::kNicMiss) in[n++] = p;
  }
  if (n) g->dp->run(*g->pl, in, n, g->now, v);
  forget_fragments(*g->dp);
  if (na) {
    // Each twin on its own copy of the input (NAT writes into frames); the
    // frames they leave must agree byte for byte too.
    static std::vector<uint8_t> bytes[2];
    dp::PacketIn tw[2][dp::kMaxBurst];
    dp::Verdict vt[2][dp::kMaxBurst];
    for (int t = 0; t < 2; t++) {
      bytes[t].assign(input, input + size);
      for (uint32_t i = 0; i < na; i++) {
        tw[t][i] = all[i];
        tw[t][i].data = bytes[t].data() + (all[i].data - data);
      }
      g->twin[t].dp->run(*g->twin[t].pl, tw[t], na, g->now, vt[t]);
      forget_fragments(*g->twin[t].dp);
    }
    const dp::Verdict *a = vt[0], *b = vt[1];
    for (uint32_t i = 0; i < na; i++)
      if (a[i].out_port != b[i].out_port || a[i].ct_state != b[i].ct_state || a[i].mark != b[i].mark ||
          a[i].strip != b[i].strip || a[i].encap != b[i].encap || a[i].encap_sport != b[i].encap_sport) {
        fprintf(stderr, "flow cache: packet %u: out %d/%d ct_state %x/%x mark %u/%u encap %u/%u (cached/not)\n", i,
                a[i].out_port, b[i].out_port, a[i].ct_state, b[i].ct_state, a[i].mark, b[i].mark, a[i].encap,
                b[i].encap);
        abort();
      }
    if (bytes[0] != bytes[1]) {
      fprintf(stderr, "flow cache: the frames differ after the twins ran (a rewrite differs)\n");
      abort();
    }
  }
  g->now += 50'000'000;
  for (uint32_t i = 0; i < n; i++)
    if (v[i].out_port < -1 || v[i].out_port > 1) abort();
  ctrack::Event ev[64];
  uint32_t ne;
  while ((ne = g->ct->poll_events(ev, 64)) > 0) g->off->on_ct_events(0, ev, ne, g->now);
  g->off->poll(g->now);
  // After start, the provider asks the model only for what the driver takes.
  if (nic.refusals() != g->start_refusals) {
    fprintf(stderr, "the NIC model refused a call: %s\n", nic.last_error().c_str());
    abort();
  }
  for (Twin& w : g->twin)
    if (!w.ct->check_invariants()) abort();
  if (!g->ct->check_invariants()) {
    fprintf(stderr, "%s\n", g->ct->check_invariants().message().c_str());
    abort();
  }
  return 0;
}
