// The connection tracker. One Tracker is one shard: one worker core calls
// process(); the control plane may list, flush and fold hardware counters
// concurrently (they take the shard lock in bounded chunks).
//
// Multi-core model: shards per core with symmetric RSS, so both directions of
// a connection land on the worker that owns its shard. See ctrack/README.md.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctrack/key.h"
#include "ctrack/packet.h"
#include "ctrack/timeouts.h"
#include "sdn/status.h"

namespace ctrack {

inline constexpr uint32_t kNoConn = 0xFFFFFFFFu;

// ct_state bits, named as in OpenFlow/OVS.
enum CtStateBit : uint8_t {
  kCtNew = 0x01,
  kCtEst = 0x02,
  kCtRel = 0x04,
  kCtRpl = 0x08,
  kCtInv = 0x10,
  kCtTrk = 0x20,
  kCtUntracked = 0x40,  // passed without an entry (table full, pass policy)
};

enum class Invalid : uint8_t {
  kNone = 0,
  kTcpFlags,         // flag combination no stack sends (SYN+FIN, none, ...)
  kTcpNoSyn,         // new connection without SYN and midstream pickup off
  kTcpState,         // transition the state machine forbids
  kTcpSeqOver,       // SEQ above the receiver's window
  kTcpSeqUnder,      // SEQ below the window (data already acked)
  kTcpAckOver,       // ACK for data not sent yet
  kTcpAckUnder,      // ACK far below the window
  kTcpRstWindow,     // RST outside the window
  kFragment,         // a later fragment of no known connection (fragments never start one)
  kIcmpNoConn,       // ICMP error about no known connection
  kIcmpType,         // ICMP type that cannot start a connection
  kTableFull,        // no entry free and nothing to evict (drop policy)
  kZoneLimit,        // zone at its connection limit (drop policy)
  kNatExhausted,     // ct(commit,nat(...)) found no free translated tuple in its range
  kNatFamily,        // ct(commit,nat(...)) with a range of the other address family than the packet's
  kNatClash,         // the tuple is a translated connection's, in the orientation neither side sends
  kCount,
};
const char* invalid_name(Invalid r);

// NAT, as OVS's ct(commit,nat(src=A[-B][:P[-Q]])) / nat(dst=...): the range
// a new connection's translation is chosen from, at commit. The choice is
// kept with the connection, applied to every later packet of the original
// direction and reversed for replies.
enum class NatKind : uint8_t { kNone = 0, kSrc = 1, kDst = 2 };
struct NatRange {
  NatKind kind = NatKind::kNone;
  uint8_t family = 4;
  // Inclusive. IPv4: the first four bytes (the rest are not read); IPv6:
  // may differ only in the last 32 bits.
  uint8_t addr_min[16] = {}, addr_max[16] = {};
  // Inclusive; 0-0: keep the connection's port where the translated tuple
  // is unique, else take one of 1024-65535 (ICMP echo: the id).
  uint16_t port_min = 0, port_max = 0;
};

// Which side of a translated connection a packet's tuple is (CtResult::nat;
// for an ICMP error, its embedded header's). Each is rewritten to its
// partner: kNatOrig <-> kNatReplyRev, kNatOrigRev <-> kNatReply.
enum NatSide : uint8_t {
  kNatNone = 0,
  kNatOrig = 1,      // the original direction as its sender wrote it
  kNatOrigRev = 2,   // its reverse: replies as they reach the original sender
  kNatReply = 3,     // replies as their sender wrote them
  kNatReplyRev = 4,  // the original direction as it reaches the replier
};

struct CtResult {
  uint32_t conn = kNoConn;  // handle; kNoConn when none
  uint8_t state = 0;        // CtStateBit set
  uint8_t changed = 0;      // 1 if the packet created or changed the connection's state
  Invalid reason = Invalid::kNone;
  uint8_t dir = 0;          // 0 original, 1 reply
  uint8_t nat = kNatNone;   // NatSide: the packet's tuple is to be rewritten (nat_out)
};

enum class FullPolicy : uint8_t { kDrop, kPassUntracked };

struct Config {
  uint32_t capacity = 1u << 20;   // connections, preallocated
  FullPolicy full_policy = FullPolicy::kDrop;
  bool tcp_liberal = false;       // skip window checks (still tracks state)
  bool tcp_midstream = false;     // pick up connections without a SYN
  Timeouts timeouts;
  uint32_t default_zone_limit = 0;                 // 0 = unlimited
  std::vector<std::pair<uint16_t, uint32_t>> zone_limits;
  uint32_t event_ring = 0;        // offload events queued (power of two); 0 = off
  uint32_t sweep_per_call = 8;    // entries checked for expiry per process(); 0: only expire() sweeps
  uint32_t early_drop_scan = 64;  // entries scanned for a victim when full
  // Room for NAT: side tables of 40 bytes per entry (NatHot, NatCold) and an index
  // twice as large (a translated connection is found under both tuples).
  // Without it, ranges passed to process() are refused as kNatExhausted.
  bool nat = false;
  // With nat: bytes the caller keeps per connection in the line of its
  // reply tuple (0..48). 0: the tuples (NatHot, 16 bytes) four to a line.
  // Else each connection's tuple, then the caller's bytes, in 32 bytes (up
  // to 16 of them) or a line of its own: a caller that reads data of its
  // own per connection on every packet (the dataplane's flow-cache tag and
  // rewrites) then finds a translated reply's tuple in that same line, and
  // its lookup reads no line more than the original direction's.
  // nat_caller_lines() says where. Adds 16 or 48 bytes per connection.
  uint32_t nat_caller_bytes = 0;

  bool operator==(const Config&) const = default;
};

// Tries per new translated connection: every tuple of a range up to this
// size, this many of a larger one (as Linux, which gives up after 128).
inline constexpr uint32_t kNatAttempts = 1024;

struct Stats {
  uint64_t lookups = 0, hits = 0, created = 0, related = 0, untracked = 0;
  uint64_t invalid[static_cast<int>(Invalid::kCount)] = {};
  uint64_t table_full = 0, zone_limited = 0, expired = 0, evicted = 0, closed = 0, flushed = 0;
  uint64_t reopened = 0, events = 0, events_dropped = 0, events_deferred = 0, hw_folds = 0;
  // Lookups whose candidate slot (the first signature match) held another
  // key, looked up again in full: signature collisions, or an entry that
  // changed in the same burst. Near 0 a lookup; a rate that climbs says the
  // one-compare path stopped matching.
  uint64_t probes = 0;
  uint64_t active = 0, offloaded = 0;

  Stats& operator+=(const Stats& o);
  // Every counter with its name ("invalid_<reason>" for the invalid ones),
  // in a fixed order: listings take them all from here.
  void visit(const std::function<void(const std::string& name, uint64_t value)>& f) const;
};

// Offload hooks: what the tracker tells the offload provider.
enum class EventType : uint8_t {
  kEstablished,  // seen both ways (TCP: ESTABLISHED after SYN and SYN-ACK)
  kClosing,      // FIN or RST seen on an offloaded connection
  kDestroyed,    // entry gone (expired, closed, flushed, evicted)
  kResync,       // software saw an ACK/data segment of an offloaded TCP connection: the NIC refused it, so its
                 // context is behind; raised once until resync_done()
};

struct TcpDirState {
  uint32_t end = 0, maxend = 0, maxwin = 0;
  uint8_t scale = 0, flags = 0;
  // The largest ACK this direction sent. Exact when the peer has nothing
  // unacknowledged (Linux clears DATA_UNACKNOWLEDGED exactly when an ACK
  // reaches td_end); otherwise a lower bound (peer's maxend minus this
  // side's largest window: the ACK that set maxend was at least that).
  // Keeping it exactly would cost 8 bytes per connection.
  uint32_t maxack = 0;
};

enum TcpDirFlag : uint8_t {
  kTcpWindowScale = 0x01,
  kTcpSackPerm = 0x02,
  kTcpCloseInit = 0x04,
  kTcpBeLiberal = 0x08,
  kTcpDataUnacked = 0x10,
  kTcpHwLiberal = 0x20,  // offloaded: the NIC moves the window, so packets handed back are checked liberally
  kTcpResyncAsked = 0x40,  // (direction 0 only) a kResync event is out
};

struct Event {
  EventType type;
  uint8_t l4_state;
  uint8_t last_dir;  // direction of the packet that raised the event
  uint8_t reason;    // kDestroyed: 0 expired, 1 closed, 2 flushed, 3 evicted, 4 reopened
  uint8_t last_index;  // TCP flag class of the last packet: 0 SYN, 1 SYN-ACK, 2 FIN, 3 ACK, 4 RST, 5 none
  uint8_t in_port[2];  // Packet::in_port last seen in each direction
  uint8_t l2_len;      // Packet::l2_len of the packet that raised it (0: none)
  uint32_t conn;
  Key orig;          // original-direction tuple
  TcpDirState tcp[2];
  uint32_t last_seq, last_ack, last_end;  // of the packet that raised the event
  uint16_t last_win;
  NatKind nat;  // the connection's translation; with one, `reply` is the reply tuple as it arrives
  Key reply;
};

struct ConnInfo {
  uint32_t handle;
  Key orig;
  uint8_t proto_state;
  std::string state;  // "ESTABLISHED", "UDP_ASSURED", ...
  bool seen_reply, assured, offloaded;
  uint64_t packets[2], bytes[2];
  uint64_t age_ms;
  int64_t timeout_ms;  // remaining
  TcpDirState tcp[2];
  NatKind nat = NatKind::kNone;
  Key reply{};  // with nat: the reply tuple as replies are sent
};

class Tracker {
 public:
  static sdn::Result<std::unique_ptr<Tracker>> create(const Config& cfg);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // The per-packet path. For each pkts[i] fills out[i]. With commit, new
  // connections get an entry; without, they are only reported as +new.
  // With `nat` (and commit), a new connection is translated from its range;
  // every packet of a translated connection gets out[i].nat and, in
  // nat_out[i], the tuple to write into it (for an ICMP error: into its
  // embedded header). nat_out may be null only when nothing is translated.
  // Keys as key.h defines them: an IPv4 key's address bytes beyond the
  // first four are zero (parse_packet leaves them so; entries are compared
  // on the first four alone). process, lookup and process_found assert it
  // in debug builds; release builds do not check.
  void process(const Packet* const* pkts, uint32_t n, uint64_t now_ns, bool commit, CtResult* out,
               const NatRange* nat = nullptr, Key* nat_out = nullptr);

  // For callers that pick, per packet, from the entry it belongs to, how to
  // go on (the dataplane's established-flow cache): lookup() finds each
  // packet's entry without changing anything; process_found() is process()
  // for packets lookup() saw, starting from what it found. An entry that
  // changed in between (another packet, the control thread) is looked up
  // again, so the result is always process()'s. A null found[i]: the packet
  // was not looked up; it is, there.
  struct Found {
    uint32_t conn;  // handle, or kNoConn
    uint32_t hash;  // of the canonical key
    uint32_t epoch;  // the shard's count of index insertions and removals then: until it moves,
                     // a miss stays one and a hit its connection (process_found skips the re-check)
    uint8_t dir;     // 0 original, 1 reply
    bool canon;      // the packet's key is the canonical orientation
    bool rside;      // found under a translated connection's reply tuple
  };
  // It prefetches each candidate entry's line (and its NAT entry, and for
  // an IPv6 key its cold part) as soon as a bucket names it, so that the
  // caller's work between lookup() and process_found() overlaps the
  // entries' remaining misses.
  void lookup(const Packet* const* pkts, uint32_t n, Found* out);
  void process_found(const Packet* const* pkts, const Found* const* found, uint32_t n, uint64_t now_ns, bool commit,
                     CtResult* out, const NatRange* nat = nullptr, Key* nat_out = nullptr);

  // The caller's word per connection handle (the dataplane's flow cache
  // entry): under generation `gen`, a tag per direction, or kNoTag.
  struct Tag {
    static constexpr uint16_t kNoTag = 0xFFFF;
    uint32_t gen = 0;  // 0 matches no Tags::gen
    uint16_t dir[2] = {kNoTag, kNoTag};
  };
  // With Config::nat_caller_bytes: connection handle h's caller bytes are
  // at base + h * stride, 16-byte aligned, zero until the caller writes
  // them, never written by the tracker, in the line (or 32 bytes) of h's
  // reply tuple. Both 0 without.
  struct CallerLines {
    uint8_t* base = nullptr;
    uint32_t stride = 0;
  };
  CallerLines nat_caller_lines() const;
  struct Tags {
    const Tag* tags;      // indexed by connection handle (capacity entries)
    uint32_t gen;         // the generation a tag is valid under
    const uint64_t* ctx;  // per tag value: the context word it holds for
    // Bytes from one handle's tag to the next: a caller may keep more of
    // its own beside each tag, in the line the lookup reads (the
    // dataplane's NAT rewrites).
    uint32_t stride = sizeof(Tag);
  };
  // lookup() and process_found() in one pass over a burst, for the common
  // case: pkts[i] with bit i of `may` set is done here (bit i of the
  // result, out[i] and, when translated, nat_out[i] as process_found()
  // gives them; commit and range play no part) when its connection's tag
  // t = tags[conn].dir[dir] is valid under gen, ctx[t] == pkt_ctx[i], no
  // earlier packet of the burst found in the same connection is left
  // undone, and the packet is process()'s short path (an in-window TCP
  // segment of an assured ESTABLISHED connection, a UDP datagram; not
  // offloaded, expired, a fragment or an ICMP error; nothing to announce).
  // Every other packet is left as lookup() leaves it: found[i], for
  // process_found() or the caller's other ways, in burst order after the
  // done ones of its connection. found[i].hash is set for every packet.
  // When it did any, it sweeps as process_found() does (Config::sweep_per_call).
  // n <= 32; a larger burst is left whole, as lookup() leaves it. nat_out
  // null: no translated tuple is handed out (out[i].nat still names the
  // side): for a caller that keeps each tagged direction's translation
  // itself (the dataplane's flow cache does).
  uint32_t lookup_done(const Packet* const* pkts, uint32_t n, uint64_t now_ns, uint32_t may, const Tags& tags,
                       const uint64_t* pkt_ctx, Found* found, CtResult* out, Key* nat_out);

  // Checks up to `budget` entries for expiry (a cursor walks the table).
  // Returns entries freed.
  uint32_t expire(uint64_t now_ns, uint32_t budget);

  // --- control plane (takes the shard lock, bounded work per hold) ---
  // Calls fn for each connection matching zone (-1 = any).
  void for_each(uint64_t now_ns, const std::function<void(const ConnInfo&)>& fn, int zone = -1);
  // The same over entry slots [start, start + slots): a cursor for callers
  // that page (the control socket streams `ct list`). Returns where the next
  // page starts; capacity when done.
  uint32_t for_each_from(uint64_t now_ns, uint32_t start, uint32_t slots,
                         const std::function<void(const ConnInfo&)>& fn, int zone = -1);
  uint32_t capacity() const { return cfg_.capacity; }
  uint64_t flush(int zone = -1);  // returns how many were removed
  // New timeouts; each connection takes them at its next packet (as a
  // nf_conntrack sysctl change does).
  void set_timeouts(const Timeouts& t);
  Stats stats() const;
  const Config& config() const { return cfg_; }
  size_t memory_bytes() const;
  // What create(cfg) will allocate (and pre-fault), without allocating it.
  static size_t memory_needed(const Config& cfg);
  size_t bytes_per_conn() const { return memory_bytes() / cfg_.capacity; }

  // --- offload hooks ---
  // Pops up to max events; returns the count. Single consumer.
  uint32_t poll_events(Event* out, uint32_t max);
  // Marks the connection as handled by the NIC. False if the handle no longer
  // names that connection.
  bool set_offloaded(uint32_t handle, const Key& orig, bool on);
  // Adds NIC-reported counters and refreshes the entry as if a packet had been
  // seen at last_seen_ns.
  bool fold_hw_counters(uint32_t handle, const Key& orig, const uint64_t packets[2], const uint64_t bytes[2],
                        uint64_t last_seen_ns);
  // With several shards: a translated tuple is only taken when replies to it
  // will reach this shard (`ok(reply tuple, ctx)`, the caller's steering);
  // without a filter, any. Set before traffic.
  using NatTupleOk = bool (*)(const Key& reply, const void* ctx);
  void set_nat_filter(NatTupleOk ok, const void* ctx);

  // Excludes a connection from offload (set by a rule).
  bool set_no_offload(uint32_t handle, const Key& orig);
  // The connection's current state as an event (type kEstablished), taken
  // under the shard lock: what the offload provider hands the NIC at the
  // moment it submits, not what it was when the event was raised. The last
  // packet's SEQ and ACK are not kept: last_seq = last_end, last_ack = that
  // direction's maxack. False if the handle no longer names the connection.
  bool snapshot(uint32_t handle, const Key& orig, Event* out);
  // The provider has brought the NIC's context up to date: the next packet
  // software sees for the connection may raise kResync again.
  bool resync_done(uint32_t handle, const Key& orig);

  // Checks the table's invariants (every live entry findable under its key,
  // counts consistent, free list sound). For tests and the fuzzer.
  sdn::Status check_invariants() const;

  struct Impl;

 private:
  explicit Tracker(const Config& cfg);
  Config cfg_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrack
