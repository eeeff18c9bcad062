// harness-gen: a stateful DPDK traffic generator with two ports, the client
// side and the server side of K TCP connections through a DUT.
//
//  1. Set-up: real three-way handshakes (SYN out of the client port, the
//     SYN-ACK out of the server port once the SYN came through, the ACK),
//     with valid sequence numbers and window scaling, so a strict tracker
//     takes them; SYNs and SYN-ACKs are resent after 500 ms. With --proto
//     udp: UDP flows, a datagram each way.
//  2. Trials: data segments both ways, spread over the connections, each
//     acknowledging what has come through from the other side, at a set rate in bursts of
//     32, for a set time; then a drain. Loss per direction; latency from a
//     TSC stamp in every payload (p50, p99, p99.9, max).
//  3. The search (RFC 2544): a trial at full rate (the generator's ceiling
//     and the DUT's forwarding rate there), then a binary search for the
//     highest rate with loss at or under --loss (search.h), then latency at
//     10/50/90 % of it.
//  4. Churn (--churn S): new connections opened and closed as fast as they
//     go (SYN, SYN-ACK, ACK + a data segment + FIN, FIN-ACK, ACK), up to
//     512 open at a time, beside the K that stay up: established and
//     closed per second, and failures (not closed within 1 s).
// One JSON object on stdout.
//
// One lcore does all of it; no allocation after set-up. See --help.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frame.h"
#include "sdn/number.h"
#include "overlay.h"
#include "search.h"
#include "sdn/json.h"

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

constexpr uint16_t kBurst = 32;
using gen::isn_client;

// This thread's time on a CPU and waiting for one (ns, schedstat); false
// when the kernel does not say.
bool own_cpu(uint64_t* run, uint64_t* wait) {
  FILE* f = fopen("/proc/thread-self/schedstat", "r");
  if (!f) return false;
  unsigned long long r = 0, w = 0;
  const bool ok = fscanf(f, "%llu %llu", &r, &w) == 2;
  fclose(f);
  *run = r;
  *wait = w;
  return ok;
}

// wait / (run + wait): the share of the time it wanted a CPU that it had none.
double wait_share(double run, double wait) { return run + wait > 0 ? wait / (run + wait) : -1; }
using gen::kIsnServer;

struct Options {
  std::string client_dev, server_dev;  // vdev devargs (net_memif...) or PCI addresses
  uint32_t conns = 1000;
  int frame = 64;
  double trial_s = 2, loss = 0, max_mpps = 0, rate_mpps = 0;
  int setup_s = 60;
  uint16_t rx_queues = 1;  // a DUT that sends on more queues than one (OVS: one per PMD thread and one more)
  bool hold = false;       // after set-up, wait for "go" on stdin (the harness counts the DUT's tracker)
  bool udp = false;        // UDP flows instead of TCP connections (no handshake, no churn)
  double churn_s = 0;
  uint32_t churn_conns = 1000000;  // at most this many new connections in the churn phase
  bool search = true;
  bool full_only = false;  // one trial at full rate (the generator's ceiling against a peer that drops)
  bool sync = false;       // around every trial, a line to the harness and one back (see run_trial)
  bool linger = false;     // after the JSON, keep the ports until stdin closes (see leave())
  bool overlay = false;    // the server side is a VTEP behind a source NAT (overlay.h)
  bool geneve = false;     // --tunnel geneve: that VTEP speaks Geneve, not VXLAN
};

// Latency: log-linear buckets, 16 per power of two (~6 % wide), 48 bits.
struct Histogram {
  static constexpr int kSub = 16, kBuckets = 45 * kSub;
  uint64_t b[kBuckets] = {};
  uint64_t n = 0, max = 0;
  void add(uint64_t v) {
    n++;
    if (v > max) max = v;
    int i;
    if (v < kSub) {
      i = static_cast<int>(v);
    } else {
      int p = 63 - __builtin_clzll(v) - 4;
      i = (p + 1) * kSub + static_cast<int>((v >> p) - kSub);
    }
    b[std::min(i, kBuckets - 1)]++;
  }
  // The upper edge of the bucket that holds quantile q.
  uint64_t at(double q) const {
    if (!n) return 0;
    uint64_t want = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))), seen = 0;
    for (int i = 0; i < kBuckets; i++) {
      seen += b[i];
      if (seen >= want) {
        if (i < kSub) return static_cast<uint64_t>(i);
        int p = i / kSub - 1;
        uint64_t edge = ((static_cast<uint64_t>(kSub + i % kSub) + 1) << p) - 1;
        return std::min(edge, max);
      }
    }
    return max;
  }
};

struct Port {
  uint16_t id = 0;
  rte_ether_addr mac{};
};

struct Gen {
  Options o;
  Port cp, sp;  // client side, server side
  rte_mempool* pool = nullptr;
  uint64_t hz = 0;
  // Per connection: what each side has sent (its next SEQ) and has received
  // of the other's data (through the DUT: what its ACKs may cover; acking
  // data the DUT has not passed yet is an invalid ACK to a strict tracker),
  // and the handshake state.
  std::vector<uint32_t> cseq, sseq, crcv, srcv;
  std::vector<uint8_t> state;  // 0 new, 1 SYN sent, 2 SYN-ACK sent, 3 established
  std::vector<uint64_t> sent_at;
  std::vector<uint8_t> churn_state;  // per churn connection: see churn()
  std::vector<uint64_t> churn_t0;
  gen::Overlay ov;  // --overlay: the server side's VTEP
  gen::Template syn, synack, ack, data_c, data_s, ack0_c, fin_c, fin_s;

  // One burst from any of the port's receive queues.
  uint16_t rx_burst(const Port& p, rte_mbuf** m) {
    uint16_t got = 0;
    for (uint16_t q = 0; q < o.rx_queues && got < kBurst; q++)
      got = static_cast<uint16_t>(got + rte_eth_rx_burst(p.id, q, m + got, static_cast<uint16_t>(kBurst - got)));
    return got;
  }

  rte_mbuf* frame(const gen::Template& t, uint32_t conn, uint32_t seq, uint32_t ackn, uint64_t ts) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    if (!m) return nullptr;
    uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
    if (o.overlay && t.dir == gen::Dir::kToClient) {
      gen::fill(t, p + gen::kOverlayHeaders, ov.translated(conn), seq, ackn, ts);
      ov.encap(p, t.len, entropy(conn));
      m->data_len = m->pkt_len = static_cast<uint16_t>(t.len + gen::kOverlayHeaders);
      return m;
    }
    gen::fill(t, p, gen::tuple_of(conn), seq, ackn, ts);
    m->data_len = m->pkt_len = t.len;
    return m;
  }
  static uint16_t entropy(uint32_t conn) { return static_cast<uint16_t>(49152 + (conn * 2654435761u >> 18) % 16384); }
  // A frame the server side received, as parse() reads it; with --overlay
  // first decapsulated and its translation checked (Overlay::decap).
  bool parse_server(rte_mbuf* m, uint32_t bound, gen::Seen* s) {
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    if (!o.overlay) return gen::parse(f, m->data_len, bound, gen::Dir::kToServer, s);
    const int off = ov.decap(f, m->data_len, bound);
    return off >= 0 && gen::parse(f + off, m->data_len - static_cast<uint32_t>(off), bound, gen::Dir::kToServer, s);
  }
  void send(const Port& p, rte_mbuf** m, uint16_t n, uint64_t* dropped) {
    uint16_t k = 0;
    for (int tries = 0; k < n && tries < 1000; tries++) k += rte_eth_tx_burst(p.id, 0, m + k, n - k);
    if (k < n) {
      *dropped += n - k;
      rte_pktmbuf_free_bulk(m + k, n - k);
    }
  }

  // --- set-up -------------------------------------------------------------
  struct SetupResult {
    uint32_t established = 0, resent = 0;
    double secs = 0;
    bool stalled = false;  // none established for 5 s: the DUT passes no more
  };
  SetupResult setup() {
    SetupResult r;
    const uint64_t t0 = rte_rdtsc(), resend = hz / 2, deadline = t0 + static_cast<uint64_t>(o.setup_s) * hz;
    // Handshakes in flight: few enough that what they bring back fits the
    // rings between here and the DUT (1024 each), which drop what overflows.
    const uint32_t window = 512;
    uint32_t next = 0, in_flight = 0, scan = 0;
    uint64_t txdrop = 0, progress_at = t0;
    rte_mbuf* rx[kBurst];
    rte_mbuf* tx[kBurst];
    while (r.established < o.conns && !g_stop && rte_rdtsc() < deadline) {
      uint16_t n = 0;
      while (in_flight < window && next < o.conns && n < kBurst) {
        if (rte_mbuf* m = frame(syn, next, isn_client(next), 0, 0)) {
          tx[n++] = m;
          state[next] = 1;
          sent_at[next] = rte_rdtsc();
          next++;
          in_flight++;
        } else {
          break;
        }
      }
      if (n) send(cp, tx, n, &txdrop);
      // Server side: SYN -> SYN-ACK; ACK -> established. Each side's queues
      // are drained (up to 8 bursts): every SYN sent brings back two frames
      // on the server side, and a ring the generator leaves full drops them.
      for (int b = 0; b < 8; b++) {
        uint16_t got = rx_burst(sp, rx);
        n = 0;
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen s;
          if (parse_server(rx[i], o.conns, &s)) {
            if ((s.flags & (gen::kSyn | gen::kAck)) == gen::kSyn && state[s.conn] >= 1 && state[s.conn] <= 2) {
              if (rte_mbuf* m = frame(synack, s.conn, kIsnServer, isn_client(s.conn) + 1, 0)) tx[n++] = m;
              state[s.conn] = 2;
              sent_at[s.conn] = rte_rdtsc();
            } else if ((s.flags & (gen::kSyn | gen::kAck)) == gen::kAck && state[s.conn] == 2) {
              state[s.conn] = 3;
              r.established++;
              in_flight--;
              progress_at = rte_rdtsc();
            }
          }
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (n) send(sp, tx, n, &txdrop);
        if (got < kBurst) break;
      }
      // Client side: SYN-ACK -> ACK.
      for (int b = 0; b < 8; b++) {
        uint16_t got = rx_burst(cp, rx);
        n = 0;
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen s;
          if (gen::parse(rte_pktmbuf_mtod(rx[i], const uint8_t*), rx[i]->data_len, o.conns, gen::Dir::kToClient, &s) &&
              (s.flags & (gen::kSyn | gen::kAck)) == (gen::kSyn | gen::kAck))
            if (rte_mbuf* m = frame(ack, s.conn, isn_client(s.conn) + 1, kIsnServer + 1, 0)) tx[n++] = m;
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (n) send(cp, tx, n, &txdrop);
        if (got < kBurst) break;
      }
      // Resend what has waited too long (a slice of the table per pass).
      const uint64_t now = rte_rdtsc();
      if (now - progress_at > 5 * hz) {
        r.stalled = true;
        break;
      }
      uint16_t nc = 0, ns = 0;
      rte_mbuf* txs[kBurst];
      for (uint32_t k = 0; k < 256 && next > 0; k++, scan = (scan + 1) % next) {
        if (state[scan] == 0 || state[scan] == 3 || now - sent_at[scan] < resend) continue;
        if (state[scan] == 1 && nc < kBurst) {
          if (rte_mbuf* m = frame(syn, scan, isn_client(scan), 0, 0)) tx[nc++] = m;
        } else if (state[scan] == 2 && ns < kBurst) {
          if (rte_mbuf* m = frame(synack, scan, kIsnServer, isn_client(scan) + 1, 0)) txs[ns++] = m;
        } else {
          continue;
        }
        sent_at[scan] = now;
        r.resent++;
      }
      if (nc) send(cp, tx, nc, &txdrop);
      if (ns) send(sp, txs, ns, &txdrop);
    }
    r.secs = static_cast<double>(rte_rdtsc() - t0) / static_cast<double>(hz);
    for (uint32_t i = 0; i < o.conns; i++) {
      cseq[i] = srcv[i] = isn_client(i) + 1;
      sseq[i] = crcv[i] = kIsnServer + 1;
    }
    return r;
  }

  // UDP: a flow is set up when the client's first datagram came through and
  // the server's answer came back (the tracker has seen both ways). The
  // client sends again after 500 ms without an answer.
  SetupResult setup_udp() {
    SetupResult r;
    const uint64_t t0 = rte_rdtsc(), resend = hz / 2, deadline = t0 + static_cast<uint64_t>(o.setup_s) * hz;
    const uint32_t window = 512;
    uint32_t next = 0, in_flight = 0, scan = 0;
    uint64_t txdrop = 0, progress_at = t0;
    rte_mbuf* rx[kBurst];
    rte_mbuf* tx[kBurst];
    while (r.established < o.conns && !g_stop && rte_rdtsc() < deadline) {
      uint16_t n = 0;
      while (in_flight < window && next < o.conns && n < kBurst) {
        rte_mbuf* m = frame(data_c, next, 0, 0, 0);
        if (!m) break;
        tx[n++] = m;
        state[next] = 1;
        sent_at[next] = rte_rdtsc();
        next++;
        in_flight++;
      }
      if (n) send(cp, tx, n, &txdrop);
      for (int b = 0; b < 8; b++) {  // server side: answer each flow's datagrams
        uint16_t got = rx_burst(sp, rx);
        n = 0;
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen sn;
          if (parse_server(rx[i], o.conns, &sn) &&
              state[sn.conn] >= 1 && state[sn.conn] <= 2) {
            if (rte_mbuf* m = frame(data_s, sn.conn, 0, 0, 0)) tx[n++] = m;
            state[sn.conn] = 2;
          }
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (n) send(sp, tx, n, &txdrop);
        if (got < kBurst) break;
      }
      for (int b = 0; b < 8; b++) {  // client side: the answer makes the flow
        uint16_t got = rx_burst(cp, rx);
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen sn;
          if (gen::parse(rte_pktmbuf_mtod(rx[i], const uint8_t*), rx[i]->data_len, o.conns, gen::Dir::kToClient, &sn) &&
              state[sn.conn] == 2) {
            state[sn.conn] = 3;
            r.established++;
            in_flight--;
            progress_at = rte_rdtsc();
          }
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (got < kBurst) break;
      }
      const uint64_t now = rte_rdtsc();
      if (now - progress_at > 5 * hz) {
        r.stalled = true;
        break;
      }
      n = 0;
      for (uint32_t k = 0; k < 256 && next > 0 && n < kBurst; k++, scan = (scan + 1) % next) {
        if (state[scan] == 0 || state[scan] == 3 || now - sent_at[scan] < resend) continue;
        if (rte_mbuf* m = frame(data_c, scan, 0, 0, 0)) tx[n++] = m;
        sent_at[scan] = now;
        r.resent++;
      }
      if (n) send(cp, tx, n, &txdrop);
    }
    r.secs = static_cast<double>(rte_rdtsc() - t0) / static_cast<double>(hz);
    return r;
  }

  // --- churn --------------------------------------------------------------
  // Connection K + j, j < churn_conns. State: 1 SYN sent, 2 SYN-ACK sent
  // (the client answers it with ACK, data, FIN at once), 3 established (the
  // server saw the ACK), 4 the server's FIN-ACK sent, 5 closed (the client's
  // last ACK sent), 6 failed (not closed within 1 s; no resends).
  struct ChurnResult {
    uint64_t opened = 0, established = 0, closed = 0, failed = 0;
    uint64_t failed_in[5] = {};  // by the state they were stuck in (1..4)
    uint64_t tx_dropped = 0;     // frames the DUT's port would not take
    double secs = 0;
  };
  ChurnResult churn() {
    ChurnResult r;
    const uint32_t base = o.conns, n = o.churn_conns, bound = o.conns + o.churn_conns;
    const uint32_t window = 512;  // as in setup(): up to 3 frames each at once
    const uint64_t t0 = rte_rdtsc(), open_until = t0 + static_cast<uint64_t>(o.churn_s * static_cast<double>(hz)),
                   timeout = hz;
    uint32_t next = 0, oldest = 0, in_flight = 0;
    uint64_t txdrop = 0, now = t0, last_est = t0;
    rte_mbuf* rx[kBurst];
    rte_mbuf* tx[3 * kBurst];
    const uint32_t P = data_c.payload;
    while (!g_stop) {
      now = rte_rdtsc();
      const bool opening = now < open_until && next < n;
      if (!opening && (in_flight == 0 || now > open_until + 2 * timeout)) break;
      uint16_t k = 0;
      while (opening && in_flight < window && next < n && k < kBurst) {
        rte_mbuf* m = frame(syn, base + next, isn_client(base + next), 0, 0);
        if (!m) break;
        tx[k++] = m;
        churn_state[next] = 1;
        churn_t0[next] = now;
        next++;
        in_flight++;
        r.opened++;
      }
      if (k) send(cp, tx, k, &txdrop);
      // Server side (drained as in setup(): five frames per connection
      // arrive here).
      for (int b = 0; b < 8; b++) {
        uint16_t got = rx_burst(sp, rx);
        k = 0;
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen sn;
          if (!parse_server(rx[i], bound, &sn) ||
              sn.conn < base)
            continue;
          const uint32_t j = sn.conn - base;
          uint8_t& st = churn_state[j];
          if ((sn.flags & (gen::kSyn | gen::kAck)) == gen::kSyn) {
            if (st == 1) {
              if (rte_mbuf* m = frame(synack, sn.conn, kIsnServer, isn_client(sn.conn) + 1, 0)) tx[k++] = m;
              st = 2;
            }
            continue;
          }
          if (!(sn.flags & gen::kAck)) continue;
          if (st == 2) {
            st = 3;
            r.established++;
            last_est = rte_rdtsc();
          }
          if ((sn.flags & gen::kFin) && st == 3) {
            if (rte_mbuf* m = frame(fin_s, sn.conn, kIsnServer + 1, sn.seq + sn.payload + 1, 0)) tx[k++] = m;
            st = 4;
          }
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (k) send(sp, tx, k, &txdrop);
        if (got < kBurst) break;
      }
      // Client side.
      for (int b = 0; b < 8; b++) {
        uint16_t got = rx_burst(cp, rx);
        k = 0;
        const uint64_t ts = rte_rdtsc() & 0xFFFFFFFFFFFFull;
        for (uint16_t i = 0; i < got; i++) {
          gen::Seen sn;
          if (!gen::parse(rte_pktmbuf_mtod(rx[i], const uint8_t*), rx[i]->data_len, bound, gen::Dir::kToClient, &sn) ||
              sn.conn < base)
            continue;
          const uint32_t j = sn.conn - base;
          uint8_t& st = churn_state[j];
          if ((sn.flags & (gen::kSyn | gen::kAck)) == (gen::kSyn | gen::kAck) && st == 2) {
            if (rte_mbuf* m = frame(ack0_c, sn.conn, isn_client(sn.conn) + 1, kIsnServer + 1, 0)) tx[k++] = m;
            if (rte_mbuf* m = frame(data_c, sn.conn, isn_client(sn.conn) + 1, kIsnServer + 1, ts)) tx[k++] = m;
            if (rte_mbuf* m = frame(fin_c, sn.conn, isn_client(sn.conn) + 1 + P, kIsnServer + 1, 0)) tx[k++] = m;
          } else if ((sn.flags & gen::kFin) && st == 4) {
            if (rte_mbuf* m = frame(ack0_c, sn.conn, isn_client(sn.conn) + 2 + P, kIsnServer + 2, 0)) tx[k++] = m;
            st = 5;
            r.closed++;
            in_flight--;
          }
        }
        rte_pktmbuf_free_bulk(rx, got);
        if (k) send(cp, tx, k, &txdrop);
        if (got < kBurst) break;
      }
      // The oldest open ones that ran out of time.
      while (oldest < next && (churn_state[oldest] >= 5 || now - churn_t0[oldest] > timeout)) {
        if (churn_state[oldest] < 5) {
          r.failed_in[churn_state[oldest]]++;
          churn_state[oldest] = 6;
          r.failed++;
          in_flight--;
        }
        oldest++;
      }
    }
    // The rate's time ends at the last connection established, not when the
    // ones that failed ran out their second.
    r.secs = static_cast<double>((r.established ? last_est : now) - t0) / static_cast<double>(hz);
    r.tx_dropped = txdrop;
    return r;
  }

  // --- trials -------------------------------------------------------------
  struct Trial {
    double offered_mpps = 0, target_mpps = 0;  // both directions together
    uint64_t tx[2] = {}, txfail = 0;            // [0] client->server, [1] server->client
    gen::TrialTally got;                        // this trial's frames back, and late ones of earlier trials
    Histogram lat;
    double secs = 0, drain_ms = 0;
    // The DUT's own counters over the trial, from the harness (--sync): its
    // drops, and its transmits into this generator's rings that failed. -1:
    // not known.
    long long dut_drops = -1, gen_drops = -1;
    // The share of the trial the DUT's forwarding thread (from the harness,
    // around the trial) and this generator's thread (while sending) waited
    // for a CPU; -1: not known.
    double dut_cpu_wait = -1, gen_cpu_wait = -1;
    uint64_t sent() const { return tx[0] + tx[1]; }
    uint64_t received() const { return got.rx[0] + got.rx[1]; }
    uint64_t lost() const { return sent() > received() ? sent() - received() : 0; }
    double loss() const { return sent() ? static_cast<double>(lost()) / static_cast<double>(sent()) : 0; }
    double fwd_mpps() const { return secs > 0 ? static_cast<double>(received()) / secs / 1e6 : 0; }
    // Every frame lost is one the DUT could not hand to this generator, and
    // the DUT dropped nothing itself: the generator's loss, not the DUT's.
    bool generator_dropped() const {
      return lost() > 0 && dut_drops == 0 && gen_drops >= static_cast<long long>(lost());
    }
  };
  uint8_t last_id = 0;
  nlohmann::json all_trials = nlohmann::json::array();

  // Drains the port (up to 8 bursts): the generator must not be the one
  // whose receive ring overflows. Returns this trial's frames taken.
  uint32_t receive(const Port& p, gen::Dir as, Trial* t) {
    rte_mbuf* rx[kBurst];
    uint32_t mine = 0;
    for (int b = 0; b < 8; b++) {
      uint16_t got = rx_burst(p, rx);
      const uint64_t now = rte_rdtsc();
      for (uint16_t i = 0; i < got; i++) {
        gen::Seen s;
        const bool parsed = as == gen::Dir::kToServer
                                ? parse_server(rx[i], o.conns, &s)
                                : gen::parse(rte_pktmbuf_mtod(rx[i], const uint8_t*), rx[i]->data_len, o.conns, as, &s);
        if (parsed && s.payload > 0 && s.ts) {
          const bool to_server = as == gen::Dir::kToServer;
          if (!t->got.take(s.ts, to_server ? 0 : 1)) continue;
          mine++;
          t->lat.add(gen::stamp_age(s.ts, now));
          if (!o.udp) {
            uint32_t& got_to = to_server ? srcv[s.conn] : crcv[s.conn];
            const uint32_t end = s.seq + s.payload;
            if (static_cast<int32_t>(end - got_to) > 0) got_to = end;
          }
        }
      }
      rte_pktmbuf_free_bulk(rx, got);
      if (got < kBurst) break;
    }
    return mine;
  }

  // rate_mpps 0: as fast as the generator goes.
  void trial(double rate_mpps, Trial* t) {
    *t = Trial{};
    last_id = static_cast<uint8_t>(last_id == 255 ? 1 : last_id + 1);
    t->got.id = last_id;
    t->target_mpps = rate_mpps;
    const double per_dir_pps = rate_mpps * 1e6 / 2;
    const uint64_t t0 = rte_rdtsc(), end = t0 + static_cast<uint64_t>(o.trial_s * static_cast<double>(hz));
    uint32_t next[2] = {0, 0};
    rte_mbuf* tx[kBurst];
    uint64_t run0 = 0, wait0 = 0, run1 = 0, wait1 = 0;
    const bool cpu_known = own_cpu(&run0, &wait0);
    for (uint64_t now = t0; now < end && !g_stop; now = rte_rdtsc()) {
      for (int d = 0; d < 2; d++) {
        uint64_t due =
            rate_mpps > 0 ? static_cast<uint64_t>(static_cast<double>(now - t0) / static_cast<double>(hz) * per_dir_pps)
                          : t->tx[d] + kBurst;
        if (due <= t->tx[d]) continue;
        uint16_t n = static_cast<uint16_t>(std::min<uint64_t>(kBurst, due - t->tx[d]));
        if (rte_pktmbuf_alloc_bulk(pool, tx, n) != 0) break;
        const gen::Template& tp = d == 0 ? data_c : data_s;
        const uint64_t ts = gen::stamp(t->got.id, now);
        for (uint16_t i = 0; i < n; i++) {
          uint32_t c = next[d];
          next[d] = next[d] + 1 == o.conns ? 0 : next[d] + 1;
          uint8_t* p = rte_pktmbuf_mtod(tx[i], uint8_t*);
          if (d == 0) {
            gen::fill(tp, p, gen::tuple_of(c), cseq[c], crcv[c], ts);
            cseq[c] += tp.payload;
            tx[i]->data_len = tx[i]->pkt_len = tp.len;
          } else if (o.overlay) {
            gen::fill(tp, p + gen::kOverlayHeaders, ov.translated(c), sseq[c], srcv[c], ts);
            ov.encap(p, tp.len, entropy(c));
            sseq[c] += tp.payload;
            tx[i]->data_len = tx[i]->pkt_len = static_cast<uint16_t>(tp.len + gen::kOverlayHeaders);
          } else {
            gen::fill(tp, p, gen::tuple_of(c), sseq[c], srcv[c], ts);
            sseq[c] += tp.payload;
            tx[i]->data_len = tx[i]->pkt_len = tp.len;
          }
        }
        uint16_t k = rte_eth_tx_burst(d == 0 ? cp.id : sp.id, 0, tx, n);
        if (k < n) {
          // Not offered: take the SEQ back so the next frames follow on.
          for (uint16_t i = k; i < n; i++) {
            uint32_t c = (next[d] + o.conns - (n - i)) % o.conns;
            (d == 0 ? cseq[c] : sseq[c]) -= tp.payload;
          }
          next[d] = (next[d] + o.conns - (n - k)) % o.conns;
          rte_pktmbuf_free_bulk(tx + k, n - k);
          t->txfail += n - k;
        }
        t->tx[d] += k;
      }
      receive(sp, gen::Dir::kToServer, t);
      receive(cp, gen::Dir::kToClient, t);
    }
    t->secs = static_cast<double>(rte_rdtsc() - t0) / static_cast<double>(hz);
    if (cpu_known && own_cpu(&run1, &wait1))
      t->gen_cpu_wait = wait_share(static_cast<double>(run1 - run0), static_cast<double>(wait1 - wait0));
    t->offered_mpps = static_cast<double>(t->sent()) / t->secs / 1e6;
    // Drain until quiet: what is still in flight through the DUT, until none
    // of this trial's frames came for 50 ms (at most 2 s). Later ones are lost.
    const uint64_t d0 = rte_rdtsc(), quiet = hz / 20, cap = 2 * hz;
    for (uint64_t now = d0, last = d0; now - last < quiet && now - d0 < cap; now = rte_rdtsc())
      if (receive(sp, gen::Dir::kToServer, t) + receive(cp, gen::Dir::kToClient, t) > 0) last = now;
    t->drain_ms = static_cast<double>(rte_rdtsc() - d0) * 1e3 / static_cast<double>(hz);
  }

  // With --sync the harness reads the DUT's counters around every trial:
  // "harness-gen: trial N ready" waits for "go"; "harness-gen: trial N done"
  // waits for "dut DROPS GEN_DROPS" (or "dut unknown"), followed by
  // " cpu RUN_US WAIT_US" when it read its forwarding thread's CPU time over
  // the trial. False when the harness said anything else or went away.
  bool sync_line(const char* what, uint8_t id, char* line, size_t n) {
    fprintf(stderr, "harness-gen: trial %u %s\n", id, what);
    fflush(stderr);
    if (!fgets(line, static_cast<int>(n), stdin)) return false;
    line[strcspn(line, "\n")] = 0;
    return true;
  }
  bool run_trial(double rate_mpps, Trial* t, const char* kind, std::string* err) {
    char line[128];
    const uint8_t id = static_cast<uint8_t>(last_id == 255 ? 1 : last_id + 1);
    if (o.sync && (!sync_line("ready", id, line, sizeof line) || strcmp(line, "go") != 0)) {
      *err = std::string("the harness stopped before trial ") + std::to_string(id) + (line[0] ? ": " : "") + line;
      return false;
    }
    line[0] = 0;
    trial(rate_mpps, t);
    if (o.sync) {
      if (!sync_line("done", t->got.id, line, sizeof line)) {
        *err = "the harness went away after trial " + std::to_string(t->got.id);
        return false;
      }
      long long a = -1, b = -1;
      if (sscanf(line, "dut %lld %lld", &a, &b) == 2 && a >= 0 && b >= 0) {
        t->dut_drops = a;
        t->gen_drops = b;
      }
      if (const char* c = strstr(line, " cpu ")) {
        const std::string rest(c + 5);
        const size_t gap = rest.find(' ');
        double run = 0, wait = 0;
        if (gap != std::string::npos && sdn::parse_number(rest.substr(0, gap), true, 0, 1e15, &run) &&
            sdn::parse_number(rest.substr(gap + 1), true, 0, 1e15, &wait))
          t->dut_cpu_wait = wait_share(run, wait);
      }
    }
    nlohmann::json j = trial_json(*t);
    j["kind"] = kind;
    all_trials.push_back(j);
    return true;
  }

  nlohmann::json trial_json(const Trial& t) const {
    auto us = [&](uint64_t cyc) { return static_cast<double>(cyc) * 1e6 / static_cast<double>(hz); };
    auto known = [](long long v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
    return {{"id", t.got.id},
            {"target_mpps", t.target_mpps},
            {"offered_mpps", t.offered_mpps},
            {"fwd_mpps", t.fwd_mpps()},
            {"loss", t.loss()},
            {"sent", t.sent()},
            {"received", t.received()},
            {"lost", t.lost()},
            {"late", t.got.late},
            {"lost_to_server", t.tx[0] > t.got.rx[0] ? t.tx[0] - t.got.rx[0] : 0},
            {"lost_to_client", t.tx[1] > t.got.rx[1] ? t.tx[1] - t.got.rx[1] : 0},
            {"tx_full", t.txfail},
            {"dut_drops", known(t.dut_drops)},
            {"gen_drops", known(t.gen_drops)},
            {"generator_dropped", t.generator_dropped()},
            {"dut_cpu_wait", t.dut_cpu_wait < 0 ? nlohmann::json(nullptr) : nlohmann::json(t.dut_cpu_wait)},
            {"gen_cpu_wait", t.gen_cpu_wait < 0 ? nlohmann::json(nullptr) : nlohmann::json(t.gen_cpu_wait)},
            {"drain_ms", t.drain_ms},
            {"latency_us",
             {{"p50", us(t.lat.at(0.5))},
              {"p99", us(t.lat.at(0.99))},
              {"p999", us(t.lat.at(0.999))},
              {"max", us(t.lat.max)},
              {"samples", t.lat.n}}}};
  }
};

int port_init(uint16_t id, rte_mempool* pool, uint16_t rx_queues) {
  rte_eth_conf conf{};
  if (int rc = rte_eth_dev_configure(id, rx_queues, 1, &conf); rc < 0) return rc;
  uint16_t nrx = 1024, ntx = 1024;
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx);
  for (uint16_t q = 0; q < rx_queues; q++)
    if (int rc = rte_eth_rx_queue_setup(id, q, nrx, rte_eth_dev_socket_id(id), nullptr, pool); rc < 0) return rc;
  if (int rc = rte_eth_tx_queue_setup(id, 0, ntx, rte_eth_dev_socket_id(id), nullptr); rc < 0) return rc;
  rte_eth_promiscuous_enable(id);
  // A memif client's start connects to the server's socket once; a server
  // still tearing down the previous client's connection refuses it. Try
  // again for up to 2 s.
  int rc = rte_eth_dev_start(id);
  for (int i = 0; rc < 0 && i < 20 && !g_stop; i++) {
    rte_delay_ms(100);
    rc = rte_eth_dev_start(id);
  }
  return rc;
}

const char* kHelp =
    "usage: harness-gen [EAL options] -- --client DEV --server DEV [--conns K] [--frame BYTES]\n"
    "                   [--trial S] [--loss FRACTION] [--max-mpps R | --rate-mpps R] [--setup-timeout S]\n"
    "                   [--churn S] [--churn-conns N] [--rx-queues N] [--hold] [--sync]\n"
    "                   [--proto tcp|udp] [--overlay [--tunnel vxlan|geneve]] [--linger]\n"
    "  DEV              the port's devargs: a vdev (net_memif0,role=server,socket=/run/x.sock)\n"
    "                   or a PCI address; the client side sends SYNs, the server side answers\n"
    "  --conns K        TCP connections set up through the DUT first (default 1000, up to 10M)\n"
    "  --frame BYTES    frame size with FCS, 64..1518 (default 64)\n"
    "  --trial S        seconds per trial (default 2)\n"
    "  --loss FRACTION  loss allowed at the zero-loss rate (default 0)\n"
    "  --rate-mpps R    one trial at R Mpps (both directions together), no search\n"
    "  --max-mpps R     the search's upper bound (default: the generator's own full rate)\n"
    "  --full-rate-only one trial at full rate, no search (the generator's ceiling against a\n"
    "                   peer that drops everything)\n"
    "  --churn S        after the trials, S seconds of new connections opened and closed\n"
    "                   (SYN, SYN-ACK, ACK+data+FIN, FIN-ACK, ACK), 512 at a time, beside the K\n"
    "  --churn-conns N  at most N of them (default 1000000); the DUT's tracker needs room for\n"
    "                   them until they time out\n"
    "  --proto udp      UDP flows instead of TCP connections: set up by a datagram each way\n"
    "                   (resent after 500 ms), then data both ways; no churn\n"
    "  --rx-queues N    receive queues per port, all polled (default 1; a DUT that sends on\n"
    "                   queue N-1 needs N)\n"
    "  --hold           after set-up, print a 'set-up done' line to stderr and wait for a\n"
    "                   line on stdin: 'go' goes on, anything else ends the run with an error\n"
    "  --sync           around every trial: print 'trial N ready' and wait for 'go', then\n"
    "                   'trial N done' and wait for 'dut DROPS GEN_DROPS' (the DUT's own drops\n"
    "                   in the trial, and its transmits to this generator that failed) or\n"
    "                   'dut unknown', either followed by ' cpu RUN_US WAIT_US' (its forwarding\n"
    "                   thread's time on a CPU and waiting for one over the trial); a loss that\n"
    "                   was all the generator's is run again (3x), the full-rate trial too\n"
    "  --linger         once the JSON is out, print 'finished' to stderr and keep the ports\n"
    "                   connected until stdin closes: a memif server (the DUT) unmaps a\n"
    "                   departing client's rings while its lcore may still poll them\n"
    "                   (DPDK 22.11 memif_disconnect), so the DUT goes first\n"
    "  --overlay        the server side is a remote VTEP (192.0.2.2) behind the DUT's VXLAN\n"
    "                   VTEP (192.0.2.1, VNI 100) and source NAT (203.0.113.7): it sends VXLAN to\n"
    "                   the translated client and takes only VXLAN whose inner source is\n"
    "                   203.0.113.7 (each connection's port learnt from its SYN); the rest is\n"
    "                   counted by reason in \"overlay\"; TCP only\n"
    "  --tunnel geneve  with --overlay: the tunnel is Geneve (UDP 6081, no options sent; a\n"
    "                   received header is length-checked and one with a critical option\n"
    "                   refused as not_geneve); vxlan (UDP 4789) is the default\n"
    "Every data frame carries its trial's id: frames of an earlier trial that arrive late\n"
    "are counted as late, not for the trial running. After each trial the generator drains\n"
    "until none of its frames came for 50 ms.\n"
    "Prints one JSON object: set-up (established, per second), the full-rate trial, the\n"
    "search's trials, zero_loss_mpps/gbps and latency at 10/50/90 % of it.\n";

// The flags after "--", read before EAL starts: a bad one leaves nothing
// behind (no hugepage file, no runtime directory). Exit 2 with one line
// naming the flag (never the usage text: it holds the lines the harness
// waits for).
Options parse_flags(int argc, char** argv) {
  Options o;
  bool tunnel_given = false;
  int i = 1;
  while (i < argc && strcmp(argv[i], "--") != 0) i++;
  for (i++; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--full-rate-only" || a == "--hold" || a == "--sync" || a == "--overlay" || a == "--linger") {
      (a == "--hold"      ? o.hold
       : a == "--sync"    ? o.sync
       : a == "--overlay" ? o.overlay
       : a == "--linger"  ? o.linger
                          : o.full_only) = true;
      continue;
    }
    const char* v = i + 1 < argc ? argv[++i] : nullptr;
    auto bad = [&](const std::string& what) {
      fprintf(stderr, "harness-gen: %s%s%s%s: %s (see --help)\n", a.c_str(), v ? " '" : "", v ? v : "", v ? "'" : "",
              what.c_str());
      exit(2);
    };
    auto number = [&](double lo, double hi, bool integer = false) {
      double x = 0;
      if (sdn::Status s = sdn::parse_number(v, integer, lo, hi, &x); !s) bad(s.message());
      return x;
    };
    if (!v) bad("needs a value");
    if (a == "--client")
      o.client_dev = v;
    else if (a == "--server")
      o.server_dev = v;
    else if (a == "--conns")
      o.conns = static_cast<uint32_t>(number(1, 10000000, true));
    else if (a == "--frame")
      o.frame = static_cast<int>(number(gen::kMinFrame, gen::kMaxFrame, true));
    else if (a == "--trial")
      o.trial_s = number(0.1, 600);
    else if (a == "--loss")
      o.loss = number(0, 1);
    else if (a == "--max-mpps")
      o.max_mpps = number(0.001, 1000);
    else if (a == "--rate-mpps") {
      o.rate_mpps = number(0.001, 1000);
      o.search = false;
    } else if (a == "--setup-timeout")
      o.setup_s = static_cast<int>(number(1, 3600, true));
    else if (a == "--churn")
      o.churn_s = number(0.1, 600);
    else if (a == "--churn-conns")
      o.churn_conns = static_cast<uint32_t>(number(1, 10000000, true));
    else if (a == "--rx-queues")
      o.rx_queues = static_cast<uint16_t>(number(1, 16, true));
    else if (a == "--proto") {
      if (strcmp(v, "tcp") != 0 && strcmp(v, "udp") != 0) bad("want tcp or udp");
      o.udp = strcmp(v, "udp") == 0;
    } else if (a == "--tunnel") {
      if (strcmp(v, "vxlan") != 0 && strcmp(v, "geneve") != 0) bad("want vxlan or geneve");
      o.geneve = strcmp(v, "geneve") == 0;
      tunnel_given = true;
    } else
      bad("unknown option");
  }
  if (o.udp && o.churn_s > 0) {
    fprintf(stderr, "harness-gen: --churn opens and closes TCP connections; not with --proto udp\n");
    exit(2);
  }
  if (tunnel_given && !o.overlay) {
    fprintf(stderr, "harness-gen: --tunnel names the --overlay's tunnel; not without --overlay\n");
    exit(2);
  }
  if (o.udp && o.overlay) {
    fprintf(stderr, "harness-gen: --overlay learns each connection's translation from its SYN; not with --proto udp\n");
    exit(2);
  }
  if (o.client_dev.empty() || o.server_dev.empty()) {
    fprintf(stderr, "harness-gen: --client and --server are required (see --help)\n");
    exit(2);
  }
  if (o.churn_s > 0 && static_cast<uint64_t>(o.conns) + o.churn_conns > 20000000ull) {
    fprintf(stderr, "harness-gen: --conns plus --churn-conns over 20000000\n");
    exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(kHelp, stdout);
      return 0;
    }
  Gen g;
  g.o = parse_flags(argc, argv);
  Options& o = g.o;
  int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    fprintf(stderr, "harness-gen: EAL init failed: %s\n", rte_strerror(rte_errno));
    return 2;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  // Every way out once EAL is up: the JSON is printed before, the ports go
  // after (with --linger, once the harness has stopped the DUT).
  auto leave = [&g](int rc) {
    fflush(stdout);
    if (g.o.linger) {
      fprintf(stderr, "harness-gen: finished\n");
      fflush(stderr);
      char line[64];
      while (fgets(line, sizeof line, stdin)) {
      }
    }
    uint16_t id;
    RTE_ETH_FOREACH_DEV(id) rte_eth_dev_stop(id);
    rte_eal_cleanup();
    return rc;
  };
  auto fail = [&leave](const std::string& why) {
    printf("%s\n", sdn::json_dump(nlohmann::json({{"error", why}})).c_str());
    return leave(1);
  };
  for (auto [dev, port] : {std::pair<const std::string*, Port*>{&o.client_dev, &g.cp}, {&o.server_dev, &g.sp}}) {
    if (rte_dev_probe(dev->c_str()) != 0 && dev->rfind("net_", 0) == 0) return fail("cannot attach " + *dev);
    std::string name = dev->substr(0, dev->find(','));
    if (rte_eth_dev_get_port_by_name(name.c_str(), &port->id) != 0) return fail("no port named " + name);
  }
  g.pool = rte_pktmbuf_pool_create("gen", 16383, 512, 0, RTE_MBUF_DEFAULT_BUF_SIZE, static_cast<int>(rte_socket_id()));
  if (!g.pool) return fail(std::string("mbuf pool: ") + rte_strerror(rte_errno));
  for (Port* p : {&g.cp, &g.sp}) {
    if (int rc = port_init(p->id, g.pool, o.rx_queues); rc < 0)
      return fail("port " + std::to_string(p->id) + ": " + rte_strerror(-rc));
    rte_eth_macaddr_get(p->id, &p->mac);
  }
  // The DUT forwards between its ports unchanged (a bump in the wire): each
  // side addresses the other side's port.
  const uint8_t* cm = g.cp.mac.addr_bytes;
  const uint8_t* sm = g.sp.mac.addr_bytes;
  gen::make_template(&g.syn, gen::Dir::kToServer, gen::kSyn, 64, cm, sm);
  gen::make_template(&g.synack, gen::Dir::kToClient, gen::kSyn | gen::kAck, 64, sm, cm);
  gen::make_template(&g.ack, gen::Dir::kToServer, gen::kAck, 64, cm, sm);
  if (o.udp) {
    gen::make_udp_template(&g.data_c, gen::Dir::kToServer, o.frame, cm, sm);
    gen::make_udp_template(&g.data_s, gen::Dir::kToClient, o.frame, sm, cm);
  } else {
    gen::make_template(&g.data_c, gen::Dir::kToServer, gen::kAck | gen::kPsh, o.frame, cm, sm);
    gen::make_template(&g.data_s, gen::Dir::kToClient, gen::kAck | gen::kPsh, o.frame, sm, cm);
  }
  gen::make_template(&g.ack0_c, gen::Dir::kToServer, gen::kAck, 0, cm, sm);
  gen::make_template(&g.fin_c, gen::Dir::kToServer, gen::kFin | gen::kAck, 0, cm, sm);
  gen::make_template(&g.fin_s, gen::Dir::kToClient, gen::kFin | gen::kAck, 0, sm, cm);
  if (o.churn_s > 0) {
    g.churn_state.assign(o.churn_conns, 0);
    g.churn_t0.assign(o.churn_conns, 0);
  }
  if (o.overlay) g.ov.init(o.conns + (o.churn_s > 0 ? o.churn_conns : 0), o.geneve);
  g.hz = rte_get_tsc_hz();
  g.cseq.assign(o.conns, 0);
  g.sseq.assign(o.conns, 0);
  g.crcv.assign(o.conns, 0);
  g.srcv.assign(o.conns, 0);
  g.state.assign(o.conns, 0);
  g.sent_at.assign(o.conns, 0);
  // Links up (memif connects when both sides are there).
  for (int i = 0; i < 100; i++) {
    rte_eth_link a{}, b{};
    rte_eth_link_get_nowait(g.cp.id, &a);
    rte_eth_link_get_nowait(g.sp.id, &b);
    if (a.link_status && b.link_status) break;
    if (i == 99) return fail("links not up after 10 s (is the DUT attached to both ports?)");
    rte_delay_ms(100);
  }
  rte_delay_ms(500);  // a peer that just attached (memif) starts forwarding a moment after link up
  auto print = [&g](nlohmann::json& j) {
    if (g.o.overlay) {
      nlohmann::json ov = {{"learnt", g.ov.learnt}};
      for (int w = 0; w < gen::Overlay::kWhyCount; w++) ov[g.ov.why_name(w)] = g.ov.bad[w];
      j["overlay"] = ov;
    }
    printf("%s\n", sdn::json_dump(j).c_str());
  };
  nlohmann::json out = {
      {"conns", o.conns}, {"frame_bytes", o.frame}, {"proto", o.udp ? "udp" : "tcp"}, {"lcore", rte_lcore_id()}};
  // The ceiling needs no connections (its peer forwards nothing back).
  Gen::SetupResult su;
  if (o.full_only) {
    su.established = o.conns;
    for (uint32_t i = 0; i < o.conns; i++) {
      g.cseq[i] = g.srcv[i] = isn_client(i) + 1;
      g.sseq[i] = g.crcv[i] = kIsnServer + 1;
    }
  } else {
    su = o.udp ? g.setup_udp() : g.setup();
  }
  out["setup"] = {{"established", su.established},
                  {"secs", su.secs},
                  {"per_s", su.secs > 0 ? su.established / su.secs : 0},
                  {"resent", su.resent}};
  if (su.established < o.conns) {
    out["error"] = "set-up: " + std::to_string(su.established) + " of " + std::to_string(o.conns) +
                   " connections established" +
                   (su.stalled ? std::string(", then none for 5 s") : " in " + std::to_string(o.setup_s) + " s");
    print(out);
    return leave(1);
  }
  if (o.hold) {
    fprintf(stderr, "harness-gen: set-up done: %u connections\n", su.established);
    fflush(stderr);
    char line[64] = "";
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0) {
      line[strcspn(line, "\n")] = 0;
      out["error"] = std::string("stopped after set-up") + (line[0] ? std::string(": ") + line : std::string());
      print(out);
      return leave(1);
    }
  }
  const double bits_per_frame = (o.frame + 20) * 8.0;  // with preamble and inter-frame gap
  Gen::Trial t;
  std::string why;
  auto stopped = [&]() {
    out["error"] = why;
    out["trials"] = g.all_trials;
    print(out);
    return leave(1);
  };
  auto result = [](const Gen::Trial& x) {
    return gen::TrialResult{x.offered_mpps,    x.loss(),        x.txfail > 0,
                            x.generator_dropped(), x.dut_cpu_wait, x.gen_cpu_wait};
  };
  if (!o.search) {
    if (!g.run_trial(o.rate_mpps, &t, "rate", &why)) return stopped();
    out["trial"] = g.trial_json(t);
  } else {
    // Full rate: the generator's ceiling through this DUT, and what the DUT forwards.
    if (!g.run_trial(0, &t, "full", &why)) return stopped();
    out["full_rate"] = g.trial_json(t);
    if (o.full_only) {
      print(out);
      return leave(0);
    }
    nlohmann::json trials = nlohmann::json::array(), at_zero = nullptr;
    bool broke = false;
    // (Rate 0: the full-rate trial again, its loss having been the generator's.)
    const gen::SearchResult sr = gen::search(result(t), o.max_mpps, o.loss, [&](double rate) {
      if (broke || !g.run_trial(rate, &t, rate > 0 ? "search" : "full", &why)) {
        broke = true;
        return gen::TrialResult{rate, 1, false, false};
      }
      if (rate > 0) trials.push_back(g.trial_json(t));
      else out["full_rate"] = g.trial_json(t);
      return result(t);
    });
    if (broke) return stopped();
    const double found = sr.zero_loss_mpps;
    // The trial that gave the answer (its own loss and the DUT's drops).
    for (const auto& x : g.all_trials)
      if (found > 0 && x.value("offered_mpps", -1.0) == found && x.value("loss", 1.0) <= o.loss) at_zero = x;
    out["limited_by"] = sr.limited_by;
    out["retried"] = sr.retried;
    out["search"] = trials;
    out["zero_loss_mpps"] = found;
    out["zero_loss_gbps"] = found * bits_per_frame / 1e3;
    out["zero_loss_trial"] = at_zero;
    nlohmann::json lat = nlohmann::json::object();
    for (int pct : {10, 50, 90}) {
      if (found <= 0) break;
      const std::string kind = "latency" + std::to_string(pct);
      // A paced trial that fell short of its load (this lcore taken away
      // from the generator for a moment) is no latency at that load: up to 3
      // tries, each in "trials"; the harness labels one still short.
      for (int attempt = 0; attempt < 3; attempt++) {
        if (!g.run_trial(found * pct / 100.0, &t, kind.c_str(), &why)) return stopped();
        if (t.offered_mpps >= gen::kPacedReached * t.target_mpps) break;
      }
      lat[std::to_string(pct)] = g.trial_json(t);
    }
    out["latency_at"] = lat;
  }
  out["trials"] = g.all_trials;
  if (o.churn_s > 0 && !g_stop) {
    const Gen::ChurnResult c = g.churn();
    out["churn"] = {
        {"opened", c.opened},
        {"established", c.established},
        {"closed", c.closed},
        {"failed", c.failed},
        {"failed_waiting_for",
         {{"syn_ack", c.failed_in[1]}, {"ack_or_fin", c.failed_in[2] + c.failed_in[3]}, {"fin_ack", c.failed_in[4]}}},
        {"tx_dropped", c.tx_dropped},
        {"secs", c.secs},
        {"established_per_s", c.secs > 0 ? static_cast<double>(c.established) / c.secs : 0},
        {"closed_per_s", c.secs > 0 ? static_cast<double>(c.closed) / c.secs : 0}};
  }
  print(out);
  return leave(g_stop ? 130 : 0);
}
