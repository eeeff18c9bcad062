// libFuzzer target: random packet sequences into the tracker, plus control
// operations. Never crashes, never leaks, and the table invariants hold after
// every step (checked explicitly).
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ctrack/parse.h"
#include "ctrack/tracker.h"

using namespace ctrack;

namespace {

struct Reader {
  const uint8_t* d;
  size_t n;
  uint8_t u8() {
    if (!n) return 0;
    n--;
    return *d++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return static_cast<uint32_t>(u16() | static_cast<uint32_t>(u16()) << 16); }
};

Tracker& tracker() {
  static std::unique_ptr<Tracker> t = [] {
    Config c;
    c.capacity = 64;  // small, so the table fills and early drop runs
    c.event_ring = 16;
    c.zone_limits = {{1, 5}};
    return std::move(Tracker::create(c).value());
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Tracker& t = tracker();
  Reader r{data, size};
  static uint64_t now = 1'000'000'000'000ull;
  Packet pk[32];
  Parsed parsed[32];
  const Packet* pp[32];
  CtResult out[32];
  while (r.n) {
    uint8_t op = r.u8();
    uint32_t n = 1 + (r.u8() % 32);
    for (uint32_t i = 0; i < n; i++) {
      if (op & 0x80) {
        // Raw bytes through the parser first.
        uint8_t len = r.u8();
        uint8_t buf[256] = {};
        for (int j = 0; j < len; j++) buf[j] = r.u8();
        const uint16_t zone = r.u8() & 1;
        const Drop d = parse_packet(buf, len, zone, &parsed[i]);
        // The lane takes only what parse_packet takes, and parses it the same.
        Parsed lane;
        if (parse_ip4_plain(buf, len, zone, &lane) && (d != Drop::kNone || memcmp(&lane, &parsed[i], sizeof lane)))
          __builtin_trap();
        if (d != Drop::kNone) parsed[i] = Parsed{};
        pk[i] = parsed[i].ct;
      } else {
        Packet& p = pk[i];
        p = Packet{};
        memset(&p.key, 0, sizeof p.key);
        uint8_t sel = r.u8();
        p.key.family = (sel & 1) ? 6 : 4;
        // (key.h: an IPv4 address is the first 4 bytes, the rest zero, as
        // parse_packet and make_key leave it; the compare relies on that.)
        p.key.src[3] = sel & 2 ? 1 : 2;
        p.key.dst[3] = sel & 2 ? 2 : 1;
        if (p.key.family == 6) {
          p.key.src[15] = p.key.src[3];
          p.key.dst[15] = p.key.dst[3];
        }
        static const uint8_t protos[] = {IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, 47};
        p.key.proto = protos[(sel >> 2) & 3];
        p.key.sport = r.u8() % 4;
        p.key.dport = r.u8() % 4;
        p.key.zone = (sel >> 4) & 1;
        p.meta = r.u8() & (kMetaFragment | kMetaIcmpError | kMetaWscale | kMetaSackPerm | kMetaSack | kMetaIcmpEcho);
        p.tcp_flags = r.u8();
        p.seq = (r.u8() & 1) ? r.u32() : 1000u + r.u16();
        p.ack = (r.u8() & 1) ? r.u32() : 5000u + r.u16();
        p.sack = p.ack + r.u16();
        p.win = r.u16();
        p.wscale = r.u8();
        p.payload_len = r.u16() % 2000;
        p.l3_len = static_cast<uint16_t>(p.payload_len + 40);
      }
      pp[i] = &pk[i];
    }
    now += static_cast<uint64_t>(r.u16()) * 1'000'000ull * ((op & 0x40) ? 1000 : 1);
    t.process(pp, n, now, (op & 0x20) != 0, out);
    for (uint32_t i = 0; i < n; i++) {
      if (out[i].conn != kNoConn && out[i].conn >= t.config().capacity) abort();
      if ((out[i].state & kCtInv) && out[i].reason == Invalid::kNone) abort();
    }
    switch (op & 0x07) {
      case 0: {
        Event ev[16];
        uint32_t k = t.poll_events(ev, 16);
        for (uint32_t i = 0; i < k; i++) {
          if (ev[i].type == EventType::kEstablished && (op & 0x08)) t.set_offloaded(ev[i].conn, ev[i].orig, true);
          uint64_t pkts[2] = {1, 2}, bytes[2] = {3, 4};
          if (op & 0x10) t.fold_hw_counters(ev[i].conn, ev[i].orig, pkts, bytes, now);
        }
        break;
      }
      case 1: t.expire(now, 16); break;
      case 2: if ((op & 0x18) == 0x18) t.flush(op & 0x10 ? -1 : 0); break;
      case 3: t.for_each(now, [](const ConnInfo&) {}); break;
      default: break;
    }
    sdn::Status s = t.check_invariants();
    if (!s) {
      fprintf(stderr, "invariant broken: %s\n", s.message().c_str());
      abort();
    }
  }
  return 0;
}
