// The default rte_flow seam: DPDK's own calls.
#include "dataplane/flow_api.h"

#include <rte_ethdev.h>

namespace dp {

namespace {

int rf_info_get(void*, uint16_t port, rte_flow_port_info* pi, rte_flow_queue_info* qi, rte_flow_error* e) {
  return rte_flow_info_get(port, pi, qi, e);
}
int rf_configure(void*, uint16_t port, const rte_flow_port_attr* pa, uint16_t nb_queue, const rte_flow_queue_attr* qa[],
              rte_flow_error* e) {
  return rte_flow_configure(port, pa, nb_queue, qa, e);
}
int rf_get_q_aged_flows(void*, uint16_t port, uint32_t queue, void** contexts, uint32_t n, rte_flow_error* e) {
  return rte_flow_get_q_aged_flows(port, queue, contexts, n, e);
}

int rf_switch_info(void*, uint16_t port, rte_eth_switch_info* out) {
  rte_eth_dev_info di{};
  if (int rc = rte_eth_dev_info_get(port, &di); rc != 0) return rc;
  *out = di.switch_info;
  return 0;
}

int rf_pick_transfer_proxy(void*, uint16_t port, uint16_t* proxy, rte_flow_error* e) {
  return rte_flow_pick_transfer_proxy(port, proxy, e);
}
int rf_validate(void*, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
             const rte_flow_action actions[], rte_flow_error* e) {
  return rte_flow_validate(port, a, items, actions, e);
}
rte_flow_pattern_template* rf_pt_create(void*, uint16_t port, const rte_flow_pattern_template_attr* a,
                                     const rte_flow_item items[], rte_flow_error* e) {
  return rte_flow_pattern_template_create(port, a, items, e);
}
int rf_pt_destroy(void*, uint16_t port, rte_flow_pattern_template* t, rte_flow_error* e) {
  return rte_flow_pattern_template_destroy(port, t, e);
}
rte_flow_actions_template* rf_at_create(void*, uint16_t port, const rte_flow_actions_template_attr* a,
                                     const rte_flow_action actions[], const rte_flow_action masks[],
                                     rte_flow_error* e) {
  return rte_flow_actions_template_create(port, a, actions, masks, e);
}
int rf_at_destroy(void*, uint16_t port, rte_flow_actions_template* t, rte_flow_error* e) {
  return rte_flow_actions_template_destroy(port, t, e);
}
rte_flow_template_table* rf_table_create(void*, uint16_t port, const rte_flow_template_table_attr* a,
                                      rte_flow_pattern_template* pts[], uint8_t nb_pts,
                                      rte_flow_actions_template* ats[], uint8_t nb_ats, rte_flow_error* e) {
  return rte_flow_template_table_create(port, a, pts, nb_pts, ats, nb_ats, e);
}
int rf_table_destroy(void*, uint16_t port, rte_flow_template_table* t, rte_flow_error* e) {
  return rte_flow_template_table_destroy(port, t, e);
}
rte_flow* rf_async_create(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow_template_table* t,
                       const rte_flow_item items[], uint8_t pt, const rte_flow_action actions[], uint8_t at,
                       void* user, rte_flow_error* e) {
  return rte_flow_async_create(port, queue, op, t, items, pt, actions, at, user, e);
}
int rf_async_destroy(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow* f, void* user,
                  rte_flow_error* e) {
  return rte_flow_async_destroy(port, queue, op, f, user, e);
}
rte_flow_action_handle* rf_ah_create(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                  const rte_flow_indir_action_conf* conf, const rte_flow_action* a, void* user,
                                  rte_flow_error* e) {
  return rte_flow_async_action_handle_create(port, queue, op, conf, a, user, e);
}
int rf_ah_update(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow_action_handle* h,
              const void* upd, void* user, rte_flow_error* e) {
  return rte_flow_async_action_handle_update(port, queue, op, h, upd, user, e);
}
int rf_ah_destroy(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow_action_handle* h,
               void* user, rte_flow_error* e) {
  return rte_flow_async_action_handle_destroy(port, queue, op, h, user, e);
}
int rf_ah_query(void*, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, const rte_flow_action_handle* h,
             void* data, void* user, rte_flow_error* e) {
  return rte_flow_async_action_handle_query(port, queue, op, h, data, user, e);
}
int rf_push(void*, uint16_t port, uint32_t queue, rte_flow_error* e) { return rte_flow_push(port, queue, e); }
int rf_pull(void*, uint16_t port, uint32_t queue, rte_flow_op_result res[], uint16_t n, rte_flow_error* e) {
  return rte_flow_pull(port, queue, res, n, e);
}
int rf_query(void*, uint16_t port, rte_flow* f, const rte_flow_action* a, void* data, rte_flow_error* e) {
  return rte_flow_query(port, f, a, data, e);
}
rte_flow* rf_create(void*, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                    const rte_flow_action actions[], rte_flow_error* e) {
  return rte_flow_create(port, a, items, actions, e);
}
int rf_destroy(void*, uint16_t port, rte_flow* f, rte_flow_error* e) { return rte_flow_destroy(port, f, e); }
rte_flow_action_handle* rf_sync_ah_create(void*, uint16_t port, const rte_flow_indir_action_conf* conf,
                                          const rte_flow_action* a, rte_flow_error* e) {
  return rte_flow_action_handle_create(port, conf, a, e);
}
int rf_sync_ah_update(void*, uint16_t port, rte_flow_action_handle* h, const void* upd, rte_flow_error* e) {
  return rte_flow_action_handle_update(port, h, upd, e);
}
int rf_sync_ah_query(void*, uint16_t port, const rte_flow_action_handle* h, void* data, rte_flow_error* e) {
  return rte_flow_action_handle_query(port, h, data, e);
}
int rf_sync_ah_destroy(void*, uint16_t port, rte_flow_action_handle* h, rte_flow_error* e) {
  return rte_flow_action_handle_destroy(port, h, e);
}
int rf_dev_start(void*, uint16_t port) { return rte_eth_dev_start(port); }
int rf_dev_stop(void*, uint16_t port) { return rte_eth_dev_stop(port); }

}  // namespace

const FlowApi& FlowApi::dpdk() {
  static const FlowApi api = [] {
    FlowApi a;
    a.name = "rte_flow";
    a.info_get = rf_info_get;
    a.configure = rf_configure;
    a.pick_transfer_proxy = rf_pick_transfer_proxy;
    a.switch_info = rf_switch_info;
    a.get_q_aged_flows = rf_get_q_aged_flows;
    a.validate = rf_validate;
    a.pattern_template_create = rf_pt_create;
    a.pattern_template_destroy = rf_pt_destroy;
    a.actions_template_create = rf_at_create;
    a.actions_template_destroy = rf_at_destroy;
    a.template_table_create = rf_table_create;
    a.template_table_destroy = rf_table_destroy;
    a.async_create = rf_async_create;
    a.async_destroy = rf_async_destroy;
    a.async_action_handle_create = rf_ah_create;
    a.async_action_handle_update = rf_ah_update;
    a.async_action_handle_destroy = rf_ah_destroy;
    a.async_action_handle_query = rf_ah_query;
    a.push = rf_push;
    a.pull = rf_pull;
    a.query = rf_query;
    a.create = rf_create;
    a.destroy = rf_destroy;
    a.action_handle_create = rf_sync_ah_create;
    a.action_handle_update = rf_sync_ah_update;
    a.action_handle_query = rf_sync_ah_query;
    a.action_handle_destroy = rf_sync_ah_destroy;
    a.dev_start = rf_dev_start;
    a.dev_stop = rf_dev_stop;
    return a;
  }();
  return api;
}

size_t flow_item_size(rte_flow_item_type t) {
  switch (t) {
    case RTE_FLOW_ITEM_TYPE_ETH: return sizeof(rte_flow_item_eth);
    case RTE_FLOW_ITEM_TYPE_VLAN: return sizeof(rte_flow_item_vlan);
    case RTE_FLOW_ITEM_TYPE_IPV4: return sizeof(rte_flow_item_ipv4);
    case RTE_FLOW_ITEM_TYPE_IPV6: return sizeof(rte_flow_item_ipv6);
    case RTE_FLOW_ITEM_TYPE_TCP: return sizeof(rte_flow_item_tcp);
    case RTE_FLOW_ITEM_TYPE_UDP: return sizeof(rte_flow_item_udp);
    case RTE_FLOW_ITEM_TYPE_CONNTRACK: return sizeof(rte_flow_item_conntrack);
    case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT: return sizeof(rte_flow_item_ethdev);
    case RTE_FLOW_ITEM_TYPE_VXLAN: return sizeof(rte_flow_item_vxlan);
    case RTE_FLOW_ITEM_TYPE_GENEVE: return sizeof(rte_flow_item_geneve);
    default: return 0;
  }
}

std::string flow_shape(uint16_t port, const rte_flow_attr& a, const rte_flow_item* items,
                       const rte_flow_action* actions) {
  std::string k;
  k.reserve(256);
  auto put = [&](const void* p, size_t n) { k.append(static_cast<const char*>(p), n); };
  put(&port, sizeof port);
  put(&a.group, sizeof a.group);
  put(&a.priority, sizeof a.priority);
  uint8_t dir = static_cast<uint8_t>(a.ingress | a.egress << 1 | a.transfer << 2);
  put(&dir, 1);
  for (const rte_flow_item* i = items; i->type != RTE_FLOW_ITEM_TYPE_END; i++) {
    put(&i->type, sizeof i->type);
    if (i->mask) put(i->mask, flow_item_size(i->type));
  }
  k.push_back('|');
  for (const rte_flow_action* x = actions; x->type != RTE_FLOW_ACTION_TYPE_END; x++) {
    put(&x->type, sizeof x->type);
    if (x->type == RTE_FLOW_ACTION_TYPE_MODIFY_FIELD)  // the template fixes the field
      put(&static_cast<const rte_flow_action_modify_field*>(x->conf)->dst.field, sizeof(rte_flow_field_id));
    if (x->type == RTE_FLOW_ACTION_TYPE_RAW_ENCAP && x->conf)  // and the encap's length (mlx5_flow_hw.c:1750-1760)
      put(&static_cast<const rte_flow_action_raw_encap*>(x->conf)->size, sizeof(size_t));
  }
  return k;
}

void flow_templates(const rte_flow_item* items, const rte_flow_action* actions, FlowTemplates* out) {
  out->items.clear();
  out->masks.clear();
  out->mf.clear();
  for (const rte_flow_item* i = items;; i++) {
    rte_flow_item t = *i;
    t.spec = nullptr;  // a pattern template is its masks
    out->items.push_back(t);
    if (i->type == RTE_FLOW_ITEM_TYPE_END) break;
  }
  size_t n = 0;
  while (actions[n].type != RTE_FLOW_ACTION_TYPE_END) n++;
  out->mf.reserve(n);
  for (size_t k = 0; k <= n; k++) {
    rte_flow_action m = actions[k];
    if (m.type == RTE_FLOW_ACTION_TYPE_MODIFY_FIELD) {
      const auto& v = *static_cast<const rte_flow_action_modify_field*>(m.conf);
      rte_flow_action_modify_field f{};
      f.operation = v.operation;
      f.dst.field = v.dst.field;
      f.dst.level = f.dst.offset = UINT32_MAX;
      f.src.field = v.src.field;
      f.width = UINT32_MAX;
      out->mf.push_back(f);
      m.conf = &out->mf.back();
    } else {
      m.conf = nullptr;
      if (m.type == RTE_FLOW_ACTION_TYPE_INDIRECT) m.type = RTE_FLOW_ACTION_TYPE_CONNTRACK;
    }
    out->masks.push_back(m);
  }
}

}  // namespace dp
