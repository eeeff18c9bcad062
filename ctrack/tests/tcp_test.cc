// Table-driven TCP packet-sequence tests: each scenario is a list of packets
// between client C (10.0.0.1:40000) and server S (10.0.0.2:80), with the
// ct_state bits, connection state and invalid reason each must produce.
#include <vector>

#include "ct_test_util.h"

namespace ctrack::test {
namespace {

constexpr int C = 0, S = 1;  // sender
constexpr uint32_t CI = 1000, SI = 5000;  // initial sequence numbers
constexpr uint8_t NEW = kCtTrk | kCtNew, EST = kCtTrk | kCtEst, RPL = kCtTrk | kCtEst | kCtRpl,
                  INV = kCtTrk | kCtInv;
constexpr int ANY = -1;

struct Step {
  int from;
  uint8_t flags;
  uint32_t seq, ack;
  uint16_t win = 65535, len = 0;
  uint8_t expect = 0;
  int state = ANY;                  // TcpState after the packet, ANY to skip
  Invalid reason = Invalid::kNone;  // checked when expect == INV
  int wscale = -1;                  // window-scale option on this packet
  bool sackperm = false;
  uint32_t sack = 0;                // SACK block right edge, 0 = none
};

struct Scenario {
  const char* name;
  std::vector<Step> steps;
  bool liberal = false;
  bool midstream = false;
};

const Key kC = make_key("10.0.0.1", 40000, "10.0.0.2", 80, IPPROTO_TCP);
const Key kS = kC.reversed();

// The three-way handshake every scenario below starts with (no options).
std::vector<Step> handshake() {
  return {
      {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
      {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv},
      {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
  };
}

std::vector<Step> with_handshake(std::vector<Step> rest) {
  auto v = handshake();
  v.insert(v.end(), rest.begin(), rest.end());
  return v;
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> s = {
      {"handshake, data both ways, orderly close", with_handshake({
           {C, kAck | kPsh, CI + 1, SI + 1, 65535, 100, EST, kTcpEstablished},
           {S, kAck | kPsh, SI + 1, CI + 101, 65535, 200, RPL, kTcpEstablished},
           {C, kAck, CI + 101, SI + 201, 65535, 0, EST, kTcpEstablished},
           {C, kFin | kAck, CI + 101, SI + 201, 65535, 0, EST, kTcpFinWait},
           {S, kAck, SI + 201, CI + 102, 65535, 0, RPL, kTcpCloseWait},
           {S, kFin | kAck, SI + 201, CI + 102, 65535, 0, RPL, kTcpLastAck},
           {C, kAck, CI + 102, SI + 202, 65535, 0, EST, kTcpTimeWait},
       })},
      {"SEQ above the window is invalid", with_handshake({
           {C, kAck, CI + 1 + 10000000, SI + 1, 65535, 100, INV, kTcpEstablished, Invalid::kTcpSeqOver},
       })},
      {"SEQ below the window (old data) is invalid", with_handshake({
           {C, kAck, CI + 1 - 300000, SI + 1, 65535, 100, INV, kTcpEstablished, Invalid::kTcpSeqUnder},
       })},
      {"ACK for data never sent is invalid", with_handshake({
           {C, kAck, CI + 1, SI + 1 + 100000, 65535, 0, INV, kTcpEstablished, Invalid::kTcpAckOver},
       })},
      {"ACK far below the window is invalid", with_handshake({
           {C, kAck, CI + 1, SI + 1 - 200000, 65535, 0, INV, kTcpEstablished, Invalid::kTcpAckUnder},
       })},
      {"window scaling from the SYN options opens the window", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent, Invalid::kNone, 7},
           {S, kSyn | kAck, SI, CI + 1, 1000, 0, RPL, kTcpSynRecv, Invalid::kNone, 7},
           {C, kAck, CI + 1, SI + 1, 512, 0, EST, kTcpEstablished},
           {S, kAck, SI + 1, CI + 1, 1000, 0, RPL, kTcpEstablished},  // 1000 << 7 = 128000
           {C, kAck, CI + 1 + 100000, SI + 1, 512, 1000, EST, kTcpEstablished},
       }},
      {"without scaling on both SYNs the same segment is out of window", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent, Invalid::kNone, 7},
           {S, kSyn | kAck, SI, CI + 1, 1000, 0, RPL, kTcpSynRecv},  // server sends no wscale
           {C, kAck, CI + 1, SI + 1, 512, 0, EST, kTcpEstablished},
           {S, kAck, SI + 1, CI + 1, 1000, 0, RPL, kTcpEstablished},
           {C, kAck, CI + 1 + 100000, SI + 1, 512, 1000, INV, kTcpEstablished, Invalid::kTcpSeqOver},
       }},
      {"SACK blocks are tolerated and bounded", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent, Invalid::kNone, -1, true},
           {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv, Invalid::kNone, -1, true},
           {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
           {C, kAck, CI + 1, SI + 1, 65535, 1000, EST, kTcpEstablished},
           {C, kAck, CI + 1001, SI + 1, 65535, 1000, EST, kTcpEstablished},
           // S lost the first segment: ACKs 1001 with SACK up to 2001.
           {S, kAck, SI + 1, CI + 1, 65535, 0, RPL, kTcpEstablished, Invalid::kNone, -1, false, CI + 2001},
           // A SACK edge past anything C sent is an ACK over the bound.
           {S, kAck, SI + 1, CI + 1, 65535, 0, INV, kTcpEstablished, Invalid::kTcpAckOver, -1, false,
            CI + 900000},
       }},
      {"retransmitted SYN", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
       }},
      {"retransmitted SYN with a new ISN re-initialises", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {C, kSyn, CI + 777, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kSyn | kAck, SI, CI + 778, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 778, SI + 1, 65535, 0, EST, kTcpEstablished},
       }},
      {"retransmitted SYN-ACK is passed, not invalid", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv},
           {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
       }},
      {"simultaneous open", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kSyn, SI, 0, 65535, 0, RPL, kTcpSynSent2},
           {C, kSyn | kAck, CI, SI + 1, 65535, 0, EST, kTcpSynRecv},
           {S, kSyn | kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
       }},
      {"RST exactly in sequence closes", with_handshake({
           {S, kRst, SI + 1, 0, 0, 0, RPL, kTcpClose},
       })},
      {"RST outside the window is invalid and changes nothing", with_handshake({
           {S, kRst, SI + 1 + 5000000, 0, 0, 0, INV, kTcpEstablished, Invalid::kTcpRstWindow},
           {C, kAck | kPsh, CI + 1, SI + 1, 65535, 10, EST, kTcpEstablished},
       })},
      {"RST in the window but not exact keeps the state (challenge ACK)", with_handshake({
           {S, kRst, SI + 1 + 100, 0, 0, 0, RPL, kTcpEstablished},
           {S, kRst, SI + 1, 0, 0, 0, RPL, kTcpClose},
       })},
      {"RST answering a SYN kills the entry", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kRst | kAck, 0, CI + 1, 0, 0, RPL, ANY},
           {C, kSyn, CI + 50, 0, 65535, 0, NEW, kTcpSynSent},  // a fresh entry
       }},
      {"half-close: data still flows from the side that has not closed", with_handshake({
           {C, kFin | kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpFinWait},
           {S, kAck, SI + 1, CI + 2, 65535, 0, RPL, kTcpCloseWait},
           {S, kAck | kPsh, SI + 1, CI + 2, 65535, 500, RPL, kTcpCloseWait},
           {C, kAck, CI + 2, SI + 501, 65535, 0, EST, kTcpCloseWait},
           {S, kFin | kAck, SI + 501, CI + 2, 65535, 0, RPL, kTcpLastAck},
           {C, kAck, CI + 2, SI + 502, 65535, 0, EST, kTcpTimeWait},
       })},
      {"TIME_WAIT is reused by a new SYN", with_handshake({
           {C, kFin | kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpFinWait},
           {S, kFin | kAck, SI + 1, CI + 2, 65535, 0, RPL, kTcpLastAck},
           {C, kAck, CI + 2, SI + 2, 65535, 0, EST, kTcpTimeWait},
           {C, kSyn, CI + 100000, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kSyn | kAck, SI + 90000, CI + 100001, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 100001, SI + 90001, 65535, 0, EST, kTcpEstablished},
       })},
      {"SYN on an established connection is ignored (Linux), not invalid", with_handshake({
           {C, kSyn, CI + 70000, 0, 65535, 0, EST, kTcpEstablished},
           {S, kAck, SI + 1, CI + 1, 65535, 0, RPL, kTcpEstablished},  // challenge ACK
           {C, kAck, CI + 1, SI + 1, 65535, 0, EST, kTcpEstablished},
       })},
      {"SYN on established, answered by a SYN-ACK: resynchronise", with_handshake({
           {C, kSyn, CI + 70000, 0, 65535, 0, EST, kTcpEstablished},
           {S, kSyn | kAck, SI + 9000, CI + 70001, 65535, 0, RPL, kTcpSynRecv},
           {C, kAck, CI + 70001, SI + 9001, 65535, 0, EST, kTcpEstablished},
       })},
      {"SYN+FIN is never valid", {
           {C, kSyn | kFin, CI, 0, 65535, 0, INV, ANY, Invalid::kTcpFlags},
       }},
      {"no flags at all is invalid", with_handshake({
           {C, 0, CI + 1, SI + 1, 65535, 0, INV, kTcpEstablished, Invalid::kTcpFlags},
       })},
      {"FIN without ACK is invalid", with_handshake({
           {C, kFin, CI + 1, SI + 1, 65535, 0, INV, kTcpEstablished, Invalid::kTcpFlags},
       })},
      {"SYN-ACK from the client first is invalid", {
           {C, kSyn | kAck, CI, SI, 65535, 0, INV, ANY, Invalid::kTcpState},
       }},
      {"midstream pickup is off by default", {
           {C, kAck, CI + 1, SI + 1, 65535, 100, INV, ANY, Invalid::kTcpNoSyn},
       }},
      {"midstream pickup when enabled", {
           {C, kAck, CI + 1, SI + 1, 65535, 100, NEW, kTcpEstablished},
           {S, kAck, SI + 1, CI + 101, 65535, 0, RPL, kTcpEstablished},
       }, false, true},
      {"liberal mode passes out-of-window segments", with_handshake({
           {C, kAck, CI + 1 + 10000000, SI + 1, 65535, 100, EST, kTcpEstablished},
       }), true},
      {"ACK in reply before SYN-ACK is ignored", {
           {C, kSyn, CI, 0, 65535, 0, NEW, kTcpSynSent},
           {S, kAck, SI, CI + 1, 65535, 0, RPL, kTcpSynSent},
       }},
      {"data retransmission inside the window is accepted", with_handshake({
           {C, kAck | kPsh, CI + 1, SI + 1, 65535, 1000, EST, kTcpEstablished},
           {C, kAck | kPsh, CI + 1, SI + 1, 65535, 1000, EST, kTcpEstablished},
       })},
  };
  return s;
}

class TcpSequence : public ::testing::TestWithParam<size_t> {};

TEST_P(TcpSequence, Runs) {
  const Scenario& sc = scenarios()[GetParam()];
  SCOPED_TRACE(sc.name);
  Config cfg = Harness::small_config();
  cfg.tcp_liberal = sc.liberal;
  cfg.tcp_midstream = sc.midstream;
  Harness h(cfg);
  for (size_t i = 0; i < sc.steps.size(); i++) {
    const Step& s = sc.steps[i];
    SCOPED_TRACE("step " + std::to_string(i + 1));
    Packet p = tcp(s.from == C ? kC : kS, s.flags, s.seq, s.ack, s.win, s.len);
    if (s.wscale >= 0) {
      p.meta |= kMetaWscale;
      p.wscale = static_cast<uint8_t>(s.wscale);
    }
    if (s.sackperm) p.meta |= kMetaSackPerm;
    if (s.sack) {
      p.meta |= kMetaSack;
      p.sack = s.sack;
    }
    CtResult r = h.run(p);
    EXPECT_EQ(+r.state, +s.expect) << "ct_state bits";
    if (s.expect == INV) {
      EXPECT_EQ(r.reason, s.reason) << "got " << invalid_name(r.reason) << ", want " << invalid_name(s.reason);
    }
    if (s.state != ANY) {
      bool found = false;
      h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) {
        found = true;
        EXPECT_EQ(+ci.proto_state, s.state) << "state " << ci.state << ", want " << tcp_state_name(s.state);
      });
      EXPECT_TRUE(found) << "no connection entry";
    }
    h.advance_s(0.001);
  }
  EXPECT_TRUE(h.tracker->check_invariants().ok());
}

INSTANTIATE_TEST_SUITE_P(Rules, TcpSequence, ::testing::Range<size_t>(0, scenarios().size()),
                         [](const ::testing::TestParamInfo<size_t>& pi) {
                           std::string n = scenarios()[pi.param].name;
                           std::string out;
                           for (char ch : n) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return std::to_string(pi.param) + "_" + out.substr(0, 60);
                         });

TEST(Tcp, TimeWaitReuseCountsReopen) {
  Harness h;
  for (const Step& s : with_handshake({{C, kFin | kAck, CI + 1, SI + 1},
                                       {S, kFin | kAck, SI + 1, CI + 2},
                                       {C, kAck, CI + 2, SI + 2},
                                       {C, kSyn, CI + 100000, 0}})) {
    h.run(tcp(s.from == C ? kC : kS, s.flags, s.seq, s.ack));
  }
  EXPECT_EQ(h.tracker->stats().reopened, 1u);
  EXPECT_EQ(h.tracker->stats().active, 1u);
}

TEST(Tcp, EstablishedEventCarriesWindowState) {
  Harness h;
  for (const Step& s : handshake()) h.run(tcp(s.from == C ? kC : kS, s.flags, s.seq, s.ack));
  Event ev[4];
  ASSERT_EQ(h.tracker->poll_events(ev, 4), 1u);
  EXPECT_EQ(ev[0].type, EventType::kEstablished);
  EXPECT_EQ(ev[0].orig, kC);
  EXPECT_EQ(ev[0].tcp[0].end, CI + 1);
  EXPECT_EQ(ev[0].tcp[1].end, SI + 1);
  EXPECT_EQ(ev[0].last_seq, CI + 1);
  EXPECT_EQ(ev[0].last_ack, SI + 1);
}

TEST(Tcp, StateTimeoutsFollowTheTable) {
  Harness h;
  for (const Step& s : handshake()) h.run(tcp(s.from == C ? kC : kS, s.flags, s.seq, s.ack));
  int64_t timeout = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { timeout = ci.timeout_ms; });
  EXPECT_EQ(timeout, 432000 * 1000ll);
  h.run(tcp(kC, kFin | kAck, CI + 1, SI + 1));
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { timeout = ci.timeout_ms; });
  EXPECT_EQ(timeout, 120 * 1000ll);
}

TEST(Tcp, UnackedDataShortensTimeout) {
  Harness h;
  for (const Step& s : handshake()) h.run(tcp(s.from == C ? kC : kS, s.flags, s.seq, s.ack));
  h.run(tcp(kC, kAck | kPsh, CI + 1, SI + 1, 65535, 100));
  int64_t timeout = 0;
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { timeout = ci.timeout_ms; });
  EXPECT_EQ(timeout, 300 * 1000ll);
  h.run(tcp(kS, kAck, SI + 1, CI + 101));
  h.tracker->for_each(h.now_ns, [&](const ConnInfo& ci) { timeout = ci.timeout_ms; });
  EXPECT_EQ(timeout, 432000 * 1000ll);
}

}  // namespace
}  // namespace ctrack::test
