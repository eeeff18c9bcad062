// TCP connection tracking as Linux nf_conntrack_proto_tcp.c (v6.1): the
// same state table, the same window checks (tcp_in_window, after Guido van
// Rooij's "Real Stateful TCP Packet Filtering in IP Filter"), the same
// handling of SYN on an established connection (ignored and annotated; a
// matching SYN-ACK resynchronises) and of TIME_WAIT reuse. Written here from
// those rules. The ops of proto.h, and established(): the common case (ACK
// or data on an assured ESTABLISHED connection) with the branches that
// cannot apply left out.
#pragma once

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "proto.h"

namespace ctrack::proto::tcp {

// ----------------------------------------------------------------- TCP rules

enum TcpIndex : uint8_t { kIdxSyn, kIdxSynAck, kIdxFin, kIdxAck, kIdxRst, kIdxNone, kIdxCount };

constexpr uint8_t sNO = kTcpNone, sSS = kTcpSynSent, sSR = kTcpSynRecv, sES = kTcpEstablished, sFW = kTcpFinWait,
                  sCW = kTcpCloseWait, sLA = kTcpLastAck, sTW = kTcpTimeWait, sCL = kTcpClose, sS2 = kTcpSynSent2,
                  sIV = kTcpStateCount, sIG = kTcpStateCount + 1;

// [direction][flag index][old state] -> new state (nf_conntrack_proto_tcp.c).
constexpr uint8_t kTcpTrans[2][kIdxCount][kTcpStateCount] = {
    {
        /*            sNO  sSS  sSR  sES  sFW  sCW  sLA  sTW  sCL  sS2 */
        /* syn    */ {sSS, sSS, sIG, sIG, sIG, sIG, sIG, sSS, sSS, sS2},
        /* synack */ {sIV, sIV, sSR, sIV, sIV, sIV, sIV, sIV, sIV, sSR},
        /* fin    */ {sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV},
        /* ack    */ {sES, sIV, sES, sES, sCW, sCW, sTW, sTW, sCL, sIV},
        /* rst    */ {sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL},
        /* none   */ {sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV},
    },
    {
        /* reply      sNO  sSS  sSR  sES  sFW  sCW  sLA  sTW  sCL  sS2 */
        /* syn    */ {sIV, sS2, sIV, sIV, sIV, sIV, sIV, sSS, sIV, sS2},
        /* synack */ {sIV, sSR, sIG, sIG, sIG, sIG, sIG, sIG, sIG, sSR},
        /* fin    */ {sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV},
        /* ack    */ {sIV, sIG, sSR, sES, sCW, sCW, sTW, sTW, sCL, sIG},
        /* rst    */ {sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL},
        /* none   */ {sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV},
    },
};

// Flag combinations real stacks send, PSH/ECE/CWR masked (tcp_valid_flags).
constexpr bool valid_tcp_flags(uint8_t f) {
  f &= kFin | kSyn | kRst | kAck | kUrg;
  switch (f) {
    case kSyn: case kSyn | kUrg: case kSyn | kAck: case kRst: case kRst | kAck:
    case kFin | kAck: case kFin | kAck | kUrg: case kAck: case kAck | kUrg:
      return true;
    default:
      return false;
  }
}

constexpr uint8_t tcp_index(uint8_t f) {
  if (f & kRst) return kIdxRst;
  if (f & kSyn) return (f & kAck) ? kIdxSynAck : kIdxSyn;
  if (f & kFin) return kIdxFin;
  if (f & kAck) return kIdxAck;
  return kIdxNone;
}

inline bool before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool after(uint32_t a, uint32_t b) { return before(b, a); }

inline uint32_t seg_end(const Packet& p) {
  return p.seq + p.payload_len + ((p.tcp_flags & kSyn) ? 1 : 0) + ((p.tcp_flags & kFin) ? 1 : 0);
}

constexpr uint32_t kMaxAckWinConst = 66000;


inline void init_sender(Conn& c, int s, const Packet& p, uint32_t end) {
  int r = !s;
  c.td_end[s] = c.td_maxend[s] = end;
  c.td_maxwin[s] = p.win ? p.win : 1;
  detail::set_td_scale(c, s, (p.meta & kMetaWscale) ? std::min<uint8_t>(p.wscale, 14) : 0);
  c.td_flags[s] = static_cast<uint8_t>(((p.meta & kMetaWscale) ? kTcpWindowScale : 0) |
                                       ((p.meta & kMetaSackPerm) ? kTcpSackPerm : 0));
  if (!((c.td_flags[s] & kTcpWindowScale) && (c.td_flags[r] & kTcpWindowScale))) c.td_scales = 0;
}

// tcp_in_window. Returns kNone when the packet fits (and updates the
// window state), else the reason. `skip` is set when the packet completed
// its business early (simultaneous open).
[[gnu::always_inline]] inline Invalid in_window(Conn& c, int s, const Packet& p, uint8_t state, bool liberal) {
  int r = !s;
  uint32_t seq = p.seq, ack = p.ack, sack = p.ack, end = seg_end(p), win = p.win;
  uint8_t f = p.tcp_flags;
  if ((c.td_flags[r] & kTcpSackPerm) && (p.meta & kMetaSack) && after(p.sack, sack)) sack = p.sack;

  if (c.td_maxwin[s] == 0) {
    if (f & kSyn) {
      // SYN-ACK in reply to a SYN, or SYN from the reply side (simultaneous open).
      init_sender(c, s, p, end);
      if (!(f & kAck)) return Invalid::kNone;
    } else {
      // Midstream: the history is lost, take what the packet says.
      c.td_end[s] = end;
      uint32_t swin = win << detail::td_scale(c, s);
      c.td_maxwin[s] = swin ? swin : 1;
      c.td_maxend[s] = end + c.td_maxwin[s];
      if (c.td_maxwin[r] == 0) c.td_end[r] = c.td_maxend[r] = sack;
      else if (sack == c.td_end[r] + 1) c.td_end[r]++;  // reply to a keepalive
    }
  } else if ((f & kSyn) && after(end, c.td_end[s]) && (state == sSS || state == sSR)) {
    // Retransmitted SYN / SYN-ACK with a new ISN or new options (RFC 793 re-init).
    init_sender(c, s, p, end);
    if (s == 1 && !(f & kAck)) return Invalid::kNone;
  }

  if (!(f & kAck)) {
    ack = sack = c.td_end[r];
  } else if ((f & (kAck | kRst)) == (kAck | kRst) && ack == 0) {
    ack = sack = c.td_end[r];  // broken stacks: RST+ACK with zero ack
  }
  if ((f & kRst) && seq == 0 && state == sSS) seq = end = c.td_end[s];  // RST answering a SYN

  uint32_t maxackwin = c.td_maxwin[s] > kMaxAckWinConst ? c.td_maxwin[s] : kMaxAckWinConst;
  Invalid bad = Invalid::kNone;
  if (!before(seq, c.td_maxend[s] + 1)) bad = Invalid::kTcpSeqOver;
  else if (c.td_maxwin[r] != 0 && !after(end, c.td_end[s] - c.td_maxwin[r] - 1)) bad = Invalid::kTcpSeqUnder;
  else if (!before(sack, c.td_end[r] + 1)) bad = Invalid::kTcpAckOver;
  else if (!after(sack, c.td_end[r] - maxackwin - 1)) bad = Invalid::kTcpAckUnder;
  if (bad != Invalid::kNone) {
    // Liberal: pass, but do not let an out-of-window packet move the window.
    return liberal ? Invalid::kNone : bad;
  }

  if (!(f & kSyn)) win <<= detail::td_scale(c, s);
  uint32_t swin = win + (sack - ack);
  if (c.td_maxwin[s] < swin) c.td_maxwin[s] = swin;
  // A RST carries no data; letting its SEQ move td_end would make the
  // exact-sequence check below drift with every challenge RST.
  if (after(end, c.td_end[s]) && !(f & kRst)) {
    c.td_end[s] = end;
    c.td_flags[s] |= kTcpDataUnacked;
  }
  if (c.td_maxwin[r] != 0 && after(end, c.td_maxend[s])) c.td_maxwin[r] += end - c.td_maxend[s];
  if (after(sack + win, c.td_maxend[r] - 1)) {
    c.td_maxend[r] = sack + win;
    if (win == 0) c.td_maxend[r]++;
  }
  if (ack == c.td_end[r]) c.td_flags[r] &= static_cast<uint8_t>(~kTcpDataUnacked);
  return Invalid::kNone;
}

[[gnu::noinline]] inline Outcome packet(Conn& c, ConnCold& x, int dir, const Packet& p, uint32_t now,
                                        const Times& t, bool cfg_liberal) {
  uint8_t f = p.tcp_flags;
  if (!valid_tcp_flags(f)) return {Verdict::kInvalid, Invalid::kTcpFlags, false};
  uint8_t idx = tcp_index(f);
  uint8_t old = c.state;
  uint8_t nst = kTcpTrans[dir][idx][old];
  uint8_t last_idx = c.last_index & 7;
  int last_dir = (c.last_index >> 3) & 1;

  switch (nst) {
    case sSS:
      if (old < sTW) break;
      // SYN on TIME_WAIT/CLOSE: reopen if the old one really closed.
      if (((c.td_flags[0] | c.td_flags[1]) & kTcpCloseInit) || (last_dir == dir && last_idx == kIdxRst))
        return {Verdict::kReopen, Invalid::kNone, true};
      [[fallthrough]];
    case sIG:
      if (idx == kIdxSynAck && last_idx == kIdxSyn && last_dir != dir && p.ack == c.last_end) {
        // This SYN-ACK answers a SYN we ignored: both ends are in sync and we
        // were not. Resynchronise from the annotated SYN.
        old = sSS;
        nst = sSR;
        int ld = last_dir;
        c.td_end[ld] = c.td_maxend[ld] = c.last_end;
        c.td_maxwin[ld] = c.last_win ? c.last_win : 1;
        detail::set_td_scale(c, ld, static_cast<uint8_t>(c.last_index >> 4));
        c.td_flags[ld] = x.last_flags;
        c.td_end[dir] = c.td_maxend[dir] = c.td_maxwin[dir] = 0;
        detail::set_td_scale(c, dir, 0);
        c.td_flags[dir] = 0;
        break;
      }
      c.last_index = static_cast<uint8_t>(idx | (dir << 3));
      c.last_end = seg_end(p);
      c.last_win = p.win;
      if (idx == kIdxSyn && dir == 0) {
        x.last_flags = static_cast<uint8_t>(((p.meta & kMetaWscale) ? kTcpWindowScale : 0) |
                                            ((p.meta & kMetaSackPerm) ? kTcpSackPerm : 0));
        c.last_index |= static_cast<uint8_t>(((p.meta & kMetaWscale) ? std::min<uint8_t>(p.wscale, 14) : 0) << 4);
      }
      return {Verdict::kIgnore, Invalid::kNone, false};
    case sIV:
      return {Verdict::kInvalid, Invalid::kTcpState, false};
    default:
      break;
  }

  bool liberal = cfg_liberal || ((c.td_flags[0] | c.td_flags[1]) & (kTcpBeLiberal | kTcpHwLiberal));
  bool rst_exact = p.seq == c.td_end[dir];
  Invalid w = in_window(c, dir, p, old, liberal);
  if (w != Invalid::kNone) return {Verdict::kInvalid, idx == kIdxRst ? Invalid::kTcpRstWindow : w, false};

  if (idx == kIdxRst && old >= sES && old <= sLA && !rst_exact && !liberal) {
    // In the window but not exactly at the expected sequence: keep the
    // state so the receiver may send a challenge ACK (RFC 5961), as Linux.
    nst = old;
  }

  c.last_index = static_cast<uint8_t>(idx | (dir << 3));
  c.last_end = seg_end(p);
  c.last_win = p.win;
  c.state = nst;
  if (old != nst && nst == sFW) c.td_flags[dir] |= kTcpCloseInit;

  uint32_t tm = t.tcp[nst];
  if (((c.td_flags[0] | c.td_flags[1]) & kTcpDataUnacked) && tm > t.tcp_unacked) tm = t.tcp_unacked;
  c.expires = now + tm;

  if (!(c.flags & detail::kSeenReply)) {
    // Only a RST came back: there was never a connection, drop it now.
    if (f & kRst) return {Verdict::kKill, Invalid::kNone, true};
  } else if (!(c.flags & detail::kAssured) && (old == sSR || old == sES) && nst == sES) {
    c.flags |= detail::kAssured;
  }
  return {Verdict::kAccept, Invalid::kNone, old != nst};
}

inline void init(Conn& c, ConnCold& x, const Packet& p) {
  uint32_t end = seg_end(p);
  for (int d = 0; d < 2; d++) {
    c.td_end[d] = c.td_maxend[d] = c.td_maxwin[d] = 0;
    c.td_flags[d] = 0;
  }
  c.td_scales = 0;
  if (p.tcp_flags & kSyn) {
    c.td_end[0] = c.td_maxend[0] = end;
    c.td_maxwin[0] = p.win ? p.win : 1;
    detail::set_td_scale(c, 0, (p.meta & kMetaWscale) ? std::min<uint8_t>(p.wscale, 14) : 0);
    c.td_flags[0] = static_cast<uint8_t>(((p.meta & kMetaWscale) ? kTcpWindowScale : 0) |
                                         ((p.meta & kMetaSackPerm) ? kTcpSackPerm : 0));
  } else {
    // Midstream pickup: nothing is known about scaling, so be liberal.
    c.td_end[0] = end;
    c.td_maxwin[0] = p.win ? p.win : 1;
    c.td_maxend[0] = end + c.td_maxwin[0];
    c.td_flags[0] = c.td_flags[1] = kTcpSackPerm | kTcpBeLiberal;
  }
  c.state = sNO;
  c.last_index = kIdxNone;
  x.last_flags = 0;
  c.last_end = 0;
  c.last_win = 0;
}

// A SYN starts a connection; a bare ACK does with tcp_midstream.
inline Invalid check_new(const Packet& p, bool midstream) {
  if (!valid_tcp_flags(p.tcp_flags)) return Invalid::kTcpFlags;
  uint8_t nst = kTcpTrans[0][tcp_index(p.tcp_flags)][sNO];
  if (nst == sSS) return Invalid::kNone;
  if (nst == sES && midstream) return Invalid::kNone;
  return nst == sES ? Invalid::kTcpNoSyn : Invalid::kTcpState;
}

// Updates an existing connection with a packet in direction dir.
// The common case, ACK/data on an assured ESTABLISHED connection: the same
// checks and updates as tcp_packet + tcp_in_window with the branches that
// cannot apply left out.
[[gnu::always_inline]] inline Outcome established(Conn& c, int s, const Packet& p, uint32_t now, const Times& tm) {
  int r = !s;
  uint32_t seq = p.seq, ack = p.ack, sack = p.ack, end = p.seq + p.payload_len;
  if ((c.td_flags[r] & kTcpSackPerm) && (p.meta & kMetaSack) && after(p.sack, sack)) sack = p.sack;
  uint32_t maxackwin = c.td_maxwin[s] > kMaxAckWinConst ? c.td_maxwin[s] : kMaxAckWinConst;
  if (!before(seq, c.td_maxend[s] + 1)) return {Verdict::kInvalid, Invalid::kTcpSeqOver, false};
  if (!after(end, c.td_end[s] - c.td_maxwin[r] - 1)) return {Verdict::kInvalid, Invalid::kTcpSeqUnder, false};
  if (!before(sack, c.td_end[r] + 1)) return {Verdict::kInvalid, Invalid::kTcpAckOver, false};
  if (!after(sack, c.td_end[r] - maxackwin - 1)) return {Verdict::kInvalid, Invalid::kTcpAckUnder, false};
  uint32_t win = static_cast<uint32_t>(p.win) << detail::td_scale(c, s);
  uint32_t swin = win + (sack - ack);
  if (c.td_maxwin[s] < swin) c.td_maxwin[s] = swin;
  if (after(end, c.td_end[s])) {
    c.td_end[s] = end;
    c.td_flags[s] |= kTcpDataUnacked;
  }
  if (after(end, c.td_maxend[s])) c.td_maxwin[r] += end - c.td_maxend[s];
  if (after(sack + win, c.td_maxend[r] - 1)) c.td_maxend[r] = sack + win + (win == 0);
  if (ack == c.td_end[r]) c.td_flags[r] &= static_cast<uint8_t>(~kTcpDataUnacked);
  c.last_index = static_cast<uint8_t>(kIdxAck | (s << 3));
  c.last_end = end;
  c.last_win = p.win;
  uint32_t t = tm.tcp[sES];
  if (((c.td_flags[0] | c.td_flags[1]) & kTcpDataUnacked) && t > tm.tcp_unacked) t = tm.tcp_unacked;
  c.expires = now + t;
  return {Verdict::kAccept, Invalid::kNone, false};
}

// Whether established() may judge this packet.
// (Both directions' flags in one 16-bit load, both windows in one 64-bit one.)
inline bool fast_path(const Conn& c, const Packet& p, bool cfg_liberal) {
  uint16_t tf;
  uint64_t mw;
  std::memcpy(&tf, c.td_flags, 2);
  std::memcpy(&mw, c.td_maxwin, 8);
  constexpr uint16_t kLiberal = (kTcpBeLiberal | kTcpHwLiberal) * 0x0101;
  return c.state == sES && (p.tcp_flags & (kSyn | kFin | kRst | kAck)) == kAck && (c.flags & detail::kAssured) &&
         !cfg_liberal && !(tf & kLiberal) && (static_cast<uint32_t>(mw) != 0) & ((mw >> 32) != 0);
}

[[gnu::always_inline]] inline Outcome update(Conn& c, ConnCold& x, int dir, const Packet& p, uint32_t now,
                                             const Times& t, bool cfg_liberal) {
  return fast_path(c, p, cfg_liberal) ? established(c, dir, p, now, t) : packet(c, x, dir, p, now, t, cfg_liberal);
}

}  // namespace ctrack::proto::tcp
