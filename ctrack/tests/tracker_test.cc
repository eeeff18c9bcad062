// UDP, ICMP, zones, timeouts, full table, IPv6, fragments, events, control plane.
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "../src/table.h"
#include "ct_test_util.h"

namespace ctrack::test {
namespace {

constexpr uint8_t NEW = kCtTrk | kCtNew, EST = kCtTrk | kCtEst, RPL = kCtTrk | kCtEst | kCtRpl,
                  INV = kCtTrk | kCtInv, REL = kCtTrk | kCtRel;

const Key kU = make_key("10.0.0.1", 5000, "10.0.0.2", 53, IPPROTO_UDP);

std::string state_of(Harness& h, const Key& k) {
  std::string s = "<none>";
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) {
    if (ci.orig == k) s = ci.state;
  });
  return s;
}

// The bucket's signature compare (SSE2 on x86-64, NEON on aarch64: the
// cross build's tests run it under qemu) against the plain loop, with the
// padding lanes the vector loads read holding matching values too.
TEST(Table, SignatureMatchIsThePlainLoop) {
  std::mt19937 rng(5);
  for (int t = 0; t < 20000; t++) {
    detail::Bucket b{};
    for (int j = 0; j < detail::kSlots; j++) b.sig[j] = static_cast<uint16_t>(rng() % 4);
    b.second = static_cast<uint16_t>(rng() % 4);
    b.pad = static_cast<uint16_t>(rng() % 4);
    const uint16_t s = static_cast<uint16_t>(rng() % 4);
    uint32_t want = 0;
    for (int j = 0; j < detail::kSlots; j++) want |= static_cast<uint32_t>(b.sig[j] == s) << j;
    ASSERT_EQ(detail::match_mask(b, s), want) << "round " << t;
  }
}

TEST(Udp, UnrepliedRepliedAssuredWithTheirTimeouts) {
  Harness h;
  EXPECT_EQ(+h.run(udp(kU)).state, +NEW);
  EXPECT_EQ(state_of(h, kU), "UDP_UNREPLIED");
  EXPECT_EQ(+h.run(udp(kU)).state, +NEW);  // still no reply
  CtResult r = h.run(udp(kU.reversed()));
  EXPECT_EQ(+r.state, +RPL);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(state_of(h, kU), "UDP_REPLIED");
  EXPECT_EQ(+h.run(udp(kU)).state, +EST);
  int64_t t = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { t = ci.timeout_ms; });
  EXPECT_EQ(t, 30000);
  h.advance_s(2.5);  // active past the stream threshold -> assured, 120 s
  r = h.run(udp(kU));
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(state_of(h, kU), "UDP_ASSURED");
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { t = ci.timeout_ms; });
  EXPECT_EQ(t, 120000);
}

// Every field of a hit's result, both directions, with the event ring off
// (so replied connections take fast_hit, which writes the result as one
// word) and on (the long way for a connection not yet offered).
TEST(Udp, HitResultsNameTheirConnectionAndDirection) {
  for (uint32_t ring : {0u, 256u}) {
    Config c = Harness::small_config();
    c.event_ring = ring;
    Harness h(c);
    const CtResult first = h.run(udp(kU));
    auto expect = [&](const CtResult& r, uint8_t state, uint8_t dir, bool changed) {
      EXPECT_EQ(r.conn, first.conn) << "ring " << ring;
      EXPECT_EQ(+r.state, +state) << "ring " << ring;
      EXPECT_EQ(+r.dir, +dir) << "ring " << ring;
      EXPECT_EQ(+r.changed, +changed) << "ring " << ring;
      EXPECT_EQ(r.reason, Invalid::kNone) << "ring " << ring;
      EXPECT_EQ(+r.nat, +kNatNone) << "ring " << ring;
    };
    expect(h.run(udp(kU)), NEW, 0, false);
    expect(h.run(udp(kU.reversed())), RPL, 1, true);
    for (int i = 0; i < 3; i++) {
      expect(h.run(udp(kU)), EST, 0, false);
      expect(h.run(udp(kU.reversed())), RPL, 1, false);
    }
    h.advance_s(2.5);  // assured: a change
    expect(h.run(udp(kU)), EST, 0, true);
    expect(h.run(udp(kU.reversed())), RPL, 1, false);
  }
}

TEST(Udp, UnrepliedExpiresAfter30s) {
  Harness h;
  h.run(udp(kU));
  h.advance_s(29.9);
  EXPECT_EQ(+h.run(udp(kU)).state, +NEW);
  EXPECT_EQ(h.tracker->stats().created, 1u);  // refreshed, not re-created
  h.advance_s(30.1);
  EXPECT_EQ(h.tracker->expire(h.now_ns, 1024), 1u);
  EXPECT_EQ(h.tracker->stats().active, 0u);
  EXPECT_EQ(h.tracker->stats().expired, 1u);
}

TEST(Udp, ExpiredEntryFoundOnLookupIsReplaced) {
  Harness h;
  h.run(udp(kU));
  h.run(udp(kU.reversed()));
  h.advance_s(31);
  // The reply direction arriving after expiry is a new connection from the server.
  CtResult r = h.run(udp(kU.reversed()));
  EXPECT_EQ(+r.state, +NEW);
  EXPECT_EQ(h.tracker->stats().expired, 1u);
}

TEST(Commit, WithoutCommitNothingIsStored) {
  Harness h;
  EXPECT_EQ(+h.run(udp(kU), false).state, +NEW);
  EXPECT_EQ(h.tracker->stats().active, 0u);
  EXPECT_EQ(+h.run(udp(kU.reversed()), false).state, +NEW);  // no entry, so not a reply
  h.run(udp(kU), true);
  EXPECT_EQ(+h.run(udp(kU.reversed()), false).state, +RPL);  // lookup-only still updates
}

TEST(Icmp, EchoTrackedById) {
  Harness h;
  Key req = make_key("10.0.0.1", 77, "10.0.0.2", 0, IPPROTO_ICMP);
  Packet p = udp(req, 56);
  p.meta = kMetaIcmpEcho;
  EXPECT_EQ(+h.run(p).state, +NEW);
  Packet rep = p;
  rep.key = req.reversed();  // reply: id in dport
  EXPECT_EQ(+h.run(rep).state, +RPL);
  Packet other = p;
  other.key.sport = 78;  // another id is another connection
  EXPECT_EQ(+h.run(other).state, +NEW);
  Packet stray = rep;
  stray.key.dport = 99;  // a reply nobody asked for
  CtResult r = h.run(stray);
  EXPECT_EQ(+r.state, +INV);
  EXPECT_EQ(r.reason, Invalid::kIcmpType);
}

TEST(Icmp, ErrorAboutKnownConnectionIsRelated) {
  Harness h;
  h.run(udp(kU));
  Packet err = udp(kU);  // embedded tuple, as the parser fills it in
  err.meta = kMetaIcmpError;
  err.icmp_type = 3;
  CtResult r = h.run(err);
  EXPECT_EQ(+r.state, +REL);
  EXPECT_NE(r.conn, kNoConn);
  Packet unknown = err;
  unknown.key.dport = 54;
  r = h.run(unknown);
  EXPECT_EQ(+r.state, +INV);
  EXPECT_EQ(r.reason, Invalid::kIcmpNoConn);
}

TEST(Zones, SameTupleInTwoZonesIsTwoConnections) {
  Harness h;
  Key z1 = kU, z2 = kU;
  z1.zone = 1;
  z2.zone = 2;
  h.run(udp(z1));
  EXPECT_EQ(+h.run(udp(z2.reversed())).state, +NEW);  // zone 2 knows nothing of zone 1
  EXPECT_EQ(+h.run(udp(z1.reversed())).state, +RPL);
  EXPECT_EQ(h.tracker->stats().active, 2u);
  EXPECT_EQ(h.tracker->flush(1), 1u);
  EXPECT_EQ(h.tracker->stats().active, 1u);
}

TEST(Zones, PerZoneLimit) {
  Config cfg = Harness::small_config();
  cfg.zone_limits = {{7, 3}};
  Harness h(cfg);
  for (uint16_t i = 0; i < 5; i++) {
    Key k = kU;
    k.zone = 7;
    k.sport = static_cast<uint16_t>(6000 + i);
    CtResult r = h.run(udp(k));
    if (i < 3) EXPECT_EQ(+r.state, +NEW);
    else EXPECT_EQ(r.reason, Invalid::kZoneLimit);
  }
  Key other = kU;
  other.zone = 8;
  EXPECT_EQ(+h.run(udp(other)).state, +NEW);
  EXPECT_EQ(h.tracker->stats().zone_limited, 2u);
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

Config tiny(FullPolicy pol) {
  Config c;
  c.capacity = 8;
  c.full_policy = pol;
  c.event_ring = 64;
  return c;
}

Key nth(uint16_t i) {
  Key k = kU;
  k.sport = static_cast<uint16_t>(10000 + i);
  return k;
}

TEST(FullTable, EarlyDropEvictsUnrepliedFirst) {
  Harness h(tiny(FullPolicy::kDrop));
  for (uint16_t i = 0; i < 8; i++) {
    h.run(udp(nth(i)));
    if (i != 3) h.run(udp(nth(i).reversed()));  // all replied but #3
  }
  EXPECT_EQ(+h.run(udp(nth(100))).state, +NEW);
  EXPECT_EQ(h.tracker->stats().evicted, 1u);
  EXPECT_EQ(state_of(h, nth(3)), "<none>");
  EXPECT_EQ(state_of(h, nth(4)), "UDP_REPLIED");
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

TEST(FullTable, DropPolicyCountsAndNeverGrows) {
  Harness h(tiny(FullPolicy::kDrop));
  for (uint16_t i = 0; i < 8; i++) {
    h.run(udp(nth(i)));
    h.run(udp(nth(i).reversed()));
    h.advance_s(3);
    h.run(udp(nth(i)));  // assured: not evictable
  }
  CtResult r = h.run(udp(nth(200)));
  EXPECT_EQ(+r.state, +INV);
  EXPECT_EQ(r.reason, Invalid::kTableFull);
  EXPECT_EQ(h.tracker->stats().table_full, 1u);
  EXPECT_EQ(h.tracker->stats().active, 8u);
  // Established traffic is unaffected.
  EXPECT_EQ(+h.run(udp(nth(0))).state, +EST);
}

TEST(FullTable, PassPolicyPassesUntracked) {
  Harness h(tiny(FullPolicy::kPassUntracked));
  for (uint16_t i = 0; i < 8; i++) {
    h.run(udp(nth(i)));
    h.run(udp(nth(i).reversed()));
    h.advance_s(3);
    h.run(udp(nth(i)));
  }
  CtResult r = h.run(udp(nth(200)));
  EXPECT_EQ(+r.state, +(kCtUntracked | kCtNew));
  EXPECT_EQ(r.conn, kNoConn);
  EXPECT_EQ(h.tracker->stats().untracked, 1u);
}

// The established shortcut (fast_hit) writes the whole result (handle,
// state, changed, reason, direction, NAT side) over whatever was there, in
// both directions, through process() and through lookup() + process_found().
TEST(FastHit, WritesTheWholeResultInBothDirections) {
  Config cfg = Harness::small_config();
  cfg.event_ring = 0;  // (no kEstablished to offer: the shortcut applies from the first assured ACK)
  Harness h(cfg);
  const Key k = make_key("10.1.0.1", 40000, "10.1.0.2", 443, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 1, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 9, 2));
  const CtResult est = h.run(tcp(k, kAck, 2, 10));
  ASSERT_EQ(+est.state, +EST);
  const uint64_t hits0 = h.tracker->stats().hits;
  for (int via_lookup = 0; via_lookup < 2; via_lookup++) {
    for (int d = 0; d < 2; d++) {
      const Packet p = d ? tcp(k.reversed(), kAck, 10, 2) : tcp(k, kAck, 2, 10);
      const Packet* pp = &p;
      CtResult r;
      std::memset(static_cast<void*>(&r), 0xA5, sizeof r);
      if (via_lookup) {
        Tracker::Found f;
        h.tracker->lookup(&pp, 1, &f);
        const Tracker::Found* fp = &f;
        h.tracker->process_found(&pp, &fp, 1, h.now_ns, true, &r);
      } else {
        h.tracker->process(&pp, 1, h.now_ns, true, &r);
      }
      SCOPED_TRACE(testing::Message() << "via_lookup " << via_lookup << " dir " << d);
      EXPECT_EQ(r.conn, est.conn);
      EXPECT_EQ(+r.state, d ? +RPL : +EST);
      EXPECT_EQ(+r.changed, 0);
      EXPECT_EQ(static_cast<int>(r.reason), static_cast<int>(Invalid::kNone));
      EXPECT_EQ(+r.dir, d);
      EXPECT_EQ(+r.nat, +kNatNone);
    }
  }
  EXPECT_EQ(h.tracker->stats().hits, hits0 + 4);
}

TEST(Ipv6, TcpHandshakeAndUdp) {
  Harness h;
  Key k = make_key("fd00::1", 40000, "fd00::2", 443, IPPROTO_TCP);
  EXPECT_EQ(+h.run(tcp(k, kSyn, 1, 0)).state, +NEW);
  EXPECT_EQ(+h.run(tcp(k.reversed(), kSyn | kAck, 9, 2)).state, +RPL);
  EXPECT_EQ(+h.run(tcp(k, kAck, 2, 10)).state, +EST);
  Key u = make_key("fd00::1", 1, "fd00::2", 2, IPPROTO_UDP);
  h.run(udp(u));
  EXPECT_EQ(+h.run(udp(u.reversed())).state, +RPL);
  // An IPv4 key with the same leading bytes is a different connection.
  Key v4 = make_key("253.0.0.0", 1, "253.0.0.0", 2, IPPROTO_UDP);
  EXPECT_EQ(+h.run(udp(v4.reversed())).state, +NEW);
}

// An entry keeps each address's first four bytes with the ports in its hot
// line and the other twelve in its cold part: two IPv6 connections that
// differ only there, with the same bucket and signature (found by search),
// are still two.
TEST(Ipv6, AddressBytesBeyondTheFirstFourTellConnectionsApart) {
  Config c = Harness::small_config();
  c.capacity = 4;  // two buckets: the top bit of the hash picks one
  Harness h(c);
  const Key a = make_key("fd00::1", 1000, "fd00::2", 2000, IPPROTO_UDP);
  const std::optional<Key> found = same_signature(a, [](Key& k, uint32_t i) { put3(k.dst + 13, i); });
  ASSERT_TRUE(found);
  const Key b = *found;
  const CtResult ra = h.run(udp(a));
  const CtResult rb = h.run(udp(b));
  EXPECT_EQ(+ra.state, +NEW);
  EXPECT_EQ(+rb.state, +NEW);
  EXPECT_NE(ra.conn, rb.conn);
  EXPECT_EQ(h.tracker->stats().active, 2u);
  EXPECT_EQ(+h.run(udp(b.reversed())).state, +RPL);
  EXPECT_EQ(state_of(h, a), "UDP_UNREPLIED");
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

// The same for IPv4, whose entry compare is two words (stage 1's canonical
// words in process()): connections that differ only in an address, or only
// in a port, with the same bucket and signature, are told apart, from
// either side.
TEST(Table, Ipv4KeysWithOneSignatureAreTwoConnections) {
  for (int field = 0; field < 2; field++) {
    Config c = Harness::small_config();
    c.capacity = 4;  // two buckets: the top bit of the hash picks one
    Harness h(c);
    const Key a = make_key("10.0.0.1", 1000, "10.0.0.2", 2000, IPPROTO_UDP);
    const std::optional<Key> found = same_signature(a, [&](Key& k, uint32_t i) {
      if (field == 0) {
        put3(k.dst + 1, i);
      } else {
        k.sport = static_cast<uint16_t>(i);
        k.dport = static_cast<uint16_t>(i >> 16);
      }
    });
    ASSERT_TRUE(found);
    const Key b = *found;
    const CtResult ra = h.run(udp(a));
    const CtResult rb = h.run(udp(b.reversed()));
    EXPECT_EQ(+ra.state, +NEW);
    EXPECT_EQ(+rb.state, +NEW) << field;
    EXPECT_NE(ra.conn, rb.conn);
    EXPECT_EQ(h.tracker->stats().active, 2u);
    const CtResult rb2 = h.run(udp(b));
    EXPECT_EQ(+rb2.state, +RPL) << field;
    EXPECT_EQ(rb2.conn, rb.conn);
    EXPECT_EQ(state_of(h, a), "UDP_UNREPLIED");
    // lookup() tells them apart too (its key compare is its own, tracker.cc),
    // from either direction.
    const std::pair<Key, uint32_t> want[] = {{a, ra.conn}, {a.reversed(), ra.conn}, {b, rb.conn}, {b.reversed(), rb.conn}};
    for (const auto& [k, conn] : want) {
      const Packet p = udp(k);
      const Packet* pp = &p;
      Tracker::Found f;
      h.tracker->lookup(&pp, 1, &f);
      EXPECT_EQ(f.conn, conn) << field;
    }
    EXPECT_TRUE(h.tracker->check_invariants().ok());
  }
}

// key.h's contract for IPv4 keys (address bytes beyond the first four are
// zero), which the entry compare relies on, is asserted at the per-packet
// entry points in debug builds. (Broken, such a key's entry is marked wide
// and never found again.)
TEST(TrackerDeathTest, Ipv4KeyWithHighAddressBytesIsRefusedInDebugBuilds) {
#ifdef NDEBUG
  GTEST_SKIP() << "release build: not checked";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Config c = Harness::small_config();
  Harness h(c);
  Key k = make_key("10.0.0.1", 1000, "10.0.0.2", 2000, IPPROTO_UDP);
  const Packet good = udp(k);
  k.dst[15] = 1;
  const Packet bad = udp(k);
  const Packet* pp[2] = {&good, &bad};
  CtResult r[2];
  Tracker::Found f[2] = {};
  const Tracker::Found* fp[2] = {&f[0], &f[1]};
  EXPECT_DEATH(h.tracker->process(pp, 2, 0, true, r), "IPv4 key");
  EXPECT_DEATH(h.tracker->lookup(pp, 2, f), "IPv4 key");
  h.tracker->lookup(pp, 1, f);
  EXPECT_DEATH(h.tracker->process_found(pp, fp, 2, 0, true, r), "IPv4 key");
  h.tracker->process(pp, 1, 0, true, r);  // the valid key alone: fine
  EXPECT_EQ(+r[0].state, +NEW);
#endif
}

// Counters keep their low bits in the entry's hot line and carry into the
// cold part: exact past 256 packets and 64 KiB per direction, and with
// folded NIC counters near 2^64.
TEST(Counters, ExactAcrossTheCarry) {
  Harness h;
  h.run(udp(kU));
  h.run(udp(kU.reversed()));
  for (int i = 0; i < 700; i++) {
    h.run(udp(kU, 60000));
    h.run(udp(kU.reversed(), static_cast<uint16_t>(i)));
  }
  ConnInfo got{};
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { got = ci; });
  EXPECT_EQ(got.packets[0], 701u);
  EXPECT_EQ(got.packets[1], 701u);
  EXPECT_EQ(got.bytes[0], 128u + 700u * 60028u);
  EXPECT_EQ(got.bytes[1], 128u + 700u * 28u + 699u * 700u / 2);
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  const uint64_t pk[2] = {(1ull << 62) + 3, 1ull << 40}, by[2] = {(1ull << 63) + 65535, 0xFFFFull << 48};
  EXPECT_TRUE(h.tracker->fold_hw_counters(got.handle, ev[0].orig, pk, by, h.now_ns));
  h.run(udp(kU, 100));
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { got = ci; });
  EXPECT_EQ(got.packets[0], (1ull << 62) + 3 + 702);
  EXPECT_EQ(got.packets[1], (1ull << 40) + 701);
  EXPECT_EQ(got.bytes[0], (1ull << 63) + 65535 + 128u + 700u * 60028u + 128u);
  EXPECT_EQ(got.bytes[1], (0xFFFFull << 48) + 128u + 700u * 28u + 699u * 700u / 2);
}

TEST(Fragments, LaterFragmentsFollowTheirConnectionAndNeverStartOne) {
  Harness h;
  // The ports a later fragment carries are its first fragment's (the front
  // end's fragment table gives them). Of no connection: invalid, even with
  // commit, and nothing is stored.
  Packet lone = udp(kU);
  lone.meta = kMetaFragment;
  CtResult r = h.run(lone, true);
  EXPECT_EQ(+r.state, +INV);
  EXPECT_EQ(r.reason, Invalid::kFragment);
  EXPECT_EQ(r.conn, kNoConn);
  EXPECT_EQ(h.tracker->stats().active, 0u);
  // Of a known one: its state, counted in its direction.
  h.run(udp(kU));
  Packet frag = udp(kU);
  frag.meta = kMetaFragment;
  r = h.run(frag);
  EXPECT_EQ(+r.state, +NEW);
  EXPECT_NE(r.conn, kNoConn);
  uint64_t pk = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { pk = ci.packets[0]; });
  EXPECT_EQ(pk, 2u);
  // TCP: a later fragment's (absent) header never moves the state machine;
  // junk where a header would be is not judged.
  const Key t = make_key("10.0.0.1", 40000, "10.0.0.2", 80, IPPROTO_TCP);
  h.run(tcp(t, kSyn, 1000, 0));
  h.run(tcp(t.reversed(), kSyn | kAck, 5000, 1001));
  h.run(tcp(t, kAck, 1001, 5001));
  Packet tf = tcp(t, kSyn | kFin | kRst, 0xdeadbeef, 7);  // what the parser would never give it
  tf.meta = kMetaFragment;
  r = h.run(tf);
  EXPECT_EQ(+r.state, +EST);
  EXPECT_EQ(r.reason, Invalid::kNone);
  EXPECT_EQ(+h.run(tcp(t.reversed(), kAck, 5001, 1001)).state, +RPL);  // still ESTABLISHED
}

TEST(Generic, OtherProtocolsTrackedByAddresses) {
  Harness h;
  Key g = make_key("10.0.0.1", 0, "10.0.0.2", 0, 47);  // GRE
  EXPECT_EQ(+h.run(udp(g)).state, +NEW);
  EXPECT_EQ(+h.run(udp(g.reversed())).state, +RPL);
  int64_t t = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { t = ci.timeout_ms; });
  EXPECT_EQ(t, 600000);
}

TEST(Events, EstablishedThenDestroyedOnExpiry) {
  Harness h;
  h.run(udp(kU));
  h.run(udp(kU.reversed()));
  Event ev[8];
  ASSERT_EQ(h.tracker->poll_events(ev, 8), 1u);
  EXPECT_EQ(ev[0].type, EventType::kEstablished);
  uint32_t handle = ev[0].conn;
  EXPECT_TRUE(h.tracker->set_offloaded(handle, ev[0].orig, true));
  EXPECT_EQ(h.tracker->stats().offloaded, 1u);
  // NIC counters fold in and keep the entry alive past its software timeout.
  uint64_t pk[2] = {1000, 900}, by[2] = {100000, 90000};
  h.advance_s(25);
  EXPECT_TRUE(h.tracker->fold_hw_counters(handle, ev[0].orig, pk, by, h.now_ns));
  h.advance_s(25);
  EXPECT_EQ(h.tracker->expire(h.now_ns, 1024), 0u);
  ConnInfo got{};
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { got = ci; });
  EXPECT_EQ(got.packets[0], 1001u);
  EXPECT_EQ(got.bytes[1], 90000u + 128u);
  EXPECT_TRUE(got.offloaded);
  h.advance_s(10);
  EXPECT_EQ(h.tracker->expire(h.now_ns, 1024), 1u);
  ASSERT_EQ(h.tracker->poll_events(ev, 8), 1u);
  EXPECT_EQ(ev[0].type, EventType::kDestroyed);
  EXPECT_EQ(ev[0].conn, handle);
  EXPECT_EQ(h.tracker->stats().offloaded, 0u);
  // A stale handle is refused.
  EXPECT_FALSE(h.tracker->fold_hw_counters(handle, kU, pk, by, h.now_ns));
}

TEST(Events, FullRingDefersDestroyInsteadOfLosingIt) {
  Config cfg = Harness::small_config();
  cfg.event_ring = 2;
  Harness h(cfg);
  for (uint16_t i = 0; i < 3; i++) {
    h.run(udp(nth(i)));
    h.run(udp(nth(i).reversed()));
  }
  EXPECT_EQ(h.tracker->stats().events_dropped, 1u);  // third kEstablished lost: offered again at its next packet
  h.advance_s(100);
  h.tracker->expire(h.now_ns, 1024);
  EXPECT_EQ(h.tracker->stats().active, 2u);  // two announced entries wait for ring space
  Event ev[8];
  EXPECT_EQ(h.tracker->poll_events(ev, 8), 2u);
  h.tracker->expire(h.now_ns, 1024);
  EXPECT_EQ(h.tracker->stats().active, 0u);
  EXPECT_EQ(h.tracker->poll_events(ev, 8), 2u);
  for (int i = 0; i < 2; i++) EXPECT_EQ(ev[i].type, EventType::kDestroyed);
}

// A kEstablished lost to a full ring is raised by a later packet: for TCP
// an in-window ACK of the assured connection, for UDP a replied datagram
// (both the per-packet fast path's common cases).
TEST(Events, EstablishedLostToAFullRingIsRaisedByALaterPacket) {
  Config cfg = Harness::small_config();
  cfg.event_ring = 1;
  Harness h(cfg);
  Key u = make_key("10.0.0.9", 9, "10.0.0.2", 2, IPPROTO_UDP);
  h.run(udp(u));
  h.run(udp(u.reversed()));  // its kEstablished fills the ring
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  EXPECT_EQ(h.tracker->stats().events_dropped, 1u);
  Event ev[2];
  ASSERT_EQ(h.tracker->poll_events(ev, 2), 1u);
  EXPECT_EQ(ev[0].orig, u);
  EXPECT_EQ(+h.run(tcp(k.reversed(), kAck, 501, 101, 65535, 10)).state, +(kCtTrk | kCtEst | kCtRpl));
  ASSERT_EQ(h.tracker->poll_events(ev, 2), 1u);
  EXPECT_EQ(ev[0].type, EventType::kEstablished);
  EXPECT_EQ(ev[0].orig, k);
  // The same for UDP: lost, then raised by the next replied datagram.
  Key u2 = make_key("10.0.0.8", 8, "10.0.0.2", 2, IPPROTO_UDP);
  h.run(tcp(k, kAck, 101, 511, 65535, 10));  // nothing to raise: the ring stays empty
  EXPECT_EQ(h.tracker->poll_events(ev, 2), 0u);
  h.run(udp(u2));
  Key u3 = make_key("10.0.0.7", 7, "10.0.0.2", 2, IPPROTO_UDP);
  h.run(udp(u3));
  h.run(udp(u3.reversed()));  // fills the ring
  h.run(udp(u2.reversed()));  // lost
  EXPECT_EQ(h.tracker->stats().events_dropped, 2u);
  ASSERT_EQ(h.tracker->poll_events(ev, 2), 1u);
  h.run(udp(u2));
  ASSERT_EQ(h.tracker->poll_events(ev, 2), 1u);
  EXPECT_EQ(ev[0].type, EventType::kEstablished);
  EXPECT_EQ(ev[0].orig, u2);
}

TEST(Events, ClosingRaisedForOffloadedTcp) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  h.tracker->set_offloaded(ev[0].conn, ev[0].orig, true);
  h.run(tcp(k, kFin | kAck, 101, 501));
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kClosing);
}

// A FIN that comes while the offer is still being installed (offered, not
// yet offloaded) raises Closing too: the provider removes what it puts in
// the NIC for a connection that is already closing. Without it the install
// finished, the connection went into the NIC closing, and stayed there
// until its entry expired (Offload.ChurnLeavesNothingInTheNic under load).
TEST(Events, ClosingRaisedForTcpStillBeingOffered) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  ASSERT_EQ(ev[0].type, EventType::kEstablished);
  h.run(tcp(k, kFin | kAck, 101, 501));
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kClosing);
  h.run(tcp(k.reversed(), kFin | kAck, 501, 102));
  EXPECT_EQ(h.tracker->poll_events(ev, 4), 0u);  // once
}

// Issue 20: a connection that leaves the NIC while alive (aged out, its
// rules changed) is offered again at its next packet; one the provider
// refused for good (set_no_offload) is not; nor one that is closing.
TEST(Events, OfferedAgainAfterLeavingTheNicWhileAlive) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  const Event est = ev[0];
  h.tracker->set_offloaded(est.conn, est.orig, true);
  h.run(tcp(k, kAck, 101, 501, 65535, 10));  // one the NIC refused: a resync, not a new offer
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kResync);
  h.tracker->set_offloaded(est.conn, est.orig, false);  // aged out
  h.run(tcp(k, kAck, 111, 501, 65535, 10));
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kEstablished);
  EXPECT_EQ(ev[0].conn, est.conn);
  h.run(tcp(k, kAck, 121, 501, 65535, 10));
  EXPECT_EQ(h.tracker->poll_events(ev, 4), 0u) << "raised once, not per packet";
  h.tracker->set_no_offload(est.conn, est.orig);
  h.tracker->set_offloaded(est.conn, est.orig, true);
  h.tracker->set_offloaded(est.conn, est.orig, false);
  h.run(tcp(k, kAck, 131, 501, 65535, 10));
  EXPECT_EQ(h.tracker->poll_events(ev, 4), 0u) << "refused for good";
}

// The offload provider takes the state at submission, not at the event: the
// window may have moved in between (packets software forwarded meanwhile).
TEST(Events, SnapshotIsTheStateNowNotAtTheEvent) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].tcp[0].end, 101u);
  h.run(tcp(k, kAck, 101, 501, 65535, 1000));  // 1000 bytes of data after the event
  Event snap;
  ASSERT_TRUE(h.tracker->snapshot(ev[0].conn, ev[0].orig, &snap));
  EXPECT_EQ(snap.tcp[0].end, 1101u);
  EXPECT_EQ(snap.last_dir, 0);
  EXPECT_EQ(snap.last_end, 1101u);
  EXPECT_EQ(snap.last_index, 3);  // ACK
  EXPECT_FALSE(h.tracker->snapshot(ev[0].conn + 1, ev[0].orig, &snap));
}

// max_ack is the largest ACK a direction sent: exact when the peer has
// nothing unacknowledged, else a lower bound, never above the peer's end.
TEST(Events, MaxAckIsTheLargestAckSent) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  Event snap;
  ASSERT_TRUE(h.tracker->snapshot(ev[0].conn, ev[0].orig, &snap));
  EXPECT_EQ(snap.tcp[0].maxack, 501u);  // original acked the SYN-ACK: exact
  EXPECT_EQ(snap.tcp[1].maxack, 101u);
  h.run(tcp(k, kAck, 101, 501, 65535, 1000));  // 1000 unacknowledged bytes from the original side
  ASSERT_TRUE(h.tracker->snapshot(ev[0].conn, ev[0].orig, &snap));
  EXPECT_EQ(snap.tcp[0].maxack, 501u);
  EXPECT_LE(snap.tcp[1].maxack, 101u + 0u);  // the reply side has acked 101, not the new data
  h.run(tcp(k.reversed(), kAck, 501, 1101));
  ASSERT_TRUE(h.tracker->snapshot(ev[0].conn, ev[0].orig, &snap));
  EXPECT_EQ(snap.tcp[1].maxack, 1101u);
}

// A segment of an offloaded connection that reaches software was refused by
// the NIC: one kResync until the provider says it is done.
TEST(Events, ResyncRaisedOnceForSegmentsTheNicRefused) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  Event est = ev[0];
  h.run(tcp(k, kAck, 101, 501, 65535, 10));  // not offloaded yet: nothing
  EXPECT_EQ(h.tracker->poll_events(ev, 4), 0u);
  ASSERT_TRUE(h.tracker->set_offloaded(est.conn, est.orig, true));
  h.run(tcp(k, kAck, 111, 501, 65535, 10));
  h.run(tcp(k, kAck, 121, 501, 65535, 10));
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kResync);
  ASSERT_TRUE(h.tracker->resync_done(est.conn, est.orig));
  h.run(tcp(k, kAck, 131, 501, 65535, 10));
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kResync);
}

// Leaving the NIC, the window is learnt again from the next packets (the
// NIC moved it on): a segment far beyond what software last saw is accepted
// and the connection is checked strictly again afterwards.
TEST(Events, BackFromTheNicTheWindowIsLearntAgain) {
  Harness h;
  Key k = make_key("10.0.0.1", 1, "10.0.0.2", 2, IPPROTO_TCP);
  h.run(tcp(k, kSyn, 100, 0));
  h.run(tcp(k.reversed(), kSyn | kAck, 500, 101));
  h.run(tcp(k, kAck, 101, 501));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  ASSERT_TRUE(h.tracker->set_offloaded(ev[0].conn, ev[0].orig, true));
  ASSERT_TRUE(h.tracker->set_offloaded(ev[0].conn, ev[0].orig, false));
  // 10 MB later (the NIC forwarded them): accepted, the window re-learnt.
  EXPECT_FALSE(h.run(tcp(k, kAck, 10'000'101, 501, 65535, 100)).state & kCtInv);
  EXPECT_FALSE(h.run(tcp(k.reversed(), kAck, 501, 10'000'201)).state & kCtInv);
  // Strict again: an ACK for data never sent is invalid.
  EXPECT_TRUE(h.run(tcp(k.reversed(), kAck, 501, 30'000'000)).state & kCtInv);
}

TEST(Control, ListAndFlushWhileAnotherThreadProcesses) {
  Config cfg;
  cfg.capacity = 1 << 14;
  auto t = Tracker::create(cfg);
  ASSERT_TRUE(t.ok());
  Tracker& tr = *t.value();
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    std::vector<Packet> pk(32);
    std::vector<const Packet*> pp(32);
    std::vector<CtResult> out(32);
    uint64_t now = 1'000'000'000'000;
    for (uint32_t round = 0; !stop.load(); round++) {
      for (uint32_t i = 0; i < 32; i++) {
        pk[i] = udp(nth(static_cast<uint16_t>((round * 32 + i) % 5000)));
        if (round & 1) pk[i].key = pk[i].key.reversed();
        pp[i] = &pk[i];
      }
      tr.process(pp.data(), 32, now, true, out.data());
      now += 1000;
    }
  });
  for (int i = 0; i < 50; i++) {
    size_t n = 0;
    tr.for_each(1'000'000'000'000, [&](const ConnInfo&) { n++; });
    EXPECT_LE(n, 5000u);
    if (i % 10 == 9) tr.flush();
  }
  stop = true;
  worker.join();
  EXPECT_TRUE(tr.check_invariants().ok()) << tr.check_invariants().message();
}

TEST(Table, RandomChurnKeepsInvariants) {
  Config cfg;
  cfg.capacity = 2000;
  cfg.event_ring = 1024;
  Harness h(cfg);
  std::mt19937 rng(42);
  Event ev[1024];
  for (int round = 0; round < 200; round++) {
    std::vector<Packet> pk(32);
    std::vector<const Packet*> pp(32);
    std::vector<CtResult> out(32);
    for (int i = 0; i < 32; i++) {
      Key k = make_key("10.1.0.1", static_cast<uint16_t>(rng() % 3000), "10.2.0.1", 80,
                       rng() % 2 ? IPPROTO_UDP : IPPROTO_TCP, static_cast<uint16_t>(rng() % 3));
      if (rng() % 2) k = k.reversed();
      pk[i] = k.proto == IPPROTO_TCP ? tcp(k, static_cast<uint8_t>(rng() % 32), rng(), rng()) : udp(k);
      pp[i] = &pk[i];
    }
    h.tracker->process(pp.data(), 32, h.now_ns, true, out.data());
    h.tracker->poll_events(ev, 1024);
    h.advance_s(rng() % 4);
    if (round % 50 == 49) h.tracker->flush(static_cast<int>(rng() % 3));
    ASSERT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
  }
}

TEST(Table, DuplicatesInOneBurstShareOneEntry) {
  Harness h;
  std::vector<Packet> pk(32, udp(kU));
  for (int i = 1; i < 32; i += 2) pk[i] = udp(kU.reversed());
  std::vector<const Packet*> pp;
  for (auto& p : pk) pp.push_back(&p);
  std::vector<CtResult> out(32);
  h.tracker->process(pp.data(), 32, h.now_ns, true, out.data());
  EXPECT_EQ(h.tracker->stats().active, 1u);
  EXPECT_EQ(+out[0].state, +NEW);
  EXPECT_EQ(+out[1].state, +RPL);
  EXPECT_EQ(+out[2].state, +EST);
  for (int i = 1; i < 32; i++) EXPECT_EQ(out[i].conn, out[0].conn);
}

TEST(Table, FillsToCapacity) {
  Config cfg;
  cfg.capacity = 100000;
  Harness h(cfg);
  std::vector<Packet> pk(32);
  std::vector<const Packet*> pp(32);
  std::vector<CtResult> out(32);
  uint32_t made = 0;
  for (uint32_t base = 0; base < cfg.capacity; base += 32) {
    for (uint32_t i = 0; i < 32; i++) {
      uint32_t n = base + i;
      pk[i] = udp(make_key("10.0.0.1", static_cast<uint16_t>(n), "10.0.0.2", static_cast<uint16_t>(n >> 16),
                           IPPROTO_UDP));
      pp[i] = &pk[i];
    }
    h.tracker->process(pp.data(), 32, h.now_ns, true, out.data());
    for (auto& r : out) made += r.conn != kNoConn;
  }
  // Every entry fits: cuckoo displacement reaches 90% bucket load.
  EXPECT_EQ(h.tracker->stats().active, cfg.capacity);
  EXPECT_EQ(h.tracker->stats().table_full, 0u);
  EXPECT_LE(h.tracker->bytes_per_conn(), 128u);
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

// At 90% index load about 8.6% of random keys cannot have a slot in their
// first bucket (Poisson(9) keys for 10 slots); insert moves entries back to
// their first bucket to stay near that (a lookup of the others reads two
// buckets): 15.1% of these went to the second before, 10.7% now; after a
// third are replaced, 20.0% before, 12.3% now. Each slot's second-bucket
// bit stays right through erases and refills.
TEST(Table, FewEntriesInTheirSecondBucket) {
  constexpr uint32_t n = 200000;
  detail::Table t;
  ASSERT_TRUE(t.init(n, false));
  std::mt19937 rng(1);
  std::vector<uint32_t> hs(n);
  auto check = [&](uint32_t live) {
    uint32_t second = 0, seen = 0;
    for (uint32_t b = 0; b < t.nbuckets(); b++) {
      const detail::Bucket& B = t.buckets()[b];
      for (int j = 0; j < detail::kSlots; j++) {
        if (B.idx[j] == detail::kEmpty) continue;
        seen++;
        const uint32_t b1 = t.b1(hs[B.idx[j]]);
        second += b != b1;
        EXPECT_EQ((B.second >> j) & 1, b != b1 ? 1u : 0u) << "bucket " << b << " slot " << j;
      }
    }
    EXPECT_EQ(seen, live);
    return second;
  };
  for (uint32_t i = 0; i < n; i++) {
    hs[i] = rng();
    ASSERT_TRUE(t.insert(hs[i], i));
  }
  EXPECT_LT(check(n), n * 12 / 100);
  // Churn: a third out, then back in under new hashes.
  for (uint32_t i = 0; i < n; i += 3) ASSERT_TRUE(t.erase(hs[i], i));
  for (uint32_t i = 0; i < n; i += 3) {
    hs[i] = rng();
    ASSERT_TRUE(t.insert(hs[i], i));
  }
  EXPECT_LT(check(n), n * 14 / 100);
}

TEST(Config, RejectsBadValues) {
  Config c;
  c.capacity = 0;
  EXPECT_FALSE(Tracker::create(c).ok());
  c.capacity = 10;
  c.event_ring = 100;
  auto r = Tracker::create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("power of two"), std::string::npos);
}

}  // namespace
}  // namespace ctrack::test

namespace ctrack::test {
namespace {

TEST(Key, CanonicalHashMatchesHashOfCanonicalKey) {
  std::mt19937 rng(3);
  for (int i = 0; i < 10000; i++) {
    Key k{};
    for (auto& b : k.src) b = static_cast<uint8_t>(rng() % 3);
    for (auto& b : k.dst) b = static_cast<uint8_t>(rng() % 3);
    k.sport = static_cast<uint16_t>(rng() % 4);
    k.dport = static_cast<uint16_t>(rng() % 4);
    k.zone = static_cast<uint16_t>(rng());
    k.proto = static_cast<uint8_t>(rng());
    k.family = rng() % 2 ? 4 : 6;
    Key c;
    bool canon1 = canonicalize(k, &c);
    bool canon2;
    ASSERT_EQ(hash_canonical(k, &canon2), hash_key(c));
    ASSERT_EQ(canon1, canon2);
    bool canon3;
    ASSERT_EQ(hash_canonical(k.reversed(), &canon3), hash_key(c));
    ASSERT_TRUE(keys_equal_reversed(k, k.reversed()));
    ASSERT_EQ(keys_equal_reversed(k, k), k == k.reversed());
  }
}

}  // namespace
}  // namespace ctrack::test
