// Tracker::lookup_done (the dataplane's flow-cache lane): the packets it
// does and, after it, process_found() for the ones it leaves, in burst
// order, give what process() gives the same bursts, packet by packet.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "ct_test_util.h"

namespace ctrack::test {
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kAck = 0x10;

// a's way: lookup_done, then process_found for the packets it left, in
// burst order (with R, as a commit with that range). Returns the done mask;
// *left: how many were left. na may be null when a has no NAT.
// no_done_tuples: lookup_done hands out no translated tuple (nat_out null).
uint32_t done_then_left(Harness& a, const Packet* const* pp, uint32_t n, uint32_t may, const Tracker::Tags& tv,
                        const uint64_t* pctx, const NatRange* R, CtResult* ra, Key* na, uint32_t* left,
                        bool no_done_tuples = false) {
  Tracker::Found found[32];
  const uint32_t done = a.tracker->lookup_done(pp, n, a.now_ns, may, tv, pctx, found, ra, no_done_tuples ? nullptr : na);
  EXPECT_EQ(done & ~may, 0u);
  const Packet* lp[32];
  const Tracker::Found* lf[32];
  uint32_t li[32], m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (done >> i & 1) continue;
    lp[m] = pp[i];
    lf[m] = &found[i];
    li[m++] = i;
  }
  CtResult rl[32];
  Key nl[32];
  a.tracker->process_found(lp, lf, m, a.now_ns, true, rl, R, na ? nl : nullptr);
  for (uint32_t j = 0; j < m; j++) {
    ra[li[j]] = rl[j];
    if (na) na[li[j]] = nl[j];
  }
  *left = m;
  return done;
}

// One packet's results the same both ways. Handles: the same connections,
// though a new one's may differ (process() reserves entries for a burst's
// misses ahead): a2b maps a's to b's.
void expect_same_result(const CtResult& x, const CtResult& y, std::map<uint32_t, uint32_t>& a2b) {
  ASSERT_EQ(x.conn == kNoConn, y.conn == kNoConn);
  if (x.conn != kNoConn) {
    auto [it, fresh] = a2b.try_emplace(x.conn, y.conn);
    if (!fresh && (x.state & kCtNew) && x.changed) it->second = y.conn;  // made again
    ASSERT_EQ(it->second, y.conn);
  }
  ASSERT_EQ(+x.state, +y.state);
  ASSERT_EQ(+x.changed, +y.changed);
  ASSERT_EQ(static_cast<int>(x.reason), static_cast<int>(y.reason));
  ASSERT_EQ(+x.dir, +y.dir);
  ASSERT_EQ(+x.nat, +y.nat);
}

// Random bursts over 40 connections (TCP and UDP, IPv4 and IPv6, half the
// IPv4 ones translated), some of whose packets are what the lane does and
// some not: a direction without a tag or with a tag of another generation,
// a context that does not match, a bit of `may` clear, a FIN, an RST, a
// segment out of the window, an unknown tuple, a translated connection's
// packets on its own tuple, its reply tuple and both clash sides (their
// tuples out compared), ICMP errors, later fragments, packets already
// counted, connections in the NIC, a connection several times in a burst;
// event rings of 0, 256, and 8 polled every 7th burst (it fills); 150 s
// jumps of the clock. Both trackers see the same bursts at the same times;
// per packet, then stats, events, the connection list and the invariants.
// (Most of it from an independent review of lookup_done.)
struct NatFlow {
  Key orig, rep;  // what the original sender sends; what the replier sends
  bool tcp;
  uint32_t next[2];
};

std::string ev_str(const Event& e) {
  return std::to_string(static_cast<int>(e.type)) + " " + e.orig.str() + " " + std::to_string(e.l4_state) + " " +
         std::to_string(e.last_end) + " " + std::to_string(e.reason) + " " + std::to_string(e.tcp[0].end) + "/" +
         std::to_string(e.tcp[1].maxend);
}

void run_differential(uint32_t seed, uint32_t ring, uint32_t poll_every, bool expiry) {
  Config cfg = Harness::small_config();
  cfg.nat = true;
  cfg.event_ring = ring;
  cfg.sweep_per_call = 0;  // (the lane adds calls that sweep; what expires stays the same)
  // Seed 3: a's caller keeps its tags in the tracker's lines beside the
  // reply tuples (Config::nat_caller_bytes, as the dataplane does).
  const bool in_lines = seed == 3;
  Config cfg_a = cfg;
  if (in_lines) cfg_a.nat_caller_bytes = 32;
  Harness a(cfg_a), b(cfg);
  std::mt19937 rng(seed);
  NatRange R;
  R.kind = NatKind::kSrc;
  R.family = 4;
  inet_pton(AF_INET, "100.64.0.1", R.addr_min);
  inet_pton(AF_INET, "100.64.0.2", R.addr_max);
  std::vector<NatFlow> flows;
  std::vector<std::string> evA, evB;
  auto drain = [&](Harness& h, std::vector<std::string>& v) {
    Event e[64];
    for (uint32_t k; (k = h.tracker->poll_events(e, 64));)
      for (uint32_t j = 0; j < k; j++) v.push_back(ev_str(e[j]));
  };
  for (uint32_t i = 0; i < 40; i++) {
    const bool v6 = i % 5 == 4;
    const bool is_tcp = i % 4 != 3;
    const bool nat = !v6 && i % 2 == 0;
    Key k = v6 ? make_key("fd00::1", static_cast<uint16_t>(20000 + i), "fd00::2", is_tcp ? 443 : 53,
                          is_tcp ? IPPROTO_TCP : IPPROTO_UDP)
               : make_key("10.2.0.1", static_cast<uint16_t>(20000 + i), "10.2.1.1", is_tcp ? 443 : 53,
                          is_tcp ? IPPROTO_TCP : IPPROTO_UDP);
    NatFlow f{k, k.reversed(), is_tcp, {1000u * i, 5000000u + 1000u * i}};
    uint32_t ha = 0, hb = 0;
    for (Harness* h : {&a, &b}) {
      Key to{};
      CtResult r;
      const Packet p0 = is_tcp ? tcp(k, kSyn, f.next[0] - 1, 0) : udp(k);
      const Packet* pp = &p0;
      h->tracker->process(&pp, 1, h->now_ns, true, &r, nat ? &R : nullptr, &to);
      if (nat) {
        EXPECT_EQ(r.nat, kNatOrig);
        f.rep = to.reversed();
      }
      (h == &a ? ha : hb) = r.conn;
      if (is_tcp) {
        h->run(tcp(f.rep, kSyn | kAck, f.next[1] - 1, f.next[0]));
        h->run(tcp(k, kAck, f.next[0], f.next[1]));
      } else {
        h->run(udp(f.rep));
      }
    }
    if (i % 9 == 1) {  // in the NIC
      EXPECT_TRUE(a.tracker->set_offloaded(ha, k, true));
      EXPECT_TRUE(b.tracker->set_offloaded(hb, k, true));
    }
    flows.push_back(f);
  }
  drain(a, evA);
  drain(b, evB);
  // Odd seeds: each tag in a 32-byte record of the caller's (Tags::stride,
  // the rest of it garbage, as the dataplane keeps NAT rewrites there), and
  // no translated tuples asked of the done packets (nat_out null: out[i].nat
  // still says the side).
  const bool strided = seed % 2;
  const Tracker::CallerLines lines = a.tracker->nat_caller_lines();
  ASSERT_EQ(lines.base != nullptr, in_lines);
  const uint32_t stride = in_lines ? lines.stride : strided ? 32 : sizeof(Tracker::Tag);
  if (in_lines) {
    ASSERT_EQ(stride, 64u);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(lines.base) % 64, 16u);  // after the 16-byte tuple, in its line
  }
  std::vector<uint8_t> own(size_t{a.tracker->capacity()} * stride + sizeof(Tracker::Tag));
  uint8_t* tag_bytes = in_lines ? lines.base : own.data();
  const uint32_t mine = in_lines ? 32 : stride;  // the bytes of each record the caller may write
  for (size_t c = 0; c < a.tracker->capacity(); c++)
    for (uint32_t j = 0; j < mine; j++) tag_bytes[c * stride + j] = static_cast<uint8_t>(rng());
  const uint64_t ctx[4] = {11, 11, 11, 44};
  for (size_t c = 0; c < a.tracker->capacity(); c++) {
    Tracker::Tag t;
    t.gen = rng() % 8 ? 5 : 4;
    for (auto& d : t.dir) d = rng() % 5 ? static_cast<uint16_t>(rng() % 4) : Tracker::Tag::kNoTag;
    memcpy(tag_bytes + c * stride, &t, sizeof t);
  }
  std::vector<uint8_t> before;  // the caller's bytes, which the tracker never writes
  for (size_t c = 0; c < a.tracker->capacity(); c++)
    before.insert(before.end(), tag_bytes + c * stride, tag_bytes + c * stride + mine);
  const Tracker::Tags tv{reinterpret_cast<const Tracker::Tag*>(tag_bytes), 5, ctx, stride};
  uint32_t done_total = 0, left_total = 0, done_nat = 0;
  std::map<uint32_t, uint32_t> a2b;
  for (int burst = 0; burst < 600; burst++) {
    const double dt = expiry && rng() % 60 == 0 ? 150.0 : 0.001;
    a.advance_s(dt);
    b.advance_s(dt);
    const uint32_t n = 1 + rng() % 32;
    Packet pk[32];
    const Packet* pp[32];
    uint64_t pctx[32];
    for (uint32_t i = 0; i < n; i++) {
      const bool hot = rng() % 12 != 0;
      NatFlow& f = flows[hot ? rng() % 10 : 10 + rng() % (flows.size() - 10)];
      const int d = static_cast<int>(rng() % 2);
      Key k = d ? f.rep : f.orig;
      const uint32_t what = rng() % 100;
      if (what < 3) k = (rng() % 2 ? f.rep : f.orig).reversed();  // a clash side (or a plain reply if untranslated)
      if (what >= 3 && what < 5) {
        Key u = k;
        u.sport = static_cast<uint16_t>(1 + rng() % 1000);
        pk[i] = udp(u);
        u.proto = IPPROTO_UDP;
        pk[i].key = u;
      } else if (!f.tcp) {
        pk[i] = udp(k, static_cast<uint16_t>(rng() % 1000));
      } else {
        const uint16_t len = static_cast<uint16_t>(rng() % 1400);
        uint8_t flags = kAck;
        uint32_t seq = f.next[d];
        if (what < 20 && what >= 10 && !hot) flags = what < 15 ? kFin | kAck : kRst | kAck;
        else if (what >= 5 && what < 7) seq += 0x40000000u;
        pk[i] = tcp(k, flags, seq, f.next[1 - d], 65535, len);
        if (seq == f.next[d] && what >= 3) f.next[d] += len + ((flags & kFin) ? 1 : 0);
      }
      const uint32_t m = rng() % 100;
      if (m < 2) pk[i].meta |= kMetaIcmpError;
      else if (m < 4) pk[i].meta |= kMetaFragment;
      else if (m < 6) pk[i].meta |= kMetaCounted;
      pk[i].in_port = static_cast<uint8_t>(rng() % 3);
      pp[i] = &pk[i];
      pctx[i] = rng() % 10 ? 11 : rng() % 2 ? 44 : 99;
    }
    const uint32_t may = static_cast<uint32_t>(rng()) | static_cast<uint32_t>(rng());
    CtResult ra[32], rb[32];
    Key na[32], nb[32];
    uint32_t m = 0;
    const uint32_t done = done_then_left(a, pp, n, may, tv, pctx, &R, ra, na, &m, strided);
    for (uint32_t i = 0; i < n; i++) done_nat += (done >> i & 1) && ra[i].nat;
    b.tracker->process(pp, n, b.now_ns, true, rb, &R, nb);
    done_total += static_cast<uint32_t>(__builtin_popcount(done));
    left_total += m;
    if (burst % poll_every == 0) {
      drain(a, evA);
      drain(b, evB);
    }
    for (uint32_t i = 0; i < n; i++) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " burst " << burst << " packet " << i << " "
                                      << pk[i].key.str() << " meta " << int(pk[i].meta)
                                      << (done >> i & 1 ? " (done)" : " (left)"));
      expect_same_result(ra[i], rb[i], a2b);
      if (::testing::Test::HasFatalFailure()) return;
      if (ra[i].nat && !(strided && (done >> i & 1))) {
        ASSERT_EQ(na[i].str(), nb[i].str());
      }
    }
  }
  drain(a, evA);
  drain(b, evB);
  auto by_conn = [](std::vector<std::string> v) {
    std::stable_sort(v.begin(), v.end(), [](const std::string& x, const std::string& y) {
      return x.substr(x.find(' ')) < y.substr(y.find(' '));
    });
    return v;
  };
  EXPECT_EQ(by_conn(evA), by_conn(evB));
  EXPECT_GT(done_total, 200u) << "seed " << seed;
  EXPECT_GT(done_nat, 10u) << "seed " << seed;
  EXPECT_GT(left_total, 200u) << "seed " << seed;
  const Stats sa = a.tracker->stats(), sb = b.tracker->stats();
  EXPECT_EQ(sa.lookups, sb.lookups);
  EXPECT_EQ(sa.hits, sb.hits);
  EXPECT_EQ(sa.created, sb.created);
  EXPECT_EQ(sa.events_dropped, sb.events_dropped);
  for (int r = 0; r < static_cast<int>(Invalid::kCount); r++) EXPECT_EQ(sa.invalid[r], sb.invalid[r]) << r;
  // The connections as the control plane lists them.
  auto list = [](Harness& h) {
    std::vector<std::string> v;
    h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) {
      char s[256];
      snprintf(s, sizeof s, "%u %u %s %lld %llu %llu %llu %llu", ci.orig.sport, ci.orig.dport, ci.state.c_str(),
               static_cast<long long>(ci.timeout_ms), static_cast<unsigned long long>(ci.packets[0]),
               static_cast<unsigned long long>(ci.packets[1]), static_cast<unsigned long long>(ci.bytes[0]),
               static_cast<unsigned long long>(ci.bytes[1]));
      std::string t = s;
      for (const TcpDirState& d : ci.tcp) t += " " + std::to_string(d.end) + "/" + std::to_string(d.maxend) + "/" +
                                            std::to_string(d.maxwin) + "/" + std::to_string(d.flags);
      v.push_back(t);
    });
    std::sort(v.begin(), v.end());
    return v;
  };
  {
    const auto la = list(a), lb = list(b);
    std::vector<std::string> only_a, only_b;
    std::set_difference(la.begin(), la.end(), lb.begin(), lb.end(), std::back_inserter(only_a));
    std::set_difference(lb.begin(), lb.end(), la.begin(), la.end(), std::back_inserter(only_b));
    EXPECT_EQ(only_a, only_b) << "seed " << seed << " ring " << ring << " expiry " << expiry;
  }
  EXPECT_TRUE(a.tracker->check_invariants().ok());
  std::vector<uint8_t> after;
  for (size_t c = 0; c < a.tracker->capacity(); c++)
    after.insert(after.end(), tag_bytes + c * stride, tag_bytes + c * stride + mine);
  EXPECT_TRUE(before == after) << "the tracker wrote the caller's bytes (seed " << seed << ")";
}


TEST(LookupDone, DoneAndLeftPacketsGiveWhatProcessGives) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    run_differential(seed, 256, 1, false);
    run_differential(seed, 8, 7, false);
    run_differential(seed, 256, 1, true);
    run_differential(seed, 0, 1, true);
  }
}

// The two tests below: a tracker with NAT, no events, no sweep; and a
// source NAT to one address.
Config nat_config() {
  Config cfg = Harness::small_config();
  cfg.nat = true;
  cfg.event_ring = 0;
  cfg.sweep_per_call = 0;
  return cfg;
}
NatRange one_address_snat() {
  NatRange R;
  R.kind = NatKind::kSrc;
  inet_pton(AF_INET, "100.64.0.1", R.addr_min);
  inet_pton(AF_INET, "100.64.0.1", R.addr_max);
  return R;
}

// A translated connection's packet found under its reply tuple and left
// (its bit of `may` clear), then one of its own tuple that could be done:
// left as well (the earlier one is the same connection, under another
// index slot).
TEST(LookupDone, AnEarlierPacketUnderTheReplyTupleHoldsTheConnection) {
  Harness h(nat_config());
  const NatRange R = one_address_snat();
  const Key k = make_key("10.3.0.1", 30000, "10.3.1.1", 443, IPPROTO_TCP);
  Key to{};
  CtResult r;
  const Packet syn = tcp(k, kSyn, 99, 0);
  const Packet* sp = &syn;
  h.tracker->process(&sp, 1, h.now_ns, true, &r, &R, &to);
  ASSERT_EQ(+r.nat, +kNatOrig);
  const Key rep = to.reversed();
  h.run(tcp(rep, kSyn | kAck, 499, 100));
  Key dummy;
  const Packet ack = tcp(k, kAck, 100, 500);
  const Packet* ap = &ack;
  h.tracker->process(&ap, 1, h.now_ns, true, &r, nullptr, &dummy);
  ASSERT_EQ(+r.state, +(kCtTrk | kCtEst));
  std::vector<Tracker::Tag> tags(h.tracker->capacity());
  tags[r.conn] = Tracker::Tag{7, {0, 0}};
  const uint64_t ctx[1] = {1};
  const Tracker::Tags tv{tags.data(), 7, ctx};
  // The reply (left: may bit 0), then the original direction's next segment (may bit 1).
  const Packet p[2] = {tcp(rep, kAck, 500, 100, 65535, 10), tcp(k, kAck, 100, 510, 65535, 10)};
  const Packet* pp[2] = {&p[0], &p[1]};
  const uint64_t pctx[2] = {1, 1};
  Tracker::Found f[2];
  CtResult out[2];
  Key nat_out[2];
  EXPECT_EQ(h.tracker->lookup_done(pp, 2, h.now_ns, 0b10, tv, pctx, f, out, nat_out), 0u);
  EXPECT_TRUE(f[0].rside);
  EXPECT_EQ(f[0].conn, f[1].conn);
  // Alone, the second is done.
  EXPECT_EQ(h.tracker->lookup_done(pp + 1, 1, h.now_ns, 0b1, tv, pctx, f, out, nat_out), 1u);
  // A burst over 32 (the result has a bit a packet) is left whole, found as lookup() finds it.
  const Packet* many[33];
  uint64_t many_ctx[33];
  Tracker::Found fm[33];
  CtResult om[33];
  Key nm[33];
  for (int j = 0; j < 33; j++) many[j] = &p[1], many_ctx[j] = 1;
  EXPECT_EQ(h.tracker->lookup_done(many, 33, h.now_ns, ~0u, tv, many_ctx, fm, om, nm), 0u);
  EXPECT_EQ(fm[32].conn, f[0].conn);
  EXPECT_EQ(fm[32].dir, 0);
}

// Tags at a stride of the caller's (Tags::stride: the dataplane keeps a
// translated connection's rewrites beside its tag): the tag read is the
// connection's own, not the one an 8-byte array would have there; and a
// done packet of a translated connection, asked for no tuple (nat_out
// null), still says its side.
TEST(LookupDone, TagsAtTheCallersStrideAndNoTuplesAskedFor) {
  Harness h(nat_config());
  const NatRange R = one_address_snat();
  // Three connections, so that the one asked about is not handle 0.
  Key k{}, to{};
  CtResult r;
  for (uint16_t c = 0; c < 3; c++) {
    k = make_key("10.3.0.1", static_cast<uint16_t>(30000 + c), "10.3.1.1", 443, IPPROTO_TCP);
    const Packet syn = tcp(k, kSyn, 99, 0);
    const Packet* sp = &syn;
    h.tracker->process(&sp, 1, h.now_ns, true, &r, &R, &to);
    ASSERT_EQ(+r.nat, +kNatOrig);
    h.run(tcp(to.reversed(), kSyn | kAck, 499, 100));
    Key dummy;
    const Packet ack = tcp(k, kAck, 100, 500);
    const Packet* ap = &ack;
    h.tracker->process(&ap, 1, h.now_ns, true, &r, nullptr, &dummy);
    ASSERT_EQ(+r.state, +(kCtTrk | kCtEst));
  }
  ASSERT_NE(r.conn, 0u);
  constexpr uint32_t kStride = 32;
  std::vector<uint8_t> bytes(size_t{h.tracker->capacity()} * kStride);  // zeros: generation 0, no tag valid
  const Tracker::Tag t{7, {0, 0}};
  memcpy(bytes.data() + size_t{r.conn} * kStride, &t, sizeof t);
  const uint64_t ctx[1] = {1};
  const Tracker::Tags tv{reinterpret_cast<const Tracker::Tag*>(bytes.data()), 7, ctx, kStride};
  const Packet p[2] = {tcp(k, kAck, 100, 500, 65535, 10), tcp(to.reversed(), kAck, 500, 110, 65535, 10)};
  const Packet* pp[2] = {&p[0], &p[1]};
  const uint64_t pctx[2] = {1, 1};
  Tracker::Found f[2];
  CtResult out[2];
  EXPECT_EQ(h.tracker->lookup_done(pp, 2, h.now_ns, 0b11, tv, pctx, f, out, nullptr), 0b11u);
  EXPECT_EQ(f[0].conn, r.conn);
  EXPECT_EQ(+out[0].nat, +kNatOrig);
  EXPECT_EQ(+out[1].nat, +kNatReply);
  EXPECT_EQ(+out[1].state, +(kCtTrk | kCtEst | kCtRpl));
  // The same tag where an 8-byte array has this handle's: not this connection's.
  std::vector<uint8_t> other(bytes.size());
  memcpy(other.data() + size_t{r.conn} * sizeof(Tracker::Tag), &t, sizeof t);
  const Tracker::Tags ov{reinterpret_cast<const Tracker::Tag*>(other.data()), 7, ctx, kStride};
  EXPECT_EQ(h.tracker->lookup_done(pp, 1, h.now_ns, 0b1, ov, pctx, f, out, nullptr), 0u);
}

}  // namespace
}  // namespace ctrack::test
