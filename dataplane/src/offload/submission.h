// What the rte_flow provider asks of the NIC, through the seam (flow_api.h),
// on either steering engine: HWS (dv_flow_en=2) queues each operation on
// flow queue 0 and completes it when pulled; DV software steering
// (dv_flow_en=1) makes the synchronous call, and its result completes at the
// next pull, so the provider's lifecycle sees one completion per operation
// either way. A submission the driver refuses at once completes with its
// errno. Counts the operations out; knows nothing of connections (the
// lifecycle, lifecycle_sm.h, decides and counts them; this carries out). Control thread only.
#pragma once

#include <rte_flow.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/flow_api.h"
#include "dataplane/hwflow.h"
#include "template_cache.h"

namespace dp {

// At most one log line per key a second (a refusal repeated per
// connection would flood the journal).
class LimitedLog {
 public:
  void warn(const std::string& key, const std::string& line);

 private:
  std::map<std::string, uint64_t> last_ns_;
};

class Submission {
 public:
  struct Done {
    uintptr_t cookie;
    int err;  // 0: done
  };

  // The seam and the engine, from the provider's start on.
  void bind(const FlowApi* api, bool sws) {
    api_ = api;
    sws_ = sws;
  }
  bool sws() const { return sws_; }
  TemplateCache& templates() { return templates_; }
  size_t template_tables() const { return templates_.size(); }
  uint32_t in_flight() const { return in_flight_; }

  // A rule: HWS in its shape's template table (made with room for
  // `nb_flows`), pushed later when `postpone`; DV validated, then created.
  rte_flow* flow_create(const hw::Flow& f, uint32_t nb_flows, uintptr_t ck, bool postpone);
  void flow_destroy(uint16_t port, rte_flow* fl, uintptr_t ck, bool postpone);
  // Conntrack objects: made, updated (direction or context), queried into
  // *out, destroyed.
  rte_flow_action_handle* ct_create(uint16_t port, const rte_flow_indir_action_conf& ic,
                                    const rte_flow_action& act, uintptr_t ck);
  void ct_update(uint16_t port, rte_flow_action_handle* h, const rte_flow_modify_conntrack& m, uintptr_t ck,
                 bool postpone);
  void ct_query(uint16_t port, rte_flow_action_handle* h, rte_flow_action_conntrack* out, uintptr_t ck);
  void ct_destroy(uint16_t port, rte_flow_action_handle* h, uintptr_t ck);
  // HWS: what was postponed goes to the NIC (DV: nothing to push).
  void push(const std::set<uint16_t>& ports);
  // Every completion since the last pull: the synchronous ones, then each
  // queue port's (`queue_ports`: those holding flow queues).
  std::vector<Done> pull(const std::vector<uint16_t>& queue_ports);

  // Reads, answered at once (no completion): a rule's COUNT (hits, bytes)
  // and, when `age` is given, its AGE; false when the driver refuses.
  bool query_count(uint16_t port, rte_flow* fl, uint64_t* hits, uint64_t* bytes) const;
  bool query_age(uint16_t port, rte_flow* fl, rte_flow_query_age* age) const;
  // HWS: up to `n` contexts of rules the NIC reports aged on `port`'s
  // queue 0; < 0 with the driver's message in *why.
  int aged_flows(uint16_t port, void** ctx, uint32_t n, std::string* why) const;

  // DV: the driver judges the rule (rte_flow_validate), then writes it;
  // null with the driver's message and errno when either refuses.
  static rte_flow* sws_create(const FlowApi& a, const hw::Flow& f, std::string* why, int* errno_out);

 private:
  void out() { in_flight_++; }
  void fail(uintptr_t ck, int err, const std::string& msg);
  void result(uintptr_t ck, bool ok, const rte_flow_error& err);
  int last_errno(int dflt) const;

  const FlowApi* api_ = nullptr;
  bool sws_ = false;
  uint32_t in_flight_ = 0;
  std::vector<Done> sync_done_;
  TemplateCache templates_;
  LimitedLog log_;
};

}  // namespace dp
