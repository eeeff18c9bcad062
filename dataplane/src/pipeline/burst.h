// A burst's state as it goes through the stages (Datapath::run's): each
// packet's parse, classifier key, table and conntrack results, and the
// stage-independent helpers. Included only by the stage files (one
// translation unit, pipeline/run.cc, so every stage inlines).
#pragma once

#include <cstdint>
#include <cstring>

#include "ctrack/parse.h"
#include "ctrack/tracker.h"
#include "dataplane/pipeline.h"
#include "interp.h"
#include "net/bytes.h"
#include "features/tunnels.h"

namespace dp {
namespace stage {

struct PktState {
  ctrack::Parsed parsed;  // of the frame at in.data + off
  uint16_t off;           // a tunnel's decap: the outer headers' length
  uint8_t decap_counter;  // with off: that tunnel's decap counter (Tunnel)
  uint32_t tun_id;        // the VNI it came in with, 0: none
  ClassKey key;   // the classifier's key; key.kind 4, 6, or 0 for other (ARP, ND, non-IP)
  bool df_clear;  // IPv4 without DF: may leave in fragments
  int8_t table;  // current table, -1 when done
  uint8_t ct_state;
  uint32_t rule;        // matched rule index
  int32_t pre;          // table-0 rule the NIC matched (mark), or -1
  int32_t ct_zone;      // zone a ct() found this packet's connection in, -1 none; a drop: -2 commit
                        // failed (ct_full), -3 nat_exhausted, -4 nat_family
  uint8_t resume;       // action index to resume at after ct
  // The path, for the flow cache.
  bool cacheable;
  bool have_ct;         // the flow cache ran this packet's first ct(): `first` is its result
  bool have_found;      // the flow cache looked it up: `found` saves its first ct() the lookup
  ctrack::Tracker::Found found;
  bool rule_drop;       // ended by a drop action
  bool hw_marked;       // the NIC's mark chose its output or its table-0 rule (noted for live traces)
  uint8_t why;          // PacketNote::why
  const FlowPath* cached;  // the flow cache's path it took, or null
  uint8_t ncts, nhits;
  ctrack::CtResult first;
  bool first_commit;
  uint32_t first_act;    // the first ct()'s action (index into the pipeline's actions)
  bool natted;           // a ct() rewrote it to its connection's translated tuple
  ctrack::Key nat_to;    // with first.nat: the tuple its first ct() translated it to (the flow cache's, with have_ct)
  uint32_t hits[kMaxTables];
};

constexpr uint8_t kEst = ctrack::kCtTrk | ctrack::kCtEst;
constexpr uint8_t kEstRpl = ctrack::kCtTrk | ctrack::kCtEst | ctrack::kCtRpl;


// Bytes after the Ethernet header and up to two VLAN tags (what the MTU
// bounds), for frames the parser did not see (the NIC classified them).
inline uint32_t l3_bytes(const uint8_t* d, uint32_t len, uint32_t pkt_len) {
  uint32_t off = 14;
  for (int t = 0; t < 2 && off <= len; t++) {
    uint16_t et = net::get16(d + off - 2);
    if (et != 0x8100 && et != 0x88A8) break;
    off += 4;
  }
  return pkt_len > off ? pkt_len - off : 0;
}

// The length an IP header claims for its packet (parse gave kIpLen).
inline uint32_t ip_claimed(const uint8_t* d, uint32_t len, const ctrack::Parsed& pp) {
  const uint8_t* ip = d + pp.l3_off;
  if (pp.ethertype == 0x0800 && pp.l3_off + 4u <= len) return net::get16(ip + 2);
  if (pp.ethertype == 0x86DD && pp.l3_off + 6u <= len) return 40u + net::get16(ip + 4);
  return 0;
}

// A verdict before the stages have judged the packet.
inline constexpr Verdict kFreshVerdict{-1, 0, -1, 0, 0, 0, 0, false, 0, 0, FragNote{}};

// A packet's state before the stages have judged it, but where rx found
// it (off, tun_id, df_clear: the flow cache's lane sets those first).
inline void begin_state(PktState& p, bool fast) {
  p.table = -1;
  p.ct_state = 0;
  p.pre = -1;
  p.ct_zone = -1;
  p.cacheable = fast;
  p.have_ct = false;
  p.have_found = false;
  p.rule_drop = false;
  p.hw_marked = false;
  p.why = 0;
  p.cached = nullptr;
  p.natted = false;
  p.ncts = p.nhits = 0;
}
inline void begin_packet(PktState& p, bool fast) {
  p.off = 0;
  p.tun_id = 0;
  p.df_clear = false;
  begin_state(p, fast);
}

}  // namespace stage

// One burst through the stages. Each stage reads and writes the Burst; a
// packet leaves the stages when its `table` is -1 (judged, dropped or
// handed off), and `active` counts those still going.
struct Datapath::Burst {
  // Only the fields above `active` are given: the per-packet state is
  // written by ingress() (begin_packet) before any stage reads it, so it
  // is not cleared per burst (value-initialising it was a 12.8 KB memset
  // for every burst).
  Burst(Pipeline& p, const PacketIn* i, uint32_t k, uint64_t now, Verdict* o, WorkerStats& ws, const CompiledRule* cr,
        const Action* ac, RuleCounters* ctr, const HwMarkTable* marks, bool f, uint16_t fz)
      : pl(p), in(i), n(k), now_ns(now), out(o), st(ws), crules(cr), acts(ac), counters(ctr), hw(marks), fast(f),
        fast_zone(fz) {
#ifndef NDEBUG
    // Debug builds (the tests') poison it: a stage that reads what ingress
    // did not write reads garbage, and the differential tests see it.
    memset(static_cast<void*>(s), 0xA5, sizeof s);
    memset(l3len, 0xA5, sizeof l3len);
    memset(here, 0xA5, sizeof here);
    memset(ctq, 0xA5, sizeof ctq);
    memset(ctg, 0xA5, sizeof ctg);
#endif
  }
  Pipeline& pl;
  const PacketIn* in;
  uint32_t n;
  uint64_t now_ns;
  Verdict* out;
  WorkerStats& st;
  const CompiledRule* crules;
  const Action* acts;
  RuleCounters* counters;  // this worker's, of pl
  const HwMarkTable* hw;
  bool fast;               // the flow cache runs (on, and the rules use one zone)
  bool noting = false;     // a live trace wants each packet's note
  uint16_t fast_zone;
  uint32_t active = 0;
  stage::PktState s[kMaxBurst];
  uint32_t l3len[kMaxBurst];  // the bytes the MTU bounds
  // The table being run: its packets, and those waiting at a ct().
  uint32_t here[kMaxBurst], nhere = 0;
  uint32_t ctq[kMaxBurst], nct = 0;
  uint32_t ctg[kMaxBurst];  // each waiting packet's Action::ct_group
  bool ct_multi = false;    // they are in more than one group

  void drop(uint32_t i, DropWhy why) {
    st.drop[static_cast<int>(why)]++;
    s[i].why = 1 + static_cast<uint8_t>(why);
  }
  void done(uint32_t i) {  // judged: out of the tables
    s[i].table = -1;
    active--;
  }
  // The executor's hooks of the action walk (interp.h): the verdict, and a
  // ct() queues the packet for the burst's conntrack.
  struct Exec {
    Burst& b;
    uint32_t i;
    void set_mark(const Action& a) { b.out[i].mark = a.mark; }
    bool encap(const Action& a) {
      b.out[i].encap = a.encap;
      b.out[i].encap_sport = encap_sport(b.s[i].parsed.ct.key);
      return true;
    }
    Step ct(const Action& act, uint32_t a) {
      b.s[i].resume = static_cast<uint8_t>(a);
      b.ct_multi |= b.nct != 0 && act.ct_group != b.ctg[0];
      b.ctg[b.nct] = act.ct_group;
      b.ctq[b.nct++] = i;
      return Step::kWait;
    }
    void output(const Action& a) {
      b.out[i].out_port = static_cast<int16_t>(a.port);
      b.done(i);
    }
    void drop(const Action&) {
      b.drop(i, DropWhy::kRule);
      b.s[i].rule_drop = true;
      b.done(i);
    }
    void go(const Action& a) { b.s[i].table = static_cast<int8_t>(a.table); }
  };
};

}  // namespace dp
