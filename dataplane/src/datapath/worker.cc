// Per packet: one worker's loop. rx on its queue of every port, the NIC
// model's stage (emulated offload), the pipeline, tx; packets of
// connections another worker owns go to it over a ring, and its own come
// back the same way; expiry by time. It sees only its WorkerEnv.
#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>

#include "dataplane/nic_stage.h"
#include "sdn/clock.h"

namespace dp {

namespace {
struct TxBuf {
  uint16_t n = 0;
  rte_mbuf* m[2 * kMaxBurst];
};
using sdn::mono_ns;
}  // namespace

void run_worker(const WorkerEnv& e) {
  const uint16_t q = static_cast<uint16_t>(e.id);
  const uint16_t burst = e.burst;
  const size_t nports = e.port_ids.size();
  const unsigned nw = e.workers;
  std::vector<TxBuf> tx(nports);
  std::vector<TxBuf> ho(nw);  // packets for the workers that own their connections
  WorkerStats& st = *e.stats;
  ctrack::Tracker* ct = e.shard;
  rte_rcu_qsbr_thread_register(e.qsbr, e.id);
  rte_rcu_qsbr_thread_online(e.qsbr, e.id);
  rte_mbuf* mb[kMaxBurst];
  PacketIn in[kMaxBurst];
  Verdict v[kMaxBurst];
  ctrack::Parsed parsed[kMaxBurst];  // the NIC stage's parse, reused by the pipeline
  ctrack::Drop parse_drop[kMaxBurst];
  PacketNote note[kMaxBurst];
  NicStage* nic = e.nic;
  LiveTrace* lt = e.trace;
  uint32_t trace_want = 0, trace_used = 0;  // this burst's share of a live trace

  auto flush = [&](size_t p) {
    TxBuf& b = tx[p];
    if (!b.n) return;
    uint16_t sent = rte_eth_tx_burst(e.port_ids[p], q, b.m, b.n);
    st.tx_packets += sent;
    if (sent < b.n) {
      st.drop[static_cast<int>(DropWhy::kTxFull)] += b.n - sent;
      rte_pktmbuf_free_bulk(b.m + sent, b.n - sent);
    }
    b.n = 0;
  };
  auto hand = [&](unsigned to) {
    TxBuf& b = ho[to];
    if (!b.n) return;
    unsigned sent = rte_ring_sp_enqueue_burst(e.handoff[e.id * nw + to], reinterpret_cast<void* const*>(b.m), b.n,
                                              nullptr);
    if (sent < b.n) {
      st.drop[static_cast<int>(DropWhy::kHandoffFull)] += b.n - sent;
      rte_pktmbuf_free_bulk(b.m + sent, b.n - sent);
    }
    b.n = 0;
  };
  auto to_tx = [&](rte_mbuf* m, int16_t o) {
    TxBuf& b = tx[static_cast<size_t>(o)];
    b.m[b.n++] = m;
    if (b.n == 2 * kMaxBurst) flush(static_cast<size_t>(o));
  };
  auto packet_in = [&](uint16_t i, rte_mbuf* m) {
    in[i] = PacketIn{rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, m->pkt_len, e.port_index[m->port],
                     (m->ol_flags & RTE_MBUF_F_RX_FDIR_ID) != 0, m->hash.fdir.hi};
  };
  // The software pipeline over mb[0..n), then each packet out, away, or on
  // to its owner.
  auto record = [&](const PacketIn& p, uint64_t now, uint8_t stage) -> TraceRecord* {
    if (trace_want == 0 || trace_used >= LiveTrace::kCap) return nullptr;
    TraceRecord& r = lt->rec[trace_used++];
    trace_want--;
    r.ns = now;
    r.pkt_len = p.pkt_len;
    r.port = p.port;
    r.cap = static_cast<uint16_t>(std::min<uint32_t>(p.len, TraceRecord::kCapBytes));
    memcpy(r.frame, p.data, r.cap);
    r.stage = stage;
    r.worker = static_cast<uint8_t>(e.id);
    r.out_port = -1;
    r.handoff = -1;
    r.ct_state = 0;
    r.mark = 0;
    r.note = PacketNote{};
    return &r;
  };
  auto judge = [&](Pipeline& pl, uint16_t n, uint64_t now) {
    e.dp->run(pl, in, n, now, v, trace_want ? note : nullptr);
    for (uint16_t i = 0; i < n && trace_want; i++) {
      if (TraceRecord* r = record(in[i], now, TraceRecord::kSoftware)) {
        r->out_port = v[i].out_port;
        r->handoff = v[i].handoff;
        r->ct_state = v[i].ct_state;
        r->mark = v[i].mark;
        r->note = note[i];
      }
    }
    for (uint16_t i = 0; i < n; i++) {
      if (v[i].out_port >= 0) {
        to_tx(mb[i], v[i].out_port);
      } else if (v[i].handoff >= 0) {
        TxBuf& b = ho[static_cast<unsigned>(v[i].handoff)];
        b.m[b.n++] = mb[i];
        if (b.n == 2 * kMaxBurst) hand(static_cast<unsigned>(v[i].handoff));
      } else {
        rte_pktmbuf_free(mb[i]);
      }
    }
    for (size_t o = 0; o < nports; o++) flush(o);
    for (unsigned t = 0; t < nw; t++) hand(t);
  };

  uint64_t last_expire = 0;
  const uint32_t expire_slice = e.expire_slice;
  while (!e.stop->load(std::memory_order_relaxed)) {
    Pipeline* pl = e.pipeline->load(std::memory_order_acquire);
    uint64_t now = mono_ns();
    bool busy = false;
    trace_want = lt ? lt->want.load(std::memory_order_acquire) : 0;
    if (trace_want) trace_used = lt->used.load(std::memory_order_relaxed);
    const uint32_t traced_before = trace_used;
    if (nic) nic->service(q, now);
    for (size_t p = 0; p < nports; p++) {
      uint16_t n = rte_eth_rx_burst(e.port_ids[p], q, mb, burst);
      if (!n) continue;
      busy = true;
      uint64_t t0 = rte_rdtsc();
      for (uint16_t i = 0; i < n; i++) packet_in(i, mb[i]);
      if (nic) {
        // The NIC model's steering runs first; what it handles never
        // reaches the software pipeline. (Its cycles are the NIC's, not
        // the pipeline's: counted apart.)
        st.nic_packets += n;
        int16_t nic_out[kMaxBurst];
        nic->rx_burst(q, in, n, now, nic_out, parsed, parse_drop);
        uint16_t ns = 0;
        for (uint16_t i = 0; i < n; i++) {
          const int16_t o = nic_out[i];
          if (o >= -1 && trace_want) {
            if (TraceRecord* r = record(in[i], now, TraceRecord::kNicStage)) r->out_port = o;
          }
          if (o >= 0) {
            to_tx(mb[i], o);
          } else if (o == -1) {
            rte_pktmbuf_free(mb[i]);
          } else {  // to software, with the NIC stage's parse
            mb[ns] = mb[i];
            in[ns] = in[i];
            in[ns].parsed = &parsed[i];
            in[ns++].parse_drop = parse_drop[i];
          }
        }
        n = ns;
        uint64_t t1 = rte_rdtsc();
        st.nic_cycles += t1 - t0;
        t0 = t1;
      }
      judge(*pl, n, now);
      st.busy_cycles += rte_rdtsc() - t0;
    }
    // Packets other workers received for connections this one owns.
    for (unsigned from = 0; from < nw && nw > 1; from++) {
      if (from == e.id) continue;
      unsigned n = rte_ring_sc_dequeue_burst(e.handoff[from * nw + e.id], reinterpret_cast<void**>(mb), burst, nullptr);
      if (!n) continue;
      busy = true;
      uint64_t t0 = rte_rdtsc();
      st.handoff_in += n;
      for (uint16_t i = 0; i < n; i++) packet_in(i, mb[i]);
      judge(*pl, static_cast<uint16_t>(n), now);
      st.busy_cycles += rte_rdtsc() - t0;
    }
    if (busy) st.busy_polls++;
    else st.idle_polls++;
    if (lt && trace_used != traced_before) {
      lt->used.store(trace_used, std::memory_order_release);
      uint32_t was = lt->want.load(std::memory_order_relaxed);
      uint32_t left = was > trace_used - traced_before ? was - (trace_used - traced_before) : 0;
      lt->want.compare_exchange_strong(was, left, std::memory_order_relaxed);
    }
    // Expiry paced by time, busy or not: a slice each millisecond that
    // sweeps the whole shard once a second (entries go within timeout + 1 s).
    if (now - last_expire >= 1'000'000) {
      uint64_t t0 = rte_rdtsc();
      st.expired += ct->expire(now, expire_slice);
      st.expire_cycles += rte_rdtsc() - t0;
      st.expire_runs++;
      last_expire = now;
    }
    rte_rcu_qsbr_quiescent(e.qsbr, e.id);
  }
  for (size_t o = 0; o < nports; o++) flush(o);
  rte_rcu_qsbr_thread_offline(e.qsbr, e.id);
  rte_rcu_qsbr_thread_unregister(e.qsbr, e.id);
}

int worker_lcore_entry(void* env) {
  run_worker(*static_cast<const WorkerEnv*>(env));
  return 0;
}

}  // namespace dp
