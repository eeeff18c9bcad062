// The rte_flow call seam: every call the offload provider makes to a NIC
// goes through one of these function pointers. The default table is DPDK's
// own rte_flow_* (and rte_eth_dev_start/stop, whose order the mlx5 driver
// constrains). The only other table is the mlx5 22.11 model (nic_model.h),
// for machines without a ConnectX. This is the one place a test double is
// allowed: nothing else in the offload path knows which table it runs on.
#pragma once

#include <rte_ethdev.h>
#include <rte_flow.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

struct FlowApi {
  void* self = nullptr;  // passed back to every call; DPDK's table ignores it
  const char* name = "rte_flow";

  int (*info_get)(void* self, uint16_t port, rte_flow_port_info* pi, rte_flow_queue_info* qi, rte_flow_error* e);
  int (*configure)(void* self, uint16_t port, const rte_flow_port_attr* pa, uint16_t nb_queue,
                   const rte_flow_queue_attr* qa[], rte_flow_error* e);
  int (*pick_transfer_proxy)(void* self, uint16_t port, uint16_t* proxy, rte_flow_error* e);
  // The port's switch domain, from rte_eth_dev_info_get (0 on success).
  // Ports of one E-Switch share a domain; each PF of a NIC in legacy mode has
  // its own.
  int (*switch_info)(void* self, uint16_t port, rte_eth_switch_info* out);
  // Synchronous validation. mlx5 with dv_flow_en=2 has no .validate and
  // calls through a NULL pointer: the provider calls it only on DV software
  // steering (dv_flow_en=1); the model aborts like the driver would crash.
  int (*validate)(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                  const rte_flow_action actions[], rte_flow_error* e);

  rte_flow_pattern_template* (*pattern_template_create)(void* self, uint16_t port,
                                                        const rte_flow_pattern_template_attr* a,
                                                        const rte_flow_item items[], rte_flow_error* e);
  int (*pattern_template_destroy)(void* self, uint16_t port, rte_flow_pattern_template* t, rte_flow_error* e);
  rte_flow_actions_template* (*actions_template_create)(void* self, uint16_t port,
                                                        const rte_flow_actions_template_attr* a,
                                                        const rte_flow_action actions[],
                                                        const rte_flow_action masks[], rte_flow_error* e);
  int (*actions_template_destroy)(void* self, uint16_t port, rte_flow_actions_template* t, rte_flow_error* e);
  rte_flow_template_table* (*template_table_create)(void* self, uint16_t port, const rte_flow_template_table_attr* a,
                                                    rte_flow_pattern_template* pts[], uint8_t nb_pts,
                                                    rte_flow_actions_template* ats[], uint8_t nb_ats,
                                                    rte_flow_error* e);
  int (*template_table_destroy)(void* self, uint16_t port, rte_flow_template_table* t, rte_flow_error* e);

  rte_flow* (*async_create)(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                            rte_flow_template_table* t, const rte_flow_item items[], uint8_t pt_index,
                            const rte_flow_action actions[], uint8_t at_index, void* user_data, rte_flow_error* e);
  int (*async_destroy)(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op, rte_flow* f,
                       void* user_data, rte_flow_error* e);
  rte_flow_action_handle* (*async_action_handle_create)(void* self, uint16_t port, uint32_t queue,
                                                        const rte_flow_op_attr* op,
                                                        const rte_flow_indir_action_conf* conf,
                                                        const rte_flow_action* action, void* user_data,
                                                        rte_flow_error* e);
  int (*async_action_handle_update)(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                    rte_flow_action_handle* h, const void* update, void* user_data,
                                    rte_flow_error* e);
  int (*async_action_handle_destroy)(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                     rte_flow_action_handle* h, void* user_data, rte_flow_error* e);
  // CONNTRACK: the context as the NIC has it now; `data` is a
  // rte_flow_action_conntrack filled in when the operation completes.
  int (*async_action_handle_query)(void* self, uint16_t port, uint32_t queue, const rte_flow_op_attr* op,
                                   const rte_flow_action_handle* h, void* data, void* user_data, rte_flow_error* e);
  // Aged-out rules' AGE contexts, drained from the port's aged-flow ring
  // (rte_flow_get_q_aged_flows): a count, or a negative errno.
  int (*get_q_aged_flows)(void* self, uint16_t port, uint32_t queue, void** contexts, uint32_t n, rte_flow_error* e);
  int (*push)(void* self, uint16_t port, uint32_t queue, rte_flow_error* e);
  int (*pull)(void* self, uint16_t port, uint32_t queue, rte_flow_op_result res[], uint16_t n, rte_flow_error* e);
  int (*query)(void* self, uint16_t port, rte_flow* f, const rte_flow_action* actions, void* data,
               rte_flow_error* e);

  // Synchronous rules and indirect actions: DV software steering
  // (dv_flow_en=1, the driver's default), one call per rule that returns
  // once the rule is in place; the driver validates each itself
  // (flow_dv_validate). With dv_flow_en=2 rte_flow_create is refused
  // (mlx5_flow.c:7405-7411). rte_flow_create needs a started port.
  rte_flow* (*create)(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                      const rte_flow_action actions[], rte_flow_error* e);
  int (*destroy)(void* self, uint16_t port, rte_flow* f, rte_flow_error* e);
  rte_flow_action_handle* (*action_handle_create)(void* self, uint16_t port, const rte_flow_indir_action_conf* conf,
                                                  const rte_flow_action* action, rte_flow_error* e);
  int (*action_handle_update)(void* self, uint16_t port, rte_flow_action_handle* h, const void* update,
                              rte_flow_error* e);
  int (*action_handle_query)(void* self, uint16_t port, const rte_flow_action_handle* h, void* data,
                             rte_flow_error* e);
  int (*action_handle_destroy)(void* self, uint16_t port, rte_flow_action_handle* h, rte_flow_error* e);

  // Port start and stop: the mlx5 driver orders them on an eSwitch
  // (representors after the proxy on start, before it on stop).
  int (*dev_start)(void* self, uint16_t port);
  int (*dev_stop)(void* self, uint16_t port);

  // DPDK's rte_flow and rte_eth_dev_start/stop.
  static const FlowApi& dpdk();
};

// The size of an item type's spec/mask struct, for the items the provider
// uses; 0 for others.
size_t flow_item_size(rte_flow_item_type t);

// A rule's shape: port, attributes, item types and masks, action types
// (and a MODIFY_FIELD's field). Rules of one shape share one template
// table (HWS); bytes, not text (computed for every rule).
std::string flow_shape(uint16_t port, const rte_flow_attr& a, const rte_flow_item* items,
                       const rte_flow_action* actions);

// The templates of a rule: its items without their specs, its actions and
// their masks (every value comes with the rule; an indirect action's mask
// names its real type, mlx5_flow_hw.c:3675-3741; a MODIFY_FIELD's mask fixes
// its field, operation and width and leaves the value to the rule,
// mlx5_flow_hw.c:3419-3483). Points into `actions` and into itself.
struct FlowTemplates {
  std::vector<rte_flow_item> items;
  std::vector<rte_flow_action> masks;
  std::vector<rte_flow_action_modify_field> mf;
};
void flow_templates(const rte_flow_item* items, const rte_flow_action* actions, FlowTemplates* out);

}  // namespace dp
