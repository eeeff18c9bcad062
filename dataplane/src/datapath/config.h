// The `workers:` section of the config (config.h): the lcores the workers
// run on, their burst and mbuf pool, its parse, and what a reload does
// with it (every field needs a restart).
#pragma once

#include <cstdint>

#include "control/config_section.h"

namespace dp {

struct WorkerConfig {
  unsigned main_lcore = 0;
  std::vector<unsigned> lcores{1};
  // The CPU each worker lcore runs on, when not the lcore's own number
  // (EAL --lcores lcore@cpu): more workers than CPUs, e.g. for tests.
  std::vector<unsigned> cpus;
  uint16_t burst = 32;
  uint32_t mbufs = 16383;
  uint32_t mbuf_cache = 256;
  // Where main_lcore, lcores[i] and cpus are written, 0 if defaulted: for
  // messages, not compared (a reload that only moves lines changes nothing).
  struct Lines {
    int main_line = 0;
    std::vector<int> lcore_lines;
    int cpus_line = 0;
    friend bool operator==(const Lines&, const Lines&) { return true; }
  } at;
  // Every field needs a restart (a reload compares them all: a new one too).
  bool operator==(const WorkerConfig&) const = default;
};

// workers: {main_lcore, lcores, cpus, burst, mbufs, mbuf_cache}
Status parse_workers(const conf::Ctx& c, const YAML::Node& n, WorkerConfig* w);

// A reload: refused if anything differs ("workers: changed").
void workers_reload(const WorkerConfig& running, const WorkerConfig& next, std::vector<std::string>* refused);

}  // namespace dp
