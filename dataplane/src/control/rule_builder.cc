#include "rule_builder.h"

#include <exception>

namespace dp {

RuleBuilder::~RuleBuilder() {
  if (thread_.joinable()) thread_.join();
}

void RuleBuilder::submit(Prepare p, Finish f) {
  queue_.push_back(Job{std::move(p), std::move(f)});
  if (!running_) start_next();
}

void RuleBuilder::start_next() {
  if (queue_.empty()) return;
  job_ = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  built_.store(false, std::memory_order_relaxed);
  result_.reset();
  // The thread inherits the control thread's CPU set (the main lcore's),
  // never a worker's.
  thread_ = std::thread([this, rules = current_()] {
    try {
      result_.emplace(job_.prepare(rules));
    } catch (const std::exception& x) {
      result_.emplace(sdn::Status::error(std::string("building the rules failed: ") + x.what()));
    }
    built_.store(true, std::memory_order_release);
  });
}

void RuleBuilder::poll() {
  if (!running_ || !built_.load(std::memory_order_acquire)) return;
  thread_.join();
  running_ = false;
  Job job = std::move(job_);
  sdn::Result<Plan> r = std::move(*result_);
  result_.reset();
  job.finish(std::move(r));
  start_next();
}

}  // namespace dp
