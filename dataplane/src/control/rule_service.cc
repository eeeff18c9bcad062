// The rules service (rule_service.h).
#include "rule_service.h"

#include "daemon_internal.h"

#include <rte_rcu_qsbr.h>
#include <rte_telemetry.h>

#include <cstring>
#include <set>
#include <sstream>

#include "dataplane/log.h"
#include "features/conntrack/config.h"
#include "offload/config.h"
#include "sdn/json.h"

namespace dp {

RuleService::RuleService(Env e) : env_(e) {
  for (const Rule& r : env_.cfg.rules) next_rule_id_ = std::max(next_rule_id_, r.id + 1);
}

void RuleService::started() {
  std::lock_guard<std::mutex> lk(mu_);
  rules_ = env_.cfg.rules;
}

size_t RuleService::size() {
  std::lock_guard<std::mutex> lk(mu_);
  return rules_.size();
}

// Off the control loop (RuleBuilder's thread): what may be checked and
// compiled without touching the running state.
Result<RuleBuilder::Plan> RuleService::build_plan(std::vector<Rule> rules, const Config& running) {
  if (!running.ct.nat && uses_nat(rules))
    return Status::error("ct(commit,nat(...)) needs the tracker's room for NAT, and it was started without it "
                         "(set conntrack.nat: true; needs a restart)");
  auto pl = Pipeline::build(rules, static_cast<unsigned>(running.workers.lcores.size()), &running.overlay);
  if (!pl) return pl.status();
  RuleBuilder::Plan plan;
  plan.rules = std::move(rules);
  plan.pipeline = std::move(pl.value());
  plan.done = "ok";
  return plan;
}

// On the control loop: the built pipeline goes in force; the old one is
// freed once every worker has left it.
void RuleService::install(RuleBuilder::Plan plan) {
  log_pipeline(*plan.pipeline);
  std::vector<Rule>& rules = plan.rules;
  std::lock_guard<std::mutex> lk(mu_);
  Pipeline* old = env_.pipeline.exchange(plan.pipeline.release(), std::memory_order_acq_rel);
  // Free the old tables only after every worker has passed a quiescent state.
  rte_rcu_qsbr_synchronize(env_.qsbr, RTE_QSBR_THRID_INVALID);
  for (size_t i = 0; i < old->rules().size(); i++) {
    const Rule& r = old->rules()[i];
    RuleCounters c = old->counters(i);
    Retired& ret = retired_[r.id];
    std::string fp = rule_fingerprint(r);
    if (ret.fingerprint != fp) ret = Retired{std::move(fp), {}};
    ret.c.packets += c.packets;
    ret.c.bytes += c.bytes;
  }
  delete old;
  // A rule that is gone takes its counters along: an id used again later
  // starts from zero.
  std::set<uint32_t> live;
  for (const Rule& r : rules) live.insert(r.id);
  std::erase_if(retired_, [&](const auto& kv) { return !live.count(kv.first); });
  for (const Rule& r : rules) next_rule_id_ = std::max(next_rule_id_, r.id + 1);
  rules_ = std::move(rules);
  env_.cfg.rules = rules_;
  if (plan.timeouts) {
    for (auto& sh : env_.shards) sh->set_timeouts(*plan.timeouts);
    env_.cfg.ct.timeouts = *plan.timeouts;
  }
  env_.offload->on_pipeline(*env_.pipeline.load());
}

// A reply that is sent when `p` is done (the builder's Finish sets it).
ControlServer::Reply RuleService::later(std::shared_ptr<Pending> p) {
  ControlServer::Reply r;
  r.ready = [p] { return p->done; };
  r.more = [p](std::string* out) {
    *out += p->text;
    return false;
  };
  return r;
}

// A rule change through the builder; its reply once it is in force.
ControlServer::Reply RuleService::change_rules(std::function<Result<std::vector<Rule>>(std::vector<Rule>)> edit,
                                          std::string ok) {
  auto p = std::make_shared<Pending>();
  builder_.submit(
      [this, edit = std::move(edit), running = running_snapshot()](const std::vector<Rule>& current)
          -> Result<RuleBuilder::Plan> {
        auto next = edit(current);
        if (!next) return next.status();
        return build_plan(std::move(next.value()), *running);
      },
      [this, p, ok = std::move(ok)](Result<RuleBuilder::Plan> r) {
        p->done = true;
        if (!r) {
          p->text = "error: " + r.message();
          return;
        }
        p->text = ok;
        install(std::move(r.value()));
      });
  return later(p);
}

// What a build reads of the running config (never the rules, which it is
// given): a copy, so the builder's thread shares nothing with the loop.
std::shared_ptr<const Config> RuleService::running_snapshot() const {
  auto c = std::make_shared<Config>(env_.cfg);
  c->rules.clear();
  return c;
}

// A reload applies what can change under traffic (the tables, conntrack
// timeouts) and refuses everything else with its reason, keeping the
// running state whole. Ports are bound by name: the file's port order does
// not matter. The file is read and the rules built off the control loop;
// `done` hears how it ended.
void RuleService::reload(std::function<void(const Status&)> done) {
  env_.notify.reloading();
  builder_.submit(
      [this, running = running_snapshot()](const std::vector<Rule>&) { return reload_plan(*running); },
      [this, done = std::move(done)](Result<RuleBuilder::Plan> r) {
        Status s = r.status();
        if (r) {
          log(r->done);
          install(std::move(r.value()));
        }
        env_.notify.reloaded(s ? "forwarding; reloaded " + env_.cfg.file
                           : "forwarding; reload refused: " + s.message().substr(0, 200));
        done(s);
      });
}

// The builder's part of a reload: the file read, checked against what runs
// (`running`, without its rules) and compiled.
Result<RuleBuilder::Plan> RuleService::reload_plan(const Config& running) {
  auto next = load_config(running.file);
  if (!next) return next.status();
  Config& c = next.value();
  c.cli = running.cli;
  if (Status s = c.apply_cli(); !s) return s;

  std::vector<std::string> refused;
  if (!(running.eal == c.eal)) refused.push_back("eal: changed (needs a restart)");
  std::vector<int> map;  // file's port index -> running port index
  ports_reload(running.ports, c.ports, &map, &refused);
  workers_reload(running.workers, c.workers, &refused);
  if (running.metrics_listen != c.metrics_listen) refused.push_back("metrics: changed (needs a restart)");
  if (!(running.overlay == c.overlay)) refused.push_back("overlay: changed (needs a restart)");
  const bool timeouts = conntrack_reload(running.ct, &c.ct, &refused);
  offload_reload(running.offload, c.offload, &refused);
  if (running.control_socket != c.control_socket) refused.push_back("control.socket: changed (needs a restart)");
  if (!refused.empty()) {
    std::string m = "reload refused, running config kept: ";
    for (size_t i = 0; i < refused.size(); i++) m += (i ? "; " : "") + refused[i];
    return Status::error(m);
  }

  remap_ports(c.rules, map);
  auto plan = build_plan(std::move(c.rules), running);
  if (!plan) return plan.status();
  if (timeouts) plan->timeouts = c.ct.timeouts;
  plan->done = "reloaded " + running.file + ": " + std::to_string(plan->rules.size()) + " rules" +
               (timeouts ? ", new conntrack timeouts" : "");
  return plan;
}

RuleCounters RuleService::counters(const Pipeline& pl, size_t i) const {
  RuleCounters c = pl.counters(i);
  const Rule& r = pl.rules()[i];
  auto it = retired_.find(r.id);
  if (it != retired_.end() && it->second.fingerprint == rule_fingerprint(r)) {
    c.packets += it->second.c.packets;
    c.bytes += it->second.c.bytes;
  }
  return c;
}

std::string RuleService::rules_text() {
  std::lock_guard<std::mutex> lk(mu_);
  std::ostringstream o;
  Pipeline* pl = env_.pipeline.load();
  for (size_t i = 0; i < pl->rules().size(); i++) {
    const Rule& r = pl->rules()[i];
    RuleCounters c = counters(*pl, i);
    o << "id=" << r.id << " table=" << r.table << " priority=" << r.priority << " match=\"" << r.match_text
      << "\" actions=\"" << r.actions_text << "\" packets=" << c.packets << " bytes=" << c.bytes << "\n";
  }
  return o.str();
}

nlohmann::json RuleService::rules_json() {
  std::lock_guard<std::mutex> lk(mu_);
  nlohmann::json j = {{"rules", nlohmann::json::array()}};
  Pipeline* pl = env_.pipeline.load();
  for (size_t i = 0; i < pl->rules().size(); i++) {
    const Rule& r = pl->rules()[i];
    RuleCounters c = counters(*pl, i);
    j["rules"].push_back({{"id", r.id},
                          {"table", r.table},
                          {"priority", r.priority},
                          {"match", r.match_text},
                          {"actions", r.actions_text},
                          {"packets", c.packets},
                          {"bytes", c.bytes}});
  }
  return j;
}

ControlServer::Reply RuleService::rule_add(const std::string& yaml) {
  auto r = parse_rule_yaml(yaml, env_.cfg.port_names());
  if (!r) return CommandTable::text("error: " + r.message());
  Rule rule = std::move(r.value());
  if (!rule.id) {
    // Assigned now, in the order asked; never reused, even if this one is refused.
    if (next_rule_id_ > kMaxRuleId)
      return CommandTable::text("error: rule ids exhausted (" + std::to_string(kMaxRuleId) +
                                " assigned in this daemon's life); give an explicit id: N or restart");
    rule.id = next_rule_id_++;
  }
  const uint32_t id = rule.id;
  return change_rules([rule = std::move(rule), id](std::vector<Rule> next) -> Result<std::vector<Rule>> {
    for (const auto& x : next)
      if (x.id == id) return Status::error("rule id " + std::to_string(id) + " exists");
    next.push_back(rule);
    return next;
  }, "ok id=" + std::to_string(id));
}

void RuleService::telemetry(rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  std::lock_guard<std::mutex> lk(mu_);
  Pipeline* pl = env_.pipeline.load();
  for (size_t i = 0; i < pl->rules().size() && i < 60; i++) {
    const Rule& r = pl->rules()[i];
    RuleCounters c = counters(*pl, i);
    rte_tel_data* e = rte_tel_data_alloc();
    rte_tel_data_start_dict(e);
    rte_tel_data_add_dict_u64(e, "id", r.id);
    rte_tel_data_add_dict_u64(e, "table", r.table);
    rte_tel_data_add_dict_u64(e, "priority", static_cast<uint64_t>(r.priority));
    rte_tel_data_add_dict_string(e, "match", r.match_text.c_str());
    rte_tel_data_add_dict_string(e, "actions", r.actions_text.c_str());
    rte_tel_data_add_dict_u64(e, "packets", c.packets);
    rte_tel_data_add_dict_u64(e, "bytes", c.bytes);
    rte_tel_data_add_dict_container(d, ("r" + std::to_string(r.id)).c_str(), e, 0);
  }
}


Status RuleService::register_commands(CommandTable& t) {
  using C = CommandTable;
  SDN_TRY(t.add_text("rule add", [this](const CommandArgs& a) { return rule_add(a.str[0]); }));
  SDN_TRY(t.add_text("rule del", [this](const CommandArgs& a) {
    const uint32_t id = static_cast<uint32_t>(a.num[0]);
    return change_rules([id](std::vector<Rule> next) -> Result<std::vector<Rule>> {
      auto before = next.size();
      std::erase_if(next, [&](const Rule& x) { return x.id == id; });
      if (next.size() == before) return Status::error("no rule with id " + std::to_string(id));
      return next;
    }, "ok");
  }));
  SDN_TRY(t.add("rules", [this](const CommandArgs&, Format f) {
    return C::text(f == Format::kJson ? sdn::json_dump(rules_json()) + "\n" : "ok\n" + rules_text());
  }));
  SDN_TRY(t.add_text("reload", [this](const CommandArgs&) {
    auto p = std::make_shared<Pending>();
    reload([p](const Status& s) {
      p->done = true;
      p->text = s ? "ok" : "error: " + s.message();
    });
    return later(p);
  }));
  return {};
}

}  // namespace dp
