// dataplane-bench: the full software pipeline on one core over synthetic
// mbufs, no kernel I/O. A program that prints numbers, not a timed test.
//
//   dataplane-bench [--json] [--rules N] [--conns N] [--packets N] [--overlay-nat] [--tcp-timestamps]
//
// Pipeline: parse -> tables (the stateful firewall plus N filler rules that
// the traffic never hits, in rte_acl) -> conntrack (N live TCP connections,
// set up through the pipeline itself) -> actions. The measured traffic is
// established TCP segments of random connections, both directions, bursts of
// 32, from mbufs filled just before (as rx leaves them). Also printed, from
// the same run: parse alone over the same mbufs; and the floor under any
// pipeline with conntrack (floor_mbufs: the worker's handoff, the parse
// lane, conntrack's lookup and window update; no rules, cache or verdict),
// with its ratio to parse alone and the cached pipeline's to it.
// Conntrack is set up as the daemon sets up a worker's shard
// (conntrack_shard_config), and expired as a worker expires it: a slice
// each millisecond, inside the timed part.
// With --overlay-nat, the same connections also through the cloud pipeline
// (configs/dataplane/overlay-nat.yaml's rules with the same fillers): the VM's
// segments source-NATed and VXLAN-encapsulated (the outer headers written as
// the worker writes them), the replies decapsulated and translated back;
// printed with its ratio to the plain firewall, paired per repetition; and
// two floors of its own: floor_nat (the floor on its tracker, which
// translates) and floor_overlay (floor_nat and the overlay's own work through
// the daemon's helpers: decap's checks, the NAT rewrite from the flow
// cache's entry, the outer headers),
// with overlay_bound: overlay+NAT / firewall were the cloud pipeline's own
// work to cost what floor_overlay's does (a bound while that floor was
// below the pipeline's own work; since the flow cache's NAT entries moved
// into conntrack's lines the floor's per-burst prefetch of them costs more
// than the pipeline's, and the figure reads below the measured ratio).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ctrack/frame.h"
#include "ctrack/packet.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"
#include "features/nat/rewrite.h"
#include "features/overlay/mbuf.h"
#include "features/tunnels.h"
#include "net/bytes.h"
#include "sdn/clock.h"


namespace {

bool g_json = false;
bool g_cpu_time = false;  // --cpu-time

std::string firewall_with_fillers(int fillers) {
  std::string y = R"Y(
ports:
  - {name: inside, devargs: "net_null0"}
  - {name: outside, devargs: "net_null1"}
tables:
  0:
    - {priority: 100, match: "eth_type=arp,in_port=inside", actions: "output:outside"}
    - {priority: 100, match: "eth_type=arp,in_port=outside", actions: "output:inside"}
    - {priority: 50, match: "eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 50, match: "eth_type=ipv6", actions: "ct(table=1)"}
    - {priority: 0, match: "", actions: "drop"}
)Y";
  // Fillers: specific servers and port ranges, like a real ACL, that the
  // measured traffic (to 172.16.0.0/12) never matches. Half in each table.
  for (int i = 0; i < fillers / 2; i++)
    y += "    - {priority: 200, match: \"ip_dst=10." + std::to_string(i / 250) + "." + std::to_string(i % 250) +
         ".0/24,ip_proto=udp,tp_dst=" + std::to_string(1000 + i % 5000) + "\", actions: \"drop\"}\n";
  y += "  1:\n";
  y += R"Y(    - {priority: 100, match: "in_port=inside,ct_state=+trk+new", actions: "ct(commit),output:outside"}
    - {priority: 100, match: "in_port=inside,ct_state=+trk+est", actions: "output:outside"}
    - {priority: 100, match: "in_port=outside,ct_state=+trk+est", actions: "output:inside"}
    - {priority: 0, match: "", actions: "drop"}
)Y";
  for (int i = 0; i < fillers - fillers / 2; i++)
    y += "    - {priority: 200, match: \"ip_src=192.168." + std::to_string(i / 250) + "." + std::to_string(i % 250) +
         ",ip_proto=tcp,tp_dst=" + std::to_string(2000 + i % 5000) + "\", actions: \"drop\"}\n";
  return y;
}

// The firewall's rules as overlay-nat.yaml writes them: the VM on inside,
// VNI 100 to the VTEP 192.0.2.2 on outside, source NAT to 203.0.113.1-4.
std::string overlay_nat(const std::string& firewall) {
  std::string y = firewall;
  auto swap = [&](const std::string& a, const std::string& b) {
    size_t p = y.find(a);
    if (p == std::string::npos) {
      fprintf(stderr, "dataplane-bench: '%s' not in the firewall rules\n", a.c_str());
      exit(1);
    }
    y.replace(p, a.size(), b);
  };
  swap("tables:", R"Y(overlay:
  vxlan:
    local: 192.0.2.1
    port: outside
    mac: "02:00:00:00:01:01"
    vnis: [100]
    remotes: [{ip: 192.0.2.2, mac: "02:00:00:00:02:02"}]
tables:)Y");
  swap(R"Y(match: "eth_type=ipv4", actions: "ct(table=1)")Y",
       R"Y(match: "in_port=inside,eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 50, match: "in_port=outside,tun_id=100,eth_type=ipv4", actions: "ct(table=1)")Y");
  swap(R"Y(actions: "ct(commit),output:outside")Y",
       R"Y(actions: "ct(commit,nat(src=203.0.113.1-203.0.113.4)),encap(vxlan,vni=100,remote=192.0.2.2),output:outside")Y");
  swap(R"Y(match: "in_port=inside,ct_state=+trk+est", actions: "output:outside")Y",
       R"Y(match: "in_port=inside,ct_state=+trk+est", actions: "encap(vxlan,vni=100,remote=192.0.2.2),output:outside")Y");
  return y;
}

// `inner` as the remote VTEP (192.0.2.2) sends it to this one (VNI 100).
std::vector<uint8_t> vxlan_from_remote(const std::vector<uint8_t>& inner) {
  ctrack::FrameSpec o;
  memcpy(o.dst_mac, "\x02\x00\x00\x00\x01\x01", 6);
  memcpy(o.src_mac, "\x02\x00\x00\x00\x02\x02", 6);
  o.src = "192.0.2.2";
  o.dst = "192.0.2.1";
  o.sport = 50000;
  return ctrack::vxlan_frame(o, 100, inner);
}

ctrack::FrameSpec conn_frame(uint32_t c, bool reply, uint8_t flags, uint32_t seq, uint32_t ack) {
  ctrack::FrameSpec s;
  s.proto = IPPROTO_TCP;
  std::string client = "172.16." + std::to_string((c >> 8) & 0xff) + "." + std::to_string(c & 0xff);
  std::string server = "172.20.0." + std::to_string(1 + (c >> 16));
  s.src = reply ? server : client;
  s.dst = reply ? client : server;
  uint16_t cport = static_cast<uint16_t>(10000 + (c % 50000));
  s.sport = reply ? 443 : cport;
  s.dport = reply ? cport : 443;
  s.tcp_flags = flags;
  s.seq = seq;
  s.ack = ack;
  return s;
}

struct Env {
  rte_mempool* pool;
  bool overlay = false;
  std::vector<std::pair<std::string, uint16_t>> xlat;  // overlay: each connection's translated source
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<dp::Pipeline> pl;
  dp::WorkerStats st;
  std::unique_ptr<dp::Datapath> dp;
  uint64_t now = 1'000'000'000'000ull;
  uint32_t expire_slice = 0;
  uint64_t last_expire = 0;  // sdn::mono_ns() of the last expiry slice
  uint16_t encap = 0;         // overlay: the encap an established segment of the VM leaves with (floor_overlay)
};

// The frame in an mbuf, received on port `port` (0 inside, 1 outside).
rte_mbuf* make_mbuf(rte_mempool* pool, const std::vector<uint8_t>& f, uint16_t port) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) {
    fprintf(stderr, "dataplane-bench: mbuf pool exhausted\n");
    exit(1);
  }
  memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
  m->port = port;
  return m;
}

// The worker's handoff: the next burst of mb (from off, at most kMaxBurst
// of n) as PacketIn; how many.
inline uint32_t handoff(rte_mbuf* const* mb, size_t off, size_t n, dp::PacketIn* in) {
  const uint32_t k = static_cast<uint32_t>(std::min<size_t>(dp::kMaxBurst, n - off));
  for (uint32_t i = 0; i < k; i++) {
    const rte_mbuf* m = mb[off + i];
    in[i] = dp::PacketIn{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, m->pkt_len, m->port, false, 0};
  }
  return k;
}

// Runs frames through the pipeline like a worker does (PacketIn from mbufs).
uint64_t run_mbufs(Env& e, rte_mbuf** mb, size_t n, uint64_t* dropped) {
  dp::PacketIn in[dp::kMaxBurst];
  dp::Verdict v[dp::kMaxBurst];
  uint64_t drops = 0;
  for (size_t off = 0; off < n; off += dp::kMaxBurst) {
    const uint32_t k = handoff(mb, off, n, in);
    e.dp->run(*e.pl, in, k, e.now, v);
    // The worker's expiry, paced by time as the worker paces it (the
    // measured connections do not expire: this is the sweep's cost).
    if (const uint64_t t = sdn::mono_ns(); t - e.last_expire >= dp::kExpireEveryNs) {
      e.ct->expire(e.now, e.expire_slice);
      e.last_expire = t;
    }
    for (uint32_t i = 0; i < k; i++) {
      drops += v[i].out_port < 0;
      // The worker's part of a tunnel: outer headers off, or on.
      rte_mbuf* m = mb[off + i];
      dp::apply_tunnel(*e.pl, m, v[i]);
    }
  }
  *dropped += drops;
  return n;
}

// The floor under any pipeline with conntrack, over the same mbufs: what a
// worker cannot skip for an established segment. The handoff from the mbuf
// (handoff, as run_mbufs), the parse lane's parse, and conntrack's lookup
// and TCP window update (Tracker::process, not committing) on the tracker
// the cached pipeline uses; no rules, flow cache, verdict, counters or
// expiry. Returns the packets not parsed by the lane or not found
// established (0, or the floor measured something else).
// On the cloud pipeline's tracker (e.overlay): its conntrack with NAT, no
// translated tuple out (a cached packet takes none: its rewrite is in its
// flow-cache entry); a frame from the remote VTEP is parsed at its inner
// frame, without the outer header's checks (they, the rewrite and the
// tunnel are not in this floor).
//
// With `tunnel` (floor_overlay, on the cloud pipeline's tracker): also the
// overlay's own work on each packet, with the daemon's helpers and nothing
// around them: a frame from the remote VTEP decapsulated with the outer
// header's checks (tunnel_decap), each packet's bytes translated from its
// connection's flow-cache entry as a done packet is (nat::rewrite_plain_cached;
// the pipeline's warm-up on this tracker recorded them, in the tracker's
// lines: Datapath::tracker_config), and the worker's part of the tunnel
// (apply_tunnel: the outer headers off, or on). The encap's UDP source port
// comes from the lookup's hash in the pipeline, which Tracker::process does
// not return: the translated port stands in (the same one modulo). No
// counters, verdict, MTU check or decap counter beyond what the helpers do.
uint64_t floor_mbufs(Env& e, rte_mbuf** mb, size_t n, bool tunnel = false) {
  dp::PacketIn in[dp::kMaxBurst];
  ctrack::Parsed parsed[dp::kMaxBurst];
  const ctrack::Packet* pk[dp::kMaxBurst];
  ctrack::CtResult r[dp::kMaxBurst];
  const ctrack::Tracker::CallerLines lines = e.ct->nat_caller_lines();
  if (tunnel && !lines.base) {
    fprintf(stderr, "dataplane-bench: floor_overlay needs the tracker's lines (Datapath::tracker_config)\n");
    exit(1);
  }
  uint32_t at[dp::kMaxBurst], strip[dp::kMaxBurst];  // tunnel: packet j's index in the burst, its inner frame's offset
  constexpr uint8_t kVxlanBit = 1u << static_cast<int>(dp::TunnelKind::kVxlan);
  uint64_t bad = 0;
  for (size_t off = 0; off < n; off += dp::kMaxBurst) {
    const uint32_t k = handoff(mb, off, n, in);
    uint32_t np = 0;
    for (uint32_t i = 0; i < k; i++) {
      uint32_t inner = e.overlay && in[i].port == 1 ? dp::kVxlanOverhead : 0, end = in[i].len;
      if (tunnel && inner) {
        uint8_t counter;
        const dp::Decap dc = dp::tunnel_decap(kVxlanBit, in[i].data, in[i].len, e.pl->overlay(), &counter);
        if (!dc.off || dc.why != dp::DropWhy::kCount) {
          bad++;
          continue;
        }
        inner = dc.off;
        end = dc.end;
      }
      if (!ctrack::parse_ip4_plain(in[i].data + inner, end - inner, 0, &parsed[np])) {
        bad++;
        continue;
      }
      parsed[np].ct.in_port = static_cast<uint8_t>(in[i].port);
      pk[np] = &parsed[np].ct;
      at[np] = i;
      strip[np] = inner;
      np++;
    }
    e.ct->process(pk, np, e.now, false, r, nullptr, nullptr);
    for (uint32_t j = 0; j < np; j++) bad += !(r[j].state & ctrack::kCtEst);
    if (!tunnel) continue;
    // (The pipeline asks for each entry's line with its lookup; here the
    // burst's, before the first is read.)
    for (uint32_t j = 0; j < np; j++) __builtin_prefetch(lines.base + size_t{r[j].conn} * lines.stride);
    for (uint32_t j = 0; j < np; j++) {
      const dp::PacketIn& pi = in[at[j]];
      const auto& ce = *reinterpret_cast<const dp::nat::CacheEntry*>(lines.base + size_t{r[j].conn} * lines.stride);
      if (r[j].nat) {
        if (ce.tag.dir[r[j].dir] == ctrack::Tracker::Tag::kNoTag) {  // not recorded: not what the pipeline did
          bad++;
          continue;
        }
        dp::nat::rewrite_plain_cached(pi.data + strip[j], parsed[j].ct.key.proto, ce.rw[r[j].dir]);
      }
      dp::Verdict v;  // (apply_tunnel reads these three)
      v.strip = static_cast<uint16_t>(strip[j]);
      v.encap = pi.port == 0 ? e.encap : 0;
      v.encap_sport = dp::encap_sport_of_hash(__builtin_bswap16(ce.rw[0].port));
      bad += !dp::apply_tunnel(*e.pl, mb[off + at[j]], v);
    }
  }
  return bad;
}

bool g_timestamps = false;  // --tcp-timestamps: measured segments with Linux's options (NOP, NOP, timestamps)

void emit(const char* bench, int rules, uint32_t conns, double pkts, std::vector<double> secs, const char* extra = "") {
  std::sort(secs.begin(), secs.end());
  double med = secs[secs.size() / 2];
  double mpps = pkts / med / 1e6;
  if (g_json)
    printf("{\"bench\": \"%s\", \"rules\": %d, \"conns\": %u, \"mpps\": %.2f, \"ns_per_pkt\": %.2f, \"mpps_min\": %.2f, "
           "\"mpps_max\": %.2f, \"reps\": %zu, \"tcp_timestamps\": %s%s}\n",
           bench, rules, conns, mpps, med * 1e9 / pkts, pkts / secs.back() / 1e6, pkts / secs.front() / 1e6, secs.size(),
           g_timestamps ? "true" : "false", extra);
  else
    printf("%-12s rules=%-5d conns=%-7u %7.2f Mpps (%.2f..%.2f) %7.2f ns/pkt%s\n", bench, rules, conns, mpps,
           pkts / secs.back() / 1e6, pkts / secs.front() / 1e6, med * 1e9 / pkts, extra);
  fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int fillers = 1000;
  uint32_t conns = 100000;
  uint64_t packets = 20'000'000;
  std::string simd = "512";
  std::string only;  // "established", "cached", "new", "overlay" or "floor": one part, for profiling
  bool overlay = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json") g_json = true;
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--rules" && i + 1 < argc) fillers = atoi(argv[++i]);
    else if (a == "--conns" && i + 1 < argc) conns = static_cast<uint32_t>(atoi(argv[++i]));
    else if (a == "--packets" && i + 1 < argc) packets = strtoull(argv[++i], nullptr, 10);
    else if (a == "--simd-bits" && i + 1 < argc) simd = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--overlay-nat") overlay = true;
    else if (a == "--tcp-timestamps") g_timestamps = true;
    else {
      printf("usage: dataplane-bench [--json] [--cpu-time] [--rules N] [--conns N] [--packets N] [--simd-bits 512|256]\n"
             "       [--only PART] [--overlay-nat] [--tcp-timestamps]\n"
             "  --cpu-time   time with the thread's CPU clock, not the wall clock (a loaded machine)\n"
             "  --rules N    filler rules on top of the firewall's (default 1000)\n"
             "  --conns N    live TCP connections (default 100000)\n"
             "  --packets N  measured packets per repetition (default 20M)\n"
             "  --simd-bits  widest vectors DPDK may use (default 512, as the daemon; 256 = rte_acl's AVX2 classifier)\n"
             "  --only established|cached|new|overlay|floor  run one part (for perf record; established: every\n"
             "               established bench, floors included; cached: the cached pipeline alone; overlay: the cloud\n"
             "               pipeline alone, implies --overlay-nat; floor: the floors alone)\n"
             "  --overlay-nat  also the cloud pipeline (VXLAN + source NAT) on the same connections, and its ratio;\n"
             "               its floors (floor_nat, floor_overlay) and the ratio at the floors' costs (overlay_bound)\n"
             "  --tcp-timestamps  measured segments carry the options Linux puts on every one (NOP, NOP,\n"
             "               timestamps: a 32-byte TCP header), as a lab's iperf3 sends\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (!only.empty() && only != "established" && only != "cached" && only != "new" && only != "overlay" &&
      only != "floor") {
    fprintf(stderr, "dataplane-bench: --only %s: not one of established, cached, new, overlay, floor\n", only.c_str());
    return 2;
  }
  if (only == "overlay") overlay = true;
  std::string prefix = "dpbench" + std::to_string(getpid());
  std::string simd_arg = "--force-max-simd-bitwidth=" + simd;
  const char* eal[] = {"dataplane-bench", "--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "--no-telemetry",
                       "-l", "0", "--log-level", "*:error", "--file-prefix", prefix.c_str(), simd_arg.c_str()};
  if (rte_eal_init(sizeof eal / sizeof eal[0], const_cast<char**>(eal)) < 0) {
    fprintf(stderr, "dataplane-bench: EAL init failed\n");
    return 1;
  }
  auto cfg = dp::parse_config(firewall_with_fillers(fillers), "bench");
  if (!cfg) {
    fprintf(stderr, "dataplane-bench: %s\n", cfg.message().c_str());
    return 1;
  }
  int nrules = static_cast<int>(cfg->rules.size());
  const uint32_t kPool = 262144;  // distinct measured frames (random connections)
  rte_mempool* pool = rte_pktmbuf_pool_create("bench", 3 * 65536 + 4096, 0, 0, 256 + RTE_PKTMBUF_HEADROOM, 0);
  if (!pool) {
    fprintf(stderr, "dataplane-bench: mbuf pool\n");
    return 1;
  }
  // Two pipelines over the same rules and the same connections, with the
  // flow cache and without: measured in the same run, alternately.
  auto ovcfg = dp::parse_config(overlay_nat(firewall_with_fillers(fillers)), "bench-overlay");
  if (!ovcfg) {
    fprintf(stderr, "dataplane-bench: %s\n", ovcfg.message().c_str());
    return 1;
  }
  auto make_env = [&](bool cache, uint32_t capacity, bool ov = false) {
    auto e = std::make_unique<Env>();
    e->pool = pool;
    e->overlay = ov;
    const dp::Config& c = ov ? *ovcfg : *cfg;
    // The shard as the daemon makes it for this config (conntrack_shard_config:
    // no sweep inside the lookups, expiry by time), at this capacity.
    ctrack::Config cc = dp::conntrack_shard_config(c);
    cc.capacity = capacity;
    e->expire_slice = dp::expire_slice(capacity);
    e->ct = std::move(ctrack::Tracker::create(cc).value());
    e->pl = std::move(dp::Pipeline::build(c.rules, 1, &c.overlay).value());
    e->dp = std::make_unique<dp::Datapath>(0, e->ct.get(), &e->st);
    e->dp->set_flow_cache(cache);
    return e;
  };
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(make_env(true, conns * 2));
  envs.push_back(make_env(false, conns * 2));
  if (overlay) envs.push_back(make_env(true, conns * 2, true));

  // Connections, set up through the pipeline: SYN, SYN-ACK, ACK, in chunks.
  uint64_t dropped = 0;
  for (auto& ep : envs) {
    Env& e = *ep;
    if (e.overlay) {  // the SYN's translation first: the SYN-ACK comes back to it, in the tunnel
      e.xlat.resize(conns);
      for (uint32_t base = 0; base < conns; base += 32768) {
        uint32_t n = std::min<uint32_t>(32768, conns - base);
        std::vector<rte_mbuf*> syn, rest;
        for (uint32_t i = 0; i < n; i++)
          syn.push_back(make_mbuf(pool, build_frame(conn_frame(base + i, false, ctrack::kSyn, 100, 0)), 0));
        run_mbufs(e, syn.data(), syn.size(), &dropped);
        for (uint32_t i = 0; i < n; i++) {
          const uint8_t* ip = rte_pktmbuf_mtod(syn[i], const uint8_t*) + dp::kVxlanOverhead + 14;
          char a[INET_ADDRSTRLEN];
          inet_ntop(AF_INET, ip + 12, a, sizeof a);
          e.xlat[base + i] = {a, static_cast<uint16_t>(ip[20] << 8 | ip[21])};
          auto sa = conn_frame(base + i, true, ctrack::kSyn | ctrack::kAck, 900, 101);
          sa.dst = a;
          sa.dport = e.xlat[base + i].second;
          rest.push_back(make_mbuf(pool, vxlan_from_remote(build_frame(sa)), 1));
        }
        for (uint32_t i = 0; i < n; i++)
          rest.push_back(make_mbuf(pool, build_frame(conn_frame(base + i, false, ctrack::kAck, 101, 901)), 0));
        run_mbufs(e, rest.data(), rest.size(), &dropped);
        rte_pktmbuf_free_bulk(syn.data(), static_cast<unsigned>(syn.size()));
        rte_pktmbuf_free_bulk(rest.data(), static_cast<unsigned>(rest.size()));
      }
    }
    // (Each kind in its own burst: a SYN-ACK never arrives in the burst of
    // the SYN it answers, and the firewall's first ct() would find no
    // connection for it yet, as OVS's batch would.)
    for (uint32_t b = 0; b < conns && !e.overlay; b += 32) {
      const uint32_t m = std::min<uint32_t>(32, conns - b);
      for (int kind = 0; kind < 3; kind++) {
        rte_mbuf* hs[32];
        for (uint32_t i = 0; i < m; i++) {
          const uint32_t c = b + i;
          hs[i] = kind == 0   ? make_mbuf(pool, build_frame(conn_frame(c, false, ctrack::kSyn, 100, 0)), 0)
                  : kind == 1 ? make_mbuf(pool, build_frame(conn_frame(c, true, ctrack::kSyn | ctrack::kAck, 900, 101)), 1)
                              : make_mbuf(pool, build_frame(conn_frame(c, false, ctrack::kAck, 101, 901)), 0);
        }
        run_mbufs(e, hs, m, &dropped);
        rte_pktmbuf_free_bulk(hs, m);
      }
    }
    if (dropped || e.ct->stats().active != conns) {
      fprintf(stderr, "dataplane-bench: setup (%s) dropped %llu, %llu connections live\n",
              e.overlay ? "overlay" : "firewall", (unsigned long long)dropped, (unsigned long long)e.ct->stats().active);
      for (int w = 0; w < static_cast<int>(dp::DropWhy::kCount); w++)
        if (e.st.drop[w])
          fprintf(stderr, "  %s: %llu\n", dp::drop_why_name(static_cast<dp::DropWhy>(w)), (unsigned long long)e.st.drop[w]);
      for (int w = 0; w < static_cast<int>(ctrack::Drop::kCount); w++)
        if (e.st.parse_drop[w])
          fprintf(stderr, "  parse_%s: %llu\n", ctrack::drop_name(static_cast<ctrack::Drop>(w)),
                  (unsigned long long)e.st.parse_drop[w]);
      return 1;
    }
  }

  // floor_overlay's encap: the one an established segment of the VM leaves
  // with through the cloud pipeline (a repeated ACK of connection 0).
  for (auto& ep : envs) {
    if (!ep->overlay) continue;
    rte_mbuf* m = make_mbuf(pool, build_frame(conn_frame(0, false, ctrack::kAck, 101, 901)), 0);
    dp::PacketIn in[1];
    dp::Verdict v[1];
    handoff(&m, 0, 1, in);
    ep->dp->run(*ep->pl, in, 1, ep->now, v);
    rte_pktmbuf_free(m);
    ep->encap = v[0].encap;
    if (!ep->encap || v[0].out_port < 0) {
      fprintf(stderr, "dataplane-bench: the cloud pipeline's established segment left without an encap\n");
      return 1;
    }
  }

  // Measured traffic: random established segments, both directions. Frames
  // are copied into a cache-sized ring of mbufs before each timed chunk, as
  // a NIC's DMA and the PMD's rx would leave them; only the pipeline is timed.
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> frames(kPool), ov_frames(overlay ? kPool : 0);
  std::vector<uint16_t> ports(kPool);
  for (uint32_t i = 0; i < kPool; i++) {
    uint32_t c = rng() % conns;
    bool reply = i & 1;
    auto f = conn_frame(c, reply, ctrack::kAck | ctrack::kPsh, reply ? 901 : 101, reply ? 101 : 901);
    f.payload = 64;
    if (g_timestamps) {
      f.tcp_options = {1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0};
      net::put32(&f.tcp_options[4], 1000 + i);  // TSval, TSecr (ctrack does not read them)
      net::put32(&f.tcp_options[8], 500 + i);
    }
    frames[i] = build_frame(f);
    ports[i] = reply ? 1 : 0;
    if (overlay) {  // the same segment in the cloud pipeline: a reply comes in the tunnel to the translated tuple
      if (reply) {
        f.dst = envs[2]->xlat[c].first;
        f.dport = envs[2]->xlat[c].second;
      }
      ov_frames[i] = reply ? vxlan_from_remote(build_frame(f)) : build_frame(f);
    }
  }
  // floor_overlay writes the frames the cloud pipeline writes (but the
  // encap's UDP source port): checked on a segment each way.
  for (auto& ep : envs) {
    if (!ep->overlay) continue;
    for (uint32_t i = 0; i < 2; i++) {
      rte_mbuf* a = make_mbuf(pool, ov_frames[i], ports[i]);
      rte_mbuf* f = make_mbuf(pool, ov_frames[i], ports[i]);
      uint64_t d = 0;
      run_mbufs(*ep, &a, 1, &d);
      d += floor_mbufs(*ep, &f, 1, true);
      bool same = !d && a->data_len == f->data_len;
      const uint8_t *x = rte_pktmbuf_mtod(a, const uint8_t*), *y = rte_pktmbuf_mtod(f, const uint8_t*);
      for (uint32_t j = 0; same && j < a->data_len; j++)
        same = x[j] == y[j] || (ports[i] == 0 && (j == 34 || j == 35));
      rte_pktmbuf_free(a);
      rte_pktmbuf_free(f);
      if (!same) {
        fprintf(stderr, "dataplane-bench: floor_overlay's frame %u differs from the cloud pipeline's\n", i);
        return 1;
      }
    }
  }
  const uint32_t kRing = 2048;
  std::vector<rte_mbuf*> ring(kRing);
  for (auto& m : ring) m = make_mbuf(pool, frames[0], 0);
  auto frames_of = [&](const Env& e) -> const std::vector<std::vector<uint8_t>>& { return e.overlay ? ov_frames : frames; };
  auto timed = [&](Env& e, const std::vector<std::vector<uint8_t>>& fr, const std::vector<uint16_t>& pt,
                   uint64_t count, double* pipe_s, double* parse_s, uint64_t* drops, bool floor = false,
                   bool tunnel = false) {
    uint64_t next = 0;
    ctrack::Parsed pz;
    uint64_t sink = 0;
    for (uint64_t done = 0; done < count; done += kRing) {
      for (uint32_t i = 0; i < kRing; i++) {
        const auto& f = fr[(next + i) % fr.size()];
        rte_pktmbuf_reset(ring[i]);
        memcpy(rte_pktmbuf_append(ring[i], static_cast<uint16_t>(f.size())), f.data(), f.size());
        ring[i]->port = pt[(next + i) % pt.size()];
      }
      next += kRing;
      // Baseline from the same data: parse alone.
      double t0 = sdn::bench_seconds(g_cpu_time);
      for (uint32_t i = 0; i < kRing; i++)
        sink += static_cast<uint64_t>(ctrack::parse_packet(rte_pktmbuf_mtod(ring[i], const uint8_t*), ring[i]->data_len, 0, &pz));
      *parse_s += sdn::bench_seconds(g_cpu_time) - t0;
      t0 = sdn::bench_seconds(g_cpu_time);
      if (floor) *drops += floor_mbufs(e, ring.data(), kRing, tunnel);
      else run_mbufs(e, ring.data(), kRing, drops);
      *pipe_s += sdn::bench_seconds(g_cpu_time) - t0;
    }
    if (sink) fprintf(stderr, "dataplane-bench: parse errors in the measured frames\n");
  };
  // Variants, measured alternately in each repetition: 0 the cached
  // pipeline, 1 uncached, 2 overlay+NAT (with --overlay-nat), 3 the floor
  // (floor_mbufs, on variant 0's tracker and frames), 4 the floor with NAT
  // (on variant 2's, with --overlay-nat), 5 that and the overlay's own
  // work (floor_mbufs with `tunnel`, with --overlay-nat).
  constexpr int kVariants = 6;
  const char* names[kVariants] = {"pipeline", "pipeline_uncached", "overlay_nat", "floor", "floor_nat", "floor_overlay"};
  const int env_of[kVariants] = {0, 1, 2, 0, 2, 2};
  std::vector<double> pipe[kVariants], parse[kVariants];
  auto measured = [&](int v) {
    if (only == "new" || ((v == 2 || v == 4 || v == 5) && !overlay)) return false;
    if (only == "cached") return v == 0;
    if (only == "overlay") return v == 2;
    if (only == "floor") return v >= 3;
    return true;
  };
  for (auto& ep : envs) {
    double w1 = 0, w2 = 0;
    timed(*ep, frames_of(*ep), ports, kPool, &w1, &w2, &dropped);  // warm (and, cached, fill the cache)
  }
  dropped = 0;
  uint64_t per_rep = std::max<uint64_t>(kRing, packets / kRing * kRing);
  uint64_t floor_bad = 0;  // the floors' packets not parsed by the lane or not found established
  for (int rep = 0; rep < 9; rep++)
    for (int v = 0; v < kVariants; v++) {
      if (!measured(v)) continue;
      Env& e = *envs[env_of[v]];
      const bool floor = v >= 3;
      double a = 0, b = 0;
      timed(e, frames_of(e), ports, per_rep, &a, &b, floor ? &floor_bad : &dropped, floor, v == 5);
      pipe[v].push_back(a);
      parse[v].push_back(b);
    }
  if (dropped) fprintf(stderr, "dataplane-bench: %llu measured packets dropped (should be 0)\n", (unsigned long long)dropped);
  if (floor_bad)
    fprintf(stderr, "dataplane-bench: %llu of the floors' packets not established (should be 0)\n",
            (unsigned long long)floor_bad);
  double total = static_cast<double>(per_rep);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // The median of per-repetition ratios a[i]/b[i] (the two variants run
  // back to back in each repetition, so host drift cancels).
  auto paired = [&](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> r;
    for (size_t i = 0; i < a.size() && i < b.size(); i++) r.push_back(a[i] / b[i]);
    return median(r);
  };
  // A paired ratio, or (its partner not measured in this run: --only) JSON's
  // null and the text's "n/a": never a 0 that reads as a measurement.
  auto ratio = [&](const std::vector<double>& a, const std::vector<double>& b) -> std::string {
    if (a.empty() || b.empty()) return g_json ? "null" : "n/a";
    char t[32];
    snprintf(t, sizeof t, g_json ? "%.3f" : "%.3fx", paired(a, b));
    return t;
  };
  // overlay+NAT / firewall were the cloud pipeline to do all the firewall
  // does beyond its floor, and its own work to cost what floor_overlay's
  // does over the floor: pipeline / (pipeline + floor_overlay - floor), per
  // repetition (the three from the same one), the median. (An upper bound
  // only while floor_overlay's own work costs no more than the pipeline's:
  // see the comment at the top.)
  auto overlay_bound = [&]() -> std::string {
    if (pipe[0].empty() || pipe[3].empty() || pipe[5].empty()) return g_json ? "null" : "n/a";
    std::vector<double> r;
    for (size_t i = 0; i < pipe[0].size(); i++) r.push_back(pipe[0][i] / (pipe[0][i] + pipe[5][i] - pipe[3][i]));
    char t[32];
    snprintf(t, sizeof t, g_json ? "%.3f" : "%.3fx", median(r));
    return t;
  };
  for (int v = 0; v < kVariants; v++) {
    if (!measured(v)) continue;
    char extra[320];
    const double parse_mpps = total / median(parse[v]) / 1e6;
    if (v == 2)
      snprintf(extra, sizeof extra,
               g_json ? ", \"vs_firewall\": %s, \"cache_hits\": %llu"
                      : "  (%s the firewall pipeline, same connections, paired; %llu cache hits)",
               ratio(pipe[0], pipe[2]).c_str(), (unsigned long long)envs[2]->st.cache_hits);
    else if (v == 0)
      snprintf(extra, sizeof extra,
               g_json ? ", \"parse_only_mpps\": %.2f, \"vs_uncached\": %s, \"cache_hits\": %llu"
                      : "  (parse alone: %.2f Mpps; %s the uncached pipeline; %llu cache hits)",
               parse_mpps, ratio(pipe[1], pipe[0]).c_str(), (unsigned long long)envs[0]->st.cache_hits);
    else if (v == 3)  // pipeline / floor: the share of the floor's rate the cached pipeline reaches, paired
      snprintf(extra, sizeof extra,
               g_json ? ", \"parse_only_mpps\": %.2f, \"vs_parse\": %s, \"pipeline_vs_floor\": %s, "
                        "\"not_established\": %llu"
                      : "  (parse alone: %.2f Mpps; %s parse alone; the cached pipeline %s this; %llu not established)",
               parse_mpps, ratio(parse[3], pipe[3]).c_str(), ratio(pipe[3], pipe[0]).c_str(), (unsigned long long)floor_bad);
    else if (v == 4)  // floor_nat / floor, and overlay+NAT / floor_nat: what NAT's conntrack costs, and the rest
      snprintf(extra, sizeof extra,
               g_json ? ", \"vs_floor\": %s, \"overlay_vs_floor_nat\": %s, \"not_established\": %llu"
                      : "  (%s the floor; overlay+NAT %s this; %llu not established in the floors)",
               ratio(pipe[3], pipe[4]).c_str(), ratio(pipe[4], pipe[2]).c_str(), (unsigned long long)floor_bad);
    else if (v == 5)  // floor_overlay / floor_nat, overlay+NAT / floor_overlay, and the bound below
      snprintf(extra, sizeof extra,
               g_json ? ", \"vs_floor_nat\": %s, \"vs_floor\": %s, \"overlay_vs_floor_overlay\": %s, "
                        "\"overlay_bound\": %s, \"not_established\": %llu"
                      : "  (%s floor_nat; %s the floor; overlay+NAT %s this; overlay+NAT / firewall %s at the floors' costs; "
                        "%llu not established in the floors)",
               ratio(pipe[4], pipe[5]).c_str(), ratio(pipe[3], pipe[5]).c_str(), ratio(pipe[5], pipe[2]).c_str(),
               overlay_bound().c_str(), (unsigned long long)floor_bad);
    else
      snprintf(extra, sizeof extra, g_json ? ", \"parse_only_mpps\": %.2f" : "  (parse alone: %.2f Mpps)", parse_mpps);
    emit(names[v], nrules, conns, total, pipe[v], extra);
  }

  // New connections: SYNs of connections never seen, each creating an
  // entry (tables, two ct() passes, a commit). The flow cache's lookup must
  // cost this path little.
  if (only.empty() || only == "new") {
    const uint32_t kSyns = 131072;
    std::vector<std::vector<uint8_t>> syn(kSyns);
    std::vector<uint16_t> sp(kSyns, 0);
    for (uint32_t i = 0; i < kSyns; i++) syn[i] = build_frame(conn_frame(200000 + i, false, ctrack::kSyn, 100, 0));
    std::unique_ptr<Env> se[2] = {make_env(true, kSyns + 1024), make_env(false, kSyns + 1024)};
    std::vector<double> sy[2], sparse[2];
    for (int rep = 0; rep < 16; rep++)
      for (int v = 0; v < 2; v++) {
        se[v]->ct->flush();
        double a = 0, b = 0;
        uint64_t d = 0;
        timed(*se[v], syn, sp, kSyns, &a, &b, &d);
        if (d) fprintf(stderr, "dataplane-bench: %llu SYNs dropped (should be 0)\n", (unsigned long long)d);
        if (rep) {  // the first is warm-up
          sy[v].push_back(a);
          sparse[v].push_back(b);
        }
      }
    double sratio = paired(sy[1], sy[0]);
    for (int v = 0; v < 2; v++) {
      char extra[160];
      snprintf(extra, sizeof extra,
               g_json ? ", \"parse_only_mpps\": %.2f, \"vs_uncached\": %.3f" : "  (parse alone: %.2f Mpps; %.3fx uncached)",
               kSyns / median(sparse[v]) / 1e6, v == 0 ? sratio : 1.0);
      emit(v == 0 ? "new_conns" : "new_conns_uncached", nrules, 0, kSyns, sy[v], extra);
    }
    for (auto& e : se) e->pl.reset();
  }
  rte_pktmbuf_free_bulk(ring.data(), static_cast<unsigned>(ring.size()));
  for (auto& e : envs) e->pl.reset();  // rte_acl contexts go before the EAL does
  rte_mempool_free(pool);
  rte_eal_cleanup();
  return 0;
}
