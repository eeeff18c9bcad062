// The tracker: the table, burst pipeline, expiry and events. The protocols'
// state machines are in tcp.h, udp.h and icmp.h (proto.h: what they share).
#include "tracker_impl.h"

#include <cassert>

namespace ctrack {

const char* tcp_state_name(uint8_t s) {
  static const char* const n[] = {"NONE",     "SYN_SENT",  "SYN_RECV",  "ESTABLISHED", "FIN_WAIT",
                                  "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE",       "SYN_SENT2"};
  return s < kTcpStateCount ? n[s] : "?";
}

const char* udp_state_name(uint8_t s) {
  static const char* const n[] = {"UNREPLIED", "REPLIED", "ASSURED"};
  return s < kUdpStateCount ? n[s] : "?";
}

const char* invalid_name(Invalid r) {
  static const char* const n[] = {"none",        "tcp_flags",    "tcp_no_syn",   "tcp_state",    "tcp_seq_over",
                                  "tcp_seq_under", "tcp_ack_over", "tcp_ack_under", "tcp_rst_window", "fragment",
                                  "icmp_no_conn", "icmp_type",    "table_full",   "zone_limit",   "nat_exhausted",
                                  "nat_family",   "nat_clash"};
  static_assert(sizeof(n) / sizeof(n[0]) == static_cast<size_t>(Invalid::kCount));
  return n[static_cast<int>(r)];
}

std::string Key::str() const {
  char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
  int af = family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, src, a, sizeof a);
  inet_ntop(af, dst, b, sizeof b);
  const char* p = proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp"
                : proto == IPPROTO_ICMP ? "icmp" : proto == IPPROTO_ICMPV6 ? "icmpv6" : nullptr;
  char buf[160];
  char pn[8];
  if (!p) {
    snprintf(pn, sizeof pn, "ip%u", proto);
    p = pn;
  }
  if (family == 6)
    snprintf(buf, sizeof buf, "%s [%s]:%u -> [%s]:%u zone %u", p, a, sport, b, dport, zone);
  else
    snprintf(buf, sizeof buf, "%s %s:%u -> %s:%u zone %u", p, a, sport, b, dport, zone);
  return buf;
}

// ------------------------------------------------------------------ Stats

namespace {

// Stats' scalar counters and their names ("new" is `created`, as listings
// have always called it).
constexpr std::pair<const char*, uint64_t Stats::*> kStatFields[] = {
    {"active", &Stats::active},
    {"offloaded", &Stats::offloaded},
    {"lookups", &Stats::lookups},
    {"hits", &Stats::hits},
    {"new", &Stats::created},
    {"related", &Stats::related},
    {"untracked", &Stats::untracked},
    {"table_full", &Stats::table_full},
    {"zone_limited", &Stats::zone_limited},
    {"expired", &Stats::expired},
    {"evicted", &Stats::evicted},
    {"closed", &Stats::closed},
    {"flushed", &Stats::flushed},
    {"reopened", &Stats::reopened},
    {"events", &Stats::events},
    {"events_dropped", &Stats::events_dropped},
    {"events_deferred", &Stats::events_deferred},
    {"hw_folds", &Stats::hw_folds},
    {"probes", &Stats::probes},
};
static_assert(sizeof(kStatFields) / sizeof(kStatFields[0]) * sizeof(uint64_t) +
                      static_cast<size_t>(Invalid::kCount) * sizeof(uint64_t) ==
                  sizeof(Stats),
              "a Stats field without a name");

}  // namespace

Stats& Stats::operator+=(const Stats& o) {
  for (const auto& [name, f] : kStatFields) this->*f += o.*f;
  for (int i = 0; i < static_cast<int>(Invalid::kCount); i++) invalid[i] += o.invalid[i];
  return *this;
}

void Stats::visit(const std::function<void(const std::string&, uint64_t)>& f) const {
  for (const auto& [name, m] : kStatFields) f(name, this->*m);
  for (int i = 1; i < static_cast<int>(Invalid::kCount); i++)
    f(std::string("invalid_") + invalid_name(static_cast<Invalid>(i)), invalid[i]);
}

// ------------------------------------------------------------------- Impl

// ------------------------------------------------------------------ Tracker

namespace {

// key.h: an IPv4 key's address bytes beyond the first four are zero (the
// entry compare reads only the first four). The per-packet entry points
// assert it in debug builds (tracker.h).
[[maybe_unused]] bool ipv4_keys_ok(const Packet* const* pkts, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (pkts[i]->key.family == 4 && detail::key_wide(pkts[i]->key)) return false;
  return true;
}

}  // namespace

Tracker::Tracker(const Config& cfg) : cfg_(cfg), impl_(std::make_unique<Impl>()) {}
Tracker::~Tracker() = default;

sdn::Result<std::unique_ptr<Tracker>> Tracker::create(const Config& cfg) {
  if (cfg.capacity == 0 || cfg.capacity >= kEmpty / 2)
    return sdn::Status::error("conntrack capacity must be between 1 and 2^31");
  if (cfg.event_ring && (cfg.event_ring & (cfg.event_ring - 1)))
    return sdn::Status::error("conntrack event_ring must be a power of two");
  if (cfg.sweep_per_call > 4096 || cfg.early_drop_scan == 0 || cfg.early_drop_scan > 4096)
    return sdn::Status::error("conntrack sweep_per_call must be 0..4096 and early_drop_scan 1..4096");
  if (cfg.nat_caller_bytes > 48 || (cfg.nat_caller_bytes && !cfg.nat))
    return sdn::Status::error("conntrack nat_caller_bytes must be 0..48, and needs nat");
  std::unique_ptr<Tracker> t(new Tracker(cfg));
  Impl& m = *t->impl_;
  m.cfg = cfg;
  m.cap = cfg.capacity;
  if (!m.table.init(cfg.capacity, cfg.nat, cfg.nat_caller_bytes)) return sdn::Status::error("conntrack: cannot allocate table memory");
  m.conns = m.table.conns();
  m.cold = m.table.cold();
  m.nat = m.table.nat();
  m.nat_cold = m.table.nat_cold();
  m.free_bits.assign((m.cap + 63) / 64, ~0ull);
  if (m.cap % 64) m.free_bits.back() = (1ull << (m.cap % 64)) - 1;
  m.free_count = m.cap;
  if (cfg.default_zone_limit || !cfg.zone_limits.empty()) {
    m.zones_limited = true;
    m.zone_count.assign(65536, 0);
    m.zone_limit.assign(65536, cfg.default_zone_limit);
    for (auto [z, l] : cfg.zone_limits) m.zone_limit[z] = l;
  }
  if (cfg.event_ring) {
    m.ring.resize(cfg.event_ring);
    m.ring_mask = cfg.event_ring - 1;
  }
  m.set_timeouts(cfg.timeouts);
  return t;
}

void Tracker::process(const Packet* const* pkts, uint32_t n, uint64_t now_ns, bool commit, CtResult* out,
                      const NatRange* nat, Key* nat_out) {
  assert(ipv4_keys_ok(pkts, n) && "IPv4 key with address bytes beyond the first four (key.h)");
  Impl& m = *impl_;
  uint32_t now = now_ms(now_ns);
  m.acquire();
  m.cur_nat = commit ? nat : nullptr;
  for (uint32_t off = 0; off < n; off += Impl::kChunk) {
    uint32_t k = std::min(Impl::kChunk, n - off);
    m.process_burst(pkts + off, k, now, commit, out + off, nat_out ? nat_out + off : nullptr);
  }
  m.cur_nat = nullptr;
  m.cur_nat_out = nullptr;
  if (m.cfg.sweep_per_call) m.sweep(now, m.cfg.sweep_per_call);
  m.release();
}

void Tracker::lookup(const Packet* const* pkts, uint32_t n, Found* out) {
  assert(ipv4_keys_ok(pkts, n) && "IPv4 key with address bytes beyond the first four (key.h)");
  Impl& m = *impl_;
  m.acquire();
  for (uint32_t off = 0; off < n; off += Impl::kChunk) {
    uint32_t k = std::min(Impl::kChunk, n - off);
    uint32_t h[Impl::kChunk], b[Impl::kChunk], cand[Impl::kChunk];
    uint64_t w[2 * Impl::kChunk];  // each canonical key's ConnKey words (an IPv4 entry's compare)
    Found* f = out + off;
    // Staged as process() is: all bucket loads, then all entry loads.
    for (uint32_t i = 0; i < k; i++) m.stage1(*pkts[off + i], f[i].hash, b[i], f[i].canon, w + 2 * i);
    for (uint32_t i = 0; i < k; i++) h[i] = f[i].hash;
    m.stage2(pkts + off, h, b, cand, k, true);  // (process_found may take tuples out)
    for (uint32_t i = 0; i < k; i++) m.found(*pkts[off + i], cand[i], w + 2 * i, f[i]);
  }
  m.release();
}

uint32_t Tracker::lookup_done(const Packet* const* pkts, uint32_t n, uint64_t now_ns, uint32_t may, const Tags& t,
                              const uint64_t* pkt_ctx, Found* f, CtResult* out, Key* nat_out) {
  static_assert(Impl::kChunk >= 32);
  if (n > 32) [[unlikely]] {  // (the result has a bit a packet)
    lookup(pkts, n, f);
    return 0;
  }
  assert(ipv4_keys_ok(pkts, n) && "IPv4 key with address bytes beyond the first four (key.h)");
  Impl& m = *impl_;
  const uint32_t now = now_ms(now_ns);
  m.acquire();
  uint32_t h[Impl::kChunk], b[Impl::kChunk], cand[Impl::kChunk];
  uint64_t w[2 * Impl::kChunk];
  for (uint32_t i = 0; i < n; i++) m.stage1(*pkts[i], f[i].hash, b[i], f[i].canon, w + 2 * i);
  for (uint32_t i = 0; i < n; i++) h[i] = f[i].hash;
  m.stage2(pkts, h, b, cand, n, nat_out != nullptr);
  // The tags of the likely connections, before the first is read.
  const auto* tags = reinterpret_cast<const uint8_t*>(t.tags);
  auto tag = [&](uint32_t idx) -> const Tag& { return *reinterpret_cast<const Tag*>(tags + size_t{idx} * t.stride); };
  for (uint32_t i = 0; i < n; i++)
    if (cand[i] != kEmpty) __builtin_prefetch(&tag(cand[i] & ~kNatTag));
  uint32_t done = 0, nleft = 0;
  uint32_t left[Impl::kChunk];  // connections of the packets found and left undone, so far
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t c = m.found(*pkts[i], cand[i], w + 2 * i, f[i]);
    if (c == kEmpty) continue;
    const uint32_t idx = c & ~kNatTag;
    if (may >> i & 1) {
      const Tag& tg = tag(idx);
      const uint16_t v = tg.dir[f[i].dir];
      bool ok = tg.gen == t.gen && v != Tag::kNoTag && t.ctx[v] == pkt_ctx[i];
      for (uint32_t x = 0; x < nleft && ok; x++) ok = left[x] != idx;
      if (ok) {
        m.cur_nat_out = nat_out ? nat_out + i : nullptr;
        if (m.fast_hit<true>(c, *pkts[i], f[i].canon, f[i].dir, now, out[i])) {
          done |= 1u << i;
          continue;
        }
      }
    }
    left[nleft++] = idx;
  }
  m.cur_nat_out = nullptr;
  m.st.lookups += static_cast<uint32_t>(__builtin_popcount(done));  // (as process_found() counts its packets)
  if (done && m.cfg.sweep_per_call) m.sweep(now, m.cfg.sweep_per_call);
  m.release();
  return done;
}

void Tracker::process_found(const Packet* const* pkts, const Found* const* found, uint32_t n, uint64_t now_ns,
                            bool commit, CtResult* out, const NatRange* nat, Key* nat_out) {
  assert(ipv4_keys_ok(pkts, n) && "IPv4 key with address bytes beyond the first four (key.h)");
  Impl& m = *impl_;
  uint32_t now = now_ms(now_ns);
  m.acquire();
  m.cur_nat = commit ? nat : nullptr;
  m.st.lookups += n;  // (each packet's stage3 is one)
  m.cur_nat_out = nullptr;
  for (uint32_t i = 0; i < n; i++) {
    if (nat_out) m.cur_nat_out = nat_out + i;
    if (const Found* f = found[i]) {
      // At the same epoch a miss is still one, and a hit needs no second
      // key compare (the slot is the one lookup() matched).
      const bool same = f->epoch == m.changes;
      if (f->conn != kNoConn)  // (first: the flow cache's hits)
        m.stage3(*pkts[i], f->conn | (f->rside ? kNatTag : 0), f->hash, f->canon, now, commit, out[i], same);
      else if (same)
        m.stage3_miss(*pkts[i], f->hash, f->canon, now, commit, out[i]);
      else
        m.stage3(*pkts[i], kEmpty, f->hash, f->canon, now, commit, out[i]);
    } else {
      bool canon;
      uint32_t h = hash_canonical(pkts[i]->key, &canon);
      m.stage3(*pkts[i], kEmpty, h, canon, now, commit, out[i]);
    }
  }
  m.cur_nat = nullptr;
  m.cur_nat_out = nullptr;
  if (m.cfg.sweep_per_call) m.sweep(now, m.cfg.sweep_per_call);
  m.release();
}

uint32_t Tracker::expire(uint64_t now_ns, uint32_t budget) {
  Impl& m = *impl_;
  m.acquire();
  uint32_t n = m.sweep(now_ms(now_ns), std::min(budget, m.cap));
  m.release();
  return n;
}

}  // namespace ctrack
