// Per packet: IP fragments without reassembly (VPP's shallow virtual
// reassembly, what OVS and Linux get from full reassembly): a datagram's
// first fragment carries its L4 header and is judged like any packet; its
// later fragments take its ports (and TCP flags) from a per-worker table
// keyed by (ingress port, VLAN, VNI, source, destination, IPv4 protocol,
// identification) and follow the same rules, the same connection and the
// same translation (NAT rewrites their IP header; the first fragment's L4
// checksum covers the whole datagram). Later fragments that arrive before
// their first are held until it comes (at most kHeld per datagram), then
// released in arrival order after it. A TCP segment's first fragment also
// waits for the last one: the window check needs the segment's whole length.
//
// Fragments never start a connection by themselves (conntrack finds none
// for a later fragment whose first was dropped: invalid_fragment), a
// second first fragment of a datagram is dropped (`frag_overlap`, as are
// TCP fragments at offset 8, RFC 1858), held fragments whose first never
// comes go after kTimeoutNs (`frag_timeout`), and a datagram's entry goes
// once every byte up to its last fragment has passed.
//
// A later fragment judged in the same burst as its first would meet
// conntrack before the first's connection exists (the burst is looked up
// at once): the Datapath defers it to a run of its own (defer()).
//
// The table knows packets only by an opaque cookie (the worker's mbuf);
// the caller frees what it gives back as dropped and runs what it releases.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ctrack/parse.h"
#include "dataplane/pipeline.h"

namespace dp {

class FragTable {
 public:
  static constexpr uint32_t kSlots = 1024;             // datagrams in flight per worker (a power of two)
  static constexpr uint32_t kProbe = 8;                // slots a key may take
  static constexpr uint32_t kHeld = 16;                // fragments held per datagram before its first
  static constexpr uint64_t kTimeoutNs = 2'000'000'000;  // a datagram's fragments wait this long
  static constexpr uint32_t kExpireSlots = 64;         // slots expire() checks per call

  enum class Out : uint8_t { kGo, kHeld, kDrop };

  struct Released {
    void* cookie;
    FragNote note;
  };
  struct Dropped {
    void* cookie;
    uint32_t bytes;  // the frame's, for rx_bytes (a held fragment is counted when it leaves the table)
    DropWhy why;
  };

  FragTable() : e_(kSlots) {
    released_.reserve(kMaxBurst * (kHeld + 2));
    dropped_.reserve(kMaxBurst * kHeld + kExpireSlots * kHeld);
  }

  // One fragment of a parsed IP packet (pp.frag != kFragNone) whose IP header
  // is at `ip`. kGo: *note says what it takes (ports for a later fragment);
  // kHeld: the table keeps `cookie`; kDrop: *why.
  Out on_fragment(const ctrack::Parsed& pp, const uint8_t* ip, uint16_t port, uint32_t tun_id, void* cookie,
                  uint32_t bytes, uint64_t now, FragNote* note, DropWhy* why) {
    const bool first = pp.frag == ctrack::Parsed::kFragFirst;
    const bool tcp = pp.ct.key.proto == 6;
    if (tcp && !first && pp.frag_off == 8) {  // RFC 1858: rewrites the TCP header's flags
      *why = DropWhy::kFragOverlap;
      return Out::kDrop;
    }
    Key k;
    key_of(pp, ip, port, tun_id, &k);
    Entry* e = find(k, now);
    if (first) {
      if (e->flags & kFirstSeen) {
        *why = DropWhy::kFragOverlap;
        return Out::kDrop;
      }
      e->flags |= kFirstSeen;
      const bool err = (pp.ct.meta & ctrack::kMetaIcmpError) != 0;  // its later fragments follow no connection
      e->note.sport = err ? 0 : pp.ct.key.sport;
      e->note.dport = err ? 0 : pp.ct.key.dport;
      e->note.tcp_flags = pp.ct.tcp_flags;
    }
    if (e->flags & kOpen) {  // its first has passed: it goes the same way
      add(e, pp);
      *note = e->note;
      done_if_whole(e);
      return Out::kGo;
    }
    if (e->nheld == kHeld) {
      *why = DropWhy::kFragTooMany;
      return Out::kDrop;
    }
    add(e, pp);
    const bool opens = (e->flags & kFirstSeen) && (!tcp || e->total);
    if (opens && first && !tcp) {
      e->flags |= kOpen;
      *note = e->note;
      release(e);
      done_if_whole(e);
      return Out::kGo;
    }
    e->held[e->nheld] = cookie;
    e->held_bytes[e->nheld] = bytes;
    if (first) e->first_at = e->nheld;
    e->nheld++;
    if (opens) {  // TCP: the first and the last are in; the first goes first
      e->flags |= kOpen;
      release(e);
      done_if_whole(e);
    }
    return Out::kHeld;
  }

  // A fragment that must wait for the next run (its first fragment is in
  // this burst: conntrack looks the burst up at once, before the first
  // commits its connection): given back at once, as released.
  void defer(void* cookie, const FragNote& note) { released_.push_back({cookie, note}); }

  // Held fragments past their time, a few slots per call.
  void expire(uint64_t now) {
    for (uint32_t k = 0; k < kExpireSlots; k++) {
      Entry& e = e_[cursor_];
      cursor_ = (cursor_ + 1) & (kSlots - 1);
      if (e.deadline && e.deadline <= now) drop_entry(e);
    }
  }

  // What the last calls released (to run, in order) and dropped (to free);
  // the caller takes both after each burst and clears them.
  std::vector<Released>& released() { return released_; }
  std::vector<Dropped>& dropped() { return dropped_; }

 private:
  static constexpr uint8_t kFirstSeen = 1, kOpen = 2;
  static constexpr uint8_t kNoFirst = 0xFF;

  struct Key {
    uint8_t src[16], dst[16];
    uint32_t id, tun_id;
    uint16_t port, vlan;
    uint8_t family, proto;
    uint8_t pad[2];
  };
  struct Entry {
    uint64_t deadline = 0;  // 0: free
    Key key;
    uint8_t flags = 0;
    uint8_t nheld = 0;
    uint8_t first_at = kNoFirst;  // the first fragment's index in held, if held
    FragNote note;
    uint32_t covered = 0;  // fragmentable bytes that passed or wait
    uint32_t total = 0;    // the fragmentable part's length, once the last fragment came; 0 unknown
    void* held[kHeld];
    uint32_t held_bytes[kHeld];
  };

  static void key_of(const ctrack::Parsed& pp, const uint8_t* ip, uint16_t port, uint32_t tun_id, Key* k) {
    memset(k, 0, sizeof *k);
    const bool v6 = pp.ct.key.family == 6;
    // The IP header's own addresses (an ICMP error's key is its quote's).
    memcpy(k->src, ip + (v6 ? 8 : 12), v6 ? 16 : 4);
    memcpy(k->dst, ip + (v6 ? 24 : 16), v6 ? 16 : 4);
    k->proto = v6 ? 0 : ip[9];  // RFC 8200 keys IPv6 by addresses and identification alone
    k->family = pp.ct.key.family;
    k->id = pp.frag_id;
    k->tun_id = tun_id;
    k->port = port;
    k->vlan = pp.vlan;
  }
  static uint32_t hash(const Key& k) {
    uint32_t h = 2166136261u;
    const auto* b = reinterpret_cast<const uint8_t*>(&k);
    for (size_t i = 0; i < sizeof k; i++) h = (h ^ b[i]) * 16777619u;
    return h;
  }

  // The entry of k: found, or a free or expired slot, or the soonest to
  // expire of its probe run (whose held fragments are dropped).
  Entry* find(const Key& k, uint64_t now) {
    const uint32_t h = hash(k);
    Entry *free_slot = nullptr, *oldest = nullptr;
    for (uint32_t p = 0; p < kProbe; p++) {
      Entry& e = e_[(h + p) & (kSlots - 1)];
      const bool live = e.deadline && e.deadline > now;
      if (live && memcmp(&e.key, &k, sizeof k) == 0) return &e;
      if (!live) {
        if (!free_slot) free_slot = &e;
      } else if (!oldest || e.deadline < oldest->deadline) {
        oldest = &e;
      }
    }
    Entry* s = free_slot ? free_slot : oldest;
    if (s->deadline) drop_entry(*s);
    s->flags = 0;
    s->nheld = 0;
    s->first_at = kNoFirst;
    s->note = FragNote{};
    s->note.valid = 1;
    s->covered = s->total = 0;
    s->key = k;
    s->deadline = now + kTimeoutNs;
    return s;
  }

  void add(Entry* e, const ctrack::Parsed& pp) {
    e->covered += pp.frag_len;
    if (!pp.frag_more) e->total = pp.frag_off + pp.frag_len;
  }
  void done_if_whole(Entry* e) {
    if (e->total && e->covered >= e->total) e->deadline = 0;  // every byte passed: the id may come again
  }

  void release(Entry* e) {
    if (e->first_at != kNoFirst) {
      FragNote n = e->note;
      n.total = e->total;  // a TCP first fragment: the segment's length comes from it
      released_.push_back({e->held[e->first_at], n});
    }
    const FragNote n = e->note;
    for (uint32_t i = 0; i < e->nheld; i++)
      if (i != e->first_at) released_.push_back({e->held[i], n});
    e->nheld = 0;
    e->first_at = kNoFirst;
  }

  void drop_entry(Entry& e) {
    for (uint32_t i = 0; i < e.nheld; i++) dropped_.push_back({e.held[i], e.held_bytes[i], DropWhy::kFragTimeout});
    e.nheld = 0;
    e.deadline = 0;
  }

  std::vector<Entry> e_;
  uint32_t cursor_ = 0;
  std::vector<Released> released_;
  std::vector<Dropped> dropped_;
};

}  // namespace dp
