// The tracker's control side: listings, flush, stats, timeouts, events
// out, the offload hand-off, invariants (tracker_impl.h).
#include "tracker_impl.h"

namespace ctrack {

void Tracker::for_each(uint64_t now_ns, const std::function<void(const ConnInfo&)>& fn, int zone) {
  for (uint32_t at = 0; at < impl_->cap;) at = for_each_from(now_ns, at, 1024, fn, zone);
}

uint32_t Tracker::for_each_from(uint64_t now_ns, uint32_t start, uint32_t slots,
                                const std::function<void(const ConnInfo&)>& fn, int zone) {
  Impl& m = *impl_;
  uint32_t now = now_ms(now_ns);
  constexpr uint32_t kHold = 1024;
  std::vector<ConnInfo> batch;
  batch.reserve(std::min(kHold, slots));
  uint32_t stop = start + std::min(slots, m.cap - std::min(start, m.cap));
  for (uint32_t base = start; base < stop; base += kHold) {
    batch.clear();
    m.acquire();
    uint32_t end = std::min(stop, base + kHold);
    for (uint32_t i = base; i < end; i++) {
      const Conn& c = m.conns[i];
      if (!(c.flags & detail::kAlive) || (zone >= 0 && c.key.zone != zone)) continue;
      ConnInfo ci;
      ci.handle = i;
      ci.orig = m.orig_key(i);
      ci.proto_state = c.state;
      ci.state = c.key.proto == IPPROTO_TCP   ? tcp_state_name(c.state)
                 : c.key.proto == IPPROTO_UDP ? std::string("UDP_") + udp_state_name(c.state)
                 : (c.flags & detail::kSeenReply) ? "REPLIED" : "UNREPLIED";
      ci.seen_reply = c.flags & detail::kSeenReply;
      ci.assured = c.flags & detail::kAssured;
      ci.offloaded = c.flags & detail::kOffloaded;
      Event ev{};
      Impl::fill_state(c, ev);
      for (int d = 0; d < 2; d++) {
        ci.packets[d] = detail::conn_packets(c, m.cold[i], d);
        ci.bytes[d] = detail::conn_bytes(c, m.cold[i], d);
        ci.tcp[d] = ev.tcp[d];
      }
      if (m.nat && detail::nat_translated(m.nat[i])) {
        ci.nat = static_cast<NatKind>(detail::nat_kind(m.nat[i]));
        ci.reply = m.nat_target(i, kNatOrigRev);
      }
      ci.age_ms = static_cast<uint32_t>(now - m.cold[i].created);
      ci.timeout_ms = static_cast<int32_t>(c.expires - now);
      batch.push_back(std::move(ci));
    }
    m.release();
    for (const auto& ci : batch) fn(ci);
  }
  return std::max(stop, start);
}

uint64_t Tracker::flush(int zone) {
  Impl& m = *impl_;
  uint64_t n = 0;
  constexpr uint32_t kHold = 4096;
  for (uint32_t base = 0; base < m.cap; base += kHold) {
    m.acquire();
    const uint32_t now = 0;  // only used to reschedule a deferred destroy: "at once"
    uint32_t end = std::min(m.cap, base + kHold);
    for (uint32_t i = base; i < end; i++) {
      Conn& c = m.conns[i];
      if ((c.flags & detail::kAlive) && (zone < 0 || c.key.zone == zone) && m.destroy(i, kWhyFlushed, now)) n++;
    }
    m.release();
  }
  return n;
}

Stats Tracker::stats() const {
  Impl& m = *impl_;
  m.acquire();
  Stats s = m.st;
  m.release();
  return s;
}

void Tracker::set_timeouts(const Timeouts& t) {
  Impl& m = *impl_;
  m.acquire();
  m.set_timeouts(t);
  m.release();
  cfg_.timeouts = t;
}

Tracker::CallerLines Tracker::nat_caller_lines() const {
  const Impl& m = *impl_;
  if (!m.nat || !cfg_.nat_caller_bytes) return {};
  return {m.nat.base + sizeof(detail::NatHot), uint32_t{1} << m.nat.shift};
}

size_t Tracker::memory_needed(const Config& cfg) {
  size_t cap = cfg.capacity;
  size_t b = cap * (sizeof(Conn) + sizeof(detail::ConnCold)) + std::max<size_t>(2, (cap * (cfg.nat ? 2 : 1) + 8) / 9) * sizeof(detail::Bucket) +
             (cap + 63) / 64 * 8;
  if (cfg.nat) b += cap * ((size_t{1} << detail::nat_stride_shift(cfg.nat_caller_bytes)) + sizeof(detail::NatCold));
  if (cfg.default_zone_limit || !cfg.zone_limits.empty()) b += 2 * 65536 * sizeof(uint32_t);
  b += static_cast<size_t>(cfg.event_ring) * sizeof(Event);
  return b;
}

size_t Tracker::memory_bytes() const {
  const Impl& m = *impl_;
  size_t b = static_cast<size_t>(m.cap) * (sizeof(Conn) + sizeof(detail::ConnCold)) + m.table.bytes();
  b += (m.zone_count.size() + m.zone_limit.size()) * sizeof(uint32_t);
  b += m.ring.size() * sizeof(Event);
  return b;
}

void Tracker::set_nat_filter(NatTupleOk ok, const void* ctx) {
  Impl& m = *impl_;
  m.acquire();
  m.nat_ok = ok;
  m.nat_ok_ctx = ctx;
  m.release();
}

uint32_t Tracker::poll_events(Event* out, uint32_t max) {
  Impl& m = *impl_;
  if (m.ring.empty()) return 0;
  uint32_t t = m.ring_tail.load(std::memory_order_relaxed);
  uint32_t h = m.ring_head.load(std::memory_order_acquire);
  uint32_t n = std::min(max, h - t);
  for (uint32_t i = 0; i < n; i++) out[i] = m.ring[(t + i) & m.ring_mask];
  m.ring_tail.store(t + n, std::memory_order_release);
  return n;
}

namespace {
bool same_conn(const Conn& c, const detail::ConnCold& x, const Key& orig) {
  if (!(c.flags & detail::kAlive)) return false;
  Key ck;
  canonicalize(orig, &ck);
  return detail::conn_matches(c, x, ck, true);
}
}  // namespace

bool Tracker::set_offloaded(uint32_t handle, const Key& orig, bool on) {
  Impl& m = *impl_;
  if (handle >= m.cap) return false;
  m.acquire();
  Conn& c = m.conns[handle];
  bool ok = same_conn(c, m.cold[handle], orig);
  if (ok && on != ((c.flags & detail::kOffloaded) != 0)) {
    c.flags = static_cast<uint8_t>(on ? (c.flags | detail::kOffloaded) : (c.flags & ~detail::kOffloaded));
    if (c.key.proto == IPPROTO_TCP) {
      if (on) {
        // The NIC advances SEQ/ACK/window from here on without telling us,
        // so the packets it hands back (FIN, RST, refused segments) are
        // checked liberally.
        c.td_flags[0] |= kTcpHwLiberal;
        c.td_flags[1] |= kTcpHwLiberal;
        c.td_flags[0] &= static_cast<uint8_t>(~kTcpResyncAsked);
      } else {
        // Back in software with a window the NIC moved on: forget it and
        // learn it again from the next packets, as Linux does for a
        // connection leaving its flowtable (flow_offload_fixup_tcp).
        for (int d = 0; d < 2; d++) {
          c.td_flags[d] &= static_cast<uint8_t>(~(kTcpHwLiberal | kTcpResyncAsked));
          c.td_maxwin[d] = 0;
        }
      }
    }
    if (on) m.st.offloaded++;
    else m.st.offloaded--;
  }
  if (ok && !on) {
    // Out of the NIC while alive: its next packet offers it again (see
    // raise_established). A connection that ends raises no more.
    c.flags &= static_cast<uint8_t>(~detail::kEvented);
  }
  m.release();
  return ok;
}

bool Tracker::snapshot(uint32_t handle, const Key& orig, Event* out) {
  Impl& m = *impl_;
  if (handle >= m.cap) return false;
  m.acquire();
  const Conn& c = m.conns[handle];
  bool ok = same_conn(c, m.cold[handle], orig);
  if (ok) {
    *out = Event{};
    out->type = EventType::kEstablished;
    out->l4_state = c.state;
    out->conn = handle;
    out->orig = orig;
    Impl::fill_state(c, *out);
    m.fill_nat(handle, *out);
    out->last_dir = (c.last_index >> 3) & 1;
    out->last_end = c.last_end;
    out->last_seq = c.last_end;
    out->last_ack = out->tcp[out->last_dir].maxack;
    out->last_win = c.last_win;
  }
  m.release();
  return ok;
}

bool Tracker::resync_done(uint32_t handle, const Key& orig) {
  Impl& m = *impl_;
  if (handle >= m.cap) return false;
  m.acquire();
  Conn& c = m.conns[handle];
  bool ok = same_conn(c, m.cold[handle], orig);
  if (ok) c.td_flags[0] &= static_cast<uint8_t>(~kTcpResyncAsked);
  m.release();
  return ok;
}

bool Tracker::set_no_offload(uint32_t handle, const Key& orig) {
  Impl& m = *impl_;
  if (handle >= m.cap) return false;
  m.acquire();
  Conn& c = m.conns[handle];
  bool ok = same_conn(c, m.cold[handle], orig);
  if (ok) c.flags |= detail::kNoOffload;
  m.release();
  return ok;
}

bool Tracker::fold_hw_counters(uint32_t handle, const Key& orig, const uint64_t packets[2], const uint64_t bytes[2],
                               uint64_t last_seen_ns) {
  Impl& m = *impl_;
  if (handle >= m.cap) return false;
  m.acquire();
  Conn& c = m.conns[handle];
  bool ok = same_conn(c, m.cold[handle], orig);
  if (ok) {
    for (int d = 0; d < 2; d++) {
      detail::ConnCold& x = m.cold[handle];
      detail::set_counts(c, x, d, detail::conn_packets(c, x, d) + packets[d], detail::conn_bytes(c, x, d) + bytes[d]);
    }
    uint32_t seen = now_ms(last_seen_ns);
    uint32_t t = c.key.proto == IPPROTO_TCP   ? m.times.tcp[c.state]
                 : c.key.proto == IPPROTO_UDP ? m.times.udp[c.state]
                 : (c.key.proto == IPPROTO_ICMP || c.key.proto == IPPROTO_ICMPV6) ? m.times.icmp
                                                                                   : m.times.other;
    if (static_cast<int32_t>(seen + t - c.expires) > 0) c.expires = seen + t;
    m.st.hw_folds++;
  }
  m.release();
  return ok;
}

sdn::Status Tracker::check_invariants() const {
  Impl& m = *impl_;
  m.acquire();
  std::string err;
  uint64_t alive = 0, offl = 0, natted = 0;
  std::vector<uint32_t> zc(m.zones_limited ? 65536 : 0, 0);
  for (uint32_t i = 0; i < m.cap && err.empty(); i++) {
    const Conn& c = m.conns[i];
    if (!(c.flags & detail::kAlive)) continue;
    alive++;
    if (c.flags & detail::kOffloaded) offl++;
    if (m.zones_limited) zc[c.key.zone]++;
    const Key k = m.table.conn_key(i);
    Key ck;
    canonicalize(k, &ck);
    if (!keys_equal(ck, k)) err = "entry " + std::to_string(i) + " key is not canonical";
    else if (m.table.find(k, hash_key(k)) != i) err = "entry " + std::to_string(i) + " not findable";
    else if (detail::conn_translated(c) != (m.nat && detail::nat_translated(m.nat[i])))
      err = "entry " + std::to_string(i) + " says it is translated and its NAT entry does not, or the other way";
    else if (m.nat && detail::nat_translated(m.nat[i])) {
      natted++;
      const Key rk = m.table.nat_key(i);
      canonicalize(rk, &ck);
      const uint8_t kind = detail::nat_kind(m.nat[i]);
      if (kind != static_cast<uint8_t>(NatKind::kSrc) && kind != static_cast<uint8_t>(NatKind::kDst))
        err = "entry " + std::to_string(i) + " has no NAT kind";
      else if (rk.family != k.family) err = "entry " + std::to_string(i) + " reply tuple of another family";
      else if (!keys_equal(ck, rk)) err = "entry " + std::to_string(i) + " reply key is not canonical";
      else if (m.table.find(rk, hash_key(rk)) != (i | kNatTag))
        err = "entry " + std::to_string(i) + " not findable under its reply tuple";
    }
  }
  uint64_t slots = 0;
  for (uint32_t b = 0; b < m.table.nbuckets() && err.empty(); b++) {
    const detail::Bucket& B = m.table.buckets()[b];
    for (int j = 0; j < detail::kSlots; j++) {
      uint32_t idx = B.idx[j];
      if (idx == kEmpty) continue;
      slots++;
      const uint32_t ci = idx & ~kNatTag;
      if (ci >= m.cap || !(m.conns[ci].flags & detail::kAlive) || ((idx & kNatTag) && !(m.nat && detail::nat_translated(m.nat[ci])))) {
        err = "bucket " + std::to_string(b) + " points at a free entry";
        break;
      }
      uint32_t h = hash_key(m.table.slot_key(idx));
      uint32_t b1 = m.table.b1(h);
      if (B.sig[j] != detail::Table::sig(h) || (b != b1 && b != m.table.alt(b1, detail::Table::sig(h))))
        err = "bucket " + std::to_string(b) + " holds an entry that does not hash there";
      else if (((B.second >> j) & 1) != (b != b1))
        err = "bucket " + std::to_string(b) + " has a wrong second-bucket bit";
    }
  }
  uint64_t nfree = 0;
  for (uint32_t i = 0; i < m.cap && err.empty(); i++) {
    bool is_free = (m.free_bits[i >> 6] >> (i & 63)) & 1;
    nfree += is_free;
    if (is_free == ((m.conns[i].flags & detail::kAlive) != 0)) err = "free bitmap disagrees with entry " + std::to_string(i);
    // (A free entry's NatHot family 0: its old reply tuple matches no packet.)
    else if (is_free && m.nat && m.nat[i].rkey.family != 0) err = "free entry " + std::to_string(i) + " keeps a reply tuple";
  }
  if (err.empty() && nfree != m.free_count) err = "free count mismatch";
  if (err.empty() && m.n_reserved != 0) err = "reserved entries leaked";
  if (err.empty() && alive != m.st.active) err = "active count " + std::to_string(m.st.active) + " != " + std::to_string(alive);
  if (err.empty() && slots != alive + natted)
    err = "index holds " + std::to_string(slots) + " entries for " + std::to_string(alive) + " (" +
          std::to_string(natted) + " translated)";
  if (err.empty() && alive + nfree != m.cap) err = "live + free != capacity";
  if (err.empty() && offl != m.st.offloaded) err = "offloaded count mismatch";
  if (err.empty() && m.zones_limited && zc != m.zone_count) err = "zone counts mismatch";
  m.release();
  return err.empty() ? sdn::Status() : sdn::Status::error(err);
}

}  // namespace ctrack
