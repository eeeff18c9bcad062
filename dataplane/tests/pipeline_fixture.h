// The pipeline as a worker runs it, over frames in memory: a config's rules,
// a tracker, a Datapath; send() one frame at a time.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dataplane/config.h"
#include "dataplane/pipeline.h"

namespace dp {

struct Fixture {
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<Pipeline> pl;
  WorkerStats st;
  std::unique_ptr<Datapath> dp;
  uint64_t now = 1'000'000'000'000ull;

  explicit Fixture(const std::string& yaml, uint32_t capacity = 4096,
                   ctrack::FullPolicy policy = ctrack::FullPolicy::kDrop) {
    auto cfg = parse_config(yaml, "test.yaml");
    EXPECT_TRUE(cfg.ok()) << cfg.message();
    ctrack::Config cc;
    cc.capacity = capacity;
    cc.full_policy = policy;
    cc.nat = cfg.ok() && cfg->ct.nat;
    ct = std::move(ctrack::Tracker::create(cc).value());
    auto p = Pipeline::build(cfg->rules, 1, cfg.ok() ? &cfg->overlay : nullptr);
    EXPECT_TRUE(p.ok()) << p.message();
    pl = std::move(p.value());
    dp = std::make_unique<Datapath>(0, ct.get(), &st);
    if (cfg.ok())
      for (size_t i = 0; i < cfg->ports.size(); i++) dp->set_mtu(static_cast<uint16_t>(i), cfg->ports[i].mtu);
  }
  // Runs one frame; `last` is it as the pipeline left it (actions write into it).
  Verdict send(uint16_t port, std::vector<uint8_t> f) {
    PacketIn in{f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), port, false, 0};
    Verdict v;
    dp->run(*pl, &in, 1, now, &v);
    now += 1'000'000;
    last = std::move(f);
    return v;
  }
  std::vector<uint8_t> last;
};

}  // namespace dp
