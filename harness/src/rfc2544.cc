// `harness run --mode rfc2544`: harness-gen against each DUT over net_memif,
// the DUT's two ports as memif servers and the generator's as clients, the
// same stateful firewall and the same K connections for every DUT.
//
// CPU placement on this 2-core host: the generator on lcore 1; the DUT's
// forwarding (worker) lcore 0, its main lcore 1 (mostly idle, shared with
// the generator). Printed at the start and in machine.txt.
#include "harness/rfc2544.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "harness/results.h"
#include "harness/sweep.h"
#include "testbed/process.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;
using testbed::Process;
using testbed::SpawnOptions;
using util::fmt;
using util::huge_ok;
using util::now_iso;
using util::slurp;
using util::tail;
using util::wait_for_log;

namespace {

// A DUT whose two ports are memif servers on sockets `a` (client side) and
// `b` (server side).
class MemifDut {
 public:
  virtual ~MemifDut() { proc_.stop(std::chrono::milliseconds(3000)); }
  virtual Status start(const std::string& a, const std::string& b) = 0;
  virtual Status flush() { return {}; }         // forget the last cell's connections
  virtual long long ct_entries() { return -1; }  // -1: no tracker
  virtual std::string version() const = 0;

 protected:
  Process proc_;
};

class TestpmdMemif final : public MemifDut {
 public:
  TestpmdMemif(std::string dir, std::string mode) : dir_(std::move(dir)), mode_(std::move(mode)) {}
  std::string version() const override { return "dpdk-testpmd " + mode_; }
  Status start(const std::string& a, const std::string& b) override {
    std::string log = dir_ + "/testpmd-" + mode_ + ".log";
    std::vector<std::string> argv = {"dpdk-testpmd", "-l", "0,1", "--main-lcore", "1", "--no-pci", "--file-prefix",
                                     "harness-rfc-tp-" + std::to_string(getpid()), "--vdev",
                                     "net_memif0,role=server,socket=" + a, "--vdev", "net_memif1,role=server,socket=" + b};
    if (!huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
    argv.insert(argv.end(), {"--", "--forward-mode=" + mode_, "--auto-start", "--nb-cores=1", "--stats-period", "60"});
    SpawnOptions o;
    o.stdout_path = log;
    o.stderr_path = "=stdout";
    auto p = Process::spawn(argv, o);
    if (!p) return p.status();
    proc_ = std::move(p.value());
    return wait_for_log(proc_, log, "packet forwarding - ports=", 30s);
  }

 private:
  std::string dir_, mode_;
};

class DataplaneMemif final : public MemifDut {
 public:
  DataplaneMemif(const Rfc2544Config& c, std::string dir) : cfg_(c), dir_(std::move(dir)) {}
  std::string version() const override { return "dataplane"; }
  Status start(const std::string& a, const std::string& b) override {
    YAML::Node n;
    try {
      n = YAML::LoadFile(cfg_.dataplane_config);
    } catch (const YAML::Exception& e) {
      return Status::error(cfg_.dataplane_config + ": " + e.what());
    }
    if (!n["ports"] || !n["ports"].IsSequence() || n["ports"].size() != 2)
      return Status::error(cfg_.dataplane_config + ": needs exactly two ports (client side, server side)");
    n["ports"][0]["devargs"] = "net_memif0,role=server,socket=" + a;
    n["ports"][1]["devargs"] = "net_memif1,role=server,socket=" + b;
    prefix_ = "harness-rfc-dp-" + std::to_string(getpid());
    n["eal"]["file_prefix"] = prefix_;
    if (!huge_ok()) n["eal"]["no_huge"] = true;
    n["workers"]["main_lcore"] = 1;
    YAML::Node lc;
    lc.push_back(0);
    n["workers"]["lcores"] = lc;
    long long cap = n["conntrack"]["capacity"] ? n["conntrack"]["capacity"].as<long long>() : 0;
    long long want = 0;
    for (int k : cfg_.conns) want = std::max<long long>(want, k + kRoomHeadroom);
    if (cap < want) n["conntrack"]["capacity"] = want;
    std::string path = dir_ + "/dataplane-memif.yaml", log = dir_ + "/dataplane.log";
    YAML::Emitter e;
    e << n;
    std::ofstream(path) << e.c_str() << "\n";
    SpawnOptions o;
    o.stdout_path = log;
    o.stderr_path = "=stdout";
    auto p = Process::spawn({cfg_.build_dir + "/dataplane/dataplane", "--config", path}, o);
    if (!p) return p.status();
    proc_ = std::move(p.value());
    return wait_for_log(proc_, log, "dataplane: running", 30s);
  }
  Status flush() override {
    auto r = testbed::run_capture({cfg_.build_dir + "/dataplane/dataplane-ctl", "--prefix", prefix_, "ct", "flush"},
                                  nullptr, 30s);
    if (!r || r->status != 0) return Status::error("ct flush: " + (r ? r->output : r.message()));
    return {};
  }
  long long ct_entries() override {
    auto r = testbed::run_capture({cfg_.build_dir + "/dataplane/dataplane-ctl", "--prefix", prefix_, "stats"}, nullptr,
                                  30s);
    if (!r || r->status != 0) return -2;
    size_t at = r->output.find(" active=");
    return at == std::string::npos ? -2 : atoll(r->output.c_str() + at + 8);
  }

 private:
  Rfc2544Config cfg_;
  std::string dir_, prefix_;
};

// One harness-gen run against sockets a/b; its JSON, or why there is none.
Result<nlohmann::json> generate(const Rfc2544Config& cfg, const std::string& a, const std::string& b, int frame,
                                int conns, bool ceiling, const std::string& raw) {
  std::vector<std::string> argv = {cfg.build_dir + "/harness/harness-gen", "-l", "1", "--no-pci", "--file-prefix",
                                   "harness-rfc-gen-" + std::to_string(getpid()), "--log-level", "lib.eal:warning"};
  if (!huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
  argv.insert(argv.end(), {"--", "--client", "net_memif0,role=client,socket=" + a, "--server",
                           "net_memif1,role=client,socket=" + b, "--conns", std::to_string(conns), "--frame",
                           std::to_string(frame), "--trial", fmt(cfg.trial_s, 1), "--loss", fmt(cfg.loss, 6)});
  if (ceiling) argv.insert(argv.end(), {"--full-rate-only"});
  SpawnOptions o;
  o.stdout_path = raw + ".json";
  o.stderr_path = raw + ".err";
  auto p = Process::spawn(argv, o);
  if (!p) return p.status();
  const int budget = 60 + static_cast<int>(cfg.trial_s * 20) + conns / 2000;
  auto rc = p->wait(std::chrono::seconds(budget));
  if (!rc) return Status::error("harness-gen did not finish in " + std::to_string(budget) + " s");
  auto j = nlohmann::json::parse(slurp(raw + ".json"), nullptr, false);
  if (j.is_discarded()) return Status::error("harness-gen exit " + std::to_string(*rc) + ": " + tail(slurp(raw + ".err")));
  if (j.contains("error")) return Status::error("harness-gen: " + j["error"].get<std::string>());
  if (*rc != 0) return Status::error("harness-gen exit status " + std::to_string(*rc));
  return j;
}

}  // namespace

Result<int> run_rfc2544(const Rfc2544Config& cfg, const std::atomic<bool>& stop) {
  std::string out = cfg.out_dir;
  if (out.empty()) {
    char b[32];
    time_t t = time(nullptr);
    strftime(b, sizeof b, "%Y%m%d-%H%M%S", gmtime(&t));
    out = cfg.source_dir + "/results/runs/rfc2544-" + b;
  }
  std::error_code ec;
  std::filesystem::create_directories(out + "/raw", ec);
  if (ec) return Status::error(out + ": " + ec.message());
  CsvWriter w;
  if (Status s = w.open(out + "/rfc2544.csv", rfc2544_columns()); !s) return s;
  const std::string placement =
      "CPU placement: harness-gen on lcore 1; the DUT's forwarding lcore 0, its main lcore 1 (shared, mostly idle)";
  fprintf(stderr, "harness: %s\n", placement.c_str());
  std::ofstream(out + "/machine.txt", std::ios::app) << placement << "\n";
  auto git = testbed::run_capture({"git", "-C", cfg.source_dir, "rev-parse", "--short", "HEAD"}, nullptr, 10s);
  const std::string rev = git && git->status == 0 ? tail(git->output) : "unknown";
  const std::string a = "/run/harness-memif-" + std::to_string(getpid()) + "-a.sock",
                    b = "/run/harness-memif-" + std::to_string(getpid()) + "-b.sock";
  int errors = 0;
  // The generator's own ceiling per frame size: against testpmd rxonly (it
  // drops everything), what the generator offers at full rate.
  std::map<int, std::string> ceiling;
  {
    TestpmdMemif rx(out + "/raw", "rxonly");
    Status s = rx.start(a, b);
    for (int f : cfg.frames) {
      if (!s) {
        ceiling[f] = "unknown: rxonly peer: " + s.message();
        continue;
      }
      auto j = generate(cfg, a, b, f, 1000, true, out + "/raw/ceiling-" + std::to_string(f));
      ceiling[f] = j ? fmt((*j)["full_rate"].value("offered_mpps", 0.0)) : "unknown: " + j.message();
    }
  }
  for (int round = 1; round <= cfg.repeat && !stop; round++) {
    for (const std::string& dname : cfg.duts) {
      if (stop) break;
      std::string ddir = out + "/raw/" + dname + "-r" + std::to_string(round);
      std::filesystem::create_directories(ddir, ec);
      std::unique_ptr<MemifDut> dut;
      std::string why;
      if (dname == "testpmd-io") dut = std::make_unique<TestpmdMemif>(ddir, "io");
      else if (dname == "dataplane") dut = std::make_unique<DataplaneMemif>(cfg, ddir);
      else if (dname == "kernel-ct") why = "skipped: the kernel has no DPDK port to attach to memif";
      else if (dname == "ovs-dpdk")
        why = "not yet: OVS-DPDK 3.1 uses n_pmd+1 tx queues on a memif port and the generator has one queue pair "
              "(its sends were all tx failures in a first try); the fix is matching queue pairs or vhost-user ports";
      else why = "no memif profile for " + dname;
      if (dut && why.empty())
        if (Status s = dut->start(a, b); !s) why = "start: " + s.message();
      for (int k : cfg.conns)
        for (int f : cfg.frames) {
          if (stop) break;
          Row r;
          r["timestamp"] = now_iso();
          r["git_rev"] = rev;
          r["dut"] = dname;
          r["dut_version"] = dut ? dut->version() : dname;
          r["frame_bytes"] = std::to_string(f);
          r["conns"] = std::to_string(k);
          r["repeat"] = std::to_string(round);
          r["generator_ceiling_mpps"] = ceiling[f];
          std::string err = why;
          if (err.empty())
            if (Status s = dut->flush(); !s) err = s.message();
          Result<nlohmann::json> j = Status::error(err);
          if (err.empty()) j = generate(cfg, a, b, f, k, false, ddir + "/gen-" + std::to_string(k) + "-" + std::to_string(f));
          if (!j) {
            r["status"] = "error";
            r["error"] = j.message();
            errors++;
            w.write(r);
            continue;
          }
          const auto& g = *j;
          r["zero_loss_mpps"] = fmt(g.value("zero_loss_mpps", 0.0));
          r["zero_loss_gbps"] = fmt(g.value("zero_loss_gbps", 0.0));
          r["max_fwd_mpps"] = fmt(g["full_rate"].value("fwd_mpps", 0.0));
          r["offered_at_max_mpps"] = fmt(g["full_rate"].value("offered_mpps", 0.0));
          r["loss_at_max"] = fmt(g["full_rate"].value("loss", 0.0), 6);
          r["limited_by"] = g.value("limited_by", "");
          for (const char* pct : {"10", "50", "90"})
            for (const char* q : {"p50", "p99", "p999"}) {
              std::string col = std::string("lat") + pct + "_" + q + "_us";
              if (g.contains("latency_at") && g["latency_at"].contains(pct))
                r[col] = fmt(g["latency_at"][pct]["latency_us"].value(q, 0.0));
              else
                r[col] = "n/a: no zero-loss rate to take it at";
            }
          r["cps_established"] = fmt(g["setup"].value("per_s", 0.0), 0);
          long long ct = dut->ct_entries();
          r["ct_entries"] = ct == -1 ? "n/a: no tracker" : ct < 0 ? "unavailable: the DUT did not answer" : std::to_string(ct);
          r["status"] = "ok";
          if (ct >= 0 && ct < k) {
            r["status"] = "error";
            r["error"] = "the tracker holds " + std::to_string(ct) + " of the " + std::to_string(k) + " connections";
            errors++;
          }
          w.write(r);
          fprintf(stderr, "harness: %s %d conns %d B: zero-loss %s Mpps, full rate %s Mpps fwd (%s)\n", dname.c_str(), k, f,
                  r["zero_loss_mpps"].c_str(), r["max_fwd_mpps"].c_str(), r["limited_by"].c_str());
        }
    }
  }
  fprintf(stderr, "harness: results in %s/rfc2544.csv\n", out.c_str());
  return errors;
}

}  // namespace harness
