// Per packet: Datapath::run, a burst through the stage list its rule set
// was given (plan_stages). The stages live in their features' folders and
// are included here, into one translation unit, so each inlines into the
// loop that calls it. Nothing here allocates, throws, logs or calls
// virtually (the stage list is a switch per stage per burst); the
// rules come compiled (Pipeline::build, in compile.cc).
#include <atomic>
#include <new>
#include <cstring>

#include "dataplane/pipeline.h"
#include "pipeline/burst.h"
#include "features/parse/stage.h"
#include "features/flow_cache/stage.h"
#include "features/tables/stage.h"
#include "features/ports/egress.h"
#include "features/trace/note.h"

namespace dp {

WorkerStats WorkerStats::snapshot() const {
  WorkerStats s;
  auto ld = [](const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); };
#define DP_LOAD(name, what) s.name = ld(name);
  DP_WORKER_COUNTERS(DP_LOAD)
#undef DP_LOAD
  for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) s.parse_drop[i] = ld(parse_drop[i]);
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) s.drop[i] = ld(drop[i]);
  for (int i = 0; i < static_cast<int>(Tunnel::kCount); i++) s.tunnel[i] = ld(tunnel[i]);
  return s;
}


Datapath::Datapath(unsigned worker, ctrack::Tracker* tracker, WorkerStats* stats)
    : worker_(worker),
      ct_(tracker),
      st_(stats),
      frags_(std::make_unique<FragTable>()),
      paths_(kPaths),
      path_ctx_(kPaths),
      path_counts_(kPaths) {
  std::fill(std::begin(mtu_), std::end(mtu_), uint16_t{0xFFFF});
  // (Zero bytes are an entry of no generation: none valid.)
  bool ok = true;
  if (tracker->config().nat) {
    nat_entries_ = true;
    const ctrack::Tracker::CallerLines cl = tracker->nat_caller_lines();
    if (cl.base && tracker->config().nat_caller_bytes >= sizeof(nat::CacheEntry)) {
      // In the line of the connection's reply tuple (tracker_config()).
      tags_ = cl.base;
      tag_stride_ = cl.stride;
    } else {
      ok = nat_cache_.reset(tracker->capacity());
      tags_ = reinterpret_cast<uint8_t*>(nat_cache_.data());
      tag_stride_ = sizeof(nat::CacheEntry);
    }
  } else {
    ok = cache_.reset(tracker->capacity());
    tags_ = reinterpret_cast<uint8_t*>(cache_.data());
  }
  if (!ok) throw std::bad_alloc();
}

Datapath::~Datapath() = default;

ctrack::Config Datapath::tracker_config(ctrack::Config c) {
  c.nat_caller_bytes = c.nat ? sizeof(nat::CacheEntry) : 0;
  return c;
}

// Held fragments the table gave up on: received (counted now, as they
// leave) and dropped by reason.
void Datapath::count_dropped_fragments(size_t from) {
  const auto& d = frags_->dropped();
  for (size_t k = from; k < d.size(); k++) {
    st_->rx_packets++;
    st_->rx_bytes += d[k].bytes;
    st_->drop[static_cast<int>(d[k].why)]++;
  }
}

void Datapath::expire_fragments(uint64_t now_ns) {
  const size_t before = frags_->dropped().size();
  frags_->expire(now_ns);
  count_dropped_fragments(before);
}

const char* Datapath::stage_name(Stage s) {
  static const char* const kNames[] = {"rx",           "rx_tunnels",          "tables",
                                       "egress",       "egress_encaps",       "paths+egress",
                                       "paths+egress_encaps", "rx+flow_cache", "rx_tunnels+flow_cache"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Stage::kCount));
  return kNames[static_cast<size_t>(s)];
}

// The stages this rule set needs, in order: a tunnel's decap only where a
// port terminates one, the flow cache (and recording its paths) only when every ct() uses one zone,
// the tables only when there are rules, the encap MTU only with encap().
void Pipeline::plan_stages() {
  using S = Datapath::Stage;
  nstages_ = 0;
  auto add = [&](S s) { stages_[nstages_++] = static_cast<uint8_t>(s); };
  bool tunnels = false;
  for (uint8_t m : decap_on_) tunnels |= m != 0;
  // With the flow cache, rx and the cache in one pass (its lane: see
  // rx_cached, flow_cache/stage.h).
  if (fast_zone_ >= 0) add(tunnels ? S::kRxCachedTunnels : S::kRxCached);
  else add(tunnels ? S::kRxTunnels : S::kRx);
  add(S::kTables);  // (with no rules: every packet is a no-match drop)
  // The flow cache's paths are recorded in egress's loop (one pass over
  // the burst, not two).
  if (fast_zone_ >= 0) add(encaps_.empty() ? S::kPathsEgress : S::kPathsEgressEncaps);
  else add(encaps_.empty() ? S::kEgress : S::kEgressEncaps);
}

std::vector<const char*> Pipeline::stage_names() const {
  std::vector<const char*> v;
  for (uint8_t k = 0; k < nstages_; k++) v.push_back(Datapath::stage_name(static_cast<Datapath::Stage>(stages_[k])));
  return v;
}

void Datapath::run(Pipeline& pl, const PacketIn* in, uint32_t n, uint64_t now_ns, Verdict* out, PacketNote* notes) {
  Burst b{pl,
          in,
          n,
          now_ns,
          out,
          *st_,
          pl.crules_.data(),
          pl.acts_.data(),
          &pl.counters_[static_cast<size_t>(worker_) * pl.crules_.size()],
          marks_ ? marks_->load(std::memory_order_acquire) : nullptr,
          cache_on_ && pl.fast_zone_ >= 0,
          static_cast<uint16_t>(pl.fast_zone_)};
  b.noting = notes != nullptr;
  // A switch, so each stage can inline here as when run() called them by
  // name (measured against member-function pointers, results/stages-30:
  // no difference within noise; the new-connection cost was rx_parse's call).
  for (uint32_t k = 0; k < pl.nstages_; k++) {
    switch (static_cast<Stage>(pl.stages_[k])) {
      case Stage::kRx: ingress<false>(b); break;
      case Stage::kRxTunnels: ingress<true>(b); break;
      // The lane, unless the flow cache is off or a live trace wants notes
      // (then rx, and the cache as its own stage: the same judgments).
      case Stage::kRxCached:
        if (b.fast && !b.noting) rx_cached<false>(b);
        else ingress<false>(b), flow_cache(b);
        break;
      case Stage::kRxCachedTunnels:
        if (b.fast && !b.noting) rx_cached<true>(b);
        else ingress<true>(b), flow_cache(b);
        break;
      case Stage::kTables: tables(b); break;
      case Stage::kEgress: egress<false, false>(b); break;
      case Stage::kEgressEncaps: egress<false, true>(b); break;
      case Stage::kPathsEgress: egress<true, false>(b); break;
      case Stage::kPathsEgressEncaps: egress<true, true>(b); break;
      case Stage::kCount: break;
    }
  }
  if (notes) note(b, notes);
}

}  // namespace dp
