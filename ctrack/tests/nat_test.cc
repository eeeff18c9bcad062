// NAT on conntrack, as OVS's ct(commit,nat(...)): the translation chosen at
// commit, kept with the connection, reversed for replies; unique translated
// tuples; exhaustion; related ICMP errors; zones.
#include <functional>
#include <set>

#include "ct_test_util.h"

namespace ctrack::test {
namespace {

constexpr uint8_t NEW = kCtTrk | kCtNew, EST = kCtTrk | kCtEst, RPL = kCtTrk | kCtEst | kCtRpl,
                  REL = kCtTrk | kCtRel, INV = kCtTrk | kCtInv;

Config nat_config(uint32_t capacity = 1024) {
  Config c = Harness::small_config();
  c.capacity = capacity;
  c.nat = true;
  return c;
}

NatRange range(NatKind kind, const char* lo, const char* hi, uint16_t pmin = 0, uint16_t pmax = 0) {
  NatRange r;
  r.kind = kind;
  r.family = strchr(lo, ':') ? 6 : 4;
  inet_pton(r.family == 6 ? AF_INET6 : AF_INET, lo, r.addr_min);
  inet_pton(r.family == 6 ? AF_INET6 : AF_INET, hi, r.addr_max);
  r.port_min = pmin;
  r.port_max = pmax;
  return r;
}

struct Out {
  CtResult r;
  Key to{};
};

Out run(Harness& h, const Packet& p, const NatRange* nat = nullptr, bool commit = true) {
  const Packet* pp = &p;
  Out o;
  h.tracker->process(&pp, 1, h.now_ns, commit, &o.r, nat, &o.to);
  return o;
}

std::string addr(const uint8_t* a, int family = 4) {
  char b[64];
  inet_ntop(family == 6 ? AF_INET6 : AF_INET, a, b, sizeof b);
  return b;
}

const Key kClient = make_key("10.0.0.5", 40000, "192.0.2.10", 80, IPPROTO_TCP);

TEST(Nat, SourceTranslationIsKeptAndReversedForReplies) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  Out syn = run(h, tcp(kClient, kSyn, 100, 0), &snat);
  ASSERT_EQ(+syn.r.state, +NEW);
  ASSERT_EQ(syn.r.nat, kNatOrig);
  EXPECT_EQ(addr(syn.to.src), "203.0.113.7");
  EXPECT_EQ(syn.to.sport, 40000) << "the port is kept where the translated tuple is unique";
  EXPECT_EQ(addr(syn.to.dst), "192.0.2.10");
  EXPECT_EQ(syn.to.dport, 80);

  // The server answers the translated address; the reply is found and
  // rewritten back to the client.
  Key back = syn.to.reversed();
  Out synack = run(h, tcp(back, kSyn | kAck, 500, 101), &snat);
  ASSERT_EQ(+synack.r.state, +RPL);
  ASSERT_EQ(synack.r.nat, kNatReply);
  EXPECT_EQ(synack.r.conn, syn.r.conn);
  EXPECT_TRUE(synack.to == kClient.reversed()) << synack.to.str();

  // Later packets of the original direction keep the same translation, even
  // if the commit's range is another one now (chosen at commit, kept).
  const NatRange other = range(NatKind::kSrc, "198.51.100.1", "198.51.100.1");
  Out ack = run(h, tcp(kClient, kAck, 101, 501), &other);
  ASSERT_EQ(+ack.r.state, +EST);
  EXPECT_TRUE(ack.to == syn.to) << ack.to.str();

  // Listed with its reply tuple.
  int seen = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) {
    seen++;
    EXPECT_EQ(ci.nat, NatKind::kSrc);
    EXPECT_TRUE(ci.reply == back) << ci.reply.str();
    EXPECT_TRUE(ci.orig == kClient);
  });
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

// A packet looked up under a translated connection's reply tuple whose
// entry is freed, and its slot taken by an untranslated connection, before
// process_found(): the slot's old reply tuple (NatHot::rkey keeps its
// addresses and ports when the entry is freed, only its family is cleared)
// must not match, or the packet is judged as the new
// connection's and leaves untranslated. It is looked up again and misses.
TEST(Nat, AFreedSlotsOldReplyTupleMatchesNothing) {
  Harness h(nat_config(4));
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  const Key a = make_key("10.0.0.5", 7000, "192.0.2.10", 53, IPPROTO_UDP);
  Out first = run(h, udp(a), &snat);
  ASSERT_EQ(first.r.nat, kNatOrig);
  const Packet reply = udp(first.to.reversed());
  const Packet* pp = &reply;
  Tracker::Found f;
  h.tracker->lookup(&pp, 1, &f);
  ASSERT_EQ(f.conn, first.r.conn);
  ASSERT_TRUE(f.rside) << "found under the reply tuple";
  ASSERT_EQ(h.tracker->flush(), 1u);
  Out other = run(h, udp(make_key("10.0.0.9", 5000, "192.0.2.20", 53, IPPROTO_UDP)));
  ASSERT_EQ(other.r.conn, first.r.conn) << "the freed slot is taken again (the lowest free one)";
  ASSERT_EQ(other.r.nat, kNatNone);
  const Tracker::Found* fp = &f;
  CtResult r;
  Key to{};
  h.tracker->process_found(&pp, &fp, 1, h.now_ns, false, &r, nullptr, &to);
  EXPECT_EQ(r.conn, kNoConn) << "judged as the slot's new, untranslated connection";
  EXPECT_EQ(r.nat, kNatNone);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

// process_found skips the second key compare of a hit when nothing was put
// in or taken out of the index since lookup() (Found::epoch). A removal
// alone (no insertion since) must move the epoch: the connection lookup()
// found is gone, and the packet is judged as one of no connection.
TEST(Nat, AHitKeptAcrossARemovalIsLookedUpAgain) {
  Harness h(nat_config(4));
  const Key a = make_key("10.0.0.5", 7000, "192.0.2.10", 53, IPPROTO_UDP);
  Out first = run(h, udp(a));
  ASSERT_NE(first.r.conn, kNoConn);
  const Packet again = udp(a);
  const Packet* pp = &again;
  Tracker::Found f;
  h.tracker->lookup(&pp, 1, &f);
  ASSERT_EQ(f.conn, first.r.conn);
  const Tracker::Found* fp = &f;
  CtResult r;
  // Nothing changed: the hit as process() gives it.
  h.tracker->process_found(&pp, &fp, 1, h.now_ns, false, &r);
  EXPECT_EQ(r.conn, first.r.conn);
  EXPECT_EQ(+r.state, +(kCtTrk | kCtNew));
  ASSERT_EQ(h.tracker->flush(), 1u);
  const uint64_t hits = h.tracker->stats().hits;
  h.tracker->process_found(&pp, &fp, 1, h.now_ns, false, &r);
  EXPECT_EQ(r.conn, kNoConn) << "judged as the freed entry's";
  EXPECT_EQ(+r.state, +(kCtTrk | kCtNew));
  EXPECT_EQ(h.tracker->stats().hits, hits);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

// An assured, offered connection's ACKs take the tracker's short path
// (fast_hit): a translated one's too, with the same tuple hit() gives,
// both ways, in one burst and apart.
TEST(Nat, EstablishedSegmentsOfATranslatedConnectionKeepTheirTuple) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  Out syn = run(h, tcp(kClient, kSyn, 100, 0), &snat);
  ASSERT_EQ(syn.r.nat, kNatOrig);
  const Key back = syn.to.reversed();
  ASSERT_EQ(run(h, tcp(back, kSyn | kAck, 500, 101), &snat).r.nat, kNatReply);
  ASSERT_EQ(+run(h, tcp(kClient, kAck, 101, 501), &snat).r.state, +EST);
  const uint64_t hits = h.tracker->stats().hits;
  for (int i = 0; i < 4; i++) {
    Out a = run(h, tcp(kClient, kAck, 101, 501), &snat);
    EXPECT_EQ(+a.r.state, +EST) << i;
    EXPECT_EQ(a.r.nat, kNatOrig) << i;
    EXPECT_EQ(a.r.conn, syn.r.conn) << i;
    EXPECT_TRUE(a.to == syn.to) << i << " " << a.to.str();
    Out b = run(h, tcp(back, kAck, 501, 101), &snat);
    EXPECT_EQ(+b.r.state, +RPL) << i;
    EXPECT_EQ(b.r.nat, kNatReply) << i;
    EXPECT_TRUE(b.to == kClient.reversed()) << i << " " << b.to.str();
  }
  // Both ways in one burst.
  const Packet p[2] = {tcp(kClient, kAck, 101, 501), tcp(back, kAck, 501, 101)};
  const Packet* pp[2] = {&p[0], &p[1]};
  CtResult r[2];
  Key to[2] = {};
  h.tracker->process(pp, 2, h.now_ns, true, r, &snat, to);
  EXPECT_EQ(r[0].nat, kNatOrig);
  EXPECT_TRUE(to[0] == syn.to) << to[0].str();
  EXPECT_EQ(r[1].nat, kNatReply);
  EXPECT_TRUE(to[1] == kClient.reversed()) << to[1].str();
  EXPECT_EQ(h.tracker->stats().hits, hits + 10);
  // Found in one compare each way, lookup() too (the reply tuple's against
  // NatHot's key bits only, not its kind and orientation): none looked up
  // again in full.
  Tracker::Found f[2];
  h.tracker->lookup(pp, 2, f);
  EXPECT_EQ(f[0].conn, syn.r.conn);
  EXPECT_EQ(f[1].conn, syn.r.conn);
  EXPECT_TRUE(f[1].rside);
  EXPECT_EQ(h.tracker->stats().probes, 0u);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

TEST(Nat, DestinationTranslation) {
  Harness h(nat_config());
  const Key vip = make_key("198.51.100.9", 5555, "203.0.113.80", 53, IPPROTO_UDP);
  const NatRange dnat = range(NatKind::kDst, "10.1.0.20", "10.1.0.20", 5353, 5353);
  Out q = run(h, udp(vip), &dnat);
  ASSERT_EQ(q.r.nat, kNatOrig);
  EXPECT_EQ(addr(q.to.dst), "10.1.0.20");
  EXPECT_EQ(q.to.dport, 5353);
  EXPECT_EQ(addr(q.to.src), "198.51.100.9");
  EXPECT_EQ(q.to.sport, 5555);
  Out a = run(h, udp(q.to.reversed()));
  ASSERT_EQ(+a.r.state, +RPL);
  EXPECT_TRUE(a.to == vip.reversed()) << a.to.str();
}

TEST(Nat, NoTwoConnectionsShareATranslatedTuple) {
  Harness h(nat_config(4096));
  const NatRange snat = range(NatKind::kSrc, "203.0.113.1", "203.0.113.2", 1000, 1099);
  std::set<std::pair<std::string, uint16_t>> used;
  // 200 clients to one server: as many tuples as the range holds.
  for (int i = 0; i < 200; i++) {
    Key k = make_key("10.0.0.1", static_cast<uint16_t>(20000 + i % 3), "192.0.2.10", 443, IPPROTO_UDP);
    k.src[3] = static_cast<uint8_t>(1 + i / 3);
    Out o = run(h, udp(k), &snat);
    ASSERT_EQ(o.r.nat, kNatOrig) << i << ": " << invalid_name(o.r.reason);
    EXPECT_GE(o.to.sport, 1000);
    EXPECT_LE(o.to.sport, 1099);
    EXPECT_TRUE(used.insert({addr(o.to.src), o.to.sport}).second) << "tuple reused at " << i;
  }
  // The range is full: the next is refused and counted, and nothing is kept.
  Key k = make_key("10.0.9.9", 1, "192.0.2.10", 443, IPPROTO_UDP);
  Out o = run(h, udp(k), &snat);
  EXPECT_EQ(+o.r.state, +INV);
  EXPECT_EQ(o.r.reason, Invalid::kNatExhausted);
  EXPECT_EQ(o.r.nat, kNatNone);
  EXPECT_EQ(h.tracker->stats().invalid[static_cast<int>(Invalid::kNatExhausted)], 1u);
  EXPECT_EQ(h.tracker->stats().active, 200u);
  // Another server: the same translated address and port make another tuple.
  Key k2 = make_key("10.0.9.9", 1, "192.0.2.11", 443, IPPROTO_UDP);
  EXPECT_EQ(run(h, udp(k2), &snat).r.nat, kNatOrig);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
  // One gone: its tuple is free again.
  EXPECT_EQ(h.tracker->flush(), 201u);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
  EXPECT_EQ(run(h, udp(k), &snat).r.nat, kNatOrig);
}

TEST(Nat, AClientPortTakenByAnotherIsMoved) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  Key a = kClient, b = kClient;
  b.src[3] = 6;  // another client, same port
  Out oa = run(h, tcp(a, kSyn, 1, 0), &snat);
  Out ob = run(h, tcp(b, kSyn, 1, 0), &snat);
  ASSERT_EQ(ob.r.nat, kNatOrig);
  EXPECT_EQ(oa.to.sport, 40000);
  EXPECT_NE(ob.to.sport, 40000);
  EXPECT_GE(ob.to.sport, 1024);
  // Each reply reaches its own client.
  EXPECT_TRUE(run(h, tcp(ob.to.reversed(), kSyn | kAck, 9, 2)).to == b.reversed());
  EXPECT_TRUE(run(h, tcp(oa.to.reversed(), kSyn | kAck, 9, 2)).to == a.reversed());
}

TEST(Nat, RelatedIcmpErrorsAreTranslatedBothWays) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  const Key k = make_key("10.0.0.5", 7000, "192.0.2.10", 53, IPPROTO_UDP);
  Out o = run(h, udp(k), &snat);
  // A router past the NAT reports the translated packet (its embedded
  // header is the original direction as it left): back to the client's form.
  Packet err = udp(o.to);
  err.meta = kMetaIcmpError;
  err.icmp_type = 3;
  Out e = run(h, err);
  ASSERT_EQ(+e.r.state, +REL);
  ASSERT_EQ(e.r.nat, kNatReplyRev);
  EXPECT_TRUE(e.to == k) << e.to.str();
  // The client reports a reply (port unreachable): its embedded header is
  // the reply as the client got it; outside it must read as the server sent it.
  Packet err2 = udp(k.reversed());
  err2.meta = kMetaIcmpError;
  err2.icmp_type = 3;
  Out e2 = run(h, err2);
  ASSERT_EQ(+e2.r.state, +REL);
  ASSERT_EQ(e2.r.nat, kNatOrigRev);
  EXPECT_TRUE(e2.to == o.to.reversed()) << e2.to.str();
}

TEST(Nat, ATupleOfNeitherSideIsInvalidNotTheConnection) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  Out o = run(h, tcp(kClient, kSyn, 1, 0), &snat);
  // The server writing to the client's own address (it cannot reach it):
  // not this connection's reply.
  Out r = run(h, tcp(kClient.reversed(), kSyn | kAck, 9, 2));
  EXPECT_EQ(+r.r.state, +INV);
  EXPECT_EQ(r.r.reason, Invalid::kNatClash);
  EXPECT_EQ(r.r.nat, kNatNone);
  // Nor is the translated tuple sent from the outside the original direction.
  Out r2 = run(h, tcp(o.to, kAck, 2, 0));
  EXPECT_EQ(r2.r.reason, Invalid::kNatClash);
  EXPECT_EQ(h.tracker->stats().invalid[static_cast<int>(Invalid::kNatClash)], 2u);
}

TEST(Nat, ZonesKeepTheirOwnTuples) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7", 2000, 2000);
  Key z1 = kClient, z2 = kClient;
  z1.zone = 1;
  z2.zone = 2;
  Out a = run(h, tcp(z1, kSyn, 1, 0), &snat);
  Out b = run(h, tcp(z2, kSyn, 1, 0), &snat);
  ASSERT_EQ(a.r.nat, kNatOrig);
  ASSERT_EQ(b.r.nat, kNatOrig) << "one port, two zones: two connections";
  EXPECT_EQ(a.to.sport, 2000);
  EXPECT_EQ(b.to.sport, 2000);
  Key z1b = kClient;
  z1b.zone = 1;
  z1b.sport = 40001;
  EXPECT_EQ(run(h, tcp(z1b, kSyn, 1, 0), &snat).r.reason, Invalid::kNatExhausted);
  EXPECT_EQ(h.tracker->flush(2), 1u);
  EXPECT_EQ(+run(h, tcp(a.to.reversed(), kSyn | kAck, 9, 2)).r.state, +RPL);
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

TEST(Nat, IcmpEchoIdIsTranslatedForSnat) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7", 100, 100);
  Key req = make_key("10.0.0.5", 77, "192.0.2.10", 0, IPPROTO_ICMP);  // echo request, id 77
  Packet p = udp(req);
  p.meta = kMetaIcmpEcho;
  p.icmp_type = 8;
  Out o = run(h, p, &snat);
  ASSERT_EQ(o.r.nat, kNatOrig) << invalid_name(o.r.reason);
  EXPECT_EQ(o.to.sport, 100);
  Packet rep = udp(o.to.reversed());
  rep.meta = kMetaIcmpEcho;
  rep.icmp_type = 0;
  Out r = run(h, rep);
  EXPECT_EQ(+r.r.state, +RPL);
  EXPECT_TRUE(r.to == req.reversed()) << r.to.str();
}

TEST(Nat, Ipv6SourceRange) {
  Harness h(nat_config());
  const NatRange snat = range(NatKind::kSrc, "2001:db8::100", "2001:db8::101");
  Key k = make_key("fd00::5", 1234, "2001:db8:1::1", 443, IPPROTO_TCP);
  Out o = run(h, tcp(k, kSyn, 1, 0), &snat);
  ASSERT_EQ(o.r.nat, kNatOrig);
  const std::string a = addr(o.to.src, 6);
  EXPECT_TRUE(a == "2001:db8::100" || a == "2001:db8::101") << a;
  EXPECT_TRUE(run(h, tcp(o.to.reversed(), kSyn | kAck, 9, 2)).to == k.reversed());
  // A range of the other family translates nothing: refused, as such.
  const NatRange v4 = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  k.sport = 1235;
  EXPECT_EQ(run(h, tcp(k, kSyn, 1, 0), &v4).r.reason, Invalid::kNatFamily);
}

TEST(Nat, AFilterKeepsRepliesOnTheirShard) {
  Harness h(nat_config());
  // As a steering function would: this shard owns replies to even ports.
  h.tracker->set_nat_filter([](const Key& reply, const void*) { return reply.dport % 2 == 0; }, nullptr);
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7", 3000, 3009);
  for (int i = 0; i < 5; i++) {
    Key k = kClient;
    k.sport = static_cast<uint16_t>(41000 + i);
    Out o = run(h, tcp(k, kSyn, 1, 0), &snat);
    ASSERT_EQ(o.r.nat, kNatOrig) << i;
    EXPECT_EQ(o.to.sport % 2, 0) << o.to.sport;
  }
  Key k = kClient;
  k.sport = 42000;
  EXPECT_EQ(run(h, tcp(k, kSyn, 1, 0), &snat).r.reason, Invalid::kNatExhausted) << "five even ports, all taken";
}

// A translated connection's reply-tuple slot against a key of the same
// bucket and signature that differs from the reply tuple only in an
// address (field 0: the source, 2: the destination) or only in a port
// (field 1): a connection of its own,
// never a reply of the translated one (the IPv4 slot compare is stage 1's
// two words, the reply tuple's included: tracker_impl.h slot_matches_w).
TEST(Nat, AKeyOfAReplyTuplesSignatureIsAnotherConnection) {
  for (int field = 0; field < 3; field++) {
    Harness h(nat_config(4));  // two buckets: the top bit of the hash picks one
    const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
    const Key a = make_key("10.0.0.1", 1000, "10.0.0.2", 2000, IPPROTO_UDP);
    const Out oa = run(h, udp(a), &snat);
    ASSERT_EQ(+oa.r.state, +NEW);
    ASSERT_EQ(oa.r.nat, kNatOrig);
    const Key r = oa.to.reversed();  // the reply tuple, as replies travel
    const std::optional<Key> found = same_signature(r, [&](Key& k, uint32_t i) {
      if (field == 0) {
        put3(k.src + 1, i);
      } else if (field == 1) {
        k.sport = static_cast<uint16_t>(i);
        k.dport = static_cast<uint16_t>(i >> 16);
      } else {
        put3(k.dst + 1, i);
      }
    });
    ASSERT_TRUE(found) << field;
    const Key b = *found;
    const Out ob = run(h, udp(b));
    EXPECT_EQ(+ob.r.state, +NEW) << field;
    EXPECT_EQ(ob.r.nat, kNatNone) << field;
    EXPECT_NE(ob.r.conn, oa.r.conn) << field;
    const Out oe = run(h, udp(b.reversed()));
    EXPECT_EQ(+oe.r.state, +RPL) << field;
    EXPECT_EQ(oe.r.conn, ob.r.conn) << field;
    const Out orp = run(h, udp(r));
    EXPECT_EQ(+orp.r.state, +RPL) << field;
    EXPECT_EQ(orp.r.conn, oa.r.conn) << field;
    EXPECT_EQ(orp.r.nat, kNatReply) << field;
    // lookup() the same, both ways.
    const std::pair<Key, uint32_t> want[] = {{r, oa.r.conn}, {r.reversed(), oa.r.conn}, {b, ob.r.conn},
                                             {b.reversed(), ob.r.conn}};
    for (const auto& [k, conn] : want) {
      const Packet p = udp(k);
      const Packet* pp = &p;
      Tracker::Found f;
      h.tracker->lookup(&pp, 1, &f);
      EXPECT_EQ(f.conn, conn) << field << " " << k.str();
    }
    EXPECT_EQ(h.tracker->stats().active, 2u);
    EXPECT_TRUE(h.tracker->check_invariants().ok());
  }
}

// An IPv4 range's address bytes beyond the first four are not read: junk
// there (a caller that filled the 16-byte arrays) neither reaches the
// translated tuple nor hides the connection from its replies (the reply
// slot's compare takes an IPv4 key as its first four address bytes).
TEST(Nat, AnIpv4RangesOtherAddressBytesAreNotRead) {
  Harness h(nat_config());
  NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  for (int i = 4; i < 16; i++) snat.addr_min[i] = snat.addr_max[i] = static_cast<uint8_t>(0xA0 + i);
  const Key a = make_key("10.0.0.1", 1000, "10.0.0.2", 2000, IPPROTO_UDP);
  const Out oa = run(h, udp(a), &snat);
  ASSERT_EQ(+oa.r.state, +NEW);
  ASSERT_EQ(oa.r.nat, kNatOrig);
  EXPECT_EQ(addr(oa.to.src), "203.0.113.7");
  for (int i = 4; i < 16; i++) EXPECT_EQ(oa.to.src[i], 0) << i;
  const Out rep = run(h, udp(oa.to.reversed()));
  EXPECT_EQ(+rep.r.state, +RPL);
  EXPECT_EQ(rep.r.nat, kNatReply);
  EXPECT_EQ(rep.r.conn, oa.r.conn);
  EXPECT_TRUE(rep.to == a.reversed()) << rep.to.str();
  EXPECT_EQ(h.tracker->stats().active, 1u);
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

TEST(Nat, WithoutNatRoomARangeIsRefused) {
  Harness h;  // Config::nat off
  const NatRange snat = range(NatKind::kSrc, "203.0.113.7", "203.0.113.7");
  EXPECT_EQ(run(h, tcp(kClient, kSyn, 1, 0), &snat).r.reason, Invalid::kNatExhausted);
  EXPECT_EQ(h.tracker->stats().active, 0u);
}

// 20,000 UDP datagrams from 5,600 client tuples, three in four source-NATed
// to a small pool, time moving in 7 s steps (expiry and reuse); each
// translated one answered. each(i, key, its result, the reply's result).
void churn(Harness& h, uint32_t seed, const std::function<void(int, const Key&, const Out&, const Out&)>& each) {
  const NatRange snat = range(NatKind::kSrc, "203.0.113.1", "203.0.113.4", 3000, 3063);
  uint32_t rng = seed;
  for (int i = 0; i < 20000; i++) {
    rng = rng * 1103515245u + 12345u;
    Key k = make_key("10.0.0.1", static_cast<uint16_t>(1000 + (rng >> 8) % 700), "192.0.2.10", 53, IPPROTO_UDP);
    k.src[3] = static_cast<uint8_t>((rng >> 20) % 8);
    if ((rng >> 4) % 3 == 0) h.advance_s(7);
    Out o = run(h, udp(k), (rng >> 12) % 4 ? &snat : nullptr), r;
    if (o.r.nat == kNatOrig) r = run(h, udp(o.to.reversed()));
    each(i, k, o, r);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(Nat, ChurnKeepsInvariants) {
  Harness h(nat_config(512));
  churn(h, 12345, [&](int i, const Key&, const Out&, const Out&) {
    if (i % 1000 == 0) {
      ASSERT_TRUE(h.tracker->check_invariants().ok()) << i << ": " << h.tracker->check_invariants().message();
    }
  });
  EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
}

// Config::nat_caller_bytes: each reply tuple at the start of 32 or 64
// bytes whose rest is the caller's, which translations, replies, expiry and
// reuse never write; the tuples still found; the room counted.
TEST(Nat, CallerBytesShareEachReplyTuplesLine) {
  Config bad = nat_config();
  bad.nat_caller_bytes = 49;
  EXPECT_FALSE(Tracker::create(bad).ok());
  bad.nat_caller_bytes = 16;
  bad.nat = false;
  EXPECT_FALSE(Tracker::create(bad).ok());
  for (uint32_t bytes : {0u, 16u, 48u}) {
    SCOPED_TRACE(bytes);
    Config c = nat_config(512);
    c.nat_caller_bytes = bytes;
    Harness h(c);
    const Tracker::CallerLines cl = h.tracker->nat_caller_lines();
    if (bytes == 0) {
      EXPECT_EQ(cl.base, nullptr);
      continue;
    }
    ASSERT_NE(cl.base, nullptr);
    EXPECT_EQ(cl.stride, bytes == 16 ? 32u : 64u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(cl.base) % cl.stride, 16u);
    Config plain = nat_config(1 << 16), with = plain;
    with.nat_caller_bytes = bytes;
    EXPECT_EQ((*Tracker::create(with))->bytes_per_conn(), (*Tracker::create(plain))->bytes_per_conn() + cl.stride - 16);
    for (uint32_t i = 0; i < 512; i++) memset(cl.base + size_t{i} * cl.stride, 0xA5, bytes);
    uint32_t replies = 0;
    churn(h, 777, [&](int i, const Key& k, const Out& o, const Out& r) {
      if (o.r.nat != kNatOrig) return;
      ASSERT_EQ(r.r.state, RPL) << i;
      ASSERT_EQ(r.to.str(), k.reversed().str()) << i;
      replies++;
    });
    EXPECT_GT(replies, 1000u);
    EXPECT_TRUE(h.tracker->check_invariants().ok()) << h.tracker->check_invariants().message();
    uint32_t changed = 0;
    for (uint32_t i = 0; i < 512; i++)
      for (uint32_t j = 0; j < bytes; j++) changed += cl.base[size_t{i} * cl.stride + j] != 0xA5;
    EXPECT_EQ(changed, 0u);
  }
}

TEST(Nat, MemoryWithAndWithoutNat) {
  Config plain = nat_config(1 << 16);
  plain.nat = false;
  Config with = nat_config(1 << 16);
  auto a = Tracker::create(plain);
  auto b = Tracker::create(with);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LE((*a)->bytes_per_conn(), 128u);
  EXPECT_LE((*b)->bytes_per_conn(), 176u);  // the bar (issue 33); 174 with NatHot and NatCold
}

}  // namespace
}  // namespace ctrack::test
