// The rules service: the running rule set and the swaps of its pipeline
// (counters carried over to an identical rule), rule add/del and reload
// (checked and compiled on the builder's thread, put in force on the
// control loop), the listings; its commands and telemetry. It owns the
// rules, their retired counters and the builder; the pipeline pointer the
// workers read is the daemon's, swapped only here.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "notify.h"
#include "rule_builder.h"
#include "dataplane/config.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"

struct rte_rcu_qsbr;
struct rte_tel_data;

namespace dp {

class RuleService {
 public:
  // What it works on, owned by the daemon (set before start() uses them).
  struct Env {
    Config& cfg;
    std::atomic<Pipeline*>& pipeline;
    rte_rcu_qsbr* const& qsbr;
    std::vector<std::unique_ptr<ctrack::Tracker>>& shards;
    std::unique_ptr<OffloadProvider>& offload;
    ServiceNotifier& notify;
  };
  explicit RuleService(Env e);

  // The first pipeline is in force (the daemon's start): its rules.
  void started();
  Status register_commands(CommandTable& t);
  // Reload, told to the service manager (RELOADING=1, then READY=1);
  // `done` runs on the control loop when it is in force or refused.
  void reload(std::function<void(const Status&)> done);
  void poll() { builder_.poll(); }  // the control loop, each turn
  size_t size();

  // Runs f(pipeline) with no swap meanwhile (the pipeline stays).
  template <typename F>
  auto with_pipeline(F&& f) {
    std::lock_guard<std::mutex> lk(mu_);
    return f(*env_.pipeline.load());
  }
  // Rule i's counters with those from before swaps (inside with_pipeline).
  RuleCounters counters(const Pipeline& pl, size_t i) const;
  void telemetry(rte_tel_data* d);

 private:
  // Off the control loop (static: nothing of the running daemon but the
  // copy they are given).
  static Result<RuleBuilder::Plan> build_plan(std::vector<Rule> rules, const Config& running);
  static Result<RuleBuilder::Plan> reload_plan(const Config& running);
  void install(RuleBuilder::Plan plan);
  std::shared_ptr<const Config> running_snapshot() const;
  // A reply sent once a queued rule change is done.
  struct Pending {
    bool done = false;
    std::string text;
  };
  static ControlServer::Reply later(std::shared_ptr<Pending> p);
  ControlServer::Reply change_rules(std::function<Result<std::vector<Rule>>(std::vector<Rule>)> edit, std::string ok);
  ControlServer::Reply rule_add(const std::string& yaml);
  std::string rules_text();
  nlohmann::json rules_json();

  Env env_;
  std::mutex mu_;  // rules_, retired_, pipeline swaps (control and telemetry threads)
  std::vector<Rule> rules_;
  // Counters of rules from swapped-out pipelines, by id, for the rule they
  // belonged to: they carry over only to an identical rule (fingerprint).
  struct Retired {
    std::string fingerprint;
    RuleCounters c;
  };
  std::map<uint32_t, Retired> retired_;
  uint32_t next_rule_id_ = 1;  // auto ids: never reused in this daemon's life
  RuleBuilder builder_{[this] {
    std::lock_guard<std::mutex> lk(mu_);
    return rules_;
  }};
};

}  // namespace dp
