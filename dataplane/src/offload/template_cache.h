// HWS template tables of the rte_flow provider: one pattern template,
// actions template and template table per flow shape (flow_shape), made on
// first use and kept until flush (they are in use while any rule of theirs
// is in the NIC). Control thread only.
#pragma once

#include <rte_flow.h>

#include <cstdint>
#include <map>
#include <string>

#include "dataplane/flow_api.h"
#include "dataplane/hwflow.h"

namespace dp {

class TemplateCache {
 public:
  // The table for `f`'s shape, made now if it is new (holding `nb_flows`
  // rules); null with the refusing call and the driver's message in *why.
  rte_flow_template_table* get(const FlowApi& a, const hw::Flow& f, uint32_t nb_flows, std::string* why);
  // Destroys the table of `f`'s shape and its templates, if made (the
  // conntrack probe's table, which nothing uses after it).
  void drop(const FlowApi& a, const hw::Flow& f);
  // Destroys every table and template: "" or what each refusal said.
  std::string destroy_all(const FlowApi& a);
  size_t size() const { return tables_.size(); }

 private:
  struct Table {
    uint16_t port;
    int id;
    rte_flow_pattern_template* pt;
    rte_flow_actions_template* at;
    rte_flow_template_table* table;
    uint32_t rules;
  };
  // Destroys one table and its templates: "" or the refusals.
  static std::string destroy(const FlowApi& a, const Table& t);
  std::map<std::string, Table> tables_;  // by flow_shape
  int next_id_ = 0;
};

}  // namespace dp
