// The tables (a stage of Datapath::run): classifier keys, then table by
// table in order the lookup (rte_acl per family and protocol class, the
// short scan for ARP/ND/other, or the NIC's table-0 match), the matched
// rules' actions through the one action walk (pipeline/interp.h), and the
// burst's conntrack for the packets waiting at a ct().
#pragma once

#include <rte_acl.h>

#include "pipeline/burst.h"
#include "features/conntrack/stage.h"
#include "features/tables/acl.h"

namespace dp {

using stage::PktState;

// The tables in order (every jump goes forward, so one pass ends it), for
// what the flow cache did not take; a jump past the last table matched
// nothing.
inline void Datapath::tables(Burst& b) {
  classifier_keys(b);
  const Pipeline& pl = b.pl;
  for (int t = 0; t <= pl.max_table_ && b.active; t++) {
    classify(b, t);
    actions(b);
    if (b.nct) conntrack(b);
  }
  for (uint32_t i = 0; i < b.n && b.active; i++) {
    PktState& p = b.s[i];
    if (p.table > pl.max_table_) {
      b.drop(i, DropWhy::kNoMatch);
      p.cacheable = false;
      b.done(i);
    }
  }
}

// The classifier keys, for what the flow cache did not take.
inline void Datapath::classifier_keys(Burst& b) {
  for (uint32_t i = 0; i < b.n && b.active; i++) {
    PktState& p = b.s[i];
    if (p.table != 0 || p.key.kind == 0) continue;
    p.key.fill(p.parsed, b.in[i].port, p.tun_id);
  }
}

// Table t's lookup for the packets at it: rte_acl per (family, protocol
// class), a short scan for ARP/ND/other, or the NIC's table-0 match (mark).
// Leaves each packet's rule + 1 (0: no match) and the table's packets in
// `here`.
inline void Datapath::classify(Burst& b, int t) {
  PktState* s = b.s;
  const Pipeline::Table* tbl = b.pl.tables_[static_cast<size_t>(t)].get();
  const bool flags_table = (b.pl.tcp_flag_tables_ >> t) & 1;
  const uint8_t* dk[2 * kPcNum][kMaxBurst];
  uint32_t ik[2 * kPcNum][kMaxBurst], rk[2 * kPcNum][kMaxBurst], nk[2 * kPcNum] = {};
  b.nhere = 0;
  for (uint32_t i = 0; i < b.n; i++) {
    if (s[i].table != t) continue;
    b.here[b.nhere++] = i;
    s[i].rule = 0;
    if (flags_table) s[i].cacheable = false;
    if (s[i].pre >= 0) {  // the NIC did this table's lookup
      s[i].rule = static_cast<uint32_t>(s[i].pre) + 1;
      s[i].pre = -1;
      continue;
    }
    if (!tbl) continue;
    if (s[i].key.kind == 4) {
      int c = proto_class(s[i].key.k4.proto);
      if (!tbl->v4[c]) continue;
      dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].key.k4);
      ik[c][nk[c]++] = i;
    } else if (s[i].key.kind == 6) {
      int c = kPcNum + proto_class(s[i].key.k6.proto);
      if (!tbl->v6[c - kPcNum]) continue;
      dk[c][nk[c]] = reinterpret_cast<const uint8_t*>(&s[i].key.k6);
      ik[c][nk[c]++] = i;
    } else {
      s[i].rule = match_other(*tbl, b.in[i].port, s[i].key.other_type, s[i].parsed.vlan, s[i].tun_id);
    }
  }
  for (int c = 0; c < 2 * kPcNum; c++) {
    if (!nk[c]) continue;
    rte_acl_ctx* ctx = c < kPcNum ? tbl->v4[c] : tbl->v6[c - kPcNum];
    rte_acl_classify(ctx, dk[c], rk[c], nk[c], 1);
    for (uint32_t k = 0; k < nk[c]; k++) s[ik[c][k]].rule = rk[c][k];
  }
}

// The matched rules' hits counted, and their actions run up to a ct() (the
// packet waits in `ctq`) or a terminal action.
inline void Datapath::actions(Burst& b) {
  PktState* s = b.s;
  b.nct = 0;
  b.ct_multi = false;
  uint32_t last = UINT32_MAX;  // rule hits, summed over runs of the same rule
  uint64_t lp = 0, lb = 0;
  for (uint32_t k = 0; k < b.nhere; k++) {
    uint32_t i = b.here[k];
    if (s[i].rule == 0) {
      b.drop(i, DropWhy::kNoMatch);
      s[i].cacheable = false;
      b.done(i);
      continue;
    }
    uint32_t r = --s[i].rule;
    if (r != last) {
      if (last != UINT32_MAX) {
        b.counters[last].packets += lp;
        b.counters[last].bytes += lb;
      }
      last = r;
      lp = lb = 0;
    }
    lp++;
    lb += b.in[i].pkt_len;
    if (s[i].nhits < kMaxTables) s[i].hits[s[i].nhits++] = r;
    if (!b.crules[r].offload) s[i].cacheable = false;
    exec(b, i, 0, false);
  }
  if (last != UINT32_MAX) {
    b.counters[last].packets += lp;
    b.counters[last].bytes += lb;
  }
}

// Packet i's rule's actions from action `from` on (after_ct: from the ct()
// at `from`, which the burst's conntrack just ran), through the one action
// walk (interp.h) with the executor's hooks.
inline void Datapath::exec(Burst& b, uint32_t i, uint32_t from, bool resumed) {
  const CompiledRule& r = b.crules[b.s[i].rule];
  Burst::Exec x{b, i};
  if (resumed) after_ct(b.acts + r.first, r.count, from, x);
  else run_actions(b.acts + r.first, r.count, from, x);
}


}  // namespace dp
