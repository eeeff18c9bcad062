// The flow cache (Datapath::run's first stage with rx, its lane; or its
// own stage after rx): an established connection's direction that took a
// path through the tables under this rule set takes it again from
// conntrack, without the classifier. A path is recorded after the tables
// (remember_path, from egress), once per (connection, direction).
#pragma once

#include <algorithm>
#include <cstddef>

#include "pipeline/burst.h"
#include "features/nat/rewrite.h"
#include "features/parse/stage.h"

namespace dp {

using stage::PktState;
using stage::kEst;
using stage::kEstRpl;

namespace {

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


// Where a path was taken from (ingress port, VLAN, tunnel): FlowPath keeps
// the three side by side, compared as one word.
static_assert(offsetof(FlowPath, vlan) == offsetof(FlowPath, in_port) + 2 &&
              offsetof(FlowPath, tun_id) == offsetof(FlowPath, in_port) + 4);
inline uint64_t path_from(uint16_t in_port, uint16_t vlan, uint32_t tun_id) {
  return in_port | static_cast<uint64_t>(vlan) << 16 | static_cast<uint64_t>(tun_id) << 32;
}
inline uint64_t path_from(const FlowPath& p) { return path_from(p.in_port, p.vlan, p.tun_id); }

// process_found() writes each of its results whole: an array of them
// without CtResult's member initialisers (a store per field per burst).
union UninitResults {
  UninitResults() {}
  ctrack::CtResult r[kMaxBurst];
};

}  // namespace

inline uint16_t Datapath::record_path(const FlowPath& p) {
  uint32_t h = path_hash(p);
  for (uint32_t k = 0; k < 8; k++) {
    uint32_t slot = (h + k) & (kPaths - 1);
    FlowPath& q = paths_[slot];
    if (q.hash == 0) {
      q = p;
      q.hash = h;
      q.slot = static_cast<uint16_t>(slot);
      path_ctx_[slot] = path_from(p);
      return static_cast<uint16_t>(slot);
    }
    if (q.hash == h && same_path(q, p)) return static_cast<uint16_t>(slot);
  }
  return FlowCacheEntry::kNoTag;
}

// The rules changed: every path is stale.
inline void Datapath::paths_for(const Pipeline& pl) {
  if (paths_gen_ == pl.gen_) return;
  for (FlowPath& fp : paths_) fp.hash = 0;
  paths_gen_ = pl.gen_;
}

// The flow cache (its own stage: rx ran, the lane's is not taken): every
// IP packet rx left for the tables.
inline void Datapath::flow_cache(Burst& b) {
  if (!b.fast || !b.active) return;
  paths_for(b.pl);
  PktState* s = b.s;
  const ctrack::Packet* cpk[kMaxBurst];
  uint32_t idx[kMaxBurst], nc = 0;
  uint32_t watch = 0;
  for (uint32_t i = 0; i < b.n; i++) {
    const CacheUse u = cache_use(b, i);
    if (u == CacheUse::kNone) continue;
    if (u == CacheUse::kWatch) watch |= 1u << i;
    cpk[nc] = &s[i].parsed.ct;
    idx[nc++] = i;
  }
  cache_lookup(b, cpk, idx, nc, 0, watch);
}

// Packet i, which rx put into the tables: what the flow cache does with
// it. kJudge: an IP packet the NIC did not classify. kWatch: an IP packet
// the NIC classified (its table-0 rule came in a mark): the tables run its
// ct(), so it is looked up only to keep a later hit of its connection from
// running ahead of it. Either way keyed in the cache's zone.
inline Datapath::CacheUse Datapath::cache_use(Burst& b, uint32_t i) {
  PktState& p = b.s[i];
  if (p.table != 0 || p.key.kind == 0) return CacheUse::kNone;
  p.parsed.ct.key.zone = b.fast_zone;
  return p.pre >= 0 ? CacheUse::kWatch : CacheUse::kJudge;
}

// The lane (rx and the flow cache in one pass, when the flow cache runs):
// whether packet i is what most traffic is, the frame ctrack's parse lane
// takes (plain IPv4 TCP or UDP), decapsulated or not, inside the ingress
// MTU, owned by this worker. Then rx's part of it is done here: its
// verdict's start, the parse, where it was found; the rest of its state
// only if the flow cache does not judge it (lane_join). False: rx_one
// takes it from the start (and says why, if it is dropped).
template <bool kTunnels>
__attribute__((always_inline)) inline bool Datapath::lane_rx(Burst& b, uint32_t i) {
  const PacketIn& pi = b.in[i];
  PktState& p = b.s[i];
  if (pi.carried || pi.parsed || (pi.has_mark && b.hw && (pi.mark & HwMarkTable::kTag))) return false;
  uint32_t off = 0, end = pi.len, mtu_from = 14, vni = 0;  // mtu_from: where the IP packet the MTU bounds starts
  if (const uint8_t t = kTunnels ? b.pl.decap_on_[pi.port] : 0) {
    const Decap dc = tunnel_decap(t, pi.data, pi.len, b.pl.ov_, &p.decap_counter);
    if (dc.why != DropWhy::kCount) return false;
    if (dc.off) {
      off = dc.off;
      end = dc.end;
      mtu_from = dc.l3;
      vni = dc.vni;
    }
  }
  if (!ctrack::parse_ip4_plain(pi.data + off, end - off, 0, &p.parsed)) return false;
  if (pi.pkt_len - mtu_from > mtu_[pi.port]) return false;  // (rx_parse: oversize, or a reassembled datagram)
  if (steer_ && steer_->owner(p.parsed.ct.key) != self_) return false;
  b.out[i] = stage::kFreshVerdict;
  if (kTunnels) b.out[i].strip = static_cast<uint16_t>(off);
  p.off = static_cast<uint16_t>(off);
  p.tun_id = vni;
  p.df_clear = !(pi.data[off + 14 + 6] & 0x40);
  b.l3len[i] = (off ? end : pi.pkt_len) - off - 14;
  p.parsed.ct.in_port = static_cast<uint8_t>(pi.port);
  if (off) {
    p.parsed.ct.meta |= ctrack::kMetaNoOffload;
    b.st.tunnel[p.decap_counter]++;
  }
  p.parsed.ct.key.zone = b.fast_zone;
  return true;
}

// A lane packet the flow cache did not judge: the rest of rx's state, and
// into the tables.
inline void Datapath::lane_join(Burst& b, uint32_t i) {
  PktState& p = b.s[i];
  stage::begin_state(p, b.fast);
  p.key.kind = p.parsed.ct.key.family;
  p.table = 0;
  b.active++;
}

template <bool kTunnels>
inline void Datapath::rx_cached(Burst& b) {
  paths_for(b.pl);
  uint64_t rx_bytes = 0;
  RxCounts c;
  const size_t dropped_before = frags_->dropped().size();
  const ctrack::Packet* cpk[kMaxBurst];
  uint32_t idx[kMaxBurst], nc = 0;
  // (Locals: the parse's byte stores may alias b's fields.)
  const PacketIn* const in = b.in;
  const uint32_t n = b.n;
  // lane: the packets the lane took (bit i: packet i). The others rx took
  // the whole way (a TCP segment with options, as Linux's timestamps put
  // on every one; a tagged frame; IPv6; a fragment): the cache judges those
  // too, in the same lookup (a connection's packets of both kinds stay in
  // order).
  uint32_t lane = 0, watch = 0;
  static_assert(kMaxBurst <= 32);
  for (uint32_t i = 0; i < n; i++) {
    rx_bytes += in[i].pkt_len;
    if (lane_rx<kTunnels>(b, i)) {
      lane |= 1u << i;
    } else {
      rx_one<kTunnels>(b, i, c);
      const CacheUse u = cache_use(b, i);
      if (u == CacheUse::kNone) continue;
      if (u == CacheUse::kWatch) watch |= 1u << i;
    }
    cpk[nc] = &b.s[i].parsed.ct;
    idx[nc++] = i;
  }
  rx_counted(b, rx_bytes, c, dropped_before);
  cache_lookup(b, cpk, idx, nc, lane, watch);
}

// The flow cache's lookups, cpk[k] of packet idx[k]: established packets
// whose direction has a path under this pipeline go from conntrack straight
// to that path's actions. lane (bit i: packet i): the lane's packets
// (lane_rx), not yet in the tables: what the cache does not judge of them
// joins the tables. The others are in the tables already. watch (bit i):
// looked up only so that no hit of its connection runs ahead of it
// (cache_use's kWatch).
inline void Datapath::cache_lookup(Burst& b, const ctrack::Packet* const* cpk, const uint32_t* idx, uint32_t nc,
                                   uint32_t lane, uint32_t watch) {
  PktState* s = b.s;
  const PacketIn* in = b.in;
  if (!nc) return;
  ctrack::Tracker::Found found[kMaxBurst];
  // The lane's packets of the common case (an established connection's
  // segment in its window, its path cached from where it came) are done in
  // the lookup's own pass (lookup_done): conntrack's result, then the
  // path's verdict here. The rest as lookup() leaves them: below.
  UninitResults results;
  uint32_t may = 0;  // (bit k: cpk[k])
  uint64_t ctx[kMaxBurst];
  for (uint32_t k = 0; k < nc; k++) {
    const uint32_t i = idx[k];
    may |= ((lane & ~watch) >> i & 1) << k;
    ctx[k] = path_from(in[i].port, s[i].parsed.vlan, s[i].tun_id);
  }
  // (A tracker with NAT: a done packet's rewrite is beside its tag,
  // nat_entry(); conntrack hands out no tuple for it.)
  const uint32_t done = ct_->lookup_done(
      cpk, nc, b.now_ns, may,
      {reinterpret_cast<const FlowCacheEntry*>(tags_), b.pl.gen_, path_ctx_.data(), tag_stride_}, ctx, found,
      results.r, nullptr);
  if (done) {
    PathsUsed used;
    uint64_t hits = 0;
    const bool ne = nat_entries_;
    for (uint32_t d = done; d; d &= d - 1) {
      const uint32_t k = static_cast<uint32_t>(__builtin_ctz(d));
      const ctrack::Tracker::Found& f = found[k];
      hits += take_path(b, idx[k], paths_[tag(f.conn).dir[f.dir]], results.r[k], f, true, nullptr,
                        ne ? &nat_entry(f.conn).rw[f.dir] : nullptr, used);
    }
    b.st.cache_hits += hits;
    count_paths(b, used);
  }
  // Hits, unless another packet of the burst that takes the full pipeline
  // belongs to the same connection: conntrack sees a connection's packets
  // in burst order either way. hp and hf: the hits' packets and lookups,
  // as process_found() takes them.
  uint32_t hit[kMaxBurst], nh = 0, busy[kMaxBurst], nb = 0;
  const FlowPath* path[kMaxBurst];
  const ctrack::Packet* hp[kMaxBurst];
  const ctrack::Tracker::Found* hf[kMaxBurst];
  bool mixed = false;  // the hits' paths name more than one ct() group (usually not)
  // Not judged here: the tables, with the lookup's result.
  auto to_tables = [&](uint32_t i, const ctrack::Tracker::Found& f) {
    if (lane >> i & 1) lane_join(b, i);
    s[i].have_found = true;
    s[i].found = f;
  };
  for (uint32_t k = 0; k < nc; k++) {
    if (done >> k & 1) continue;
    uint32_t i = idx[k];
    const FlowPath* fp = nullptr;
    const uint32_t conn = found[k].conn;
    if (watch >> i & 1) {
      if (conn != ctrack::kNoConn) busy[nb++] = conn;
      continue;
    }
    if (conn != ctrack::kNoConn) {
      const FlowCacheEntry& e = tag(conn);
      uint16_t slot = e.dir[found[k].dir];
      if (e.gen == b.pl.gen_ && slot != FlowCacheEntry::kNoTag) {
        if (path_ctx_[slot] == ctx[k]) fp = &paths_[slot];
      }
    }
    if (fp) {
      mixed |= nh != 0 && fp->ct_group != path[0]->ct_group;
      path[nh] = fp;
      hp[nh] = cpk[k];
      hf[nh] = &found[k];
      hit[nh++] = i;
    } else {
      if (conn != ctrack::kNoConn) busy[nb++] = conn;
      to_tables(i, found[k]);
    }
  }
  if (nb) {
    uint32_t keep = 0;
    for (uint32_t h = 0; h < nh; h++) {
      bool clash = false;
      for (uint32_t x = 0; x < nb && !clash; x++) clash = busy[x] == hf[h]->conn;
      if (!clash) {
        path[keep] = path[h];
        hp[keep] = hp[h];
        hf[keep] = hf[h];
        hit[keep++] = hit[h];
      } else {
        to_tables(hit[h], *hf[h]);
      }
    }
    nh = keep;
  }
  if (!nh) return;
  if (!mixed) {  // (usually: one ct() group for every hit)
    cache_hits(b, b.acts[path[0]->ct_act], hp, hf, path, hit, nh, lane);
    return;
  }
  // Conntrack for the hits, in burst order, grouped as conntrack() groups
  // (by Action::ct_group, commit and NAT range: a connection that expired
  // is made again here, and must be translated as its ct() would). As
  // there, a hit waits for a later group while an earlier hit of its
  // connection is in a group not yet run.
  bool taken[kMaxBurst] = {};
  for (uint32_t h0 = 0; h0 < nh; h0++) {
    if (taken[h0]) continue;
    const Action& ca = b.acts[path[h0]->ct_act];
    const ctrack::Packet* gp[kMaxBurst];
    const ctrack::Tracker::Found* gf[kMaxBurst];
    const FlowPath* gpath[kMaxBurst];
    uint32_t ghit[kMaxBurst], m = 0, wait[kMaxBurst], nw = 0;
    for (uint32_t h = h0; h < nh; h++) {
      if (taken[h]) continue;
      bool waits = path[h]->ct_group != path[h0]->ct_group;
      for (uint32_t w = 0; w < nw && !waits; w++) waits = wait[w] == hf[h]->conn;
      if (waits) {
        wait[nw++] = hf[h]->conn;
        continue;
      }
      taken[h] = true;
      gp[m] = hp[h];
      gf[m] = hf[h];
      gpath[m] = path[h];
      ghit[m++] = hit[h];
    }
    cache_hits(b, ca, gp, gf, gpath, ghit, m, lane);
  }
}

// One group of hits (one commit and NAT range): their conntrack, then
// each one's path; or, where conntrack judged it otherwise than the path
// was taken, the full pipeline with that result. ghit: the packets'
// indices in the burst; lane: cache_lookup's.
inline void Datapath::cache_hits(Burst& b, const Action& ca, const ctrack::Packet* const* gp,
                                 const ctrack::Tracker::Found* const* gf, const FlowPath* const* gpath,
                                 const uint32_t* ghit, uint32_t m, uint32_t lane) {
  const ctrack::NatRange* nat = ca.nat.kind != ctrack::NatKind::kNone ? &ca.nat : nullptr;
  UninitResults results;
  ctrack::CtResult* res = results.r;
  ctrack::Key nat_to[kMaxBurst];  // (asked for only of a tracker with NAT: no other translates)
  ct_->process_found(gp, gf, m, b.now_ns, ca.commit, res, nat, ct_->config().nat ? nat_to : nullptr);
  uint64_t hits = 0;
  PathsUsed used;
  for (uint32_t j = 0; j < m; j++)
    hits += take_path(b, ghit[j], *gpath[j], res[j], *gf[j], lane >> ghit[j] & 1, &nat_to[j], nullptr, used);
  b.st.cache_hits += hits;
  count_paths(b, used);
}

// Hit i (found as f, conntrack's result r): its path's verdict (true). Or,
// where conntrack judged it otherwise than the path was taken, the full
// pipeline with that result as its first ct()'s (false). in_lane: one of
// the lane's packets (never in the tables). If r.nat, the translation:
// nat_to, r's tuple; or (a lookup's done packet, which is the lane's) rw,
// its direction's rewrite.
[[gnu::always_inline]] inline bool Datapath::take_path(Burst& b, uint32_t i, const FlowPath& fp,
                                                       const ctrack::CtResult& r, const ctrack::Tracker::Found& f,
                                                       bool in_lane, const ctrack::Key* nat_to,
                                                       const nat::PlainRewrite* rw, PathsUsed& used) {
  PktState& p = b.s[i];
  if (r.state != fp.state || r.conn != f.conn) {
    if (in_lane) lane_join(b, i);
    p.have_ct = true;
    p.first = r;
    if (r.nat) p.nat_to = nat_to ? *nat_to : nat::plain_rewrite_key(*rw, p.parsed.ct.key);
    return false;
  }
  if (in_lane) {  // out of the stages (never in the tables: not counted in b.active)
    p.table = -1;
    p.cacheable = false;
  }
  if (r.nat) {
    if (nat_to) translate(b, i, *nat_to, in_lane);
    else translate_plain(b, i, *rw);
  }
  Verdict& v = b.out[i];
  v.ct_state = r.state;
  v.mark = fp.mark;
  PathCount& pc = path_counts_[fp.slot];
  if (pc.packets == 0) used.slot[used.n++] = fp.slot;
  pc.packets++;
  pc.bytes += b.in[i].pkt_len;
  if (fp.out_port >= 0) v.out_port = fp.out_port;
  else b.drop(i, DropWhy::kRule);
  if (fp.encap) {
    v.encap = fp.encap;
    // The lookup hashed the very tuple the source port is of, in the
    // cache's zone: its hash in zone 0 is one XOR away (zone0_hash_fix),
    // where the hash is CRC32C.
    if constexpr (ctrack::detail::kHashAffine) v.encap_sport = encap_sport_of_hash(f.hash ^ b.pl.sport_fix_);
    else v.encap_sport = b.fast_zone == 0 ? encap_sport_of_hash(f.hash) : encap_sport(p.parsed.ct.key);
  }
  if (!in_lane) {
    p.cached = &fp;
    p.cacheable = false;
    b.done(i);
  }
  return true;
}

// The rules' counters: once per path the hits took (exact when run() returns).
inline void Datapath::count_paths(Burst& b, const PathsUsed& used) {
  for (uint32_t u = 0; u < used.n; u++) {
    const FlowPath& fp = paths_[used.slot[u]];
    PathCount& pc = path_counts_[used.slot[u]];
    for (uint32_t r = 0; r < fp.nrules; r++) {
      b.counters[fp.rules[r]].packets += pc.packets;
      b.counters[fp.rules[r]].bytes += pc.bytes;
    }
    pc = PathCount{};
  }
}

// After the tables (egress calls it per packet, in the loop it runs
// anyway): an established packet's path (its one ct() in the
// cache's zone, the rules it hit, its verdict) goes into the flow cache,
// under its connection's direction.
[[gnu::always_inline]] inline void Datapath::remember_path(Burst& b, uint32_t i) {
  const Pipeline& pl = b.pl;
  Verdict* out = b.out;
  {
    PktState& p = b.s[i];
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
      fp.ct_group = b.acts[p.first_act].ct_group;
      fp.out_port = out[i].out_port;
      fp.mark = out[i].mark;
      fp.nrules = p.nhits;
      for (uint32_t r = 0; r < p.nhits; r++) fp.rules[r] = p.hits[r];
      uint16_t slot = record_path(fp);
      if (slot != FlowCacheEntry::kNoTag) {
        FlowCacheEntry& e = tag(p.first.conn);
        if (e.gen != pl.gen_) e = FlowCacheEntry{pl.gen_, {FlowCacheEntry::kNoTag, FlowCacheEntry::kNoTag}};
        // With NAT, the direction's rewrite beside the tag, valid while the
        // tag is: a translated connection's packets all leave translated
        // (conntrack gives each its side, fixed when the connection was
        // made), and the lane's are IPv4 TCP or UDP, as the connection's
        // are if they are the lane's. A rewrite that is not one side's
        // address and port (none ctrack makes) leaves the direction uncached.
        bool ok = true;
        if (p.first.nat && nat_entries_)
          ok = nat::plain_rewrite(p.parsed.ct.key, p.nat_to, &nat_entry(p.first.conn).rw[p.first.dir]);
        if (ok) e.dir[p.first.dir] = slot;
      }
    }
  }
}

}  // namespace dp
