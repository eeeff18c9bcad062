// The rte_flow provider: each connection's lifecycle. Events from the
// trackers, the flow queue's room, completions and aging go through the
// pure state machine (lifecycle_sm.h), whose effects this file carries out:
// operations through Submission (submit.cc), answers to the trackers, the
// queues and the counters. Counters folded back, too.
#include "provider_internal.h"

namespace dp {

void RteFlowProvider::on_ct_events(unsigned w, const ctrack::Event* ev, uint32_t n, uint64_t now_ns) {
  if (disabled_ || !started_) return;
  now_ = now_ns;
  for (uint32_t i = 0; i < n; i++) {
    switch (ev[i].type) {
      case ctrack::EventType::kEstablished: established(w, ev[i]); break;
      case ctrack::EventType::kClosing:
        ++closed_;
        gone(w, ev[i], "closing", now_ns);
        break;
      case ctrack::EventType::kDestroyed: gone(w, ev[i], "destroyed", now_ns); break;
      case ctrack::EventType::kResync: resync_requested(w, ev[i]); break;
    }
  }
  pump(now_ns);
}

void RteFlowProvider::poll(uint64_t now_ns) {
  if (disabled_ || !started_) return;
  now_ = now_ns;
  pull_all(now_ns);
  pump(now_ns);
  uint64_t dt = now_ns > last_scan_ns_ ? now_ns - last_scan_ns_ : 0;
  if (dt < 10'000'000) return;
  drain_aged(now_ns);
  // Fold counters: every installed job about once a second, in slices of
  // at least 10 ms.
  size_t visits = std::min<size_t>(active_.size(), active_.size() * dt / 1'000'000'000 + 1);
  last_scan_ns_ = now_ns;
  for (size_t k = 0; k < visits && !active_.empty(); k++) {
    uint32_t id = active_[scan_++ % active_.size()];
    uint64_t lh = 0;
    Job& j = jobs_[id];
    fold(j, now_ns, &lh);
    // DV rules carry no AGE: a connection idle age_s by its counters leaves.
    const uint64_t idle_from = std::max(lh, j.installed_ns);
    if (sws_ && life::ageable(j.life) && now_ns > idle_from &&
        now_ns - idle_from >= static_cast<uint64_t>(cfg_.age_s) * 1'000'000'000ull)
      deliver(id, {life::EventKind::kAged}, now_ns);
  }
}

// The NIC's aged-flow ring, drained (left alone, it fills and new aged
// flows go unreported). A report names one direction's rule; the
// connection leaves the NIC when both directions have been idle age_s.
void RteFlowProvider::drain_aged(uint64_t now_ns) {
  if (sws_) return;  // no aged-flow ring: poll() ages by counters
  void* ctx[256];
  for (uint16_t p : queue_ports()) {
    for (int rounds = 0; rounds < 64; rounds++) {
      std::string why;
      int n = sub_.aged_flows(p, ctx, 256, &why);
      if (n < 0) {
        log_limited("aged_flows", "aged-flow ring of port " + std::to_string(p) + ": " + why);
        break;
      }
      aged_reports_ += static_cast<uint64_t>(n);
      for (int i = 0; i < n; i++) aged_report(reinterpret_cast<uintptr_t>(ctx[i]), now_ns);
      if (n < 256) break;
    }
  }
}

void RteFlowProvider::aged_report(uintptr_t ck, uint64_t now_ns) {
  const uint32_t id = static_cast<uint32_t>((ck & 0xFFFFFFFFu) >> 4), gen = static_cast<uint32_t>(ck >> 32);
  if (id >= jobs_.size()) return;
  Job& j = jobs_[id];
  if (!j.used || j.gen != gen || !life::ageable(j.life)) {
    ++aged_stale_;  // a rule of an earlier connection in this slot
    return;
  }
  uint64_t lh = 0;
  fold(j, now_ns, &lh);
  const uint64_t idle_from = std::max(lh, j.installed_ns);
  if (now_ns <= idle_from || now_ns - idle_from < static_cast<uint64_t>(cfg_.age_s) * 1'000'000'000ull) return;
  deliver(id, {life::EventKind::kAged}, now_ns);
}

bool RteFlowProvider::translate(const ctrack::Event& e, hw::Conn* c, std::string* why) const {
  if (e.orig.proto != IPPROTO_TCP && e.orig.proto != IPPROTO_UDP) {
    *why = "protocol";
    return false;
  }
  if (e.orig.family == 6 && !sws_) {
    // No IPv6 5-tuple definer in 22.11 HWS (doc/guides/nics/mlx5.rst:163):
    // both addresses are 8 dwords only full selectors reach (the model's
    // match-definer); DV has it.
    *why = "ipv6";
    return false;
  }
  if (!pl_) {
    *why = "no rules";
    return false;
  }
  c->orig = e.orig;
  const bool nat = e.nat != ctrack::NatKind::kNone;
  const OverlayConfig& ov = pl_->overlay();
  for (int d = 0; d < 2; d++) {
    if (e.in_port[d] >= host_.port_ids.size()) {
      *why = "unknown port";
      return false;
    }
    // The tuple it arrives with, and (translated) the one it leaves with.
    const ctrack::Key k = nat ? (d ? e.reply : e.orig) : (d ? e.orig.reversed() : e.orig);
    const ctrack::Key after = d ? e.orig.reversed() : e.reply.reversed();
    // On the underlay port its packets may arrive in any configured VNI
    // (software decapsulates them first) or untunnelled: the one way whose
    // path forwards it is the connection's.
    // (The tunnels the NIC decapsulates: VXLAN, and Geneve under DV.)
    std::vector<std::pair<uint32_t, bool>> vnis = {{0, false}};  // VNI, Geneve
    const TunnelConfig& vx = ov[TunnelKind::kVxlan];
    if (vx.on && e.in_port[d] == vx.port)
      for (uint32_t v : vx.vnis) vnis.push_back({v, false});
    const TunnelConfig& gn = ov[TunnelKind::kGeneve];
    if (layout_.geneve && e.in_port[d] == gn.port)
      for (uint32_t v : gn.vnis) vnis.push_back({v, true});
    for (const hw::Layout::SoftDecap& sd : layout_.soft_decap)
      if (e.in_port[d] == sd.port) {
        *why = sd.why;
        return false;
      }
    Pipeline::Trace t;
    uint32_t vni = 0;
    bool geneve = false;
    int ways = 0;
    const char* refused = nullptr;
    for (auto [v, g] : vnis) {
      Pipeline::Trace x = pl_->trace_established(k, e.in_port[d], d == 1, v, nat ? &after : nullptr);
      if (x.refuse || x.out_port < 0) {
        if (!refused) refused = x.refuse ? x.refuse : "no rule after its ct() forwards it";
        continue;
      }
      t = x;
      vni = v;
      geneve = g;
      ways++;
    }
    if (ways == 0) {
      *why = refused;
      return false;
    }
    if (ways > 1) {
      *why = "its packets may arrive in more than one tunnel VNI or untunnelled";
      return false;
    }
    // The connection's rules are reached only through its table-0 ct()
    // rule in the NIC: without it every packet goes to software while the
    // tracker believes the connection is in hardware.
    if (t.ct_table != 0) {
      *why = "its ct() rule is not in table 0";
      return false;
    }
    bool in_nic = false;
    for (const auto& rf : rule_flows_)
      if (rf.rule_id == t.ct_rule && rf.tier == hw::Tier::kJumpCt) in_nic = true;
    if (!in_nic) {
      *why = "its table-0 ct() rule is not in the NIC";
      return false;
    }
    c->in_port[d] = e.in_port[d];
    c->out_port[d] = t.out_port;
    hw::Conn::Dir& cd = c->dir[d];
    cd.vni = vni;
    cd.geneve = geneve;
    cd.nat = nat;
    cd.wire = k;
    cd.out = nat ? after : k;
    cd.encap = t.encap != 0;
    // Decapsulated and encapsulated again in one rule: HWS folds
    // VXLAN_DECAP + RAW_ENCAP (DV: RAW_DECAP + RAW_ENCAP is an L3 tunnel,
    // mlx5_flow_dv.c:3633-3657, which the model does not run) into one L2_TO_TNL_L3 reformat
    // (mlx5_flow_hw.c:1536-1556, 4244-4254) that strips only the outer
    // Ethernet and keeps the old outer IP/UDP/VXLAN under the new header:
    // the frame leaves corrupt, and the driver takes the rule silently.
    if (cd.vni && cd.encap) {
      *why = "decapsulated and encapsulated in one direction";
      return false;
    }
    if (cd.encap) cd.hdr_len = pl_->encap_header(t.encap, k, cd.hdr);
  }
  // Without an E-Switch each direction's rule is on the port it arrives
  // on, and a CONNTRACK object serves only rules of its own port (the
  // driver looks it up in the rule's port pool, mlx5_flow_hw.c:410-418):
  // a TCP connection across two ports is tracked by exact rules (the
  // flows strategy) even where conntrack objects exist. So is one whose
  // headers the NIC rewrites: the hardware runs the conntrack check after
  // the decap and before the modify and encap (hws/mlx5dr_action.c:18-73),
  // so a segment it finds not VALID would reach software already rewritten.
  c->aso = aso_ && e.orig.proto == IPPROTO_TCP && (transfer_ || c->in_port[0] == c->in_port[1]) && !c->rewrites();
  return true;
}

void RteFlowProvider::established(unsigned w, const ctrack::Event& e) {
  hw::Conn c;
  std::string why;
  life::Event le{life::EventKind::kRequested};
  if (!translate(e, &c, &why)) le.why = why.c_str();
  else if (pending_.size() >= std::max<size_t>(65536, jobs_.size())) le.why = life::kWhyBacklog;
  auto it = live_.find(conn_key(w, e.conn));
  if (it != live_.end() && it->second.job >= 0) {
    deliver(static_cast<uint32_t>(it->second.job), le, now_);
    return;
  }
  life::State s;
  if (it != live_.end()) s = life::queued(0, false, sws_);
  deliver_free(w, e, s, le);
}

void RteFlowProvider::gone(unsigned w, const ctrack::Event& e, const char* why, uint64_t now_ns) {
  auto it = live_.find(conn_key(w, e.conn));
  if (it == live_.end() || !(it->second.orig == e.orig)) return;
  life::Event le{life::EventKind::kClosed};
  le.why = why;
  if (it->second.job >= 0) deliver(static_cast<uint32_t>(it->second.job), le, now_ns);
  else deliver_free(w, e, life::queued(0, false, sws_), le);
}

void RteFlowProvider::resync_requested(unsigned w, const ctrack::Event& e) {
  auto it = live_.find(conn_key(w, e.conn));
  life::Event le{life::EventKind::kResyncAsked};
  le.ok = ct_ops_ + 2 <= kCtOpsMax;
  if (it == live_.end() || !(it->second.orig == e.orig) || it->second.job < 0) {
    deliver_free(w, e, life::State{}, le);
    return;
  }
  deliver(static_cast<uint32_t>(it->second.job), le, now_);
}

// Submits queued work within the in-flight bound: removals first (they
// free table space), then installs.
void RteFlowProvider::pump(uint64_t now_ns) {
  while (!removals_.empty() && sub_.in_flight() + reserved_ + 2 <= in_flight_cap()) {
    uint32_t id = removals_.front();
    removals_.pop_front();
    if (jobs_[id].used) deliver(id, {life::EventKind::kGo}, now_ns);
  }
  if (now_ns < hold_until_ns_) return;
  while (!retry_.empty()) {  // retries first, in their order
    pending_.push_front(retry_.back());
    retry_.pop_back();
  }
  while (removals_.empty() && !pending_.empty() && sub_.in_flight() + reserved_ + 6 <= in_flight_cap() && !free_jobs_.empty() &&
         ct_ops_ + 1 <= kCtOpsMax) {
    Req r = pending_.front();
    pending_.pop_front();
    start_next(r, now_ns);
  }
}

// A queued connection's turn: the rules may have changed while it waited,
// and software's state now (not at the event) is what its conntrack object
// starts from (packets forwarded since moved the window).
void RteFlowProvider::start_next(const Req& r, uint64_t now_ns) {
  auto it = live_.find(conn_key(r.worker, r.ev.conn));
  if (it == live_.end() || it->second.job != -1 || !(it->second.orig == r.ev.orig)) return;
  hw::Conn c;
  std::string why;
  life::Event go{life::EventKind::kGo};
  if (!translate(r.ev, &c, &why)) go.why = why.c_str();
  else if (c.aso && !host_.shards[r.worker]->snapshot(r.ev.conn, r.ev.orig, &snap_)) go.why = life::kWhyGone;
  const life::State s = life::queued(r.tries, c.aso, sws_);
  if (go.why) {
    deliver_free(r.worker, r.ev, s, go);
    return;
  }
  uint32_t id = free_jobs_.back();
  free_jobs_.pop_back();
  Job& j = jobs_[id];
  const uint32_t gen = j.gen + 1;
  j = Job{};
  j.gen = gen;
  j.used = true;
  j.worker = r.worker;
  j.handle = r.ev.conn;
  j.orig = r.ev.orig;
  j.conn = c;
  j.life = s;
  if (r.ev.l2_len) j.l2_len = r.ev.l2_len;
  j.ev = r.ev;
  it->second.job = static_cast<int>(id);
  deliver(id, go, now_ns);
}

void RteFlowProvider::complete(uintptr_t ck, int err, uint64_t now_ns) {
  auto tag = static_cast<Tag>(ck & 15);
  if (tag == kOpCtCreate || tag == kOpQuery || tag == kOpResync) ct_ops_--;
  if (tag == kOpShared) {
    if (err) fail("shared_rule_" + errno_reason(err), "");
    return;
  }
  uint32_t id = static_cast<uint32_t>(ck >> 4);
  Job& j = jobs_[id];
  life::Event le{life::EventKind::kCompleted};
  le.op = static_cast<life::Op>(tag);
  le.err = err;
  // A context read back is merged with software's state now.
  if (tag == kOpQuery && !err) le.tracked = host_.shards[j.worker]->snapshot(j.handle, j.orig, &snap_);
  deliver(id, le, now_ns);
}

// The state moves first: an effect may answer with an event of its own
// (kTellOffloaded, kSubmitCtCreate), always the step's last effect.
void RteFlowProvider::deliver(uint32_t id, const life::Event& e, uint64_t now_ns) {
  Job& j = jobs_[id];
  const life::Step st = life::step(j.life, e);
  if (st.illegal != life::Illegal::kNone) {
    illegal(j.life, e, st.illegal);
    return;
  }
  j.life = st.next;
  for (uint8_t i = 0; i < st.n; i++) apply(id, st.fx[i], now_ns);
}

void RteFlowProvider::deliver_free(unsigned w, const ctrack::Event& ev, const life::State& s, const life::Event& e) {
  const life::Step st = life::step(s, e);
  if (st.illegal != life::Illegal::kNone) {
    illegal(s, e, st.illegal);
    return;
  }
  for (uint8_t i = 0; i < st.n; i++) {
    const life::Effect& fx = st.fx[i];
    if (fx.fx == life::Fx::kEnqueue) {
      live_[conn_key(w, ev.conn)] = Live{-1, ev.orig};
      pending_.push_back(Req{w, ev});
    } else if (!apply_counter(fx)) {
      apply_conn(w, ev.conn, ev.orig, fx);
    }
  }
}

void RteFlowProvider::illegal(const life::State& s, const life::Event& e, life::Illegal why) {
  log_limited("lifecycle", std::string("offload lifecycle: ") + life::event_name(e.kind) + " in " +
                               life::phase_name(s.phase) + " ignored: " + life::illegal_name(why));
}

// The effects on the counters alone.
bool RteFlowProvider::apply_counter(const life::Effect& fx) {
  using life::Fx;
  switch (fx.fx) {
    case Fx::kRefuse: refuse(fx.why); return true;
    case Fx::kCountBacklog: ++backlog_drop_; return true;
    case Fx::kCountRetry: ++retries_; return true;
    case Fx::kFailInstall: fail(errno_reason(fx.err), ""); return true;
    case Fx::kFailRemove: fail("remove_" + errno_reason(fx.err), ""); return true;
    case Fx::kFailResync: fail("resync_" + errno_reason(fx.err), ""); return true;
    case Fx::kCountResync: resyncs_++; return true;
    case Fx::kCountResyncDeferred: ++resync_deferred_; return true;
    case Fx::kCountAged: aged_++; return true;
    case Fx::kCountRevoked: revoked_++; return true;
    case Fx::kCountRemoved: removed_++; return true;
    default: return false;
  }
}

// The effects on the connection's live entry and its tracker.
void RteFlowProvider::apply_conn(unsigned w, uint32_t handle, const ctrack::Key& orig, const life::Effect& fx) {
  using life::Fx;
  ctrack::Tracker* t = host_.shards[w];
  switch (fx.fx) {
    case Fx::kUnlink: live_.erase(conn_key(w, handle)); break;
    case Fx::kTellNoOffload: t->set_no_offload(handle, orig); break;
    case Fx::kTellNotOffloaded: t->set_offloaded(handle, orig, false); break;
    case Fx::kTellResyncDone: t->resync_done(handle, orig); break;
    default: log_limited("lifecycle_fx", "offload lifecycle: an effect for a slot on a connection without one");
  }
}

void RteFlowProvider::apply(uint32_t id, const life::Effect& fx, uint64_t now_ns) {
  using life::Fx;
  if (apply_counter(fx)) return;
  Job& j = jobs_[id];
  switch (fx.fx) {
    case Fx::kRequeueRetry:
      // Still wanted and nothing of it is left in the NIC: offered again
      // when the pause is over.
      live_[conn_key(j.worker, j.handle)].job = -1;
      retry_.push_back(Req{j.worker, j.ev, j.life.tries});
      break;
    case Fx::kTellOffloaded: {
      life::Event le{life::EventKind::kConfirmed};
      le.ok = host_.shards[j.worker]->set_offloaded(j.handle, j.orig, true);
      deliver(id, le, now_ns);
      break;
    }
    case Fx::kSubmitCtCreate: submit_ct_create(id); break;
    case Fx::kReserveRules: reserved_ += kRulesAfterCt; break;
    case Fx::kReleaseRules: reserved_ -= kRulesAfterCt; break;
    case Fx::kSubmitRules: submit_rules(id); break;
    case Fx::kSubmitDestroyFlows: submit_destroy(id, fx.made); break;
    case Fx::kSubmitDestroyCt: submit_destroy(id, 0); break;
    case Fx::kSubmitQuery: submit_query(id); break;
    case Fx::kSubmitResyncUpdate: resync_update(id); break;
    case Fx::kQueueRemoval:
      removals_.push_back(id);
      pump(now_ns);
      break;
    case Fx::kRequeueRemoval: removals_.push_back(id); break;
    case Fx::kHoldInstalls: hold_until_ns_ = now_ns + kBusyBackoffNs; break;
    case Fx::kActivate:
      j.installed_ns = now_ns;
      j.active_pos = static_cast<uint32_t>(active_.size());
      active_.push_back(id);
      installed_++;
      offloads_++;
      if (j.life.ct_obj) offloads_aso_++;
      break;
    case Fx::kFold: {
      uint64_t lh;
      fold(j, now_ns, &lh);
      break;
    }
    case Fx::kDeactivate: deactivate(j); break;
    case Fx::kForget:
      j.flow[0] = j.flow[1] = nullptr;
      j.ct = nullptr;
      break;
    case Fx::kFreeSlot:
      j.used = false;
      free_jobs_.push_back(id);
      break;
    default: apply_conn(j.worker, j.handle, j.orig, fx);
  }
}

void RteFlowProvider::deactivate(Job& j) {
  installed_--;
  uint32_t last = active_.back();
  active_[j.active_pos] = last;
  jobs_[last].active_pos = j.active_pos;
  active_.pop_back();
}

// The ports stopped (after flush(): nothing is left, but a connection
// still there is forgotten, its objects gone with the ports).
void RteFlowProvider::on_ports_stopped() {
  if (disabled_ || !started_) return;
  for (uint32_t id = 0; id < jobs_.size(); id++)
    if (jobs_[id].used) deliver(id, {life::EventKind::kPortStopped}, clock());
  for (const Req& r : pending_) deliver_free(r.worker, r.ev, life::queued(r.tries, false, sws_), {life::EventKind::kPortStopped});
  pending_.clear();
  retry_.clear();
}

void RteFlowProvider::fold(Job& j, uint64_t now_ns, uint64_t* last_hit) {
  *last_hit = 0;
  uint64_t pk[2] = {}, by[2] = {};
  for (int d = 0; d < 2; d++) {
    if (!(j.life.made & (d ? life::kMadeFlow1 : life::kMadeFlow0))) continue;
    sub_.query_count(flow_port(j, d), j.flow[d], &pk[d], &by[d]);
    if (sws_) continue;  // no AGE on DV rules: the last hit is when the counters last moved (below)
    rte_flow_query_age qa{};
    if (sub_.query_age(flow_port(j, d), j.flow[d], &qa) && qa.sec_since_last_hit_valid && pk[d])
      *last_hit = std::max<uint64_t>(*last_hit,
                                     now_ns - std::min<uint64_t>(now_ns, qa.sec_since_last_hit * 1'000'000'000ull));
  }
  uint64_t dpk[2] = {pk[0] - j.folded_pk[0], pk[1] - j.folded_pk[1]};
  if (sws_) {
    if (dpk[0] || dpk[1]) j.moved_ns = now_ns;
    *last_hit = j.moved_ns;
  }
  uint64_t dby[2] = {by[0] - j.folded_by[0], by[1] - j.folded_by[1]};
  // NICs count frame bytes, ctrack counts IP bytes (as Linux conntrack
  // does): take the Ethernet header off, with the VLAN tags the
  // connection's packets carry (the rules match the IP 5-tuple whatever
  // the tags).
  const uint64_t l2 = j.l2_len ? j.l2_len : 14;
  for (int d = 0; d < 2; d++) dby[d] = dby[d] > l2 * dpk[d] ? dby[d] - l2 * dpk[d] : 0;
  if (dpk[0] || dpk[1]) {
    host_.shards[j.worker]->fold_hw_counters(j.handle, j.orig, dpk, dby, *last_hit ? *last_hit : now_ns);
    for (int d = 0; d < 2; d++) {
      j.folded_pk[d] = pk[d];
      j.folded_by[d] = by[d];
    }
  }
}

}  // namespace dp
