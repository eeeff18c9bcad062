// The model: port info, configure, switch info, transfer proxy, start/stop.
#include "internal.h"

namespace dp {

bool ModelCalls::hws_ok(Mlx5Model& m, Impl::Port* p, rte_flow_error* e) {
  if (!p) {
    refuse(m, e, ENODEV, "rule-port", "no such port in the model");
    return false;
  }
  if (m.cfg_.dv_flow_en != 2 && !m.impl_->inside) {
    refuse(m, e, ENOTSUP, "steering-mode", "flow_q operation with incorrect steering mode");
    return false;
  }
  if (!p->hws) {
    refuse(m, e, EINVAL, "hws-configured", "non-template flow engine was not configured");
    return false;
  }
  return true;
}

int ModelCalls::info_get(void* self, uint16_t port, rte_flow_port_info* pi, rte_flow_queue_info* qi, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  if (!m.impl_->port(port)) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
  if (m.cfg_.dv_flow_en != 2) return refuse(m, e, ENOTSUP, "steering-mode", "info get with incorrect steering mode");
  // mlx5_flow_hw.c:5034-5045
  memset(pi, 0, sizeof *pi);
  pi->max_nb_queues = UINT32_MAX;
  qi->max_size = UINT32_MAX;
  pi->max_nb_counters = m.cfg_.limits.max_counters;
  pi->max_nb_aging_objects = pi->max_nb_counters;
  return 0;
}

// What a failed flow_hw_configure (its err path, mlx5_flow_hw.c:7345-7400)
// and a reconfigure (flow_hw_resource_release, 7415-7487) leave of a port:
// no flow queues, counter, aging or conntrack pool; the port takes no
// template or queue call until a configure succeeds.
void ModelCalls::release_port(Impl& s, Impl::Port* p) {
  p->q.clear();
  p->counters = p->aging = 0;
  p->ct_pool = false;
  p->ct_free.clear();
  p->ct_cap = 0;  // the next pool is a new DevX object (its indexes new in the model's space)
  p->cnt_taken = 0;
  p->cnt_waiting.clear();
  p->hws = false;
  for (auto& r : s.replicas) r->port_hws[p->index] = 0;  // configure needs the port stopped: no worker reads it
}

int ModelCalls::configure(void* self, uint16_t port, const rte_flow_port_attr* pa, uint16_t nb_queue,
                     const rte_flow_queue_attr* qa[], rte_flow_error* e) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  if (!p) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
  if (m.cfg_.dv_flow_en != 2 && !s.inside)
    return refuse(m, e, ENOTSUP, "steering-mode", "port configure with incorrect steering mode");
  rte_eth_dev_info di{};
  if (rte_eth_dev_info_get(port, &di) != 0 || di.nb_rx_queues == 0)
    return refuse(m, e, EINVAL, "configure-port-state", "Device with port_id=" + std::to_string(port) +
                                                            " is not configured.");
  if (p->started)
    return refuse(m, e, EINVAL, "configure-port-state",
                  "Device with port_id=" + std::to_string(port) + " already started.");
  if (!pa) return refuse(m, e, EINVAL, "configure-queues", "Port attributes must be non-NULL");
  if (nb_queue == 0) return refuse(m, e, EINVAL, "configure-queues", "At least one flow queue is required");
  if (!qa) return refuse(m, e, EINVAL, "configure-queues", "Queue attributes must be non-NULL");
  for (uint16_t i = 1; i < nb_queue; i++)
    if (qa[i]->size != qa[0]->size)
      return refuse(m, e, EINVAL, "configure-queues", "All flow queues must have the same size");
  for (const auto& q : p->q)
    if (q.jobs || !q.inflight.empty() || !q.unpushed.empty()) {
      // The driver's EBUSY goes through its err path (7127-7136): the
      // port's queues and pools are freed with the operations still in them.
      release_port(s, p);
      return refuse(m, e, EBUSY, "configure-busy", "operations still queued on port " + std::to_string(port));
    }
  if (p->hws) {
    // A reconfigure releases everything the port had (7128-7138): templates
    // and tables destroyed under the caller's handles, the conntrack pool
    // with its objects. The model does not follow handles it did not free.
    bool held = std::any_of(s.pts.begin(), s.pts.end(), [&](const auto& x) { return x->port == port; }) ||
                std::any_of(s.ats.begin(), s.ats.end(), [&](const auto& x) { return x->port == port; }) ||
                std::any_of(s.tables.begin(), s.tables.end(), [&](const auto& x) { return x->port == port; }) ||
                std::any_of(s.cts.begin(), s.cts.end(), [&](const auto& c) { return c.used && c.owner == port; });
    if (held && !s.inside)
      return refuse(m, e, EBUSY, "not-modelled",
                    "reconfigure of port " + std::to_string(port) +
                        " with templates, tables or conntrack objects still on it (the driver destroys them)");
    release_port(s, p);
  }
  if (!m.cfg_.hws_fw && !s.inside)
    return refuse(m, e, ENOTSUP, "hws-firmware",
                  "fail to configure port (firmware " + m.cfg_.fw +
                      (firmware_has_hws(m.cfg_.fw) ? ": its hardware steering capabilities are off)"
                                                   : " has no hardware steering: it needs xx.35.1012)"));
  {
    uint64_t entries = 1;
    while (entries < qa[0]->size) entries <<= 1;
    if (entries * 32 > m.cfg_.limits.max_qp_wr && !s.inside)
      return refuse(m, e, EINVAL, "queue-wqes",
                    "fail to configure port (a flow queue of " + std::to_string(qa[0]->size) + " needs a send queue of " +
                        std::to_string(entries * 32) + " WQEBBs; the firmware grants " +
                        std::to_string(m.cfg_.limits.max_qp_wr) + ")");
  }
  if (pa->nb_aging_objects && !pa->nb_counters)
    return refuse(m, e, EINVAL, "configure-age-counters",
                  "Port " + std::to_string(port) + " AGE objects are requested (" +
                      std::to_string(pa->nb_aging_objects) + ") without counters requesting.");
  if (pa->nb_counters > m.cfg_.limits.max_counters)
    return refuse(m, e, ENOMEM, "info-get", "more counters than the device has");
  uint64_t total = static_cast<uint64_t>(qa[0]->size) * nb_queue;
  for (const auto& o : s.ports)
    if (o.id != port)
      for (const auto& q : o.q) total += q.size;
  if (total > m.cfg_.ring)
    return refuse(m, e, ENOMEM, "not-modelled",
                  "flow queues of " + std::to_string(total) + " jobs exceed the model's ring of " +
                      std::to_string(m.cfg_.ring));
  p->q.assign(nb_queue + 1u, {});  // + the PMD's own queue (mlx5_flow_hw.c:7139-7141)
  for (uint16_t i = 0; i < nb_queue; i++) p->q[i].size = qa[i]->size;
  p->q[nb_queue].size = qa[0]->size;
  p->counters = pa->nb_counters;
  p->aging = pa->nb_aging_objects;
  // The DevX object is created before the FDB action (mlx5_flow_hw.c:6591-6608):
  // a bulk the firmware does not allocate fails first. Not the model's own DV
  // set-up (inside): DV grows its pool in small bulks (mlx5_flow_dv.c:13066-13075).
  if (pa->nb_conn_tracks > 0 && !s.inside && rte_log2_u32(rte_align32pow2(pa->nb_conn_tracks)) > m.cfg_.limits.log_ct_max_alloc) {
    release_port(s, p);  // the configure failed part-way: the port is not configured
    return refuse(m, e, ENODATA, "ct-pool-size",
                  "fail to configure port: Failed to create conn_track_offload_obj using DevX (a bulk of " +
                      std::to_string(rte_align32pow2(pa->nb_conn_tracks)) + " objects; this firmware allocates 2^" +
                      std::to_string(m.cfg_.limits.log_ct_max_alloc) + ")");
  }
  if (pa->nb_conn_tracks > 0 && m.cfg_.esw && p->proxy && !m.cfg_.ct_in_fdb) {
    // The manager port's pool asks for the FDB too, which this firmware
    // refuses: the whole configure fails and leaves the port unconfigured.
    release_port(s, p);
    return refuse(m, e, ENOTSUP, "ct-fdb",
                  "fail to configure port: conntrack (" + std::to_string(pa->nb_conn_tracks) +
                      " objects) on the E-Switch manager port " + std::to_string(port) +
                      " is not supported by this NIC profile (" + m.cfg_.profile + ")");
  }
  p->ct_pool = pa->nb_conn_tracks > 0;  // mlx5_flow_hw.c:7293-7305
  if (p->ct_pool && p->ct_cap == 0) {
    // Each port has its own pool (priv->hws_ctpool); the model numbers every
    // port's objects in one index space.
    // The DevX object holds the next power of two (mlx5_flow_hw.c:6571-6572).
    const uint32_t cap = rte_align32pow2(pa->nb_conn_tracks);
    uint32_t base = static_cast<uint32_t>(s.cts.size());
    s.cts.resize(base + cap);
    p->ct_free.clear();
    for (uint32_t i = base + cap; i-- > base;) p->ct_free.push_back(i);
    p->ct_cap = cap;
    for (auto& r : s.replicas) r->ct.resize(s.cts.size(), CtState{});  // before any worker runs
  }
  p->cnt_taken = 0;
  p->cnt_waiting.clear();
  p->cnt_t0 = m.now();
  p->hws = true;
  for (auto& r : s.replicas) r->port_hws[p->index] = 1;
  return 0;
}

int ModelCalls::switch_info(void* self, uint16_t port, rte_eth_switch_info* out) {
  Mlx5Model& m = M(self);
  Impl::Port* p = m.impl_->port(port);
  if (!p) return -ENODEV;
  *out = rte_eth_switch_info{};
  out->name = "mlx5 model";
  out->domain_id = m.cfg_.esw ? 0 : static_cast<uint16_t>(p->index);
  // A representor's number counts the ports other than the proxy, in order.
  out->port_id = p->proxy || !m.cfg_.esw ? UINT16_MAX
                                          : static_cast<uint16_t>(p->index - (p->index > m.cfg_.proxy_index ? 1 : 0));
  return 0;
}

int ModelCalls::pick_transfer_proxy(void* self, uint16_t port, uint16_t* proxy, rte_flow_error* e) {
  Mlx5Model& m = M(self);
  if (!m.impl_->port(port)) return refuse(m, e, ENODEV, "rule-port", "no such port in the model");
  if (!m.cfg_.esw)
    return refuse(m, e, EINVAL, "proxy-needs-esw", "unable to provide a proxy port without E-Switch configured");
  *proxy = m.impl_->proxy_port(m.cfg_.proxy_index).id;
  return 0;
}

int ModelCalls::validate(void* self, uint16_t port, const rte_flow_attr* a, const rte_flow_item items[],
                         const rte_flow_action actions[], rte_flow_error* e) {
  Mlx5Model& m = M(self);
  if (m.cfg_.dv_flow_en == 1) return sync_validate(m, port, a, items, actions, e);
  fprintf(stderr,
          "mlx5 model: rte_flow_validate(port %u) on a dv_flow_en=2 port: the driver calls a NULL .validate "
          "here [%s]\n",
          port, rule_source("no-validate"));
  abort();
}

int ModelCalls::dev_start(void* self, uint16_t port) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  if (!p) return -ENODEV;
  if (m.cfg_.dv_flow_en == 1 && !p->hws)
    if (int rc = sws_setup(m, *p); rc != 0) return rc;  // before rte_eth_dev_start: configure needs it stopped
  if (m.cfg_.esw && !p->proxy && m.cfg_.dv_flow_en == 2) {
    Impl::Port& px = s.proxy_port(m.cfg_.proxy_index);
    if (px.hws && !px.started) {
      refuse(m, nullptr, EAGAIN, "start-order",
             "Failed to start port " + std::to_string(port) + ": transfer proxy (port " + std::to_string(px.id) +
                 ") must be started");
      return -EAGAIN;
    }
    if (m.cfg_.repr_matching && !p->hws) {
      refuse(m, nullptr, EINVAL, "start-order",
             "Failed to start port " + std::to_string(port) +
                 ": with representor matching enabled, port must be configured for HWS");
      return -EINVAL;
    }
  }
  // Tables made before the start are translated now (flow_hw_table_update).
  for (auto& t : s.tables)
    if (t->port == port && !t->translated && translate(m, *t, nullptr) != 0) return -rte_errno;
  int rc = rte_eth_dev_start(port);
  if (rc == 0) p->started = true;
  return rc;
}

int ModelCalls::dev_stop(void* self, uint16_t port) {
  Mlx5Model& m = M(self);
  Impl& s = *m.impl_;
  Impl::Port* p = s.port(port);
  if (!p) return -ENODEV;
  if (m.cfg_.esw && p->proxy && p->hws && m.cfg_.dv_flow_en == 2) {
    for (size_t i = 0; i < s.ports.size(); i++)
      if (!s.ports[i].proxy && s.ports[i].started) {
        refuse(m, nullptr, EBUSY, "stop-order",
               "Failed to stop port " + std::to_string(port) +
                   ": attached representor ports must be stopped before stopping transfer proxy port");
        return -EBUSY;
      }
  }
  int rc = rte_eth_dev_stop(port);
  if (rc == 0) p->started = false;
  return rc;
}

}  // namespace dp
