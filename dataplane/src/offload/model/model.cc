// The model: the seam table bound to it, introspection.
#include "internal.h"

namespace dp {

// ------------------------------------------------------------------ model

Mlx5Model::Mlx5Model(const Mlx5ModelConfig& cfg, std::vector<uint16_t> ports)
    : cfg_(cfg), impl_(std::make_unique<Impl>(cfg, ports)) {
  api_.self = this;
  api_.name = "mlx5-model";
  api_.info_get = ModelCalls::info_get;
  api_.configure = ModelCalls::configure;
  api_.pick_transfer_proxy = ModelCalls::pick_transfer_proxy;
  api_.switch_info = ModelCalls::switch_info;
  api_.get_q_aged_flows = ModelCalls::get_q_aged_flows;
  api_.validate = ModelCalls::validate;
  api_.pattern_template_create = ModelCalls::pattern_template_create;
  api_.pattern_template_destroy = ModelCalls::pattern_template_destroy;
  api_.actions_template_create = ModelCalls::actions_template_create;
  api_.actions_template_destroy = ModelCalls::actions_template_destroy;
  api_.template_table_create = ModelCalls::template_table_create;
  api_.template_table_destroy = ModelCalls::template_table_destroy;
  api_.async_create = ModelCalls::async_create;
  api_.async_destroy = ModelCalls::async_destroy;
  api_.async_action_handle_create = ModelCalls::ah_create;
  api_.async_action_handle_update = ModelCalls::ah_update;
  api_.async_action_handle_destroy = ModelCalls::ah_destroy;
  api_.async_action_handle_query = ModelCalls::ah_query;
  api_.push = ModelCalls::push;
  api_.pull = ModelCalls::pull;
  api_.query = ModelCalls::query;
  api_.create = ModelCalls::sync_create;
  api_.destroy = ModelCalls::sync_destroy;
  api_.action_handle_create = ModelCalls::sync_ah_create;
  api_.action_handle_update = ModelCalls::sync_ah_update;
  api_.action_handle_query = ModelCalls::sync_ah_query;
  api_.action_handle_destroy = ModelCalls::sync_ah_destroy;
  api_.dev_start = ModelCalls::dev_start;
  api_.dev_stop = ModelCalls::dev_stop;
}

Mlx5Model::~Mlx5Model() = default;

uint64_t Mlx5Model::now() const { return clock_ ? clock_(clock_ctx_) : mono_ns(); }

uint64_t Mlx5Model::flows_in_use() const { return impl_->flows_used; }

uint64_t Mlx5Model::ct_in_use() const { return impl_->ct_live; }

uint64_t Mlx5Model::counters_in_use() const {
  uint64_t n = 0;
  for (const auto& p : impl_->ports) n += p.cnt_taken + p.cnt_waiting.size();
  return n;
}

uint32_t Mlx5Model::ct_wqes_max() const { return impl_->ct_wqes_max; }

uint64_t Mlx5Model::ct_unready_refs() const { return impl_->ct_unready_refs; }
uint64_t Mlx5Model::ct_overruns() const { return impl_->ct_overruns; }

uint64_t Mlx5Model::templates_in_use() const {
  // The hidden tables of the synchronous calls (and their two templates
  // each) are the model's own, not the caller's.
  return impl_->pts.size() + impl_->ats.size() + impl_->tables.size() - 3 * impl_->sws_tables.size();
}

NicStats Mlx5Model::stats(unsigned q) const {
  const NicStats& s = impl_->replicas[q]->st;
  NicStats r;
  r.rx = __atomic_load_n(&s.rx, __ATOMIC_RELAXED);
  r.forwarded = __atomic_load_n(&s.forwarded, __ATOMIC_RELAXED);
  r.dropped = __atomic_load_n(&s.dropped, __ATOMIC_RELAXED);
  r.to_software = __atomic_load_n(&s.to_software, __ATOMIC_RELAXED);
  r.ct_invalid = __atomic_load_n(&s.ct_invalid, __ATOMIC_RELAXED);
  r.ct_changed = __atomic_load_n(&s.ct_changed, __ATOMIC_RELAXED);
  r.no_rx_flows = __atomic_load_n(&s.no_rx_flows, __ATOMIC_RELAXED);
  r.miss_dropped = __atomic_load_n(&s.miss_dropped, __ATOMIC_RELAXED);
  r.rewritten = __atomic_load_n(&s.rewritten, __ATOMIC_RELAXED);
  r.rss_off_port = __atomic_load_n(&s.rss_off_port, __ATOMIC_RELAXED);
  return r;
}

}  // namespace dp
