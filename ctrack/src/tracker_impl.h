// Internal to ctrack: the tracker's state (Tracker::Impl: the table,
// the free-entry bitmap, the event ring, the timeouts) and its per-packet
// work, shared by tracker.cc (the burst pipeline, expiry) and
// tracker_control.cc (listings, flush, the offload hand-off, invariants).
#pragma once

#include "ctrack/tracker.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>

#include "icmp.h"
#include "proto.h"
#include "table.h"
#include "tcp.h"
#include "udp.h"

namespace ctrack {

using detail::Conn;
using detail::ConnCold;
using detail::kEmpty;
using detail::kNatTag;
using detail::NatCold;
using detail::NatHot;

namespace impl {

using proto::Outcome;
using proto::Verdict;
using proto::tcp::after;
using proto::tcp::seg_end;
using proto::tcp::sES;
using proto::tcp::sFW;
using proto::tcp::sCL;

// Destroy reasons in events.
enum : uint8_t { kWhyExpired = 0, kWhyClosed = 1, kWhyFlushed = 2, kWhyEvicted = 3, kWhyReopened = 4 };

inline uint32_t now_ms(uint64_t ns) { return static_cast<uint32_t>(ns / 1000000u); }

// CtResult's bytes 0-7 but conn's (fast_hit writes them as one word):
// state, no change, no reason, dir.
constexpr uint64_t result_word(uint8_t state, uint8_t dir) {
  static_assert(offsetof(CtResult, conn) == 0 && offsetof(CtResult, state) == 4 && offsetof(CtResult, changed) == 5 &&
                offsetof(CtResult, reason) == 6 && offsetof(CtResult, dir) == 7 && offsetof(CtResult, nat) == 8 &&
                sizeof(CtResult::conn) == 4);
  static_assert(std::endian::native == std::endian::little);
  return uint64_t{state} << 32 | uint64_t{dir} << 56;
}

}  // namespace impl
using namespace impl;  // this folder's own names

struct Tracker::Impl {
  static constexpr uint32_t kChunkMax = 32;
  Config cfg;
  detail::Table table;
  Conn* conns = nullptr;
  ConnCold* cold = nullptr;  // conns[i]'s other 56 bytes (table.h)
  detail::NatLines nat;  // with Config::nat
  NatCold* nat_cold = nullptr;
  // The burst's NAT range and where translated tuples go (process()).
  const NatRange* cur_nat = nullptr;
  Key* cur_nat_out = nullptr;
  Tracker::NatTupleOk nat_ok = nullptr;  // set_nat_filter
  const void* nat_ok_ctx = nullptr;
  uint32_t cap = 0;
  // Free entries: one bit each (so allocation never reads the entry, and the
  // entries a burst will take can be prefetched before they are written).
  std::vector<uint64_t> free_bits;
  uint32_t free_count = 0;
  uint32_t alloc_word = 0;
  // Entries taken from the bitmap ahead of a burst's misses, prefetched.
  uint32_t reserved[kChunkMax];
  uint32_t n_reserved = 0, next_reserved = 0;
  uint32_t sweep_cursor = 0;
  // Entries put in or taken out of the index so far (the epoch a Found
  // keeps): at the same count, a miss lookup() saw is still one, and a hit
  // is still the same live connection (every removal goes through
  // free_conn, and a key never changes while its entry is alive).
  uint32_t changes = 0;
  Stats st;
  std::atomic<bool> lock{false};

  bool zones_limited = false;
  std::vector<uint32_t> zone_count, zone_limit;

  // Event ring: single producer (the worker, under the lock), single consumer.
  std::vector<Event> ring;
  uint32_t ring_mask = 0;
  std::atomic<uint32_t> ring_head{0}, ring_tail{0};

  proto::Times times;  // the timeouts in ms

  void set_timeouts(const Timeouts& T) {
    cfg.timeouts = T;
    times.set(T);
  }

  void acquire() {
    while (lock.exchange(true, std::memory_order_acquire))
      while (lock.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void release() { lock.store(false, std::memory_order_release); }

  Key orig_key(uint32_t idx) const {
    const Key k = table.conn_key(idx);
    return (conns[idx].flags & detail::kOrigCanon) ? k : k.reversed();
  }

  // ---- events
  uint32_t ring_space() const {
    return ring.empty() ? 0 : static_cast<uint32_t>(ring.size()) - (ring_head.load(std::memory_order_relaxed) -
                                                                     ring_tail.load(std::memory_order_acquire));
  }
  // What an event or snapshot says about a connection's TCP state.
  static void fill_state(const Conn& c, Event& e) {
    e.in_port[0] = c.in_port[0];
    e.in_port[1] = c.in_port[1];
    e.last_index = c.last_index & 7;
    if (c.key.proto != IPPROTO_TCP) {  // none (its entry may keep a former TCP connection's)
      e.tcp[0] = e.tcp[1] = TcpDirState{};
      return;
    }
    for (int d = 0; d < 2; d++) {
      int r = !d;
      e.tcp[d] = TcpDirState{c.td_end[d], c.td_maxend[d], c.td_maxwin[d], detail::td_scale(c, d), c.td_flags[d], 0};
      // See TcpDirState::maxack.
      uint32_t lower = c.td_maxend[r] - c.td_maxwin[d];
      e.tcp[d].maxack = !(c.td_flags[r] & kTcpDataUnacked) || after(lower, c.td_end[r]) ? c.td_end[r] : lower;
    }
  }

  bool push_event(EventType t, uint32_t idx, const Conn& c, const Packet* p, uint8_t dir, uint8_t why) {
    if (ring.empty()) return false;
    if (ring_space() == 0) {
      st.events_dropped++;
      return false;
    }
    uint32_t h = ring_head.load(std::memory_order_relaxed);
    Event& e = ring[h & ring_mask];
    e.type = t;
    e.l4_state = c.state;
    e.last_dir = dir;
    e.reason = why;
    e.conn = idx;
    e.orig = orig_key(idx);
    fill_state(c, e);
    fill_nat(idx, e);
    if (p) {
      e.last_seq = p->seq;
      e.last_ack = p->ack;
      e.last_end = seg_end(*p);
      e.last_win = p->win;
      e.l2_len = p->l2_len;
    } else {
      e.last_seq = e.last_ack = e.last_end = 0;
      e.last_win = 0;
      e.l2_len = 0;
    }
    ring_head.store(h + 1, std::memory_order_release);
    st.events++;
    return true;
  }

  // ---- allocation
  void push_free(uint32_t idx) {
    free_bits[idx >> 6] |= 1ull << (idx & 63);
    free_count++;
  }
  uint32_t pop_free() {
    if (free_count == 0) return kEmpty;
    uint32_t words = static_cast<uint32_t>(free_bits.size());
    for (uint32_t k = 0; k < words; k++) {
      uint32_t w = alloc_word;
      if (free_bits[w]) {
        int b = __builtin_ctzll(free_bits[w]);
        free_bits[w] &= free_bits[w] - 1;
        free_count--;
        return w * 64 + static_cast<uint32_t>(b);
      }
      alloc_word = w + 1 == words ? 0 : w + 1;
    }
    return kEmpty;  // unreachable while free_count is right
  }
  // Takes up to n entries for this burst's misses and prefetches them for writing.
  void reserve(uint32_t n) {
    n_reserved = next_reserved = 0;
    while (n_reserved < n) {
      uint32_t idx = pop_free();
      if (idx == kEmpty) break;
      reserved[n_reserved++] = idx;
      const char* xp = reinterpret_cast<const char*>(&cold[idx]);
      __builtin_prefetch(&conns[idx], 1);
      __builtin_prefetch(xp, 1);
      __builtin_prefetch(xp + sizeof(ConnCold) - 1, 1);
    }
  }
  void unreserve() {
    while (next_reserved < n_reserved) push_free(reserved[next_reserved++]);
    n_reserved = next_reserved = 0;
  }
  uint32_t take_free() {
    if (next_reserved < n_reserved) return reserved[next_reserved++];
    return pop_free();
  }

  void free_conn(uint32_t idx) {
    Conn& c = conns[idx];
    changes++;
    table.erase(hash_key(table.conn_key(idx)), idx);
    if (nat && detail::nat_translated(nat[idx])) {
      table.erase(hash_key(table.nat_key(idx)), idx | kNatTag);
      nat[idx].rkey.family = 0;  // not translated (the rest of the tuple stays: slot_matches)
      c.key.family = static_cast<uint8_t>(c.key.family & ~detail::kConnNat);
    }
    if (zones_limited) zone_count[c.key.zone]--;
    if (c.flags & detail::kOffloaded) st.offloaded--;
    c.flags = 0;
    push_free(idx);
    st.active--;
  }

  // Removes an entry, announcing it to the offload provider first when it
  // was announced as established. Returns false (entry kept, retried later)
  // when the event ring is full: a lost kDestroyed would leak a NIC rule.
  [[gnu::noinline]] bool destroy(uint32_t idx, uint8_t why, uint32_t now) {
    Conn& c = conns[idx];
    if (c.flags & detail::kEvented) {
      if (!push_event(EventType::kDestroyed, idx, c, nullptr, 0, why)) {
        st.events_deferred++;
        c.expires = now;  // the sweep retries
        return false;
      }
    }
    switch (why) {
      case kWhyExpired: st.expired++; break;
      case kWhyClosed: st.closed++; break;
      case kWhyFlushed: st.flushed++; break;
      case kWhyEvicted: st.evicted++; break;
      case kWhyReopened: st.reopened++; break;
      default: break;
    }
    free_conn(idx);
    return true;
  }

  static bool expired(const Conn& c, uint32_t now) { return static_cast<int32_t>(now - c.expires) >= 0; }

  // Early drop (like Linux): scan a bounded window for the best victim:
  // expired first, then unreplied, then closing. Assured and offloaded
  // connections are never evicted.
  bool early_drop(uint32_t now) {
    uint32_t best = kEmpty;
    int best_rank = 0;
    for (uint32_t k = 0; k < cfg.early_drop_scan; k++) {
      uint32_t i = sweep_cursor;
      sweep_cursor = sweep_cursor + 1 == cap ? 0 : sweep_cursor + 1;
      const Conn& c = conns[i];
      if (!(c.flags & detail::kAlive) || (c.flags & detail::kOffloaded)) continue;
      int rank = 0;
      if (expired(c, now)) rank = 3;
      else if (!(c.flags & detail::kSeenReply)) rank = 2;
      else if (!(c.flags & detail::kAssured) ||
               (c.key.proto == IPPROTO_TCP && c.state >= kTcpFinWait && c.state <= kTcpClose)) rank = 1;
      if (rank > best_rank) {
        best_rank = rank;
        best = i;
        if (rank == 3) break;
      }
    }
    if (best == kEmpty) return false;
    return destroy(best, best_rank == 3 ? kWhyExpired : kWhyEvicted, now);
  }

  // Takes a free entry for `ck` or reports why not.
  uint32_t alloc(const Key& ck, uint32_t now, Invalid* why) {
    if (zones_limited && zone_limit[ck.zone] != 0 && zone_count[ck.zone] >= zone_limit[ck.zone]) {
      st.zone_limited++;
      *why = Invalid::kZoneLimit;
      return kEmpty;
    }
    uint32_t idx = take_free();
    if (idx == kEmpty) {
      if (!early_drop(now) || (idx = take_free()) == kEmpty) {
        st.table_full++;
        *why = Invalid::kTableFull;
        return kEmpty;
      }
    }
    return idx;
  }
  // Can this packet start a connection? kNone if so.
  Invalid check_new(const Packet& p) const {
    switch (p.key.proto) {
      case IPPROTO_TCP: return proto::tcp::check_new(p, cfg.tcp_midstream);
      case IPPROTO_ICMP:
      case IPPROTO_ICMPV6: return proto::icmp::check_new(p);
      default: return Invalid::kNone;
    }
  }

  [[gnu::always_inline]] Outcome update(uint32_t idx, Conn& c, int dir, const Packet& p, uint32_t now) {
    Outcome o;
    switch (c.key.proto) {
      case IPPROTO_TCP:
        // A later fragment has no TCP header: its first fragment (the
        // segment's header, with the whole segment's length) was judged.
        o = (p.meta & kMetaFragment) ? Outcome{Verdict::kAccept, Invalid::kNone, false}
                                     : proto::tcp::update(c, cold[idx], dir, p, now, times, cfg.tcp_liberal);
        break;
      case IPPROTO_UDP: o = proto::udp::update(c, cold[idx], dir, now, times); break;
      case IPPROTO_ICMP:
      case IPPROTO_ICMPV6: o = proto::icmp::update(c, dir, now, times); break;
      default: o = proto::other::update(c, dir, now, times); break;
    }
    if (o.v == Verdict::kAccept || o.v == Verdict::kKill) {
      c.in_port[dir] = p.in_port;
      if (!(p.meta & kMetaCounted)) detail::count(c, cold[idx], dir, p.l3_len);
      const bool first_reply = dir == 1 && !(c.flags & detail::kSeenReply);
      if (first_reply) {
        c.flags |= detail::kSeenReply;
        if (c.key.proto == IPPROTO_UDP && !(c.flags & detail::kNoOffload)) raise_established(idx, c, &p, 1);
      }
      if (c.key.proto == IPPROTO_TCP && o.changed) tcp_events(idx, c, p, dir);
      // Offered to the NIC again: a connection that left it while alive
      // (aged out, its rules changed) has kEvented cleared, and its next
      // packet raises kEstablished once more.
      else if (!first_reply && !(c.flags & (detail::kEvented | detail::kNoOffload)) &&
               (c.key.proto == IPPROTO_UDP ? (c.flags & detail::kSeenReply) != 0
                                           : c.key.proto == IPPROTO_TCP && c.state == sES &&
                                                 (c.flags & detail::kAssured)))
        raise_established(idx, c, &p, static_cast<uint8_t>(dir));
      // An ACK or data segment of an offloaded connection reached software:
      // the NIC judged it out of its window, so its context is behind (see
      // EventType::kResync). SYN, FIN and RST come here by design.
      // (Fragments come here by design too: the NIC matches no ports in them.)
      if (c.key.proto == IPPROTO_TCP && (c.flags & detail::kOffloaded) && !(p.meta & kMetaFragment) &&
          !(p.tcp_flags & (kSyn | kFin | kRst)) && !(c.td_flags[0] & kTcpResyncAsked) &&
          push_event(EventType::kResync, idx, c, &p, static_cast<uint8_t>(dir), 0))
        c.td_flags[0] |= kTcpResyncAsked;
    } else if (o.v == Verdict::kIgnore && !(p.meta & kMetaCounted)) {
      detail::count(c, cold[idx], dir, p.l3_len);
    }
    return o;
  }

  void raise_established(uint32_t idx, Conn& c, const Packet* p, uint8_t dir) {
    if (ring.empty() || (c.flags & (detail::kEvented | detail::kNoOffload))) return;
    if (push_event(EventType::kEstablished, idx, c, p, dir, 0)) c.flags |= detail::kEvented;
  }

  void tcp_events(uint32_t idx, Conn& c, const Packet& p, int dir) {
    if (c.state == sES && (c.flags & detail::kAssured)) {
      raise_established(idx, c, &p, static_cast<uint8_t>(dir));
    } else if (c.state >= sFW && c.state <= sCL && (c.flags & (detail::kOffloaded | detail::kEvented)) &&
               !(c.flags & detail::kClosingSent)) {
      // Offloaded, or offered and perhaps still going in: the provider
      // removes it (or drops the offer).
      if (push_event(EventType::kClosing, idx, c, &p, static_cast<uint8_t>(dir), 0)) c.flags |= detail::kClosingSent;
    }
  }

  // Creates and inserts an entry for a new connection's first packet.
  void create(const Packet& p, const Key& ck, bool canon, uint32_t h, uint32_t now, CtResult& r) {
    Invalid why = Invalid::kNone;
    uint32_t idx = alloc(ck, now, &why);
    if (idx != kEmpty) changes++;
    if (idx != kEmpty && !table.insert(h, idx)) {
      // Cuckoo walk failed: give the entry back.
      push_free(idx);
      st.table_full++;
      why = Invalid::kTableFull;
      idx = kEmpty;
    }
    if (idx == kEmpty) {
      if (cfg.full_policy == FullPolicy::kPassUntracked) {
        st.untracked++;
        r.state = kCtUntracked | kCtNew;
      } else {
        st.invalid[static_cast<int>(why)]++;
        r.state = kCtTrk | kCtInv;
        r.reason = why;
      }
      return;
    }
    Conn& c = conns[idx];
    ConnCold& x = cold[idx];
    detail::store_key(c, x, ck);
    x.created = now;
    c.flags = static_cast<uint8_t>(detail::kAlive | (canon ? detail::kOrigCanon : 0) |
                                   ((p.meta & kMetaNoOffload) ? detail::kNoOffload : 0));
    for (int d = 0; d < 2; d++) detail::set_counts(c, x, d, 0, 0);
    c.in_port[0] = c.in_port[1] = p.in_port;
    c.state = 0;
    if (zones_limited) zone_count[ck.zone]++;
    st.active++;
    if (ck.proto == IPPROTO_TCP) proto::tcp::init(c, x, p);
    Outcome o = update(idx, c, 0, p, now);
    if (o.v == Verdict::kInvalid) {
      c.flags = detail::kAlive;  // nothing announced yet
      free_conn(idx);
      st.invalid[static_cast<int>(o.reason)]++;
      r.state = kCtTrk | kCtInv;
      r.reason = o.reason;
      return;
    }
    if (cur_nat && cur_nat->kind != NatKind::kNone && !translate(idx, c, p, *cur_nat, r)) return;
    st.created++;
    r.conn = idx;
    r.state = kCtTrk | kCtNew;
    r.changed = 1;
  }

  // The tuple a translated connection's packet on `side` is rewritten to.
  void fill_nat(uint32_t idx, Event& e) const {
    e.nat = nat && detail::nat_translated(nat[idx]) ? static_cast<NatKind>(detail::nat_kind(nat[idx])) : NatKind::kNone;
    if (e.nat != NatKind::kNone) e.reply = nat_target(idx, kNatOrigRev);
  }
  Key nat_target(uint32_t idx, uint8_t side) const {
    Key k;
    nat_target(idx, side, &k);
    return k;
  }
  // The same written to *out (per packet: in whole words, from the entry).
  // kNatOrig: the reply tuple reversed; kNatOrigRev: the reply tuple (rkey
  // in its rcanon orientation); kNatReply: the original tuple reversed;
  // kNatReplyRev: the original tuple (the canonical key in kOrigCanon's).
  [[gnu::always_inline]] void nat_target(uint32_t idx, uint8_t side, Key* out) const {
    if (side == kNatOrig || side == kNatOrigRev) {
      const NatHot& x = nat[idx];
      detail::put_key(x.rkey, nat_cold[idx].src_hi, nat_cold[idx].dst_hi, (side == kNatOrig) == detail::nat_rcanon(x),
                      out);
      return;
    }
    const bool orig_canon = (conns[idx].flags & detail::kOrigCanon) != 0;
    detail::put_conn_key(conns[idx], cold[idx], (side == kNatReply) == orig_canon, out);
  }

  // Chooses the new connection's translated tuple from `R`: the first of its
  // candidates (from a start that hashes the original tuple) that no other
  // entry is found under, and indexes the connection under it too. Fails
  // (entry freed, kNatExhausted) after kNatAttempts tries; at once, as
  // kNatFamily, when the range is of the other address family.
  [[gnu::noinline]] bool translate(uint32_t idx, Conn& c, const Packet& p, const NatRange& R, CtResult& r) {
    Invalid why = static_cast<bool>(nat) && R.family != p.key.family ? Invalid::kNatFamily : Invalid::kNatExhausted;
    const bool src = R.kind == NatKind::kSrc;
    const bool icmp = p.key.proto == IPPROTO_ICMP || p.key.proto == IPPROTO_ICMPV6;
    // Ports (ICMP: the echo id, which replies carry in dport) move with SNAT
    // for TCP, UDP and echo; with DNAT for TCP and UDP.
    const bool ports = (p.key.proto == IPPROTO_TCP || p.key.proto == IPPROTO_UDP ||
                        (icmp && src && (p.meta & kMetaIcmpEcho)));
    Key reply = p.key.reversed();
    uint8_t* addr = src ? reply.dst : reply.src;
    uint16_t* port = src ? &reply.dport : &reply.sport;
    const int ao = R.family == 6 ? 12 : 0;  // the address bytes a range walks
    auto rd32 = [](const uint8_t* b) { return static_cast<uint32_t>(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3]; };
    const uint32_t a0 = rd32(R.addr_min + ao), na = rd32(R.addr_max + ao) - a0 + 1;
    const bool keep = ports && R.port_min == 0 && R.port_max == 0;
    const uint32_t p0 = !ports ? 0 : keep ? 1024 : R.port_min;
    const uint32_t np = !ports ? 1 : keep ? 65536 - 1024 : uint32_t{R.port_max} - R.port_min + 1;
    const uint16_t own = *port;
    const uint64_t total = static_cast<uint64_t>(na) * np + (keep ? na : 0);
    const uint32_t tries = !nat || R.family != p.key.family ? 0
                           : total <= kNatAttempts ? static_cast<uint32_t>(total) : kNatAttempts;
    const Key ck = table.conn_key(idx);
    const uint32_t hs = hash_key(ck);
    for (uint32_t t = 0; t < tries; t++) {
      // With `keep`, each address is tried with the connection's own port first.
      uint64_t k = keep ? (t < na ? t * (np + 1ull) : t) : t;
      const uint32_t ai = static_cast<uint32_t>((hs + k / (keep ? np + 1 : np)) % na);
      const uint64_t pk = keep ? k % (np + 1) : k % np;
      // (IPv4: the first four bytes only, as a packet's key has them; the
      // range's other bytes are never read.)
      if (R.family == 6) memcpy(addr, R.addr_min, 16);
      const uint32_t a = a0 + ai;
      const uint8_t ab[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8),
                             static_cast<uint8_t>(a)};
      memcpy(addr + ao, ab, 4);
      if (ports) *port = keep && pk == 0 ? own : static_cast<uint16_t>(p0 + (hs / 7 + (keep ? pk - 1 : pk)) % np);
      Key rc;
      const bool rcanon = canonicalize(reply, &rc);
      if (keys_equal(rc, ck)) return true;  // the range maps it to itself: nothing to translate
      if (nat_ok && !nat_ok(reply, nat_ok_ctx)) continue;  // its replies would reach another shard
      const uint32_t h2 = hash_key(rc);
      if (table.find(rc, h2) != kEmpty) continue;
      if (!table.insert(h2, idx | kNatTag)) {
        why = Invalid::kTableFull;
        st.table_full++;
        break;
      }
      detail::store_key(nat[idx].rkey, nat_cold[idx].src_hi, nat_cold[idx].dst_hi, rc);
      // (The kind as translated: `src` or not, whatever else R.kind holds;
      // two bits beside the family's.)
      const uint8_t kind = static_cast<uint8_t>(src ? NatKind::kSrc : NatKind::kDst);
      nat[idx].rkey.family = static_cast<uint8_t>(nat[idx].rkey.family | kind << detail::kNatKindShift |
                                                  (rcanon ? detail::kNatRcanon : 0));
      c.key.family = static_cast<uint8_t>(c.key.family | detail::kConnNat);
      r.nat = kNatOrig;
      if (cur_nat_out) nat_target(idx, kNatOrig, cur_nat_out);
      return true;
    }
    c.flags = static_cast<uint8_t>(c.flags & ~detail::kEvented);  // nothing announced for it
    free_conn(idx);
    st.invalid[static_cast<int>(why)]++;
    r.state = kCtTrk | kCtInv;
    r.reason = why;
    return false;
  }

  [[gnu::noinline]] void miss(const Packet& p, bool canon, uint32_t h, uint32_t now, bool commit, CtResult& r) {
    // A later fragment follows its datagram's connection; it never starts one.
    if (p.meta & kMetaFragment) {
      st.invalid[static_cast<int>(Invalid::kFragment)]++;
      r.state = kCtTrk | kCtInv;
      r.reason = Invalid::kFragment;
      return;
    }
    if (p.meta & kMetaIcmpError) {
      st.invalid[static_cast<int>(Invalid::kIcmpNoConn)]++;
      r.state = kCtTrk | kCtInv;
      r.reason = Invalid::kIcmpNoConn;
      return;
    }
    Invalid why = check_new(p);
    if (why != Invalid::kNone) {
      st.invalid[static_cast<int>(why)]++;
      r.state = kCtTrk | kCtInv;
      r.reason = why;
      return;
    }
    if (!commit) {
      r.state = kCtTrk | kCtNew;
      return;
    }
    Key ck;
    canonicalize(p.key, &ck);
    create(p, ck, canon, h, now, r);
  }

  // The side of a translated connection the packet's tuple is, found under
  // index slot e (kNatTag: the reply tuple's).
  uint8_t nat_side(uint32_t e, bool canon) const {
    const uint32_t idx = e & ~kNatTag;
    if (e & kNatTag) return canon == detail::nat_rcanon(nat[idx]) ? kNatReply : kNatReplyRev;
    return canon == ((conns[idx].flags & detail::kOrigCanon) != 0) ? kNatOrig : kNatOrigRev;
  }

  [[gnu::always_inline]] void hit(uint32_t e, const Packet& p, bool canon, uint32_t h, uint32_t now, bool commit,
                                 CtResult& r) {
    const uint32_t idx = e & ~kNatTag;
    Conn& c = conns[idx];
    st.hits++;
    int dir = canon == ((c.flags & detail::kOrigCanon) != 0) ? 0 : 1;
    uint8_t side = kNatNone;
    if (detail::conn_translated(c)) [[unlikely]] {
      side = nat_side(e, canon);
      dir = side == kNatOrig || side == kNatReplyRev ? 0 : 1;
    }
    if (expired(c, now) && !(c.flags & detail::kOffloaded)) {
      if (destroy(idx, kWhyExpired, now)) return miss(p, canon, h, now, commit, r);
    }
    if (p.meta & kMetaIcmpError) {
      // Through a translation, an error crosses only about a packet as the
      // far side saw it: the reply as it reached the original sender
      // (kNatOrigRev, the error goes out) or the original as it reached the
      // replier (kNatReplyRev, the error comes in). One that quotes a tuple
      // as its own sender wrote it is addressed to that sender, never
      // through here: someone who knows the private tuple made it up
      // (Linux finds no connection for it either).
      if (side == kNatOrig || side == kNatReply) [[unlikely]] {
        st.invalid[static_cast<int>(Invalid::kIcmpNoConn)]++;
        r.state = kCtTrk | kCtInv;
        r.reason = Invalid::kIcmpNoConn;
        return;
      }
      st.related++;
      r.conn = idx;
      r.dir = static_cast<uint8_t>(dir);
      r.state = kCtTrk | kCtRel;
      if (side != kNatNone) {
        r.nat = side;
        if (cur_nat_out) nat_target(idx, side, cur_nat_out);
      }
      return;
    }
    if (side == kNatOrigRev || side == kNatReplyRev) [[unlikely]] {
      st.invalid[static_cast<int>(Invalid::kNatClash)]++;
      r.state = kCtTrk | kCtInv;
      r.reason = Invalid::kNatClash;
      return;
    }
    Outcome o = update(idx, c, dir, p, now);
    switch (o.v) {
      case Verdict::kInvalid:
        st.invalid[static_cast<int>(o.reason)]++;
        r.state = kCtTrk | kCtInv;
        r.reason = o.reason;
        r.conn = idx;
        r.dir = static_cast<uint8_t>(dir);
        return;
      case Verdict::kReopen:
        if (!destroy(idx, kWhyReopened, now)) {
          r.state = kCtTrk | kCtInv;
          r.reason = Invalid::kTcpState;
          st.invalid[static_cast<int>(Invalid::kTcpState)]++;
          return;
        }
        return miss(p, canon, h, now, commit, r);
      case Verdict::kKill:
        r.conn = kNoConn;
        r.changed = 1;
        r.dir = static_cast<uint8_t>(dir);
        r.state = static_cast<uint8_t>(kCtTrk | (dir ? (kCtEst | kCtRpl) : kCtNew));
        if (side != kNatNone) {  // the last packet (an RST) still goes as the connection's
          r.nat = side;
          if (cur_nat_out) nat_target(idx, side, cur_nat_out);
        }
        destroy(idx, kWhyClosed, now);
        return;
      default:
        break;
    }
    r.conn = idx;
    r.dir = static_cast<uint8_t>(dir);
    r.changed = o.changed;
    r.state = static_cast<uint8_t>(kCtTrk | (dir ? (kCtEst | kCtRpl)
                                                 : ((c.flags & detail::kSeenReply) ? kCtEst : kCtNew)));
    if (side != kNatNone) {
      r.nat = side;
      if (cur_nat_out) nat_target(idx, side, cur_nat_out);
    }
  }

  uint32_t sweep(uint32_t now, uint32_t budget) {
    uint32_t freed = 0;
    for (uint32_t k = 0; k < budget; k++) {
      uint32_t i = sweep_cursor;
      sweep_cursor = sweep_cursor + 1 == cap ? 0 : sweep_cursor + 1;
      Conn& c = conns[i];
      if ((c.flags & detail::kAlive) && expired(c, now) && destroy(i, kWhyExpired, now)) freed++;
    }
    return freed;
  }

  static constexpr uint32_t kChunk = kChunkMax;

  // Stage 1: canonical hash; prefetch the first candidate bucket (most keys
  // live there; a second prefetch per packet costs more than the few misses).
  // `w` (if given): the canonical key's ConnKey words for an IPv4 key (stage3's compare).
  [[gnu::always_inline]] void stage1(const Packet& p, uint32_t& h, uint32_t& b1, bool& canon, uint64_t* w = nullptr) {
    h = w ? detail::hash_canonical_words(p.key, &canon, &w[0], &w[1]) : hash_canonical(p.key, &canon);
    b1 = table.b1(h);
    __builtin_prefetch(&table.buckets()[b1]);
  }

  // The first live-looking signature match in bucket b, or kEmpty.
  [[gnu::always_inline]] uint32_t first_match(uint32_t b, uint16_t s) const {
    const detail::Bucket& B = table.buckets()[b];
    uint32_t c = kEmpty;
    for (uint32_t m = detail::match_mask(B, s); m && c == kEmpty; m &= m - 1) c = B.idx[__builtin_ctz(m)];
    return c;
  }

  // Stage 2, over the burst: signature match in each packet's first bucket,
  // prefetching the candidate connection; where it has none, the second
  // bucket (computed only then) is prefetched and matched in a pass of its
  // own after the first. At 1M connections (90% index load) many keys live
  // in their second bucket, and reading it at once stalled on it (21% of the
  // burst's samples); the pass of its own measured 1.19-1.50x over 3 pairs.
  // (With the 120-byte entries of three lines it measured 0.87-0.95x: then
  // the entry prefetches were the limit, not the bucket's latency.)
  // `tuples`: the caller takes translated tuples out (the NAT entries of
  // original-tuple slots prefetched too).
  [[gnu::always_inline]] void stage2(const Packet* const* pkts, const uint32_t* h, const uint32_t* b, uint32_t* cand,
                                     uint32_t n, bool tuples) {
    uint32_t later[kChunk], b2[kChunk], nl = 0;
    for (uint32_t i = 0; i < n; i++) {
      const uint16_t s = detail::Table::sig(h[i]);
      uint32_t c = first_match(b[i], s);
      if (c == kEmpty) [[unlikely]] {
        b2[nl] = table.alt(b[i], s);
        __builtin_prefetch(&table.buckets()[b2[nl]]);
        later[nl++] = i;
      } else {
        prefetch_conn(c, pkts[i]->key.family != 4, tuples);
      }
      cand[i] = c;
    }
    for (uint32_t k = 0; k < nl; k++) {
      const uint32_t i = later[k];
      const uint32_t c = first_match(b2[k], detail::Table::sig(h[i]));
      if (c != kEmpty) prefetch_conn(c, pkts[i]->key.family != 4, tuples);
      cand[i] = c;
    }
  }

  // Prefetches the connection under index slot c: its one line, and the
  // cold part too for an IPv6 packet (the key's other address bytes).
  // tuples: as stage2's.
  [[gnu::always_inline]] void prefetch_conn(uint32_t c, bool wide, bool tuples) {
    const uint32_t idx = c & ~kNatTag;
    __builtin_prefetch(&conns[idx]);
    // A reply-tuple slot's NatHot holds the key its match compares; an
    // original tuple's translation is known from Conn (kConnNat), and only
    // a packet that takes the tuple out reads its NatHot.
    if ((c & kNatTag) || (tuples && nat)) prefetch_nat(idx);
    if (wide) {
      const char* xp = reinterpret_cast<const char*>(&cold[idx]);
      __builtin_prefetch(xp);
      __builtin_prefetch(xp + sizeof(ConnCold) - 1);
    }
  }
  [[gnu::always_inline]] void prefetch_rest(uint32_t c) {
    if (nat) prefetch_nat(c);
  }
  // A NatHot: one line (NatCold only for a wide tuple, not prefetched).
  [[gnu::always_inline]] void prefetch_nat(uint32_t idx) { __builtin_prefetch(&nat[idx]); }

  // Stage 3 for a packet known to have no entry (looked up, and nothing
  // inserted since). The caller counts the lookup (Stats::lookups), as
  // for stage3.
  [[gnu::always_inline]] void stage3_miss(const Packet& p, uint32_t h, bool canon, uint32_t now, bool commit,
                                          CtResult& r) {
    r = CtResult{};
    miss(p, canon, h, now, commit, r);
  }

  // Is index slot e a live entry found under p's key (in either orientation)?
  [[gnu::always_inline]] bool slot_matches(uint32_t e, const Key& k, bool canon) const {
    const uint32_t idx = e & ~kNatTag;
    if (!(conns[idx].flags & detail::kAlive)) return false;
    if (!(e & kNatTag)) return detail::conn_matches(conns[idx], cold[idx], k, canon);
    // A reply-tuple slot of an entry freed since it was found (a Found kept
    // across a flush, an expiry or a commit): free_conn clears rkey's family
    // (kind and all) but not the rest, and the entry alive now may be an
    // untranslated connection.
    if (!detail::nat_translated(nat[idx])) return false;
    return detail::key_matches(nat[idx].rkey, nat_cold[idx].src_hi, nat_cold[idx].dst_hi, k, canon, detail::kNatBitsWord);
  }

  // slot_matches with stage1's words `w` (when given): an untranslated IPv4
  // entry's key compare is two words (an IPv4 key is never kWide).
  // A translated connection's reply-tuple slot the same way: its NatHot's
  // rkey is canonical, and an IPv4 rkey's bytes beyond the first four of
  // each address are zero (the packet's key's, key.h, and translate() writes
  // only the first four of a range's address), so its first four of each
  // and its tail are the whole key.
  [[gnu::always_inline]] bool slot_matches_w(uint32_t e, const Key& k, bool canon, const uint64_t* w) const {
    using detail::load64;
    if (w && !(e & kNatTag) && k.family == 4) {
      const Conn& c = conns[e];
      return (c.flags & detail::kAlive) &&
             ((load64(&c.key) ^ w[0]) | ((load64(&c.key.sport) ^ w[1]) & ~detail::kNatBitsWord)) == 0;
    }
    if (w && k.family == 4) {  // (a reply-tuple slot)
      const uint32_t idx = e & ~kNatTag;
      const NatHot& x = nat[idx];
      // (As slot_matches: alive, and translated, for an entry alive now
      // may not be: an untranslated one's family is 0, never w's.)
      if (!(conns[idx].flags & detail::kAlive)) return false;
      return ((load64(&x.rkey) ^ w[0]) | ((load64(&x.rkey.sport) ^ w[1]) & ~detail::kNatBitsWord)) == 0;
    }
    return slot_matches(e, k, canon);
  }

  // The direction of a packet found under index slot e (its key in the
  // canonical orientation: canon), without the NAT entry's kind: under the
  // connection's own key it is what nat_side() gives a translated one
  // (kNatOrig: 0, kNatOrigRev: 1); under the reply tuple (a tagged slot,
  // whose NatHot the match read) kNatReply is 1, kNatReplyRev 0.
  [[gnu::always_inline]] int slot_dir(uint32_t e, bool canon) const {
    const uint32_t idx = e & ~kNatTag;
    if (e & kNatTag) return canon == detail::nat_rcanon(nat[idx]) ? 1 : 0;
    return canon == ((conns[idx].flags & detail::kOrigCanon) != 0) ? 0 : 1;
  }

  // lookup()'s result for p from stage2's candidate c (and stage1's words
  // w): the index slot found (kEmpty: none), and f's conn, dir, rside and
  // epoch (stage1 wrote its hash and canon).
  [[gnu::always_inline]] uint32_t found(const Packet& p, uint32_t c, const uint64_t* w, Tracker::Found& f) {
    // No signature in either bucket: not there. A signature of another
    // key: the full probe.
    if (c != kEmpty && !slot_matches_w(c, p.key, f.canon, w)) {
      st.probes++;
      Key ck;
      canonicalize(p.key, &ck);
      c = table.find(ck, f.hash);
      if (c != kEmpty) prefetch_rest(c & ~kNatTag);  // (stage2 prefetched the candidate's NAT entry, not this one's)
    }
    f.dir = 0;
    f.rside = false;
    f.epoch = changes;
    if (c == kEmpty) {
      f.conn = kNoConn;
      return c;
    }
    const uint32_t idx = c & ~kNatTag;
    f.conn = idx;
    f.rside = (c & kNatTag) != 0;
    f.dir = static_cast<uint8_t>(slot_dir(c, f.canon));
    return c;
  }

  // The common case of a hit, without hit()'s and update()'s general
  // machinery: an ACK or data segment of an assured ESTABLISHED TCP
  // connection in the window (tcp::established()), or a UDP datagram that
  // changes nothing an event hangs on; not offloaded, not expired, not an
  // ICMP error or a fragment, and no event due (a connection not yet
  // offered with the event ring on goes the long way). A translated one's
  // packet on either of its own sides too, with its tuple (a clash goes
  // the long way). Does exactly what hit() would; false (nothing done)
  // when it does not apply. kFound: dir is slot_dir(e, canon), a Found's;
  // otherwise (process()'s stage3) it is worked out here, as hit() does,
  // after the checks that need none (computed before them, OVS's case ran
  // ~3 % slower at the same instruction count).
  template <bool kFound>
  [[gnu::always_inline]] bool fast_hit(uint32_t e, const Packet& p, bool canon, int dir, uint32_t now, CtResult& r) {
    const uint32_t idx = e & ~kNatTag;
    Conn& c = conns[idx];
    const uint8_t f = c.flags;
    // (A tagged slot is a translated entry's: callers verified the slot,
    // and slot_dir's direction is that side's only then.)
    assert(!(e & kNatTag) || detail::nat_translated(nat[idx]));
    if ((f & (detail::kAlive | detail::kOffloaded)) != detail::kAlive) return false;
    if (p.meta & (kMetaIcmpError | kMetaFragment)) return false;
    if (expired(c, now)) return false;
    if (!kFound) dir = canon == ((f & detail::kOrigCanon) != 0) ? 0 : 1;
    uint8_t side = kNatNone;
    Outcome o;
    // (The NAT side after the checks that need no direction: a new
    // connection's packets leave before it.) `offered`: no kEstablished due.
    auto offered = [&] { return (f & (detail::kEvented | detail::kNoOffload)) || ring.empty(); };
    if (c.key.proto == IPPROTO_TCP) {
      if (!(f & detail::kSeenReply) || !proto::tcp::fast_path(c, p, cfg.tcp_liberal) || !offered()) return false;
      if (!nat_dir<kFound>(e, canon, &side, &dir)) return false;
      o = proto::tcp::established(c, dir, p, now, times);
    } else if (c.key.proto == IPPROTO_UDP) {
      if (!nat_dir<kFound>(e, canon, &side, &dir)) return false;
      // Not the first reply (kEstablished), not a replied one to offer again.
      if (!(f & detail::kSeenReply) ? dir == 1 : !offered()) return false;
      o = proto::udp::update(c, cold[idx], dir, now, times);
    } else {
      return false;
    }
    st.hits++;
    // The whole result at once (stage3 leaves it to this when it applies).
    if (o.v == Verdict::kInvalid) {
      st.invalid[static_cast<int>(o.reason)]++;
      CtResult res;
      res.conn = idx;
      res.dir = static_cast<uint8_t>(dir);
      res.state = kCtTrk | kCtInv;
      res.reason = o.reason;
      r = res;
      return true;
    }
    c.in_port[dir] = p.in_port;
    if (!(p.meta & kMetaCounted)) detail::count(c, cold[idx], dir, p.l3_len);
    // The result's first eight bytes as one word: conn, then state
    // (kCtTrk | (dir ? kCtEst | kCtRpl : replied ? kCtEst : kCtNew), from
    // a table with dir), changed, reason (none) and dir; then nat.
    // (Field by field it was ~20 instructions a packet of OVS's case.)
    static constexpr uint64_t kWord[4] = {result_word(kCtTrk | kCtNew, 0), result_word(kCtTrk | kCtEst, 0),
                                          result_word(kCtTrk | kCtEst | kCtRpl, 1),
                                          result_word(kCtTrk | kCtEst | kCtRpl, 1)};
    static_assert(detail::kSeenReply == 4);
    const uint64_t w = idx | kWord[dir * 2 + ((f >> 2) & 1)] | uint64_t{o.changed} << 40;
    memcpy(static_cast<void*>(&r), &w, sizeof w);
    r.nat = side;
    if (side != kNatNone && cur_nat_out) nat_target(idx, side, cur_nat_out);
    return true;
  }

  // fast_hit's part of a translated connection: its side of index slot e
  // and the direction that side is; false on a clash, a tuple of one side
  // seen reversed (kNatOrigRev, kNatReplyRev: hit() counts it). kFound:
  // *dir is slot_dir's already, and the side follows from the slot's tag.
  template <bool kFound>
  [[gnu::always_inline]] bool nat_dir(uint32_t e, bool canon, uint8_t* side, int* dir) const {
    if (!detail::conn_translated(conns[e & ~kNatTag])) return true;
    if (kFound) {
      const bool tagged = (e & kNatTag) != 0;
      if (tagged != (*dir == 1)) return false;
      *side = tagged ? kNatReply : kNatOrig;
      return true;
    }
    *side = nat_side(e, canon);
    if (*side == kNatOrigRev || *side == kNatReplyRev) return false;
    *dir = *side == kNatOrig ? 0 : 1;
    return true;
  }

  // Stage 3: verify the candidate, then run the state machines.
  // `verified`: c is known to be p's slot (lookup() matched it, and
  // nothing was put in or taken out of the index since: `changes`).
  [[gnu::always_inline]] void stage3(const Packet& p, uint32_t c, uint32_t h, bool canon, uint32_t now, bool commit,
                                     CtResult& r, bool verified = false, const uint64_t* w = nullptr) {
    if (!verified && (c == kEmpty || !slot_matches_w(c, p.key, canon, w))) {
      // A second signature match, or an entry changed earlier in this burst:
      // the full probe (its buckets are in cache by now).
      st.probes += c != kEmpty;
      Key ck;
      canonicalize(p.key, &ck);
      c = table.find(ck, h);
      r = CtResult{};
      if (c == kEmpty) return miss(p, canon, h, now, commit, r);
    }
    if (fast_hit<false>(c, p, canon, 0, now, r)) return;  // (it writes all of r)
    r = CtResult{};
    hit(c, p, canon, h, now, commit, r);
  }

  // Stage by stage over the burst (VPP's stateful lookup): all hashes and
  // bucket prefetches, then all signature matches and entry prefetches, then
  // the state machines. Measured against a software pipeline a few packets
  // apart: with this VM's ~300 ns memory latency and a dependent bucket ->
  // entry load, a 32-packet pipeline never fills, and staging was ~1.6x faster
  // at 1M connections.
  void process_burst(const Packet* const* pkts, uint32_t n, uint32_t now, bool commit, CtResult* out, Key* nat_out) {
    uint32_t h[kChunk], b[kChunk], cand[kChunk];
    bool canon[kChunk];
    uint64_t w[2 * kChunk];
    for (uint32_t i = 0; i < n; i++) stage1(*pkts[i], h[i], b[i], canon[i], w + 2 * i);
    stage2(pkts, h, b, cand, n, nat_out != nullptr);
    uint32_t misses = 0;
    for (uint32_t i = 0; i < n; i++) misses += cand[i] == kEmpty;
    st.lookups += n;  // (each packet's stage3 is one)
    if (commit && misses) reserve(misses);
    if (nat_out) {
      for (uint32_t i = 0; i < n; i++) {
        cur_nat_out = nat_out + i;
        stage3(*pkts[i], cand[i], h[i], canon[i], now, commit, out[i], false, w + 2 * i);
      }
    } else {
      cur_nat_out = nullptr;
      for (uint32_t i = 0; i < n; i++)
        stage3(*pkts[i], cand[i], h[i], canon[i], now, commit, out[i], false, w + 2 * i);
    }
    if (n_reserved) unreserve();
  }



};

}  // namespace ctrack
