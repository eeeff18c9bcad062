// The software pipeline: parse -> hardware-mark skip -> tables (rte_acl) ->
// conntrack -> actions. Works on packet bytes, not mbufs, so that the unit
// tests, the fuzzer and the benchmark run it exactly as the workers do.
//
// A Pipeline is the compiled rule set: immutable once built, swapped in by
// the control thread and freed after the workers pass a quiescent state.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "ctrack/parse.h"
#include "ctrack/tracker.h"
#include "dataplane/match.h"
#include "sdn/huge.h"
#include "dataplane/overlay.h"
#include "sdn/status.h"
#include "dataplane/steer.h"

struct rte_acl_ctx;

namespace dp {

using sdn::Result;
using sdn::Status;
struct Rule;       // rules.h: the control path's rule, lowered by build()
class FragTable;   // features/fragments/table.h: a worker's IP fragments
struct PortNames;  // rules.h

inline constexpr uint32_t kMaxBurst = 32;
inline constexpr unsigned kMaxWorkers = 16;
inline constexpr unsigned kMaxPorts = 64;

// Why the pipeline dropped a packet (parse reasons are counted separately):
// every feature's reasons (features/registry.h, DP_DROP_REASONS), each
// with what it counts (drop_why_help).
enum class DropWhy : uint8_t {
#define DP_ENUM(e, name, what) e,
  DP_DROP_REASONS(DP_ENUM)
#undef DP_ENUM
  kCount
};
const char* drop_why_name(DropWhy d);
const char* drop_why_help(DropWhy d);

// What the rewrites did, counted per worker (`overlay` in stats): every
// feature's rewrite counters (DP_REWRITE_COUNTERS): per tunnel frames
// decapsulated and packets encapsulated (sent), packets NAT rewrote, IPv4
// fragments made of datagrams longer than the egress MTU.
enum class Tunnel : uint8_t {
#define DP_ENUM(e, name, what) e,
  DP_REWRITE_COUNTERS(DP_ENUM)
#undef DP_ENUM
  kCount
};
const char* tunnel_name(Tunnel t);  // vxlan_decap, vxlan_encap, ..., nat_packets, ip_fragments_out
// What each counts, in Tunnel's order (the HELP of /metrics).
inline constexpr const char* kTunnelHelp[] = {
#define DP_HELP(e, name, what) what,
    DP_REWRITE_COUNTERS(DP_HELP)
#undef DP_HELP
};

// A worker's counters, one list: the struct's fields, `stats` and telemetry
// (as w<N>_<name>) all come from it. X(name, what it counts): a sentence,
// which /metrics gives as the counter's HELP (a *_cycles counter is
// exported in seconds, as *_seconds_total, its "TSC cycles" read "Seconds").
#define DP_WORKER_COUNTERS(X)                                                                          \
  X(rx_packets, "Packets this worker judged (after handoff).")                                        \
  X(rx_bytes, "Bytes of the packets this worker judged (after handoff).")                             \
  X(tx_packets, "Packets this worker sent.")                                                          \
  X(hw_marked, "Packets the NIC's classification had marked, so that the tables were skipped.")      \
  X(cache_hits, "Established packets the flow cache took from conntrack straight to their actions.") \
  X(handoff_out, "Packets of connections another worker owns, passed on to that worker.")            \
  X(handoff_in, "Packets of this worker's connections taken in from other workers.")                 \
  X(busy_polls, "Polls of the ports that received packets.")                                          \
  X(idle_polls, "Polls of the ports that received none.")                                             \
  X(busy_cycles, "TSC cycles spent in the software pipeline and tx, for the packets judged.")         \
  X(nic_packets, "Packets through the NIC model's stage (emulated offload).")                         \
  X(nic_cycles, "TSC cycles spent in the NIC model's stage.")                                         \
  X(expire_runs, "Paced conntrack expiry slices run.")                                                \
  X(expire_cycles, "TSC cycles spent in conntrack expiry slices.")                                    \
  X(expired, "Conntrack entries the expiry slices expired.")

// One worker's counters. Written only by that worker; read by others with
// relaxed loads (see snapshot()).
struct alignas(64) WorkerStats {
#define DP_FIELD(name, what) uint64_t name = 0;
  DP_WORKER_COUNTERS(DP_FIELD)
#undef DP_FIELD
  uint64_t parse_drop[static_cast<int>(ctrack::Drop::kCount)] = {};
  uint64_t drop[static_cast<int>(DropWhy::kCount)] = {};
  uint64_t tunnel[static_cast<int>(Tunnel::kCount)] = {};
  WorkerStats snapshot() const;
  // name, value for every counter of the list. (Telemetry's dict holds 256
  // entries: 16 workers x (lcore + these 15).)
  template <typename F>
  void visit(F&& f) const {
#define DP_VISIT(name, what) f(#name, name);
    DP_WORKER_COUNTERS(DP_VISIT)
#undef DP_VISIT
  }
  // The ratios `stats` derives from them.
  template <typename F>
  void ratios(F&& f) const {
    f("cycles_per_packet", rx_packets ? busy_cycles / rx_packets : 0);
    f("nic_stage_cycles_per_packet", nic_packets ? nic_cycles / nic_packets : 0);
    f("expire_cycles_per_run", expire_runs ? expire_cycles / expire_runs : 0);
  }
};

// Per-rule counters, per worker, inside a Pipeline.
struct RuleCounters {
  uint64_t packets = 0, bytes = 0;
};

// A rule as the per-packet code reads it: its actions in the pipeline's
// dense action array, nothing of the control-plane Rule.
struct CompiledRule {
  uint32_t first;  // index of its first action
  uint16_t count;
  uint8_t table;
  bool offload;
  uint32_t id;  // the rule's id (for live traces)
};

class Pipeline {
 public:
  // `overlay`: this host's VTEP (decap, and the outer headers encap() puts
  // on); rules with encap() need one.
  static Result<std::unique_ptr<Pipeline>> build(std::vector<Rule> rules, unsigned workers,
                                                 const OverlayConfig* overlay = nullptr);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const std::vector<Rule>& rules() const { return rules_; }

  // What the tables do with a packet of an established connection, for the
  // offload provider (control path). `wire` is the packet's tuple in the
  // direction it travels, with the zone it was tracked in; `tun_id` the VNI
  // it arrives in (0: none); `after_ct` the tuple it leaves its ct() with
  // when the connection is translated (later tables match that).
  struct Trace {
    int16_t out_port = -1;         // -1: dropped
    const char* refuse = nullptr;  // why hardware may not do this alone; null if it may
    uint32_t ct_rule = 0;          // the rule whose ct() the path ran
    int ct_table = -1;             // and its table
    uint16_t encap = 0;            // > 0: it leaves encapsulated (encap_header)
  };
  Trace trace_established(const ctrack::Key& wire, uint16_t in_port, bool reply, uint32_t tun_id = 0,
                          const ctrack::Key* after_ct = nullptr) const;
  // Encap `idx`'s outer headers for the flow whose packets arrive with
  // `arrival` (the UDP source port software gives them), lengths and IPv4
  // checksum zero: what a NIC's encap action takes.
  // Returns their length (Encap::len).
  uint16_t encap_header(uint16_t idx, const ctrack::Key& arrival, uint8_t out[kOuterMax]) const;
  const OverlayConfig& overlay() const { return ov_; }

  // What the tables do with one packet, step by step, in words (the
  // control path's `dataplane-ctl trace`, like OVS's ofproto/trace).
  // `ct_peek` tells the conntrack state a ct() would give the packet,
  // without changing anything, and a note on the entry it found; for a
  // translated connection's packet, *nat_to = the tuple it leaves with
  // (later tables match that), else untouched. `tun_id`: the VNI the packet
  // came in with (as decapsulated), 0 none.
  using CtPeek = std::function<uint8_t(const ctrack::Packet& pkt, uint16_t zone, bool commit, std::string* note,
                                       ctrack::Key* nat_to)>;
  std::vector<std::string> explain(const ctrack::Parsed& pkt, uint16_t in_port, const PortNames& ports,
                                   const CtPeek& ct_peek, uint32_t tun_id = 0) const;

  // The zone the flow cache looks connections up in; -1 when the rules use
  // several (then no flow cache).
  int fast_zone() const { return fast_zone_; }
  uint32_t generation() const { return gen_; }

  // Sum over workers; only exact when no worker runs this pipeline.
  RuleCounters counters(size_t rule_index) const;

  struct Table;

 private:
  friend class Datapath;
  friend struct Interp;  // pipeline/interp.h: the table walk
  Pipeline() = default;
  std::vector<Rule> rules_;
  std::vector<std::unique_ptr<Table>> tables_;  // index = table number; null if empty
  int max_table_ = -1;
  unsigned workers_ = 1;
  std::vector<RuleCounters> counters_;  // [worker * rules + rule]
  std::vector<int32_t> table0_by_id_;   // rule id -> index, table-0 rules only; -1 none
  std::vector<CompiledRule> crules_;    // index = rule index
  std::vector<Action> acts_;
  uint32_t gen_ = 0;                 // distinct per build: the flow cache's validity
  int32_t fast_zone_ = -1;           // the one zone every ct() uses, or -1 (no flow cache)
  uint32_t sport_fix_ = 0;           // zone0_hash_fix(fast_zone_): a cached hit's encap source port from its lookup's hash
  uint32_t tcp_flag_tables_ = 0;     // bit t: a rule in table t matches tcp_flags
  OverlayConfig ov_;
  uint8_t decap_on_[kMaxPorts] = {};  // bit k: tunnel kind k decapsulates on this port
  // The stages a burst runs through under this rule set, in order
  // (Datapath::Stage; chosen by plan_stages in pipeline/run.cc: no stage,
  // and no per-packet branch, for a feature the rules do not use).
  uint8_t stages_[8] = {};
  uint8_t nstages_ = 0;
  void plan_stages();

 public:
  // The stage list, by name ("rx", "flow_cache", ...), for `explain` and tests.
  std::vector<const char*> stage_names() const;

 private:

 public:
  struct Encap {
    uint8_t hdr[kOuterMax];  // outer Ethernet, IPv4, UDP, the tunnel's header; lengths and checksum per packet
    uint16_t len;            // bytes of hdr used
    uint8_t counter;         // the tunnel's encap counter (Tunnel)
    uint8_t kind;            // TunnelKind
    uint32_t ip_sum;         // the IPv4 header's one's-complement sum without its total length
  };
  // The outer headers' length of encap `idx` (> 0).
  uint16_t encap_len(uint16_t idx) const { return encaps_[idx - 1u].len; }
  // Encap `idx` (> 0): per packet, for the inline writer (overlay/mbuf.h).
  const Encap& encap(uint16_t idx) const { return encaps_[idx - 1u]; }

 private:
  std::vector<Encap> encaps_;        // index = Action::encap - 1

 public:
  // Puts encap `idx`'s outer headers at `hdr` (encap_len(idx) bytes before
  // an inner frame of `inner_len` bytes), with UDP source port `sport`.
  void write_encap(uint8_t* hdr, uint16_t idx, uint32_t inner_len, uint16_t sport) const;
};

// The rte_acl classify method the last built table took (pick_classifier
// in pipeline/acl.h): "avx512x32", "avx2", "neon", ... or "scalar".
const char* acl_classifier();

// Marks the NIC puts on packets it has classified, and what they mean. The
// offload provider publishes one; workers only read it.
// Marks: kTag | port = forward to that port (the NIC checked the connection);
// kTag | kRule | id = the NIC matched table-0 rule `id`: run its actions
// without the table-0 lookup.
// Marks fit the 24 bits the NIC reports (mlx5: MARK ids below
// MLX5_FLOW_MARK_MAX, 0xfffff0; the CQE's flow tag is 24 bits), so rule ids
// in marks stay below kRule.
struct HwMarkTable {
  static constexpr uint32_t kTag = 0x800000u;  // marks we set carry this bit
  static constexpr uint32_t kRule = 0x400000u;
  std::vector<int16_t> out_port;  // index = mark & ~kTag; -1 = unknown
};

// A fragment the fragment table (features/fragments/table.h) already passed:
// the ports (and TCP flags) a later fragment takes from its first, or for
// a TCP first fragment the fragmentable part's whole length. Carried with
// the packet when it is handed to another worker or released after being
// held, so it is looked up once.
struct FragNote {
  uint8_t valid = 0;
  uint8_t tcp_flags = 0;
  uint16_t sport = 0, dport = 0;
  uint32_t total = 0;
};

// What the worker that received a packet learnt of it before handing it to
// the connection's owner (Verdict::handoff): its tunnel's decap and the
// parse of the frame inside, so that the owner neither decapsulates nor
// parses again. The worker keeps it in the mbuf's private area across the
// handoff ring.
struct Carried {
  ctrack::Parsed parsed;   // as the stages left it at the handoff (fragment ports, in_port and meta set)
  uint32_t tun_id;
  uint32_t l3len;          // the bytes the egress MTU bounds
  uint16_t off;            // outer headers' length (the Verdict's strip)
  uint8_t decap_counter;
  bool df_clear;
};

struct PacketIn {
  uint8_t* data;      // written by actions that rewrite the packet (NAT)
  uint32_t len;       // bytes in data (first segment)
  uint32_t pkt_len;   // whole frame
  uint16_t port;      // index into the config's ports
  bool has_mark;
  uint32_t mark;
  // The parse an earlier stage already did (the NIC model's steering), and
  // its verdict; null: run parses.
  const ctrack::Parsed* parsed = nullptr;
  ctrack::Drop parse_drop = ctrack::Drop::kNone;
  // Bytes before data that a stage may take (the emulated NIC's encap);
  // a stage that moves data (decap, encap) leaves the worker to move the
  // buffer's start to match.
  uint16_t headroom = 0;
  void* cookie = nullptr;  // the caller's buffer: what the fragment table holds and gives back
  FragNote frag;           // valid: the fragment table passed it already
  // Where run() leaves what it learnt of a packet it hands off (null: it
  // does not), and whether it holds that already (the packet was handed to
  // this worker): then run() takes it instead of decapsulating and parsing.
  Carried* carry = nullptr;
  bool carried = false;
};

struct Verdict {
  int16_t out_port;  // -1: drop (or handed off)
  uint8_t ct_state;
  int8_t handoff;    // >= 0: another worker owns the connection: hand the packet to it
  uint32_t mark;
  uint16_t strip;    // bytes of outer headers (a tunnel's decap) to remove before sending
  uint16_t encap;    // > 0: put Pipeline::write_encap(encap) (encap_len(encap) bytes) before it
  uint16_t encap_sport;
  bool held;         // the fragment table keeps it (Datapath::fragments() gives it back)
  uint8_t l2_len;    // with frag_mtu: the Ethernet header and tags before the IPv4 header
  uint16_t frag_mtu; // > 0: an IPv4 datagram without DF, longer than the egress MTU: send it in fragments of this size
  FragNote frag;     // a fragment's note, for the worker it is handed to
};

// The established-flow cache (VPP's session fast path, OVS's exact-match
// cache): the path an established packet took through the tables, kept per
// connection and direction together with the pipeline generation it was
// taken under. The next packet of that direction goes from conntrack
// straight to the path's actions and output; a rule change invalidates by
// generation. Paths are only recorded where they cannot depend on anything
// outside the connection's key, ingress port and VLAN: one ct() (in the
// pipeline's only zone), no table with tcp_flags rules, no `offload: false`
// rule, an established state (with or without +rpl).
struct FlowPath {
  uint32_t hash = 0;  // 0: empty slot
  uint16_t in_port = 0, vlan = 0;
  uint32_t tun_id = 0;
  uint16_t encap = 0;
  uint8_t state = 0;  // ct_state the packet had after its ct()
  uint8_t nrules = 0;
  bool commit = false;
  uint32_t ct_act = 0;    // its ct() action (index into the pipeline's actions): commit, NAT range
  uint32_t ct_group = 0;  // that action's Action::ct_group (follows from ct_act)
  int16_t out_port = -1;  // -1: dropped by its last rule
  uint16_t slot = 0;      // its index in the worker's paths (record_path)
  uint32_t mark = 0;
  uint32_t rules[kMaxTables] = {};  // rule indices hit, in order
};

// What happened to one packet in Datapath::run, for a live trace (filled
// only when asked for).
struct PacketNote {
  static constexpr uint8_t kParseDrop = 0x80;  // why = kParseDrop | ctrack::Drop
  uint8_t why;       // 0: not dropped by the pipeline; 1 + DropWhy; kParseDrop | ctrack::Drop
  bool cached;       // took its path from the flow cache
  bool hw_marked;    // the NIC's mark chose its output or its table-0 rule
  uint8_t nrules;
  uint32_t rule_ids[kMaxTables];  // rules hit, in order
};

// A connection's entry (ctrack's Tag, which its lookup_done() reads): the
// Pipeline generation (0 matches none) and, per direction, an index into
// the worker's paths, or kNoTag.
using FlowCacheEntry = ctrack::Tracker::Tag;
namespace nat {
struct PlainRewrite;  // features/nat/rewrite.h
struct CacheEntry;
}

// One worker's datapath: its tracker shard, its counters, its flow cache.
class Datapath {
 public:
  static constexpr uint32_t kPaths = 1024;  // distinct cached paths per worker (a power of two)

  Datapath(unsigned worker, ctrack::Tracker* tracker, WorkerStats* stats);
  // A tracker's config as a Datapath wants it: with NAT, room for each
  // connection's flow-cache entry (its tag and rewrites) in the line of its
  // reply tuple (ctrack::Config::nat_caller_bytes), so that a translated
  // reply's lookup reads no line more than an untranslated packet's. A
  // tracker made without it works; its entries are then an array of their own.
  static ctrack::Config tracker_config(ctrack::Config c);
  ~Datapath();
  void set_hw_marks(const std::atomic<const HwMarkTable*>* marks) { marks_ = marks; }
  // The ports' MTUs (largest IP packet in or out), index = port. Unset
  // ports take anything.
  void set_mtu(uint16_t port, uint16_t mtu) { mtu_[port] = mtu; }
  // The port's kernel reassembles IPv4 before us (net_af_packet): an IPv4
  // datagram longer than its MTU without DF is such a datagram, not an
  // oversize frame (it leaves in fragments again where it must).
  void set_reassembled_in(uint16_t port) { reasm_in_[port] = true; }
  // The fragment table: after each run() and expire_fragments() the caller
  // runs what it released (in order, PacketIn::frag = the note) and frees
  // what it dropped (counted here), then clears both lists.
  FragTable& fragments() { return *frags_; }
  void expire_fragments(uint64_t now_ns);
  // The flow cache is on unless turned off (the benchmark and the
  // differential test compare both).
  void set_flow_cache(bool on) { cache_on_ = on; }
  // With several workers: packets of connections `steer` gives another
  // worker get Verdict::handoff instead of a judgment.
  void set_steering(const Steering* steer, unsigned self) {
    steer_ = steer;
    self_ = self;
  }
  // Runs up to kMaxBurst packets through pipeline `pl`; with `notes`, also
  // says what happened to each (a live trace).
  void run(Pipeline& pl, const PacketIn* in, uint32_t n, uint64_t now_ns, Verdict* out,
           PacketNote* notes = nullptr);

 public:
  // The stages a rule set may run, in their order (Pipeline::stages_).
  enum class Stage : uint8_t {
    kRx, kRxTunnels, kTables, kEgress, kEgressEncaps, kPathsEgress, kPathsEgressEncaps,
    kRxCached, kRxCachedTunnels, kCount
  };
  static const char* stage_name(Stage s);
  struct Burst;  // one burst's state (pipeline/burst.h)

 private:
  // The stages of run(), each in its feature's folder (dataplane/src/
  // features/<name>/stage.h, all inlined into pipeline/run.cc). A rule set
  // runs the list Pipeline::build chose for it (plan_stages, run.cc).
  template <bool kTunnels>
  void ingress(Burst& b);               // parse/: decap, mark skip, parse, ingress MTU, fragments, ownership
  struct RxCounts {
    uint64_t handed = 0, handed_bytes = 0, handoffs = 0;
    uint32_t firsts[kMaxBurst], nfirst = 0;  // identifications of the first fragments judged in the burst
  };
  template <bool kTunnels>
  void rx_one(Burst& b, uint32_t i, RxCounts& c);  // parse/: one packet of ingress
  void rx_counted(Burst& b, uint64_t rx_bytes, const RxCounts& c, size_t dropped_before);
  bool rx_parse(Burst& b, uint32_t i, uint32_t flen, uint32_t mtu_from, RxCounts& c);
  void flow_cache(Burst& b);            // flow_cache/: the cache after rx (the lane's fallback: live traces, the cache off)
  template <bool kTunnels>
  void rx_cached(Burst& b);             // flow_cache/: rx and the flow cache in one pass (the lane)
  template <bool kTunnels>
  bool lane_rx(Burst& b, uint32_t i);
  void lane_join(Burst& b, uint32_t i);
  void paths_for(const Pipeline& pl);
  enum class CacheUse : uint8_t { kNone, kJudge, kWatch };
  CacheUse cache_use(Burst& b, uint32_t i);
  void cache_lookup(Burst& b, const ctrack::Packet* const* cpk, const uint32_t* idx, uint32_t nc, uint32_t lane,
                    uint32_t watch);
  void cache_hits(Burst& b, const Action& ca, const ctrack::Packet* const* gp, const ctrack::Tracker::Found* const* gf,
                  const FlowPath* const* gpath, const uint32_t* ghit, uint32_t m, uint32_t lane);
  struct PathsUsed {
    uint16_t slot[kMaxBurst];
    uint32_t n = 0;
  };
  bool take_path(Burst& b, uint32_t i, const FlowPath& fp, const ctrack::CtResult& r,
                 const ctrack::Tracker::Found& f, bool in_lane, const ctrack::Key* nat_to,
                 const nat::PlainRewrite* rw, PathsUsed& used);
  void count_paths(Burst& b, const PathsUsed& used);
  void tables(Burst& b);                // tables/: keys, then each table's lookup, actions and conntrack
  void classifier_keys(Burst& b);
  void classify(Burst& b, int table);   // rte_acl, or the NIC's table-0 match
  void actions(Burst& b);               // hits counted, actions up to a ct()
  void exec(Burst& b, uint32_t i, uint32_t from, bool resumed);  // a rule's actions (interp.h's walk)
  void conntrack(Burst& b);             // conntrack/: batched per (zone, commit, nat), then the actions after it
  void translate(Burst& b, uint32_t i, const ctrack::Key& to, bool plain = false);  // nat/: bytes and classifier key
  void translate_plain(Burst& b, uint32_t i, const nat::PlainRewrite& rw);         // nat/: a done packet's bytes
  void remember_path(Burst& b, uint32_t i);  // flow_cache/: an established packet's path recorded
  template <bool kPaths, bool kEncaps>
  void egress(Burst& b);  // ports/: paths recorded (kPaths), egress MTU (a tunnel's outer packet with kEncaps)
  void note(const Burst& b, PacketNote* notes) const;  // trace/
  uint16_t record_path(const FlowPath& p);  // its index, or kNone when the table is full

  unsigned worker_;
  ctrack::Tracker* ct_;
  WorkerStats* st_;
  const std::atomic<const HwMarkTable*>* marks_ = nullptr;
  uint16_t mtu_[kMaxPorts];
  bool reasm_in_[kMaxPorts] = {};
  std::unique_ptr<FragTable> frags_;
  void count_dropped_fragments(size_t from);
  bool cache_on_ = true;
  const Steering* steer_ = nullptr;
  unsigned self_ = 0;
  uint32_t paths_gen_ = 0;
  // The flow cache's entries, index = connection handle of this shard:
  // cache_, or with a tracker that translates nat::CacheEntry (each tag
  // with its directions' rewrites of the lane's frames, recorded with the
  // direction's path by remember_path and valid while the tag is: the
  // lookup's done packets are translated from them, and conntrack hands
  // out no tuple for them), in the tracker's lines beside each reply tuple
  // (tracker_config()) or else nat_cache_. tag(): either kind's.
  // (On transparent hugepages, as conntrack's tables: sdn/huge.h.)
  sdn::HugeArray<FlowCacheEntry> cache_;
  sdn::HugeArray<nat::CacheEntry> nat_cache_;
  uint8_t* tags_ = nullptr;
  uint32_t tag_stride_ = sizeof(FlowCacheEntry);
  bool nat_entries_ = false;  // tags_ holds nat::CacheEntry
  FlowCacheEntry& tag(uint32_t conn) {
    return *reinterpret_cast<FlowCacheEntry*>(tags_ + size_t{conn} * tag_stride_);
  }
  nat::CacheEntry& nat_entry(uint32_t conn) {
    return *reinterpret_cast<nat::CacheEntry*>(tags_ + size_t{conn} * tag_stride_);
  }
  std::vector<FlowPath> paths_;
  std::vector<uint64_t> path_ctx_;  // per path slot: path_from() of it (lookup_done's Tags::ctx)
  // The flow cache's hits of one burst per path (index = path's slot),
  // added to the rules' counters at the burst's end and zeroed again.
  struct PathCount {
    uint32_t packets = 0, bytes = 0;
  };
  std::vector<PathCount> path_counts_;
};

}  // namespace dp
