// The sweep's YAML config (configs/harness/*.yaml) and its checks.
#include <algorithm>

#include "harness/sweep.h"
#include "sdn/number.h"
#include "sdn/yaml_load.h"

#include <arpa/inet.h>
#include <signal.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "harness/preconditions.h"
#include "harness/tools.h"
#include "util.h"

#include <nlohmann/json.hpp>

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using testbed::Process;
using harness::Job;
using testbed::SpawnOptions;

// ------------------------------------------------------------------ config

Status load_sweep_config(const std::string& path, SweepConfig* c) {
  auto loaded = sdn::load_yaml_file(path);
  if (!loaded) return loaded.status();
  YAML::Node n = *loaded;
  auto err = [&](const YAML::Node& at, const std::string& key, const std::string& msg) {
    return Status::error(path + ":" + std::to_string(at.Mark().line + 1) + ": key '" + key + "': " + msg);
  };
  if (!n.IsMap()) return Status::error(path + ":1: expected a mapping");
  // One scalar as a number (sdn/number.h: decimal, finite, in range).
  auto number = [&](const YAML::Node& x, const std::string& key, bool integer, double lo, double hi,
                    double* out) -> Status {
    if (!x.IsScalar()) return err(x, key, "expected a number");
    if (Status s = sdn::parse_number(x.Scalar(), integer, lo, hi, out); !s) return err(x, key, s.message());
    return {};
  };
  static const std::set<std::string> known = {"instances", "sizes", "protos", "duts", "duration_s", "repeat",
                                              "warmup_s", "sockperf", "background_conns", "mtu", "dataplane_config",
                                              "out_dir", "interleave", "omit_s", "rfc2544", "segmentation"};
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (!known.count(k)) return err(it->first, k, "unknown key");
  }
  auto ints = [&](const char* key, std::vector<int>* out, int lo, int hi) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    if (!v.IsSequence() || v.size() == 0) return err(v, key, "expected a non-empty list of numbers");
    out->clear();
    for (const auto& x : v) {
      double d;
      if (Status s = number(x, key, true, lo, hi, &d); !s) return s;
      out->push_back(static_cast<int>(d));
    }
    return {};
  };
  auto strs = [&](const char* key, std::vector<std::string>* out, const std::set<std::string>& allowed) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    if (!v.IsSequence() || v.size() == 0) return err(v, key, "expected a non-empty list");
    out->clear();
    for (const auto& x : v) {
      std::string s = x.Scalar();
      if (!allowed.count(s)) return err(x, key, "unknown value '" + s + "'");
      out->push_back(s);
    }
    return {};
  };
  auto one = [&](const char* key, int* out, int lo, int hi) -> Status {
    YAML::Node v = n[key];
    if (!v) return {};
    double d;
    if (Status s = number(v, key, true, lo, hi, &d); !s) return s;
    *out = static_cast<int>(d);
    return {};
  };
  auto protos = [&]() -> Status {
    YAML::Node v = n["protos"];
    if (!v) return {};
    if (!v.IsSequence() || v.size() == 0) return err(v, "protos", "expected a non-empty list");
    std::vector<Proto> out;
    for (const auto& x : v) {
      const std::optional<Proto> p = x.IsScalar() ? parse_proto(x.Scalar()) : std::nullopt;
      if (!p) return err(x, "protos", "unknown value '" + (x.IsScalar() ? x.Scalar() : std::string("?")) +
                                          "' (one of: " + accepted(proto_names()) + ")");
      out.push_back(*p);
    }
    c->protos = std::move(out);
    return {};
  };
  const std::vector<std::string> known_duts = dut_names();
  const std::set<std::string> duts(known_duts.begin(), known_duts.end());
  if (Status s = ints("instances", &c->instances, kInstancesLimit.lo, kInstancesLimit.hi); !s) return s;
  if (Status s = ints("sizes", &c->sizes, kSizesLimit.lo, kSizesLimit.hi); !s) return s;
  if (Status s = protos(); !s) return s;
  if (Status s = strs("duts", &c->duts, duts); !s) return s;
  if (Status s = one("duration_s", &c->duration_s, kDurationLimit.lo, kDurationLimit.hi); !s) return s;
  if (Status s = one("repeat", &c->repeat, kRepeatLimit.lo, kRepeatLimit.hi); !s) return s;
  if (Status s = one("warmup_s", &c->warmup_s, kWarmupLimit.lo, kWarmupLimit.hi); !s) return s;
  if (Status s = one("omit_s", &c->omit_s, kOmitLimit.lo, kOmitLimit.hi); !s) return s;
  if (Status s = one("background_conns", &c->background_conns, kBackgroundLimit.lo, kBackgroundLimit.hi); !s) return s;
  if (Status s = one("mtu", &c->mtu, kMtuLimit.lo, kMtuLimit.hi); !s) return s;
  for (auto [key, out] : {std::pair<const char*, bool*>{"sockperf", &c->sockperf}, {"interleave", &c->interleave}}) {
    if (YAML::Node v = n[key]) {
      std::string s = v.Scalar();
      if (s != "true" && s != "false") return err(v, key, "expected true or false");
      *out = s == "true";
    }
  }
  if (YAML::Node v = n["dataplane_config"]) c->dataplane_config = v.Scalar();
  if (YAML::Node v = n["out_dir"]) c->out_dir = v.Scalar();
  if (YAML::Node v = n["segmentation"]) {
    auto seg = v.IsScalar() ? parse_segmentation(v.Scalar()) : std::nullopt;
    if (!seg) return err(v, "segmentation", "expected wire or host");
    c->segmentation = *seg;
  }
  if (YAML::Node r = n["rfc2544"]) {
    if (!r.IsMap()) return err(r, "rfc2544", "expected a mapping (frame_sizes, conns, duts, trial_s, ...)");
    static const std::set<std::string> rknown = {"frame_sizes", "conns", "duts", "trial_s", "loss", "churn_s",
                                                 "churn_conns", "repeat", "proto"};
    for (auto it = r.begin(); it != r.end(); ++it)
      if (std::string k = it->first.as<std::string>(); !rknown.count(k)) return err(it->first, "rfc2544." + k, "unknown key");
    Rfc2544Config& rc = c->rfc;
    for (auto [key, out, lo, hi] : {std::tuple<const char*, std::vector<int>*, int, int>{"frame_sizes", &rc.frames, 64, 1518},
                                    {"conns", &rc.conns, 1, 10000000}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      if (!v.IsSequence() || v.size() == 0) return err(v, std::string("rfc2544.") + key, "expected a non-empty list of numbers");
      out->clear();
      for (const auto& x : v) {
        double d;
        if (Status s = number(x, std::string("rfc2544.") + key, true, lo, hi, &d); !s) return s;
        out->push_back(static_cast<int>(d));
      }
    }
    if (YAML::Node v = r["duts"]) {
      if (!v.IsSequence() || v.size() == 0) return err(v, "rfc2544.duts", "expected a non-empty list");
      rc.duts.clear();
      for (const auto& x : v) {
        if (!duts.count(x.Scalar())) return err(x, "rfc2544.duts", "unknown value '" + x.Scalar() + "'");
        rc.duts.push_back(x.Scalar());
      }
    }
    for (auto [key, out, lo, hi] : {std::tuple<const char*, double*, double, double>{"trial_s", &rc.trial_s, 0.1, 600},
                                    {"loss", &rc.loss, 0, 1}, {"churn_s", &rc.churn_s, 0, 600}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      if (Status s = number(v, std::string("rfc2544.") + key, false, lo, hi, out); !s) return s;
    }
    for (auto [key, out, lo, hi] : {std::tuple<const char*, int*, int, int>{"churn_conns", &rc.churn_conns, 1, 10000000},
                                    {"repeat", &rc.repeat, 1, 100}}) {
      YAML::Node v = r[key];
      if (!v) continue;
      double d;
      if (Status s = number(v, std::string("rfc2544.") + key, true, lo, hi, &d); !s) return s;
      *out = static_cast<int>(d);
    }
    if (YAML::Node v = r["proto"]) {
      const std::optional<Proto> p = v.IsScalar() ? parse_proto(v.Scalar()) : std::nullopt;
      if (!p) return err(v, "rfc2544.proto", "want tcp or udp");
      rc.proto = *p;
    }
    c->rfc2544 = true;
  }
  return {};
}

}  // namespace harness
