// The pipeline as a worker runs it, over frames in memory: a config's rules,
// a tracker, a Datapath; send() one frame at a time.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dataplane/config.h"
#include "dataplane/pipeline.h"
#include "features/fragments/table.h"

namespace dp {

// A rule set's stage list, by name.
inline std::vector<std::string> stage_names_of(const Pipeline& p) {
  std::vector<std::string> v;
  for (const char* n : p.stage_names()) v.push_back(n);
  return v;
}

struct Fixture {
  std::unique_ptr<ctrack::Tracker> ct;
  std::unique_ptr<Pipeline> pl;
  WorkerStats st;
  std::unique_ptr<Datapath> dp;
  uint64_t now = 1'000'000'000'000ull;

  explicit Fixture(const std::string& yaml, uint32_t capacity = 4096,
                   ctrack::FullPolicy policy = ctrack::FullPolicy::kDrop, uint32_t event_ring = 0) {
    auto cfg = parse_config(yaml, "test.yaml");
    EXPECT_TRUE(cfg.ok()) << cfg.message();
    ctrack::Config cc;
    cc.capacity = capacity;
    cc.full_policy = policy;
    cc.event_ring = event_ring;
    cc.nat = cfg.ok() && cfg->ct.nat;
    ct = std::move(ctrack::Tracker::create(Datapath::tracker_config(cc)).value());
    auto p = Pipeline::build(cfg->rules, 1, cfg.ok() ? &cfg->overlay : nullptr);
    EXPECT_TRUE(p.ok()) << p.message();
    pl = std::move(p.value());
    dp = std::make_unique<Datapath>(0, ct.get(), &st);
    if (cfg.ok())
      for (size_t i = 0; i < cfg->ports.size(); i++) dp->set_mtu(static_cast<uint16_t>(i), cfg->ports[i].mtu);
  }
  // Runs one frame; `last` is it as the pipeline left it (actions write into
  // it). A fragment the table holds stays in `held` (its verdict says
  // held); what the table lets go meanwhile runs as the worker runs it, into
  // `released` (in order), or is dropped (`dropped` counts them).
  Verdict send(uint16_t port, std::vector<uint8_t> f) {
    auto frame = std::make_unique<std::vector<uint8_t>>(std::move(f));
    PacketIn in{frame->data(), static_cast<uint32_t>(frame->size()), static_cast<uint32_t>(frame->size()), port,
                false, 0};
    in.cookie = frame.get();
    Verdict v;
    dp->run(*pl, &in, 1, now, &v);
    if (v.held) held.push_back({std::move(frame), port});
    else last = std::move(*frame);
    drain();
    now += 1'000'000;
    return v;
  }
  // Runs frames as one burst (a worker's rx burst); those not held are in
  // `burst_out` as the pipeline left them, in order.
  std::vector<Verdict> send_burst(uint16_t port, std::vector<std::vector<uint8_t>> fs) {
    const std::vector<uint16_t> ports(fs.size(), port);  // (before fs is moved from)
    return send_burst(ports, std::move(fs));
  }
  // The same, packet i in from ports[i].
  std::vector<Verdict> send_burst(const std::vector<uint16_t>& ports, std::vector<std::vector<uint8_t>> fs) {
    std::vector<std::unique_ptr<std::vector<uint8_t>>> frames;
    std::vector<PacketIn> in;
    for (size_t i = 0; i < fs.size(); i++) {
      frames.push_back(std::make_unique<std::vector<uint8_t>>(std::move(fs[i])));
      auto& x = *frames.back();
      in.push_back(
          PacketIn{x.data(), static_cast<uint32_t>(x.size()), static_cast<uint32_t>(x.size()), ports[i], false, 0});
      in.back().cookie = &x;
    }
    std::vector<Verdict> v(in.size());
    dp->run(*pl, in.data(), static_cast<uint32_t>(in.size()), now, v.data());
    burst_out.clear();
    for (size_t i = 0; i < in.size(); i++) {
      if (v[i].held) held.push_back({std::move(frames[i]), ports[i]});
      else burst_out.push_back(std::move(*frames[i]));
    }
    drain();
    now += 1'000'000;
    return v;
  }
  std::vector<std::vector<uint8_t>> burst_out;
  // The table's timer, as a worker's expiry slice runs it.
  void expire_fragments() {
    for (uint32_t k = 0; k < FragSlotsToSweep; k++) dp->expire_fragments(now);
    drain();
  }
  struct Out {
    std::vector<uint8_t> frame;
    Verdict v;
  };
  std::vector<Out> released;
  struct Held {
    std::unique_ptr<std::vector<uint8_t>> frame;
    uint16_t port;
  };
  std::vector<Held> held;
  size_t dropped = 0;
  static constexpr uint32_t FragSlotsToSweep = FragTable::kSlots / FragTable::kExpireSlots;

 private:
  Held take(void* cookie) {
    for (auto it = held.begin(); it != held.end(); ++it)
      if (it->frame.get() == cookie) {
        Held h = std::move(*it);
        held.erase(it);
        return h;
      }
    ADD_FAILURE() << "the fragment table gave back a frame it was never given";
    return {};
  }
  void drain() {
    auto& ft = dp->fragments();
    for (const auto& d : ft.dropped())
      if (take(d.cookie).frame) dropped++;
    ft.dropped().clear();
    std::vector<FragTable::Released> rel;
    rel.swap(ft.released());
    for (const auto& r : rel) {
      Held h = take(r.cookie);
      if (!h.frame) continue;
      std::vector<uint8_t>& f = *h.frame;
      PacketIn in{f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), h.port, false, 0};
      in.cookie = &f;
      in.frag = r.note;
      Verdict v;
      dp->run(*pl, &in, 1, now, &v);
      released.push_back({std::move(f), v});
    }
  }

 public:
  std::vector<uint8_t> last;
};

}  // namespace dp
