// Per packet: one worker's loop. rx on its queue of every port, the NIC
// model's stage (emulated offload), the pipeline, tx; packets of
// connections another worker owns go to it over a ring, and its own come
// back the same way; expiry by time. It sees only its WorkerEnv.
#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_ip_frag.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>

#include "features/fragments/table.h"
#include "features/overlay/mbuf.h"
#include "dataplane/nic_stage.h"
#include "sdn/clock.h"

namespace dp {

namespace {

using sdn::mono_ns;

constexpr uint8_t kMaxL2 = 22;  // Ethernet and two VLAN tags

struct TxBuf {
  uint16_t n = 0;
  rte_mbuf* m[2 * kMaxBurst];
};

// One worker: its burst arrays, its tx and handoff buffers, its share of a
// live trace. Built on the worker's lcore before the loop; nothing in the
// loop allocates.
class Worker {
 public:
  explicit Worker(const WorkerEnv& e)
      : e_(e), q_(static_cast<uint16_t>(e.id)), nports_(e.port_ids.size()), nw_(e.workers), tx_(nports_), ho_(nw_),
        st_(*e.stats) {}
  void run();

 private:
  bool poll_port(Pipeline& pl, size_t p, uint64_t now);  // true: it received packets
  bool poll_handoff(Pipeline& pl, uint64_t now);
  uint16_t nic_stage(uint16_t n, uint64_t now);  // what the NIC model did; returns the packets left for software
  void judge(Pipeline& pl, uint16_t n, uint64_t now);
  bool tunnel(const Pipeline& pl, rte_mbuf* m, const Verdict& v);  // false: no room for the outer headers
  void publish_trace(uint32_t traced_before);
  void flush(size_t p);
  void hand(unsigned to);
  void fragment_out(rte_mbuf* m, const Verdict& v);
  void fragments(Pipeline& pl, uint64_t now);  // what the fragment table released and dropped
  FragNote* note_of(rte_mbuf* m) const { return RTE_MBUF_DYNFIELD(m, e_.frag_note_off, FragNote*); }
  void to_tx(rte_mbuf* m, int16_t o) {
    TxBuf& b = tx_[static_cast<size_t>(o)];
    b.m[b.n++] = m;
    if (b.n == 2 * kMaxBurst) flush(static_cast<size_t>(o));
  }
  void packet_in(uint16_t i, rte_mbuf* m) {
    in_[i] = PacketIn{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, m->pkt_len, e_.port_index[m->port],
                      (m->ol_flags & RTE_MBUF_F_RX_FDIR_ID) != 0, m->hash.fdir.hi};
    in_[i].headroom = rte_pktmbuf_headroom(m);
    in_[i].cookie = m;
    in_[i].carry = e_.carry ? static_cast<Carried*>(rte_mbuf_to_priv(m)) : nullptr;
  }
  // The emulated NIC decapsulated or encapsulated: the frame starts
  // elsewhere in the buffer now.
  static void follow(rte_mbuf* m, const PacketIn& p) {
    const uint8_t* start = rte_pktmbuf_mtod(m, uint8_t*);
    if (p.data > start) rte_pktmbuf_adj(m, static_cast<uint16_t>(p.data - start));
    else if (p.data < start) rte_pktmbuf_prepend(m, static_cast<uint16_t>(start - p.data));
  }
  TraceRecord* record(const PacketIn& p, uint64_t now, uint8_t stage);

  const WorkerEnv& e_;
  const uint16_t q_;
  const size_t nports_;
  const unsigned nw_;
  std::vector<TxBuf> tx_;
  std::vector<TxBuf> ho_;  // packets for the workers that own their connections
  WorkerStats& st_;
  rte_mbuf* mb_[kMaxBurst];
  PacketIn in_[kMaxBurst];
  Verdict v_[kMaxBurst];
  ctrack::Parsed parsed_[kMaxBurst];  // the NIC stage's parse, reused by the pipeline
  ctrack::Drop parse_drop_[kMaxBurst];
  PacketNote note_[kMaxBurst];
  uint32_t trace_want_ = 0, trace_used_ = 0;  // this burst's share of a live trace
};

void Worker::flush(size_t p) {
  TxBuf& b = tx_[p];
  if (!b.n) return;
  uint16_t sent = rte_eth_tx_burst(e_.port_ids[p], q_, b.m, b.n);
  st_.tx_packets += sent;
  if (sent < b.n) {
    st_.drop[static_cast<int>(DropWhy::kTxFull)] += b.n - sent;
    rte_pktmbuf_free_bulk(b.m + sent, b.n - sent);
  }
  b.n = 0;
}

void Worker::hand(unsigned to) {
  TxBuf& b = ho_[to];
  if (!b.n) return;
  unsigned sent =
      rte_ring_sp_enqueue_burst(e_.handoff[e_.id * nw_ + to], reinterpret_cast<void* const*>(b.m), b.n, nullptr);
  if (sent < b.n) {
    st_.drop[static_cast<int>(DropWhy::kHandoffFull)] += b.n - sent;
    rte_pktmbuf_free_bulk(b.m + sent, b.n - sent);
  }
  b.n = 0;
}

TraceRecord* Worker::record(const PacketIn& p, uint64_t now, uint8_t stage) {
  if (trace_want_ == 0 || trace_used_ >= LiveTrace::kCap) return nullptr;
  TraceRecord& r = e_.trace->rec[trace_used_++];
  trace_want_--;
  r.ns = now;
  r.pkt_len = p.pkt_len;
  r.port = p.port;
  r.cap = static_cast<uint16_t>(std::min<uint32_t>(p.len, TraceRecord::kCapBytes));
  memcpy(r.frame, p.data, r.cap);
  r.stage = stage;
  r.worker = static_cast<uint8_t>(e_.id);
  r.out_port = -1;
  r.handoff = -1;
  r.ct_state = 0;
  r.mark = 0;
  r.note = PacketNote{};
  return &r;
}

// The software pipeline over mb_[0..n), then each packet out, away, or on
// to its owner.
void Worker::judge(Pipeline& pl, uint16_t n, uint64_t now) {
  e_.dp->run(pl, in_, n, now, v_, trace_want_ ? note_ : nullptr);
  for (uint16_t i = 0; i < n && trace_want_; i++) {
    if (TraceRecord* r = record(in_[i], now, TraceRecord::kSoftware)) {
      r->out_port = v_[i].out_port;
      r->handoff = v_[i].handoff;
      r->ct_state = v_[i].ct_state;
      r->mark = v_[i].mark;
      r->note = note_[i];
    }
  }
  for (uint16_t i = 0; i < n; i++) {
    if (v_[i].held) continue;  // the fragment table's now
    if (v_[i].out_port >= 0 && (v_[i].strip || v_[i].encap) && !tunnel(pl, mb_[i], v_[i])) {
      rte_pktmbuf_free(mb_[i]);
    } else if (v_[i].out_port >= 0 && v_[i].frag_mtu) {
      fragment_out(mb_[i], v_[i]);
    } else if (v_[i].out_port >= 0) {
      to_tx(mb_[i], v_[i].out_port);
    } else if (v_[i].handoff >= 0) {
      if (e_.frag_note_off >= 0) *note_of(mb_[i]) = v_[i].frag;  // always written: a buffer's dynfield keeps its last user's bytes
      TxBuf& b = ho_[static_cast<unsigned>(v_[i].handoff)];
      b.m[b.n++] = mb_[i];
      if (b.n == 2 * kMaxBurst) hand(static_cast<unsigned>(v_[i].handoff));
    } else {
      rte_pktmbuf_free(mb_[i]);
    }
  }
  for (size_t o = 0; o < nports_; o++) flush(o);
  for (unsigned t = 0; t < nw_; t++) hand(t);
}

// An IPv4 datagram without DF, longer than the egress MTU, leaves as
// fragments copied into new buffers (rte_ip_frag), each with the frame's
// Ethernet header and tags; the IPv4 header checksum is ours to write.
void Worker::fragment_out(rte_mbuf* m, const Verdict& v) {
  static constexpr uint16_t kMaxFrags = 64;  // 64 KB in 1 KB fragments
  uint8_t l2[kMaxL2];
  const uint8_t l2len = std::min<uint8_t>(v.l2_len, kMaxL2);
  memcpy(l2, rte_pktmbuf_mtod(m, uint8_t*), l2len);
  rte_pktmbuf_adj(m, l2len);
  // Each fragment's data is a multiple of 8 bytes after the header.
  const uint16_t hl = static_cast<uint16_t>((rte_pktmbuf_mtod(m, uint8_t*)[0] & 0x0F) * 4);
  const uint16_t mtu = static_cast<uint16_t>(hl + ((v.frag_mtu - hl) & ~7u));
  rte_mbuf* out[kMaxFrags];
  const uint16_t port = m->port;
  int32_t n = rte_ipv4_fragment_copy_nonseg_packet(m, out, kMaxFrags, mtu, e_.pool);
  rte_pktmbuf_free(m);
  if (n <= 0) {
    st_.drop[static_cast<int>(DropWhy::kFragNoMbuf)]++;
    return;
  }
  st_.tunnel[static_cast<int>(Tunnel::kFragsOut)] += static_cast<uint64_t>(n);
  for (int32_t k = 0; k < n; k++) {
    auto* ip = rte_pktmbuf_mtod(out[k], rte_ipv4_hdr*);
    ip->hdr_checksum = 0;
    ip->hdr_checksum = rte_ipv4_cksum(ip);
    auto* h = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(out[k], l2len));
    if (!h) {  // (the pool's buffers have the standard headroom)
      st_.drop[static_cast<int>(DropWhy::kFragNoMbuf)]++;
      rte_pktmbuf_free(out[k]);
      continue;
    }
    memcpy(h, l2, l2len);
    out[k]->port = port;
    to_tx(out[k], v.out_port);
  }
}

// The fragments the table let go in the last burst: the released run
// (their notes say what the table knew), the dropped are freed (counted).
void Worker::fragments(Pipeline& pl, uint64_t now) {
  FragTable& ft = e_.dp->fragments();
  for (const auto& d : ft.dropped()) rte_pktmbuf_free(static_cast<rte_mbuf*>(d.cookie));
  ft.dropped().clear();
  // Released packets are never held again, only deferred behind a first
  // fragment of their run, which does not defer: each round runs some.
  static thread_local std::vector<FragTable::Released> run;
  while (!ft.released().empty()) {
    run.swap(ft.released());
    for (size_t at = 0; at < run.size();) {
      uint16_t n = 0;
      for (; n < e_.burst && at < run.size(); n++, at++) {
        mb_[n] = static_cast<rte_mbuf*>(run[at].cookie);
        packet_in(n, mb_[n]);
        in_[n].frag = run[at].note;
      }
      judge(pl, n, now);
    }
    run.clear();
    for (const auto& d : ft.dropped()) rte_pktmbuf_free(static_cast<rte_mbuf*>(d.cookie));
    ft.dropped().clear();
  }
}

// Tunnels: the outer headers of a decapsulated frame come off, an
// encapsulated one's go on (the mbuf's headroom holds them; their length is
// the encap's).
bool Worker::tunnel(const Pipeline& pl, rte_mbuf* m, const Verdict& v) {
  if (apply_tunnel(pl, m, v)) return true;
  st_.drop[static_cast<int>(DropWhy::kEncapHeadroom)]++;
  return false;
}

// The NIC model's steering runs first; what it handles never reaches the
// software pipeline.
uint16_t Worker::nic_stage(uint16_t n, uint64_t now) {
  st_.nic_packets += n;
  int16_t nic_out[kMaxBurst];
  e_.nic->rx_burst(q_, in_, n, now, nic_out, parsed_, parse_drop_);
  uint16_t ns = 0;
  for (uint16_t i = 0; i < n; i++) {
    const int16_t o = nic_out[i];
    follow(mb_[i], in_[i]);
    if (o >= -1 && trace_want_) {
      if (TraceRecord* r = record(in_[i], now, TraceRecord::kNicStage)) r->out_port = o;
    }
    if (o >= 0) {
      to_tx(mb_[i], o);
    } else if (o == -1) {
      rte_pktmbuf_free(mb_[i]);
    } else {  // to software, with the NIC stage's parse
      mb_[ns] = mb_[i];
      in_[ns] = in_[i];
      in_[ns].parsed = &parsed_[i];
      in_[ns++].parse_drop = parse_drop_[i];
    }
  }
  return ns;
}

bool Worker::poll_port(Pipeline& pl, size_t p, uint64_t now) {
  uint16_t n = rte_eth_rx_burst(e_.port_ids[p], q_, mb_, e_.burst);
  if (!n) return false;
  uint64_t t0 = rte_rdtsc();
  for (uint16_t i = 0; i < n; i++) packet_in(i, mb_[i]);
  if (e_.nic) {
    // (The NIC stage's cycles are the NIC's, not the pipeline's: counted apart.)
    n = nic_stage(n, now);
    uint64_t t1 = rte_rdtsc();
    st_.nic_cycles += t1 - t0;
    t0 = t1;
  }
  judge(pl, n, now);
  fragments(pl, now);
  st_.busy_cycles += rte_rdtsc() - t0;
  return true;
}

// Packets other workers received for connections this one owns.
bool Worker::poll_handoff(Pipeline& pl, uint64_t now) {
  bool busy = false;
  for (unsigned from = 0; from < nw_ && nw_ > 1; from++) {
    if (from == e_.id) continue;
    unsigned n =
        rte_ring_sc_dequeue_burst(e_.handoff[from * nw_ + e_.id], reinterpret_cast<void**>(mb_), e_.burst, nullptr);
    if (!n) continue;
    busy = true;
    uint64_t t0 = rte_rdtsc();
    st_.handoff_in += n;
    for (uint16_t i = 0; i < n; i++) {
      packet_in(i, mb_[i]);
      if (e_.frag_note_off >= 0) in_[i].frag = *note_of(mb_[i]);
      in_[i].carried = in_[i].carry != nullptr;  // its first worker's decap and parse (Carried)
    }
    judge(pl, static_cast<uint16_t>(n), now);
    fragments(pl, now);
    st_.busy_cycles += rte_rdtsc() - t0;
  }
  return busy;
}

// The records this poll took, published to the control thread.
void Worker::publish_trace(uint32_t traced_before) {
  LiveTrace* lt = e_.trace;
  if (!lt || trace_used_ == traced_before) return;
  lt->used.store(trace_used_, std::memory_order_release);
  uint32_t was = lt->want.load(std::memory_order_relaxed);
  uint32_t left = was > trace_used_ - traced_before ? was - (trace_used_ - traced_before) : 0;
  lt->want.compare_exchange_strong(was, left, std::memory_order_relaxed);
}

void Worker::run() {
  rte_rcu_qsbr_thread_register(e_.qsbr, e_.id);
  rte_rcu_qsbr_thread_online(e_.qsbr, e_.id);
  LiveTrace* lt = e_.trace;
  uint64_t last_expire = 0;
  while (!e_.stop->load(std::memory_order_relaxed)) {
    Pipeline* pl = e_.pipeline->load(std::memory_order_acquire);
    uint64_t now = mono_ns();
    bool busy = false;
    trace_want_ = lt ? lt->want.load(std::memory_order_acquire) : 0;
    if (trace_want_) trace_used_ = lt->used.load(std::memory_order_relaxed);
    const uint32_t traced_before = trace_used_;
    if (e_.nic) e_.nic->service(q_, now);
    for (size_t p = 0; p < nports_; p++) busy |= poll_port(*pl, p, now);
    busy |= poll_handoff(*pl, now);
    if (busy) st_.busy_polls++;
    else st_.idle_polls++;
    publish_trace(traced_before);
    // Expiry paced by time, busy or not (kExpireEveryNs, expire_slice).
    if (now - last_expire >= kExpireEveryNs) {
      uint64_t t0 = rte_rdtsc();
      st_.expired += e_.shard->expire(now, e_.expire_slice);
      e_.dp->expire_fragments(now);
      fragments(*pl, now);
      st_.expire_cycles += rte_rdtsc() - t0;
      st_.expire_runs++;
      last_expire = now;
    }
    rte_rcu_qsbr_quiescent(e_.qsbr, e_.id);
  }
  for (size_t o = 0; o < nports_; o++) flush(o);
  rte_rcu_qsbr_thread_offline(e_.qsbr, e_.id);
  rte_rcu_qsbr_thread_unregister(e_.qsbr, e_.id);
}

}  // namespace

int register_frag_note_field() {
  static const rte_mbuf_dynfield d = {"dataplane_frag_note", sizeof(FragNote), alignof(FragNote), 0};
  return rte_mbuf_dynfield_register(&d);
}

void run_worker(const WorkerEnv& e) {
  Worker w(e);
  w.run();
}

int worker_lcore_entry(void* env) {
  run_worker(*static_cast<const WorkerEnv*>(env));
  return 0;
}

}  // namespace dp
