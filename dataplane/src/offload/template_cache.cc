#include "template_cache.h"

#include "provider_internal.h"

namespace dp {

rte_flow_template_table* TemplateCache::get(const FlowApi& a, const hw::Flow& f, uint32_t nb_flows,
                                            std::string* why) {
  std::string k = shape(f);
  auto it = tables_.find(k);
  if (it != tables_.end()) return it->second.table;
  rte_flow_error err{};
  rte_flow_pattern_template_attr pta{};
  pta.relaxed_matching = 0;
  pta.ingress = f.attr.ingress;
  pta.transfer = f.attr.transfer;
  FlowTemplates tp;
  flow_templates(f.pattern.data(), f.actions.data(), &tp);
  rte_flow_pattern_template* pt = a.pattern_template_create(a.self, f.port_id, &pta, tp.items.data(), &err);
  if (!pt) {
    *why = "pattern template: " + flow_err(err, rte_errno);
    return nullptr;
  }
  rte_flow_actions_template_attr ata{};
  ata.ingress = f.attr.ingress;
  ata.transfer = f.attr.transfer;
  rte_flow_actions_template* at =
      a.actions_template_create(a.self, f.port_id, &ata, f.actions.data(), tp.masks.data(), &err);
  if (!at) {
    a.pattern_template_destroy(a.self, f.port_id, pt, &err);
    *why = "actions template: " + flow_err(err, rte_errno);
    return nullptr;
  }
  rte_flow_template_table_attr ta{};
  ta.flow_attr = f.attr;
  ta.nb_flows = nb_flows;
  rte_flow_template_table* t = a.template_table_create(a.self, f.port_id, &ta, &pt, 1, &at, 1, &err);
  if (!t) {
    a.actions_template_destroy(a.self, f.port_id, at, &err);
    a.pattern_template_destroy(a.self, f.port_id, pt, &err);
    *why = "template table: " + flow_err(err, rte_errno);
    return nullptr;
  }
  tables_.emplace(k, Table{f.port_id, next_id_++, pt, at, t, nb_flows});
  return t;
}

std::string TemplateCache::destroy(const FlowApi& a, const Table& t) {
  std::string err;
  rte_flow_error e{};
  if (a.template_table_destroy(a.self, t.port, t.table, &e) != 0) err += "table: " + flow_err(e, rte_errno) + "; ";
  e = {};
  if (a.actions_template_destroy(a.self, t.port, t.at, &e) != 0)
    err += "actions template: " + flow_err(e, rte_errno) + "; ";
  e = {};
  if (a.pattern_template_destroy(a.self, t.port, t.pt, &e) != 0)
    err += "pattern template: " + flow_err(e, rte_errno) + "; ";
  return err;
}

void TemplateCache::drop(const FlowApi& a, const hw::Flow& f) {
  auto it = tables_.find(shape(f));
  if (it == tables_.end()) return;
  destroy(a, it->second);
  tables_.erase(it);
}

std::string TemplateCache::destroy_all(const FlowApi& a) {
  std::string err;
  for (auto& [k, t] : tables_) err += destroy(a, t);
  tables_.clear();
  return err;
}

}  // namespace dp
