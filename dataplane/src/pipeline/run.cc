// Per packet: everything in Datapath::run. Nothing here allocates, throws,
// logs or calls virtually; the rules come compiled (Pipeline::build, in
// compile.cc).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_acl.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "acl.h"
#include "dataplane/pipeline.h"
#include "fragments.h"
#include "interp.h"
#include "nat_rewrite.h"
#include "net/bytes.h"
#include "features/tunnels.h"

namespace dp {

WorkerStats WorkerStats::snapshot() const {
  WorkerStats s;
  auto ld = [](const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
#define DP_LOAD(name, what) s.name = ld(name);
  DP_WORKER_COUNTERS(DP_LOAD)
#undef DP_LOAD
  for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) s.parse_drop[i] = ld(parse_drop[i]);
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) s.drop[i] = ld(drop[i]);
  for (int i = 0; i < static_cast<int>(Tunnel::kCount); i++) s.tunnel[i] = ld(tunnel[i]);
  return s;
}

// ------------------------------------------------------------------ datapath

namespace {

struct PktState {
  ctrack::Parsed parsed;  // of the frame at in.data + off
  uint16_t off;           // a tunnel's decap: the outer headers' length
  uint8_t decap_counter;  // with off: that tunnel's decap counter (Tunnel)
  uint32_t tun_id;        // the VNI it came in with, 0: none
  ClassKey key;   // the classifier's key; key.kind 4, 6, or 0 for other (ARP, ND, non-IP)
  bool df_clear;  // IPv4 without DF: may leave in fragments
  int8_t table;  // current table, -1 when done
  uint8_t ct_state;
  uint32_t rule;        // matched rule index
  int32_t pre;          // table-0 rule the NIC matched (mark), or -1
  int32_t ct_zone;      // zone a ct() found this packet's connection in, -1 none; a drop: -2 commit
                        // failed (ct_full), -3 nat_exhausted, -4 nat_family
  uint8_t resume;       // action index to resume at after ct
  // The path, for the flow cache.
  bool cacheable;
  bool have_ct;         // the flow cache ran this packet's first ct(): `first` is its result
  bool have_found;      // the flow cache looked it up: `found` saves its first ct() the lookup
  ctrack::Tracker::Found found;
  bool rule_drop;       // ended by a drop action
  bool hw_marked;       // the NIC's mark chose its output or its table-0 rule (noted for live traces)
  uint8_t why;          // PacketNote::why
  const FlowPath* cached;  // the flow cache's path it took, or null
  uint8_t ncts, nhits;
  ctrack::CtResult first;
  bool first_commit;
  uint32_t first_act;    // the first ct()'s action (index into the pipeline's actions)
  bool natted;           // a ct() rewrote it to its connection's translated tuple
  ctrack::Key nat_to;    // with have_ct and first.nat: the tuple the flow cache's ct() gave
  uint32_t hits[kMaxTables];
};

constexpr uint8_t kEst = ctrack::kCtTrk | ctrack::kCtEst;
constexpr uint8_t kEstRpl = ctrack::kCtTrk | ctrack::kCtEst | ctrack::kCtRpl;

// Bytes after the Ethernet header and up to two VLAN tags (what the MTU
// bounds), for frames the parser did not see (the NIC classified them).
inline uint32_t l3_bytes(const uint8_t* d, uint32_t len, uint32_t pkt_len) {
  uint32_t off = 14;
  for (int t = 0; t < 2 && off <= len; t++) {
    uint16_t et = net::get16(d + off - 2);
    if (et != 0x8100 && et != 0x88A8) break;
    off += 4;
  }
  return pkt_len > off ? pkt_len - off : 0;
}

// The length an IP header claims for its packet (parse gave kIpLen).
inline uint32_t ip_claimed(const uint8_t* d, uint32_t len, const ctrack::Parsed& pp) {
  const uint8_t* ip = d + pp.l3_off;
  if (pp.ethertype == 0x0800 && pp.l3_off + 4u <= len) return net::get16(ip + 2);
  if (pp.ethertype == 0x86DD && pp.l3_off + 6u <= len) return 40u + net::get16(ip + 4);
  return 0;
}

inline uint32_t path_hash(const FlowPath& p) {
  uint32_t h = 2166136261u;
  auto mix = [&](uint32_t v) { h = (h ^ v) * 16777619u; };
  mix(p.in_port | static_cast<uint32_t>(p.vlan) << 16);
  mix(p.tun_id);
  mix(p.encap);
  mix(p.state | static_cast<uint32_t>(p.nrules) << 8 | static_cast<uint32_t>(p.commit) << 16);
  mix(p.ct_act);
  mix(static_cast<uint16_t>(p.out_port));
  mix(p.mark);
  for (uint32_t i = 0; i < p.nrules; i++) mix(p.rules[i]);
  return h | 1;  // never 0 (empty)
}

inline bool same_path(const FlowPath& a, const FlowPath& b) {
  if (a.in_port != b.in_port || a.vlan != b.vlan || a.tun_id != b.tun_id || a.encap != b.encap ||
      a.state != b.state || a.nrules != b.nrules ||
      a.commit != b.commit || a.ct_act != b.ct_act || a.out_port != b.out_port || a.mark != b.mark)
    return false;
  for (uint32_t i = 0; i < a.nrules; i++)
    if (a.rules[i] != b.rules[i]) return false;
  return true;
}

}  // namespace

Datapath::Datapath(unsigned worker, ctrack::Tracker* tracker, WorkerStats* stats)
    : worker_(worker),
      ct_(tracker),
      st_(stats),
      frags_(std::make_unique<FragTable>()),
      cache_(tracker->capacity()),
      paths_(kPaths) {
  std::fill(std::begin(mtu_), std::end(mtu_), uint16_t{0xFFFF});
}

Datapath::~Datapath() = default;

// Held fragments the table gave up on: received (counted now, as they
// leave) and dropped by reason.
void Datapath::count_dropped_fragments(size_t from) {
  const auto& d = frags_->dropped();
  for (size_t k = from; k < d.size(); k++) {
    st_->rx_packets++;
    st_->rx_bytes += d[k].bytes;
    st_->drop[static_cast<int>(d[k].why)]++;
  }
}

void Datapath::expire_fragments(uint64_t now_ns) {
  const size_t before = frags_->dropped().size();
  frags_->expire(now_ns);
  count_dropped_fragments(before);
}

uint16_t Datapath::record_path(const FlowPath& p) {
  uint32_t h = path_hash(p);
  for (uint32_t k = 0; k < 8; k++) {
    uint32_t slot = (h + k) & (kPaths - 1);
    FlowPath& q = paths_[slot];
    if (q.hash == 0) {
      q = p;
      q.hash = h;
      return static_cast<uint16_t>(slot);
    }
    if (q.hash == h && same_path(q, p)) return static_cast<uint16_t>(slot);
  }
  return FlowCacheEntry::kNone;
}

// One burst through the stages. Each stage reads and writes the Burst; a
// packet leaves the stages when its `table` is -1 (judged, dropped or
// handed off), and `active` counts those still going.
struct Datapath::Burst {
  // Only the fields above `active` are given: the per-packet state is
  // written by ingress() (begin_packet) before any stage reads it, so it
  // is not cleared per burst (value-initialising it was a 12.8 KB memset
  // for every burst).
  Burst(Pipeline& p, const PacketIn* i, uint32_t k, uint64_t now, Verdict* o, WorkerStats& ws, const CompiledRule* cr,
        const Action* ac, RuleCounters* ctr, const HwMarkTable* marks, bool f, uint16_t fz)
      : pl(p), in(i), n(k), now_ns(now), out(o), st(ws), crules(cr), acts(ac), counters(ctr), hw(marks), fast(f),
        fast_zone(fz) {
#ifndef NDEBUG
    // Debug builds (the tests') poison it: a stage that reads what ingress
    // did not write reads garbage, and the differential tests see it.
    memset(static_cast<void*>(s), 0xA5, sizeof s);
    memset(l3len, 0xA5, sizeof l3len);
    memset(here, 0xA5, sizeof here);
    memset(ctq, 0xA5, sizeof ctq);
#endif
  }
  Pipeline& pl;
  const PacketIn* in;
  uint32_t n;
  uint64_t now_ns;
  Verdict* out;
  WorkerStats& st;
  const CompiledRule* crules;
  const Action* acts;
  RuleCounters* counters;  // this worker's, of pl
  const HwMarkTable* hw;
  bool fast;               // the flow cache runs (on, and the rules use one zone)
  uint16_t fast_zone;
  uint32_t active = 0;
  PktState s[kMaxBurst];
  uint32_t l3len[kMaxBurst];  // the bytes the MTU bounds
  // The table being run: its packets, and those waiting at a ct().
  uint32_t here[kMaxBurst], nhere = 0;
  uint32_t ctq[kMaxBurst], nct = 0;

  void drop(uint32_t i, DropWhy why) {
    st.drop[static_cast<int>(why)]++;
    s[i].why = 1 + static_cast<uint8_t>(why);
  }
  void done(uint32_t i) {  // judged: out of the tables
    s[i].table = -1;
    active--;
  }
  // The executor's hooks of the action walk (interp.h): the verdict, and a
  // ct() queues the packet for the burst's conntrack.
  struct Exec {
    Burst& b;
    uint32_t i;
    void set_mark(const Action& a) { b.out[i].mark = a.mark; }
    bool encap(const Action& a) {
      b.out[i].encap = a.encap;
      b.out[i].encap_sport = encap_sport(b.s[i].parsed.ct.key);
      return true;
    }
    Step ct(const Action&, uint32_t a) {
      b.s[i].resume = static_cast<uint8_t>(a);
      b.ctq[b.nct++] = i;
      return Step::kWait;
    }
    void output(const Action& a) {
      b.out[i].out_port = static_cast<int16_t>(a.port);
      b.done(i);
    }
    void drop(const Action&) {
      b.drop(i, DropWhy::kRule);
      b.s[i].rule_drop = true;
      b.done(i);
    }
    void go(const Action& a) { b.s[i].table = static_cast<int8_t>(a.table); }
  };
};

void Datapath::run(Pipeline& pl, const PacketIn* in, uint32_t n, uint64_t now_ns, Verdict* out, PacketNote* notes) {
  Burst b{pl,
          in,
          n,
          now_ns,
          out,
          *st_,
          pl.crules_.data(),
          pl.acts_.data(),
          &pl.counters_[static_cast<size_t>(worker_) * pl.crules_.size()],
          marks_ ? marks_->load(std::memory_order_acquire) : nullptr,
          cache_on_ && pl.fast_zone_ >= 0,
          static_cast<uint16_t>(pl.fast_zone_)};
  ingress(b, notes != nullptr);
  if (b.fast && b.active) flow_cache(b);
  classifier_keys(b);
  // Tables in order; every jump goes forward, so one pass ends it.
  for (int t = 0; t <= pl.max_table_ && b.active; t++) {
    classify(b, t);
    actions(b);
    if (b.nct) conntrack(b);
  }
  finish(b);
  if (notes) note(b, notes);
}

// A packet's state before the stages have judged it.
inline void begin_packet(PktState& p, bool fast) {
  p.off = 0;
  p.tun_id = 0;
  p.table = -1;
  p.ct_state = 0;
  p.pre = -1;
  p.ct_zone = -1;
  p.cacheable = fast;
  p.have_ct = false;
  p.have_found = false;
  p.rule_drop = false;
  p.hw_marked = false;
  p.why = 0;
  p.cached = nullptr;
  p.natted = false;
  p.df_clear = false;
  p.ncts = p.nhits = 0;
}

// Parse, the hardware-mark skip, the ingress MTU and connection ownership.
// (Counters are summed in locals and stored once: a per-packet increment of
// one memory word is a dependency chain through store forwarding.)
inline void Datapath::ingress(Burst& b, bool noting) {
  const PacketIn* in = b.in;
  Verdict* out = b.out;
  WorkerStats& st = b.st;
  uint64_t rx_bytes = 0, handed = 0, handed_bytes = 0;
  const size_t dropped_before = frags_->dropped().size();
  uint32_t firsts[kMaxBurst], nfirst = 0;  // identifications of the first fragments judged here
  for (uint32_t i = 0; i < b.n; i++) {
    out[i] = Verdict{-1, 0, -1, 0, 0, 0, 0, false, 0, 0, FragNote{}};
    rx_bytes += in[i].pkt_len;
    PktState& p = b.s[i];
    begin_packet(p, b.fast);
    // The frame's bytes the parse may read (a decapsulated frame: up to the
    // outer datagram's end) and where the IP packet the MTU bounds starts.
    uint32_t flen = in[i].len, mtu_from = 0;
    if (const uint8_t tunnels = b.pl.decap_on_[in[i].port]) {
      const Decap dc = tunnel_decap(tunnels, in[i].data, in[i].len, b.pl.ov_, &p.decap_counter);
      if (dc.why != DropWhy::kCount) {
        b.drop(i, dc.why);
        continue;
      }
      if (dc.off) {  // a tunnel to us (0: another frame, for the tables as it is)
        p.off = dc.off;
        p.tun_id = dc.vni;
        out[i].strip = dc.off;
        flen = dc.end;
        mtu_from = dc.l3;  // the outer IP packet, whatever tag came before it
      }
    }
    // The NIC's marks and parse are of the outer frame: a decapsulated one
    // takes neither.
    if (p.off == 0 && in[i].has_mark && b.hw && (in[i].mark & HwMarkTable::kTag)) {
      uint32_t idx = in[i].mark & ~HwMarkTable::kTag;
      if (idx & HwMarkTable::kRule) {
        idx &= ~HwMarkTable::kRule;
        if (idx < b.pl.table0_by_id_.size()) p.pre = b.pl.table0_by_id_[idx];
        if (p.pre >= 0) st.hw_marked++;
        p.hw_marked = noting && p.pre >= 0;
      } else if (idx < b.hw->out_port.size() && b.hw->out_port[idx] >= 0) {
        out[i].out_port = b.hw->out_port[idx];
        out[i].mark = in[i].mark;
        b.l3len[i] = l3_bytes(in[i].data, in[i].len, in[i].pkt_len);
        st.hw_marked++;
        p.hw_marked = noting;
        continue;
      }
    }
    ctrack::Drop d;
    if (in[i].parsed && p.off == 0) {  // the NIC stage's parse
      p.parsed = *in[i].parsed;
      d = in[i].parse_drop;
    } else {
      d = ctrack::parse_packet(in[i].data + p.off, flen - p.off, 0, &p.parsed);
    }
    const uint16_t mtu = mtu_[in[i].port];
    if (d != ctrack::Drop::kNone) {
      // A frame as long as the port takes (the MTU, less up to two VLAN
      // tags the port's frame limit may count) whose IP length goes past
      // it and past the MTU: the port cut an oversize packet short
      // (af_packet truncates to its ring's frame size), not a malformed
      // header. A short frame claiming more is malformed.
      if (d == ctrack::Drop::kIpLen && p.off == 0 && in[i].pkt_len - p.parsed.l3_off + 8u >= mtu &&
          ip_claimed(in[i].data, in[i].len, p.parsed) > mtu) {
        b.drop(i, DropWhy::kRxOversize);
      } else {
        st.parse_drop[static_cast<int>(d)]++;
        p.why = static_cast<uint8_t>(PacketNote::kParseDrop | static_cast<uint8_t>(d));
      }
      continue;
    }
    b.l3len[i] = (p.off ? flen : in[i].pkt_len) - p.off - p.parsed.l3_off;
    const uint8_t* ip = in[i].data + p.off + p.parsed.l3_off;
    p.df_clear = p.parsed.kind == ctrack::L3Kind::kIp && p.parsed.ct.key.family == 4 && !(ip[6] & 0x40);
    if (in[i].pkt_len - (p.off ? mtu_from : p.parsed.l3_off) > mtu &&  // the frame as the port took it
        !(reasm_in_[in[i].port] && p.off == 0 && p.df_clear)) {         // (or as its kernel put it together)
      b.drop(i, DropWhy::kRxOversize);
      continue;
    }
    if (p.parsed.frag != ctrack::Parsed::kFragNone) {
      FragNote fn = in[i].frag;
      if (!fn.valid) {
        DropWhy why = DropWhy::kCount;
        const FragTable::Out o = frags_->on_fragment(p.parsed, ip, in[i].port, p.tun_id, in[i].cookie,
                                                     in[i].pkt_len, b.now_ns, &fn, &why);
        if (o == FragTable::Out::kHeld) {  // counted when it leaves the table
          out[i].held = true;
          handed++;
          handed_bytes += in[i].pkt_len;
          continue;
        }
        if (o == FragTable::Out::kDrop) {
          b.drop(i, why);
          continue;
        }
      }
      ctrack::Packet& cp = p.parsed.ct;
      if (p.parsed.frag == ctrack::Parsed::kFragLater) {  // its first fragment's ports
        cp.key.sport = fn.sport;
        cp.key.dport = fn.dport;
        cp.tcp_flags = fn.tcp_flags;
      } else if (fn.total && cp.key.proto == IPPROTO_TCP) {  // the segment's whole length
        cp.payload_len = static_cast<uint16_t>(fn.total - (p.parsed.frag_len - cp.payload_len));
      }
      out[i].frag = fn;
    }
    p.parsed.ct.in_port = static_cast<uint8_t>(in[i].port);
    if (p.off) p.parsed.ct.meta |= ctrack::kMetaNoOffload;
    if (p.parsed.kind == ctrack::L3Kind::kIp) {
      if (steer_) {
        unsigned owner = steer_->owner(p.parsed.ct.key);
        if (owner != self_) {
          out[i].handoff = static_cast<int8_t>(owner);
          handed++;
          handed_bytes += in[i].pkt_len;
          continue;  // the owner decapsulates (and counts) it again
        }
      }
      if (p.parsed.frag == ctrack::Parsed::kFragFirst) {
        firsts[nfirst++] = p.parsed.frag_id;
      } else if (p.parsed.frag == ctrack::Parsed::kFragLater && nfirst &&
                 std::find(firsts, firsts + nfirst, p.parsed.frag_id) != firsts + nfirst) {
        frags_->defer(in[i].cookie, out[i].frag);  // after its first's connection is made
        out[i].held = true;
        handed++;
        handed_bytes += in[i].pkt_len;
        continue;
      }
      p.key.kind = p.parsed.ct.key.family;
    } else {
      p.key.kind = 0;
      p.key.other_type = p.parsed.kind == ctrack::L3Kind::kNd ? kEthNd : p.parsed.ethertype;
    }
    if (p.off) st.tunnel[p.decap_counter]++;  // here: by the worker that keeps it
    p.table = 0;
    b.active++;
  }
  // Counted where they are judged (the owner), not where they came in
  // (held fragments: when they leave the table).
  st.rx_packets += b.n - handed;
  st.rx_bytes += rx_bytes - handed_bytes;
  for (uint32_t i = 0; i < b.n; i++) st.handoff_out += out[i].handoff >= 0;
  count_dropped_fragments(dropped_before);
}

// The flow cache: established packets whose direction has a path under
// this pipeline go from conntrack straight to that path's actions.
inline void Datapath::flow_cache(Burst& b) {
  PktState* s = b.s;
  const PacketIn* in = b.in;
  if (paths_gen_ != b.pl.gen_) {  // the rules changed: every path is stale
    for (FlowPath& fp : paths_) fp.hash = 0;
    paths_gen_ = b.pl.gen_;
  }
  const ctrack::Packet* cpk[kMaxBurst];
  ctrack::Tracker::Found found[kMaxBurst];
  uint32_t idx[kMaxBurst], nc = 0;
  for (uint32_t i = 0; i < b.n; i++) {
    if (s[i].table != 0 || s[i].pre >= 0 || s[i].key.kind == 0) continue;
    s[i].parsed.ct.key.zone = b.fast_zone;
    cpk[nc] = &s[i].parsed.ct;
    idx[nc++] = i;
  }
  if (nc) ct_->lookup(cpk, nc, found);
  // Each connection's cache entry is a likely cache miss: ask for them all
  // before the first is read.
  for (uint32_t k = 0; k < nc; k++)
    if (found[k].conn != ctrack::kNoConn) __builtin_prefetch(&cache_[found[k].conn]);
  // Hits, unless another packet of the burst that takes the full pipeline
  // belongs to the same connection: conntrack sees a connection's packets
  // in burst order either way.
  uint32_t hit[kMaxBurst], nh = 0, busy[kMaxBurst], nb = 0;
  const FlowPath* path[kMaxBurst];
  for (uint32_t k = 0; k < nc; k++) {
    uint32_t i = idx[k];
    const FlowPath* fp = nullptr;
    const uint32_t conn = found[k].conn;
    if (conn != ctrack::kNoConn) {
      const FlowCacheEntry& e = cache_[conn];
      uint16_t slot = e.path[found[k].dir];
      if (e.gen == b.pl.gen_ && slot != FlowCacheEntry::kNone) {
        const FlowPath& c = paths_[slot];
        if (c.in_port == in[i].port && c.vlan == s[i].parsed.vlan && c.tun_id == s[i].tun_id) fp = &c;
      }
    }
    if (fp) {
      path[nh] = fp;
      hit[nh++] = k;
    } else {
      if (conn != ctrack::kNoConn) busy[nb++] = conn;
      s[i].have_found = true;
      s[i].found = found[k];
    }
  }
  uint32_t keep = 0;
  for (uint32_t h = 0; h < nh; h++) {
    bool clash = false;
    for (uint32_t x = 0; x < nb && !clash; x++) clash = busy[x] == found[hit[h]].conn;
    if (!clash) {
      path[keep] = path[h];
      hit[keep++] = hit[h];
    } else {
      s[idx[hit[h]]].have_found = true;
      s[idx[hit[h]]].found = found[hit[h]];
    }
  }
  nh = keep;
  // Conntrack for the hits, in burst order, grouped as conntrack() groups
  // (by commit and NAT range: a connection that expired is made again here,
  // and must be translated as its ct() would).
  bool taken[kMaxBurst] = {};
  for (uint32_t h0 = 0; h0 < nh; h0++) {
    if (taken[h0]) continue;
    const Action& ca = b.acts[path[h0]->ct_act];
    const ctrack::Packet* hp[kMaxBurst];
    const ctrack::Tracker::Found* hf[kMaxBurst];
    uint32_t which[kMaxBurst], m = 0;
    for (uint32_t h = h0; h < nh; h++) {
      if (taken[h]) continue;
      if (path[h]->ct_act != path[h0]->ct_act) {  // (usually one ct() action for all: no compare)
        const Action& x = b.acts[path[h]->ct_act];
        if (x.commit != ca.commit || memcmp(&x.nat, &ca.nat, sizeof x.nat) != 0) continue;
      }
      taken[h] = true;
      hp[m] = cpk[hit[h]];
      hf[m] = &found[hit[h]];
      which[m++] = h;
    }
    const ctrack::NatRange* nat = ca.nat.kind != ctrack::NatKind::kNone ? &ca.nat : nullptr;
    ctrack::CtResult res[kMaxBurst];
    ctrack::Key nat_to[kMaxBurst];
    ct_->process_found(hp, hf, m, b.now_ns, ca.commit, res, nat, nat_to);
    for (uint32_t j = 0; j < m; j++) {
      const FlowPath& fp = *path[which[j]];
      uint32_t i = idx[hit[which[j]]];
      PktState& p = s[i];
      if (res[j].state != fp.state || res[j].conn != hf[j]->conn) {
        // Not the state the path was taken in: the full pipeline goes on
        // with this result as its first ct()'s.
        p.have_ct = true;
        p.first = res[j];
        if (res[j].nat) p.nat_to = nat_to[j];
        continue;
      }
      if (res[j].nat) translate(b, i, nat_to[j]);
      b.out[i].ct_state = res[j].state;
      b.out[i].mark = fp.mark;
      for (uint32_t r = 0; r < fp.nrules; r++) {
        b.counters[fp.rules[r]].packets++;
        b.counters[fp.rules[r]].bytes += in[i].pkt_len;
      }
      if (fp.out_port >= 0) b.out[i].out_port = fp.out_port;
      else b.drop(i, DropWhy::kRule);
      if (fp.encap) {
        b.out[i].encap = fp.encap;
        b.out[i].encap_sport = encap_sport(p.parsed.ct.key);
      }
      p.cached = &fp;
      p.cacheable = false;
      b.done(i);
      b.st.cache_hits++;
    }
  }
}

// The classifier keys, for what the flow cache did not take.
inline void Datapath::classifier_keys(Burst& b) {
  for (uint32_t i = 0; i < b.n && b.active; i++) {
    PktState& p = b.s[i];
    if (p.table != 0 || p.key.kind == 0) continue;
    p.key.fill(p.parsed, b.in[i].port, p.tun_id);
  }
}

// Table t's lookup for the packets at it: rte_acl per (family, protocol
// class), a short scan for ARP/ND/other, or the NIC's table-0 match (mark).
// Leaves each packet's rule + 1 (0: no match) and the table's packets in
// `here`.
inline void Datapath::classify(Burst& b, int t) {
  PktState* s = b.s;
  const Pipeline::Table* tbl = b.pl.tables_[static_cast<size_t>(t)].get();
  const bool flags_table = (b.pl.tcp_flag_tables_ >> t) & 1;
  const uint8_t* dk[2 * kPcNum][kMaxBurst];
  uint32_t ik[2 * kPcNum][kMaxBurst], rk[2 * kPcNum][kMaxBurst], nk[2 * kPcNum] = {};
  b.nhere = 0;
  for (uint32_t i = 0; i < b.n; i++) {
    if (s[i].table != t) continue;
    b.here[b.nhere++] = i;
    s[i].rule = 0;
    if (flags_table) s[i].cacheable = false;
    if (s[i].pre >= 0) {  // the NIC did this table's lookup
      s[i].rule = static_cast<uint32_t>(s[i].pre) + 1;
      s[i].pre = -1;
      continue;
    }
    if (!tbl) continue;
    if (s[i].key.kind == 4) {
      int c = proto_class(s[i].key.k4.proto);
      if (!tbl->v4[c]) continue;
      dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].key.k4);
      ik[c][nk[c]++] = i;
    } else if (s[i].key.kind == 6) {
      int c = kPcNum + proto_class(s[i].key.k6.proto);
      if (!tbl->v6[c - kPcNum]) continue;
      dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].key.k6);
      ik[c][nk[c]++] = i;
    } else {
      s[i].rule = match_other(*tbl, b.in[i].port, s[i].key.other_type, s[i].parsed.vlan, s[i].tun_id);
    }
  }
  for (int c = 0; c < 2 * kPcNum; c++) {
    if (!nk[c]) continue;
    rte_acl_ctx* ctx = c < kPcNum ? tbl->v4[c] : tbl->v6[c - kPcNum];
    rte_acl_classify(ctx, dk[c], rk[c], nk[c], 1);
    for (uint32_t k = 0; k < nk[c]; k++) s[ik[c][k]].rule = rk[c][k];
  }
}

// The matched rules' hits counted, and their actions run up to a ct() (the
// packet waits in `ctq`) or a terminal action.
inline void Datapath::actions(Burst& b) {
  PktState* s = b.s;
  b.nct = 0;
  uint32_t last = UINT32_MAX;  // rule hits, summed over runs of the same rule
  uint64_t lp = 0, lb = 0;
  for (uint32_t k = 0; k < b.nhere; k++) {
    uint32_t i = b.here[k];
    if (s[i].rule == 0) {
      b.drop(i, DropWhy::kNoMatch);
      s[i].cacheable = false;
      b.done(i);
      continue;
    }
    uint32_t r = --s[i].rule;
    if (r != last) {
      if (last != UINT32_MAX) {
        b.counters[last].packets += lp;
        b.counters[last].bytes += lb;
      }
      last = r;
      lp = lb = 0;
    }
    lp++;
    lb += b.in[i].pkt_len;
    if (s[i].nhits < kMaxTables) s[i].hits[s[i].nhits++] = r;
    if (!b.crules[r].offload) s[i].cacheable = false;
    exec(b, i, 0, false);
  }
  if (last != UINT32_MAX) {
    b.counters[last].packets += lp;
    b.counters[last].bytes += lb;
  }
}

// Packet i's rule's actions from action `from` on (after_ct: from the ct()
// at `from`, which the burst's conntrack just ran), through the one action
// walk (interp.h) with the executor's hooks.
inline void Datapath::exec(Burst& b, uint32_t i, uint32_t from, bool resumed) {
  const CompiledRule& r = b.crules[b.s[i].rule];
  Burst::Exec x{b, i};
  if (resumed) after_ct(b.acts + r.first, r.count, from, x);
  else run_actions(b.acts + r.first, r.count, from, x);
}

// A translated connection's packet: its bytes, then what the classifier
// reads in later tables. The tracker keeps being asked with the tuple the
// packet came in with (a second ct() finds the connection as the first did).
inline void Datapath::translate(Burst& b, uint32_t i, const ctrack::Key& to) {
  PktState& p = b.s[i];
  nat::rewrite(b.in[i].data + p.off, b.in[i].len - p.off, p.parsed, to);
  p.natted = true;
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
  if (p.table < 0) return;  // the flow cache judged it: no table reads it
  p.key.tuple(to);
}

// Conntrack for the packets waiting at a ct(), grouped by (zone, commit, nat);
// non-IP packets stay untracked. Then each goes on: to the ct's table, or
// the rest of its rule's actions.
inline void Datapath::conntrack(Burst& b) {
  PktState* s = b.s;
  const uint32_t nct = b.nct;
  const uint32_t* ctq = b.ctq;
  const ctrack::Packet* cpk[kMaxBurst];
  const ctrack::Tracker::Found* cfd[kMaxBurst];
  ctrack::CtResult res[kMaxBurst];
  ctrack::Key nat_to[kMaxBurst];
  bool done[kMaxBurst] = {};
  for (uint32_t a = 0; a < nct; a++) {
    if (done[a]) continue;
    const CompiledRule& lr = b.crules[s[ctq[a]].rule];
    const uint32_t lead_act = lr.first + s[ctq[a]].resume;
    const Action& lead = b.acts[lead_act];
    uint32_t ng = 0, nall = 0, all[kMaxBurst];
    bool any_found = false;
    for (uint32_t x = a; x < nct; x++) {
      if (done[x]) continue;
      const Action& act = b.acts[b.crules[s[ctq[x]].rule].first + s[ctq[x]].resume];
      if (act.zone != lead.zone || act.commit != lead.commit || memcmp(&act.nat, &lead.nat, sizeof act.nat) != 0)
        continue;
      done[x] = true;
      PktState& p = s[ctq[x]];
      if (p.key.kind == 0) continue;
      all[nall++] = ctq[x];
      if (p.have_ct) continue;  // the flow cache ran this ct() already
      p.parsed.ct.key.zone = act.zone;
      // A second ct() in the zone of the first finds the same connection:
      // its counters take the packet once.
      if (p.ct_zone == act.zone) p.parsed.ct.meta |= ctrack::kMetaCounted;
      else p.parsed.ct.meta &= static_cast<uint8_t>(~ctrack::kMetaCounted);
      // The flow cache's lookup, for the first ct() (in its zone).
      cfd[ng] = p.have_found && p.ncts == 0 && act.zone == b.fast_zone ? &p.found : nullptr;
      any_found |= cfd[ng] != nullptr;
      cpk[ng++] = &p.parsed.ct;
    }
    const ctrack::NatRange* nat = lead.nat.kind != ctrack::NatKind::kNone ? &lead.nat : nullptr;
    if (ng && any_found) ct_->process_found(cpk, cfd, ng, b.now_ns, lead.commit, res, nat, nat_to);
    else if (ng) ct_->process(cpk, ng, b.now_ns, lead.commit, res, nat, nat_to);
    for (uint32_t g = 0, k = 0; g < nall; g++) {
      PktState& p = s[all[g]];
      ctrack::CtResult r;
      if (p.have_ct) {
        r = p.first;
        p.have_ct = false;
        if (r.nat && !p.natted) translate(b, all[g], p.nat_to);
      } else {
        if (res[k].nat && !p.natted) translate(b, all[g], nat_to[k]);
        r = res[k++];
      }
      p.ct_state = r.state;
      if (++p.ncts == 1) {
        p.first = r;
        p.first_commit = lead.commit;
        p.first_act = lead_act;
        if (lead.zone != b.fast_zone) p.cacheable = false;
      } else {
        p.cacheable = false;
      }
      // A new entry (or one reused for a new connection) has no path yet.
      if (r.conn != ctrack::kNoConn && (r.state & ctrack::kCtNew)) cache_[r.conn].gen = 0;
      if (r.conn != ctrack::kNoConn) p.ct_zone = lead.zone;
      if (lead.commit && (r.reason == ctrack::Invalid::kTableFull || r.reason == ctrack::Invalid::kZoneLimit))
        p.ct_zone = -2;  // commit failed under full_policy: drop
      if (r.reason == ctrack::Invalid::kNatExhausted) p.ct_zone = -3;
      if (r.reason == ctrack::Invalid::kNatFamily) p.ct_zone = -4;
      p.key.ct(r.state, lead.zone);
    }
  }
  for (uint32_t a = 0; a < nct; a++) {
    uint32_t i = ctq[a];
    PktState& p = s[i];
    b.out[i].ct_state = p.ct_state;
    if (p.ct_zone <= -2) {
      b.drop(i, p.ct_zone == -2   ? DropWhy::kCtFull
                : p.ct_zone == -3 ? DropWhy::kNatExhausted
                                  : DropWhy::kNatFamily);
      p.cacheable = false;
      b.done(i);
      continue;
    }
    exec(b, i, p.resume, true);
  }
}

// After the tables: a jump past the last table matched nothing; an
// established packet's path goes into the flow cache; the egress MTU.
inline void Datapath::finish(Burst& b) {
  const Pipeline& pl = b.pl;
  Verdict* out = b.out;
  for (uint32_t i = 0; i < b.n; i++) {
    PktState& p = b.s[i];
    if (p.table > pl.max_table_) {
      b.drop(i, DropWhy::kNoMatch);
      p.table = -1;
      p.cacheable = false;
    }
    if (p.cacheable && p.ncts == 1 && p.first.conn != ctrack::kNoConn &&
        (p.first.state == kEst || p.first.state == kEstRpl) && (out[i].out_port >= 0 || p.rule_drop)) {
      FlowPath fp;
      fp.in_port = b.in[i].port;
      fp.vlan = p.parsed.vlan;
      fp.tun_id = p.tun_id;
      fp.encap = out[i].encap;
      fp.state = p.first.state;
      fp.commit = p.first_commit;
      fp.ct_act = p.first_act;
      fp.out_port = out[i].out_port;
      fp.mark = out[i].mark;
      fp.nrules = p.nhits;
      for (uint32_t r = 0; r < p.nhits; r++) fp.rules[r] = p.hits[r];
      uint16_t slot = record_path(fp);
      if (slot != FlowCacheEntry::kNone) {
        FlowCacheEntry& e = cache_[p.first.conn];
        if (e.gen != pl.gen_) e = FlowCacheEntry{pl.gen_, {FlowCacheEntry::kNone, FlowCacheEntry::kNone}};
        e.path[p.first.dir] = slot;
      }
    }
    if (out[i].out_port >= 0 && out[i].encap) {
      // The outer IPv4 packet: the inner frame and the outer headers but Ethernet.
      const Pipeline::Encap& e = pl.encaps_[out[i].encap - 1u];
      if (b.in[i].pkt_len - p.off + (e.len - net::kEthLen) > mtu_[out[i].out_port]) {
        b.drop(i, DropWhy::kEncapMtu);
        out[i].out_port = -1;
      } else {
        b.st.tunnel[e.counter]++;
      }
    } else if (out[i].out_port >= 0 && b.l3len[i] > mtu_[out[i].out_port]) {
      if (p.df_clear) {  // a router's job: IPv4 without DF leaves in fragments
        out[i].frag_mtu = mtu_[out[i].out_port];
        out[i].l2_len = static_cast<uint8_t>(p.parsed.l3_off);
      } else {
        b.drop(i, DropWhy::kTxMtu);
        out[i].out_port = -1;
      }
    }
  }
}

// What happened to each packet, for a live trace.
void Datapath::note(const Burst& b, PacketNote* notes) const {
  for (uint32_t i = 0; i < b.n; i++) {
    const PktState& p = b.s[i];
    PacketNote& o = notes[i];
    o.why = p.why;
    o.cached = p.cached != nullptr;
    o.hw_marked = p.hw_marked;
    o.nrules = 0;
    if (p.cached) {
      for (uint32_t r = 0; r < p.cached->nrules; r++) o.rule_ids[o.nrules++] = b.crules[p.cached->rules[r]].id;
    } else {
      for (uint32_t r = 0; r < p.nhits; r++) o.rule_ids[o.nrules++] = b.crules[p.hits[r]].id;
    }
  }
}

}  // namespace dp
