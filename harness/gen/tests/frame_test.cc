// harness-gen's frames: checksums computed from scratch agree with the
// incrementally updated ones, the connection comes back from either
// direction, and the project's own tracker in strict mode (window tracking
// on, no mid-stream pick-up) takes every packet of the handshakes and of the
// data phase as valid, in both directions.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../frame.h"
#include "../overlay.h"
#include "ctrack/parse.h"
#include "ctrack/tracker.h"

namespace {

const uint8_t kMacC[6] = {0x02, 0, 0, 0, 0, 1}, kMacS[6] = {0x02, 0, 0, 0, 0, 2};

// RFC 1071 over the real bytes.
uint16_t full_ip_csum(const uint8_t* ip) {
  uint8_t h[20];
  memcpy(h, ip, 20);
  h[10] = h[11] = 0;
  return static_cast<uint16_t>(~gen::fold(gen::sum16(h, 20)));
}
uint16_t full_tcp_csum(const uint8_t* ip) {
  uint16_t ip_len = gen::get16(ip + 2), tcp_len = static_cast<uint16_t>(ip_len - 20);
  std::vector<uint8_t> t(ip + 20, ip + 20 + tcp_len);
  t[16] = t[17] = 0;
  uint32_t s = gen::sum16(ip + 12, 8) + 6u + tcp_len;
  return static_cast<uint16_t>(~gen::fold(gen::sum16(t.data(), t.size(), s)));
}

TEST(GenFrame, ChecksumsMatchAFullComputation) {
  std::mt19937 rng(7);
  for (int frame : {64, 65, 128, 512, 1024, 1518}) {
    for (uint8_t flags : {uint8_t(gen::kSyn), uint8_t(gen::kSyn | gen::kAck), uint8_t(gen::kAck | gen::kPsh)}) {
      for (gen::Dir d : {gen::Dir::kToServer, gen::Dir::kToClient}) {
        gen::Template t;
        gen::make_template(&t, d, flags, frame, kMacC, kMacS);
        uint8_t buf[gen::kMaxFrame];
        for (int k = 0; k < 200; k++) {
          uint32_t conn = rng() % 3000000;
          gen::fill(t, buf, gen::tuple_of(conn), rng(), rng(), (uint64_t(rng()) << 16 | rng()) & 0xFFFFFFFFFFFFull);
          const uint8_t* ip = buf + 14;
          ASSERT_EQ(gen::get16(ip + 10), full_ip_csum(ip)) << frame;
          ASSERT_EQ(gen::get16(ip + 20 + 16), full_tcp_csum(ip)) << frame << " flags " << int(flags);
          if (!(flags & gen::kSyn)) {
            ASSERT_EQ(t.len + 4, std::max(frame, 64));
          }
          gen::Seen s;
          ASSERT_TRUE(gen::parse(buf, t.len, 3000000, d, &s));
          EXPECT_EQ(s.conn, conn);
          EXPECT_EQ(s.flags, flags);
        }
      }
    }
  }
}

TEST(GenFrame, NotOursIsNotParsed) {
  gen::Template t;
  gen::make_template(&t, gen::Dir::kToServer, gen::kAck, 64, kMacC, kMacS);
  uint8_t buf[gen::kMaxFrame];
  gen::fill(t, buf, gen::tuple_of(5), 1, 2, 3);
  gen::Seen s;
  EXPECT_FALSE(gen::parse(buf, t.len, 5, gen::Dir::kToServer, &s));  // connection 5 of 5 does not exist
  EXPECT_FALSE(gen::parse(buf, 40, 10, gen::Dir::kToServer, &s));     // cut short
  buf[23] = 17;                                                        // UDP
  EXPECT_FALSE(gen::parse(buf, t.len, 10, gen::Dir::kToServer, &s));
}

// The generator's whole conversation, through a strict tracker.
TEST(GenFrame, AStrictTrackerTakesTheHandshakesAndTheData) {
  ctrack::Config cfg;
  cfg.capacity = 4096;
  cfg.tcp_liberal = false;
  cfg.tcp_midstream = false;
  auto tr = ctrack::Tracker::create(cfg);
  ASSERT_TRUE(tr.ok()) << tr.message();
  ctrack::Tracker& ct = *tr.value();
  const uint32_t kConns = 1000;
  const uint32_t isn_c = 0x10000000u, isn_s = 0x20000000u;
  uint64_t now = 1'000'000'000;
  uint8_t buf[gen::kMaxFrame];
  auto judge = [&](const gen::Template& t, uint32_t conn, uint32_t seq, uint32_t ack) {
    gen::fill(t, buf, gen::tuple_of(conn), seq, ack, now & 0xFFFFFFFFFFFFull);
    ctrack::Parsed p;
    EXPECT_EQ(ctrack::parse_packet(buf, t.len, 0, &p), ctrack::Drop::kNone);
    const ctrack::Packet* pk = &p.ct;
    ctrack::CtResult r;
    ct.process(&pk, 1, now, true, &r);
    now += 1000;
    return r.state;
  };
  for (int frame : {64, 1518}) {
    gen::Template syn, synack, ack, dc, ds;
    gen::make_template(&syn, gen::Dir::kToServer, gen::kSyn, 64, kMacC, kMacS);
    gen::make_template(&synack, gen::Dir::kToClient, gen::kSyn | gen::kAck, 64, kMacS, kMacC);
    gen::make_template(&ack, gen::Dir::kToServer, gen::kAck, 64, kMacC, kMacS);
    gen::make_template(&dc, gen::Dir::kToServer, gen::kAck | gen::kPsh, frame, kMacC, kMacS);
    gen::make_template(&ds, gen::Dir::kToClient, gen::kAck | gen::kPsh, frame, kMacS, kMacC);
    const uint32_t base = frame == 64 ? 0 : kConns;  // new connections for each frame size
    std::vector<uint32_t> cseq(kConns, isn_c + 1), sseq(kConns, isn_s + 1);
    for (uint32_t i = 0; i < kConns; i++) {
      uint32_t c = base + i;
      EXPECT_TRUE(judge(syn, c, isn_c, 0) & ctrack::kCtNew) << c;
      uint8_t st = judge(synack, c, isn_s, isn_c + 1);
      EXPECT_FALSE(st & ctrack::kCtInv) << c;
      st = judge(ack, c, isn_c + 1, isn_s + 1);
      EXPECT_TRUE(st & ctrack::kCtEst) << c;
    }
    // Data as the generator sends it: round robin over the connections,
    // bursts of either direction, each packet acking what its side has
    // received. The DUT is two queues (one per direction) that the tracker
    // drains in bursts, in random order: a packet may reach the tracker
    // before the data it follows on the other side, and must still be valid.
    std::mt19937 rng(frame);
    uint32_t next[2] = {0, 0};
    std::vector<uint32_t> crcv(kConns, isn_s + 1), srcv(kConns, isn_c + 1);
    struct Pkt {
      uint32_t i, seq, ack;
    };
    std::vector<Pkt> q[2];
    size_t head[2] = {0, 0};
    auto deliver = [&](int d, size_t n) {
      for (size_t k = 0; k < n && head[d] < q[d].size(); k++, head[d]++) {
        const Pkt& p = q[d][head[d]];
        uint8_t st = judge(d == 0 ? dc : ds, base + p.i, p.seq, p.ack);
        ASSERT_TRUE(st & ctrack::kCtEst) << "frame " << frame << " conn " << p.i << " dir " << d << " state " << int(st);
        ASSERT_FALSE(st & ctrack::kCtInv);
        // It came through: the other side has received it.
        uint32_t& got = d == 0 ? srcv[p.i] : crcv[p.i];
        got = p.seq + (d == 0 ? dc.payload : ds.payload);
      }
    };
    for (int burst = 0; burst < 4000; burst++) {
      int d = static_cast<int>(rng() % 2);
      int n = 1 + static_cast<int>(rng() % 32);
      for (int k = 0; k < n; k++) {
        uint32_t i = next[d];
        next[d] = (next[d] + 1) % kConns;
        if (d == 0) {
          q[0].push_back({i, cseq[i], crcv[i]});
          cseq[i] += dc.payload;
        } else {
          q[1].push_back({i, sseq[i], srcv[i]});
          sseq[i] += ds.payload;
        }
      }
      if (rng() % 3 == 0) deliver(static_cast<int>(rng() % 2), 1 + rng() % 64);
      if (HasFatalFailure()) return;
    }
    deliver(0, q[0].size());
    deliver(1, q[1].size());
  }
  auto s = ct.stats();
  for (int i = 1; i < static_cast<int>(ctrack::Invalid::kCount); i++) EXPECT_EQ(s.invalid[i], 0u) << i;
}

// A churn connection's whole life as harness-gen plays it (SYN; SYN-ACK;
// ACK, data and FIN at once; FIN-ACK; ACK) through the strict tracker:
// nothing invalid, and the tracker sees it close.
TEST(GenFrame, AStrictTrackerTakesAChurnConnectionsOpenAndClose) {
  ctrack::Config cfg;
  cfg.capacity = 4096;
  cfg.tcp_liberal = false;
  cfg.tcp_midstream = false;
  auto tr = ctrack::Tracker::create(cfg);
  ASSERT_TRUE(tr.ok()) << tr.message();
  ctrack::Tracker& ct = *tr.value();
  const uint32_t isn_c = 0x10000000u, isn_s = 0x20000000u;
  uint64_t now = 1'000'000'000;
  uint8_t buf[gen::kMaxFrame];
  auto judge = [&](const gen::Template& t, uint32_t conn, uint32_t seq, uint32_t ack) {
    gen::fill(t, buf, gen::tuple_of(conn), seq, ack, now & 0xFFFFFFFFFFFFull);
    ctrack::Parsed p;
    EXPECT_EQ(ctrack::parse_packet(buf, t.len, 0, &p), ctrack::Drop::kNone);
    const ctrack::Packet* pk = &p.ct;
    ctrack::CtResult r;
    ct.process(&pk, 1, now, true, &r);
    now += 1000;
    return r.state;
  };
  for (int frame : {64, 1518}) {
    gen::Template syn, synack, ack0, data, fin_c, fin_s;
    gen::make_template(&syn, gen::Dir::kToServer, gen::kSyn, 64, kMacC, kMacS);
    gen::make_template(&synack, gen::Dir::kToClient, gen::kSyn | gen::kAck, 64, kMacS, kMacC);
    gen::make_template(&ack0, gen::Dir::kToServer, gen::kAck, 0, kMacC, kMacS);
    gen::make_template(&data, gen::Dir::kToServer, gen::kAck | gen::kPsh, frame, kMacC, kMacS);
    gen::make_template(&fin_c, gen::Dir::kToServer, gen::kFin | gen::kAck, 0, kMacC, kMacS);
    gen::make_template(&fin_s, gen::Dir::kToClient, gen::kFin | gen::kAck, 0, kMacS, kMacC);
    ASSERT_EQ(ack0.payload, 0);
    ASSERT_EQ(fin_c.payload, 0);
    ASSERT_EQ(ack0.len, 60);
    const uint32_t P = data.payload;
    for (uint32_t i = 0; i < 500; i++) {
      const uint32_t c = (frame == 64 ? 0 : 500) + i;
      EXPECT_TRUE(judge(syn, c, isn_c, 0) & ctrack::kCtNew);
      EXPECT_FALSE(judge(synack, c, isn_s, isn_c + 1) & ctrack::kCtInv);
      EXPECT_TRUE(judge(ack0, c, isn_c + 1, isn_s + 1) & ctrack::kCtEst);
      EXPECT_TRUE(judge(data, c, isn_c + 1, isn_s + 1) & ctrack::kCtEst);
      EXPECT_FALSE(judge(fin_c, c, isn_c + 1 + P, isn_s + 1) & ctrack::kCtInv);
      EXPECT_FALSE(judge(fin_s, c, isn_s + 1, isn_c + 2 + P) & ctrack::kCtInv);
      EXPECT_FALSE(judge(ack0, c, isn_c + 2 + P, isn_s + 2) & ctrack::kCtInv);
    }
  }
  auto s = ct.stats();
  for (int i = 1; i < static_cast<int>(ctrack::Invalid::kCount); i++) EXPECT_EQ(s.invalid[i], 0u) << i;
  // The tracker saw every one close.
  size_t conns = 0;
  ct.for_each(now, [&](const ctrack::ConnInfo& ci) {
    conns++;
    EXPECT_EQ(ci.state, "TIME_WAIT");
  });
  EXPECT_EQ(conns, 1000u);
}

// UDP: the incremental checksum matches a full one (RFC 768, over the
// pseudo-header), the flow comes back from either direction, and the strict
// tracker takes a flow set up as the generator does it (a datagram each way)
// and its data after.
TEST(GenFrame, UdpChecksumsParseAndAStrictTracker) {
  std::mt19937 rng(11);
  for (int frame : {64, 65, 200, 1518}) {
    for (gen::Dir d : {gen::Dir::kToServer, gen::Dir::kToClient}) {
      gen::Template t;
      gen::make_udp_template(&t, d, frame, kMacC, kMacS);
      ASSERT_EQ(t.len + 4, std::max(frame, 64));
      uint8_t buf[gen::kMaxFrame];
      for (int k = 0; k < 200; k++) {
        uint32_t conn = rng() % 3000000;
        gen::fill(t, buf, gen::tuple_of(conn), 0, 0, (uint64_t(rng()) << 16 | rng()) & 0xFFFFFFFFFFFFull);
        const uint8_t* ip = buf + 14;
        ASSERT_EQ(gen::get16(ip + 10), full_ip_csum(ip));
        uint16_t ip_len = gen::get16(ip + 2), udp_len = static_cast<uint16_t>(ip_len - 20);
        std::vector<uint8_t> u(ip + 20, ip + 20 + udp_len);
        u[6] = u[7] = 0;
        uint16_t want = static_cast<uint16_t>(~gen::fold(gen::sum16(u.data(), u.size(), gen::sum16(ip + 12, 8) + 17u + udp_len)));
        if (want == 0) want = 0xFFFF;
        ASSERT_EQ(gen::get16(ip + 26), want) << frame;
        gen::Seen s;
        ASSERT_TRUE(gen::parse(buf, t.len, 3000000, d, &s));
        EXPECT_EQ(s.conn, conn);
        EXPECT_EQ(s.payload, t.payload);
        EXPECT_NE(s.ts, 0u);
      }
    }
  }
  ctrack::Config cfg;
  cfg.capacity = 4096;
  cfg.tcp_liberal = false;
  auto tr = ctrack::Tracker::create(cfg);
  ASSERT_TRUE(tr.ok()) << tr.message();
  ctrack::Tracker& ct = *tr.value();
  gen::Template c, sv;
  gen::make_udp_template(&c, gen::Dir::kToServer, 64, kMacC, kMacS);
  gen::make_udp_template(&sv, gen::Dir::kToClient, 64, kMacS, kMacC);
  uint64_t now = 1'000'000'000;
  uint8_t buf[gen::kMaxFrame];
  auto judge = [&](const gen::Template& t, uint32_t conn) {
    gen::fill(t, buf, gen::tuple_of(conn), 0, 0, now & 0xFFFFFFFFFFFFull);
    ctrack::Parsed p;
    EXPECT_EQ(ctrack::parse_packet(buf, t.len, 0, &p), ctrack::Drop::kNone);
    const ctrack::Packet* pk = &p.ct;
    ctrack::CtResult r;
    ct.process(&pk, 1, now, true, &r);
    now += 1000;
    return r.state;
  };
  for (uint32_t i = 0; i < 500; i++) {
    EXPECT_TRUE(judge(c, i) & ctrack::kCtNew) << i;
    EXPECT_TRUE(judge(sv, i) & ctrack::kCtEst) << i;
  }
  for (int round = 0; round < 3; round++)
    for (uint32_t i = 0; i < 500; i++) {
      EXPECT_TRUE(judge(c, i) & ctrack::kCtEst);
      EXPECT_TRUE(judge(sv, i) & ctrack::kCtEst);
    }
  auto st = ct.stats();
  for (int i = 1; i < static_cast<int>(ctrack::Invalid::kCount); i++) EXPECT_EQ(st.invalid[i], 0u) << i;
}

}  // namespace

namespace {

// What a DUT terminating the tunnel sends the server side: connection c's
// client frame with the source translated to (floating address, port),
// in VXLAN from the DUT's VTEP (192.0.2.1) to the server's (192.0.2.2).
std::vector<uint8_t> from_dut(const gen::Template& t, uint32_t c, uint32_t seq, uint16_t port, uint32_t vni = 100,
                              uint32_t src = gen::kFloatingIp) {
  std::vector<uint8_t> f(gen::kOverlayHeaders + t.len);
  gen::Tuple tu = gen::tuple_of(c);
  tu.cip = src;
  tu.cport = port;
  gen::fill(t, f.data() + gen::kOverlayHeaders, tu, seq, 0, 0);
  gen::Overlay().encap(f.data(), t.len, 50000);
  gen::put32(f.data() + 26, gen::kLocalVtep);
  gen::put32(f.data() + 30, gen::kRemoteVtep);
  gen::put32(f.data() + 46, vni << 8);
  return f;
}

// What the server side sends connection 60001 (translated to port 31337)
// from UDP source port 50123, in VXLAN or Geneve.
std::vector<uint8_t> server_frame(bool geneve) {
  gen::Overlay ov;
  ov.init(100000, geneve);
  ov.nat_port[60001] = 31337;
  gen::Template t;
  gen::make_template(&t, gen::Dir::kToClient, gen::kAck | gen::kPsh, 64, kMacS, kMacC);
  std::vector<uint8_t> f(gen::kOverlayHeaders + t.len);
  gen::fill(t, f.data() + gen::kOverlayHeaders, ov.translated(60001), 5, 6, 7);
  ov.encap(f.data(), t.len, 50123);
  return f;
}

// A frame the server side sent (connection 60001, translated to port
// 31337, UDP source port 50123): its outer IPv4 and UDP toward the DUT's
// VTEP on `dport`, sound checksums, the translated inner tuple.
void expect_outer_and_inner(const std::vector<uint8_t>& f, uint16_t dport) {
  const uint8_t* ip = f.data() + 14;
  EXPECT_EQ(gen::get16(ip + 10), full_ip_csum(ip));
  EXPECT_EQ(gen::get16(ip + 2), f.size() - 14);
  EXPECT_EQ(gen::get32(ip + 12), gen::kRemoteVtep);
  EXPECT_EQ(gen::get32(ip + 16), gen::kLocalVtep);
  EXPECT_EQ(gen::get16(ip + 20), 50123);
  EXPECT_EQ(gen::get16(ip + 22), dport);
  EXPECT_EQ(gen::get16(ip + 24), f.size() - 34);
  const uint8_t* in = f.data() + gen::kOverlayHeaders + 14;
  EXPECT_EQ(gen::get32(in + 16), gen::kFloatingIp);
  EXPECT_EQ(gen::get16(in + 22), 31337);
  EXPECT_EQ(gen::get16(in + 20), 81) << "connection 60001's server port";
  EXPECT_EQ(gen::get16(in + 36), full_tcp_csum(in));
}

}  // namespace

// harness-gen --overlay: the server side's frames are VXLAN to the DUT's
// VTEP with sound outer checksums, carrying the translated tuple.
TEST(GenOverlay, WhatTheServerSendsIsVxlanToTheTranslatedClient) {
  const auto f = server_frame(false);
  expect_outer_and_inner(f, 4789);
  EXPECT_EQ(f[42], 0x08);
  EXPECT_EQ(gen::get32(f.data() + 46) >> 8, 100u);
}

// The translated port is learnt from the SYN (its ISN names the
// connection); later frames map back by it; what is not VXLAN from the
// DUT's VTEP with VNI 100 and the floating source is counted, not taken.
TEST(GenOverlay, TheServerSideLearnsTheTranslationAndRefusesTheRest) {
  const uint32_t K = 100000;
  gen::Overlay ov;
  ov.init(K);
  gen::Template syn, data;
  gen::make_template(&syn, gen::Dir::kToServer, gen::kSyn, 64, kMacC, kMacS);
  gen::make_template(&data, gen::Dir::kToServer, gen::kAck | gen::kPsh, 128, kMacC, kMacS);
  for (uint32_t c : {0u, 7u, 50007u, K - 1}) {
    const uint16_t port = static_cast<uint16_t>(1024 + c % 60000);
    auto f = from_dut(syn, c, gen::isn_client(c), port);
    const int off = ov.decap(f.data(), static_cast<uint32_t>(f.size()), K);
    ASSERT_EQ(off, gen::kOverlayHeaders) << c;
    gen::Seen s;
    ASSERT_TRUE(gen::parse(f.data() + off, static_cast<uint32_t>(f.size()) - off, K, gen::Dir::kToServer, &s));
    EXPECT_EQ(s.conn, c);
    auto d = from_dut(data, c, gen::isn_client(c) + 1, port);
    ASSERT_EQ(ov.decap(d.data(), static_cast<uint32_t>(d.size()), K), gen::kOverlayHeaders) << c;
    ASSERT_TRUE(gen::parse(d.data() + off, static_cast<uint32_t>(d.size()) - off, K, gen::Dir::kToServer, &s));
    EXPECT_EQ(s.conn, c);
    EXPECT_EQ(s.payload, data.payload);
  }
  EXPECT_EQ(ov.learnt, 4u);
  auto untranslated = from_dut(data, 7, 1, 10007, 100, gen::tuple_of(7).cip);
  auto wrong_vni = from_dut(data, 7, 1, 1031, 101);
  auto unknown = from_dut(data, 8, 1, 4444);
  auto plain = std::vector<uint8_t>(untranslated.begin() + gen::kOverlayHeaders, untranslated.end());
  for (auto* f : {&untranslated, &wrong_vni, &unknown, &plain})
    EXPECT_EQ(ov.decap(f->data(), static_cast<uint32_t>(f->size()), K), -1);
  EXPECT_EQ(ov.bad[gen::Overlay::kUntranslated], 1u);
  EXPECT_EQ(ov.bad[gen::Overlay::kWrongVni], 1u);
  EXPECT_EQ(ov.bad[gen::Overlay::kUnknownPort], 1u);
  EXPECT_EQ(ov.bad[gen::Overlay::kNotTunnel], 1u);
}

namespace {

// The same from a DUT speaking Geneve, with `opts` (a DUT may send options;
// the generator sends none).
std::vector<uint8_t> geneve_from_dut(const gen::Template& t, uint32_t c, uint32_t seq, uint16_t port,
                                     std::vector<net::GeneveOption> opts = {}, uint32_t vni = 100) {
  uint8_t src[4], dst[4];
  gen::put32(src, gen::kLocalVtep);
  gen::put32(dst, gen::kRemoteVtep);
  const net::GeneveOuter o{gen::kRemoteMac, gen::kVtepMac, src, dst, vni, 50000, net::kGenevePort, 64, true,
                           opts.data(), static_cast<uint32_t>(opts.size())};
  const uint32_t hl = net::geneve_outer_v4_len(o);
  std::vector<uint8_t> f(hl + t.len);
  gen::Tuple tu = gen::tuple_of(c);
  tu.cip = gen::kFloatingIp;
  tu.cport = port;
  gen::fill(t, f.data() + hl, tu, seq, 0, 0);
  net::put_geneve_outer_v4(f.data(), o, t.len);
  return f;
}

}  // namespace

// --tunnel geneve: the server side sends Geneve (UDP 6081, protocol 0x6558,
// no options, VNI 100) to the DUT's VTEP, sound outer checksum, carrying
// the translated tuple.
TEST(GenOverlay, WithGeneveTheServerSendsGeneveToTheTranslatedClient) {
  const auto f = server_frame(true);
  expect_outer_and_inner(f, 6081);
  net::GeneveHeader h;
  ASSERT_EQ(net::parse_geneve(f.data() + 42, static_cast<uint32_t>(f.size() - 42), &h), net::GeneveError::kNone);
  EXPECT_EQ(h.vni, 100u);
  EXPECT_EQ(h.proto, 0x6558);
  EXPECT_EQ(h.len, 8u);
  EXPECT_EQ(f[42], 0) << "version 0, no options";
}

// What the Geneve side takes: the DUT's frames with or without options
// (the inner frame found after them); refused as not_geneve: VXLAN, a
// critical option, Opt Len past the frame; a wrong VNI by its reason.
TEST(GenOverlay, WithGeneveTheServerSideReadsOptionsAndRefusesCriticalOnes) {
  const uint32_t K = 1000;
  gen::Overlay ov;
  ov.init(K, true);
  gen::Template syn, data;
  gen::make_template(&syn, gen::Dir::kToServer, gen::kSyn, 64, kMacC, kMacS);
  gen::make_template(&data, gen::Dir::kToServer, gen::kAck | gen::kPsh, 128, kMacC, kMacS);
  const uint8_t od[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<net::GeneveOption> plain_opts = {{0x0102, 0x01, od, 8}};
  for (uint32_t c : {0u, 7u, K - 1}) {
    const uint16_t port = static_cast<uint16_t>(2000 + c);
    auto f = geneve_from_dut(syn, c, gen::isn_client(c), port);
    int off = ov.decap(f.data(), static_cast<uint32_t>(f.size()), K);
    ASSERT_EQ(off, gen::kOverlayHeaders) << c;
    gen::Seen s;
    ASSERT_TRUE(gen::parse(f.data() + off, static_cast<uint32_t>(f.size()) - off, K, gen::Dir::kToServer, &s));
    EXPECT_EQ(s.conn, c);
    auto d = geneve_from_dut(data, c, gen::isn_client(c) + 1, port, plain_opts);
    off = ov.decap(d.data(), static_cast<uint32_t>(d.size()), K);
    ASSERT_EQ(off, gen::kOverlayHeaders + 12) << c;
    ASSERT_TRUE(gen::parse(d.data() + off, static_cast<uint32_t>(d.size()) - off, K, gen::Dir::kToServer, &s));
    EXPECT_EQ(s.conn, c);
    EXPECT_EQ(s.payload, data.payload);
  }
  EXPECT_EQ(ov.learnt, 3u);
  auto critical = geneve_from_dut(data, 7, 1, 2007, {{0x0102, 0x80, od, 4}});
  auto past = geneve_from_dut(data, 7, 1, 2007);
  past[42] = 0x3F;  // 252 bytes of options in a frame that has 0
  auto wrong_vni = geneve_from_dut(data, 7, 1, 2007, {}, 101);
  auto vxlan = from_dut(data, 7, 1, 2007);
  for (auto* f : {&critical, &past, &vxlan, &wrong_vni})
    EXPECT_EQ(ov.decap(f->data(), static_cast<uint32_t>(f->size()), K), -1);
  EXPECT_EQ(ov.bad[gen::Overlay::kNotTunnel], 3u);
  EXPECT_EQ(ov.bad[gen::Overlay::kWrongVni], 1u);
  EXPECT_STREQ(ov.why_name(gen::Overlay::kNotTunnel), "not_geneve");
  // And the VXLAN side refuses Geneve.
  gen::Overlay vx;
  vx.init(K);
  auto g = geneve_from_dut(data, 7, 1, 2007);
  EXPECT_EQ(vx.decap(g.data(), static_cast<uint32_t>(g.size()), K), -1);
  EXPECT_EQ(vx.bad[gen::Overlay::kNotTunnel], 1u);
  EXPECT_STREQ(vx.why_name(gen::Overlay::kNotTunnel), "not_vxlan");
}
