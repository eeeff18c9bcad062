// Pipelines built off the control loop. Building 100,000 rules takes
// seconds (the YAML, rte_acl's tries); meanwhile the control loop keeps
// answering clients, carrying conntrack events to the NIC and pinging the
// service manager's watchdog, and the workers forward with the old rules
// until the swap, which the control loop does when the build is done.
// One build at a time, in the order they were asked for; each starts from
// the rules in force when it starts (a `rule add` queued behind a reload
// adds to the reloaded rules).
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/pipeline.h"
#include "dataplane/rules.h"
#include "sdn/status.h"

namespace dp {

class RuleBuilder {
 public:
  // What a build produced, for the control loop to put in force.
  struct Plan {
    std::vector<Rule> rules;
    std::unique_ptr<Pipeline> pipeline;
    std::optional<ctrack::Timeouts> timeouts;  // a reload's conntrack timeouts, when they changed
    std::string done;                          // the reply's words ("ok id=7"), the log's for a reload
  };
  // Runs on the builder's thread with a copy of the rules in force.
  using Prepare = std::function<sdn::Result<Plan>(const std::vector<Rule>& current)>;
  // Runs on the control loop with what Prepare gave.
  using Finish = std::function<void(sdn::Result<Plan>)>;

  // `current`: the rules in force (called on the control loop).
  explicit RuleBuilder(std::function<std::vector<Rule>()> current) : current_(std::move(current)) {}
  ~RuleBuilder();  // waits for a build in progress; what is queued is dropped
  RuleBuilder(const RuleBuilder&) = delete;
  RuleBuilder& operator=(const RuleBuilder&) = delete;

  void submit(Prepare p, Finish f);
  // Control loop: a finished build's Finish runs here, then the next starts.
  void poll();
  bool idle() const { return !running_ && queue_.empty(); }
  size_t queued() const { return queue_.size(); }

 private:
  struct Job {
    Prepare prepare;
    Finish finish;
  };
  void start_next();
  std::function<std::vector<Rule>()> current_;
  std::deque<Job> queue_;
  bool running_ = false;
  Job job_;
  std::thread thread_;
  std::atomic<bool> built_{false};
  std::optional<sdn::Result<Plan>> result_;
};

}  // namespace dp
