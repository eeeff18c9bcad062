// `harness run --mode rfc2544`: harness-gen against each DUT over net_memif,
// the DUT's two ports as memif servers and the generator's as clients, the
// same stateful firewall and the same K connections for every DUT.
//
// CPU placement on this 2-core host: the generator on lcore 1; the DUT's
// forwarding (worker, PMD) lcore 0, its main lcore 1 (mostly idle, shared
// with the generator). Printed at the start and in machine.txt.
//
// Each cell: the DUT's tracker flushed; harness-gen sets up K connections
// and holds; the tracker must count K (checked here, before any trial);
// then the search, latency at 10/50/90 %, and churn.
#include "harness/rfc2544.h"
#include "sdn/yaml_load.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "harness/report.h"
#include "harness/results.h"
#include "harness/sweep.h"
#include "testbed/process.h"
#include "testbed/telemetry.h"
#include "testbed/testbed.h"
#include "ovs.h"
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

// Tracker entries a DUT gets: the largest K, the churn's connections (closed
// ones wait out TIME_WAIT in the table) and the sweep's headroom.
long long tracker_room(const Rfc2544Config& c) {
  if (c.tracker_capacity > 0) return c.tracker_capacity;
  long long k = 0;
  for (int x : c.conns) k = std::max<long long>(k, x);
  return k + (c.churn_s > 0 && c.proto == "tcp" ? c.churn_conns : 0) + kRoomHeadroom;
}

// A DUT whose two ports are memif servers on sockets `a` (client side) and
// `b` (server side).
class MemifDut {
 public:
  virtual ~MemifDut() {
    if (proc_.pid() > 0) {
      proc_.signal(SIGTERM);  // a clean stop (testpmd: SIGTERM; the dataplane: ports stopped, socket removed)
      proc_.wait(10s);
      proc_.stop(std::chrono::milliseconds(3000));
    }
    if (!prefix_.empty()) testbed::Testbed::remove_dpdk_prefix(prefix_);
  }
  virtual Status start(const std::string& a, const std::string& b) = 0;
  virtual Status flush() { return {}; }         // forget the last cell's connections
  virtual long long ct_entries() { return -1; }  // -1: no tracker, -2: it did not answer
  virtual std::string version() const = 0;
  // Receive queues the generator needs per port: as many as the DUT sends on.
  virtual int gen_rx_queues() const { return 1; }
  // The DUT's drop counters so far, split in two: frames it dropped itself
  // (`own`: rx misses, its policy, full tables) and its transmits into the
  // generator's receive rings that failed (`gen`: every port of a memif DUT
  // faces the generator, so that is the generator not draining). Differences
  // around a trial say whose loss it was.
  struct Drops {
    long long own = 0, gen = 0;
  };
  virtual Result<Drops> drops() { return Status::error("this DUT's drop counters are not read"); }

 protected:
  Process proc_;
  std::string prefix_;  // its DPDK file prefix
};

class TestpmdMemif final : public MemifDut {
 public:
  TestpmdMemif(std::string dir, std::string mode) : dir_(std::move(dir)), mode_(std::move(mode)) {}
  std::string version() const override { return "dpdk-testpmd " + mode_; }
  Status start(const std::string& a, const std::string& b) override {
    std::string log = dir_ + "/testpmd-" + mode_ + ".log";
    prefix_ = "harness-rfc-tp-" + std::to_string(getpid());
    std::vector<std::string> argv = {"dpdk-testpmd", "-l", "0,1", "--main-lcore", "1", "--no-pci", "--file-prefix",
                                     prefix_, "--vdev",
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
  // ethdev stats over telemetry. memif counts no transmit errors; io
  // forwarding drops only what its transmit refused, so that is what it
  // received and did not send.
  Result<Drops> drops() override {
    Drops d;
    long long in = 0, out = 0;
    for (int port : {0, 1}) {
      auto r = testbed::telemetry_query(prefix_, "/ethdev/stats," + std::to_string(port));
      if (!r) return r.status();
      auto j = nlohmann::json::parse(*r, nullptr, false);
      if (j.is_discarded() || !j.contains("/ethdev/stats")) return Status::error("telemetry: no /ethdev/stats reply");
      const auto& st = j["/ethdev/stats"];
      in += st.value("ipackets", 0ll);
      out += st.value("opackets", 0ll);
      d.own += st.value("imissed", 0ll) + st.value("ierrors", 0ll) + st.value("rx_nombuf", 0ll);
      d.gen += st.value("oerrors", 0ll);
    }
    d.gen += std::max(0ll, in - out);
    return d;
  }

 private:
  std::string dir_, mode_;
};

class DataplaneMemif final : public MemifDut {
 public:
  DataplaneMemif(const Rfc2544Config& c, std::string dir) : cfg_(c), dir_(std::move(dir)) {}
  std::string version() const override { return "dataplane"; }
  Status start(const std::string& a, const std::string& b) override {
    auto loaded = sdn::load_yaml_file(cfg_.dataplane_config);
    if (!loaded) return loaded.status();
    YAML::Node n = *loaded;
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
    if (long long want = tracker_room(cfg_); cap < want || cfg_.tracker_capacity > 0) n["conntrack"]["capacity"] = want;
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
  // tx_full and transmit errors are the generator's; every other reason,
  // and the ports' receive misses and errors, the dataplane's own.
  Result<Drops> drops() override {
    auto r = testbed::telemetry_query(prefix_, "/dataplane/stats");
    if (!r) return r.status();
    auto j = nlohmann::json::parse(*r, nullptr, false);
    if (j.is_discarded() || !j.contains("/dataplane/stats")) return Status::error("telemetry: not the stats reply");
    const auto& st = j["/dataplane/stats"];
    Drops d;
    if (st.contains("drops"))
      for (auto& [k, v] : st["drops"].items())
        if (v.is_number()) (k == "tx_full" ? d.gen : d.own) += v.get<long long>();
    if (st.contains("ports"))
      for (auto& [k, v] : st["ports"].items()) {
        if (!v.is_number()) continue;
        if (k.ends_with("_tx_errors")) d.gen += v.get<long long>();
        else if (k.ends_with("_rx_missed") || k.ends_with("_rx_errors")) d.own += v.get<long long>();
      }
    return d;
  }

 private:
  Rfc2544Config cfg_;
  std::string dir_;
};

// Open vSwitch with DPDK, a netdev bridge whose two type=dpdk ports are
// memif servers, and the same ct() firewall as the sweep's ovs-dpdk. OVS
// gives a port one tx queue per PMD thread plus one (its PMD sends on
// queue 1), so the generator polls two receive queues.
class OvsMemif final : public MemifDut {
 public:
  OvsMemif(const Rfc2544Config& c, std::string dir) : cfg_(c), dir_(std::move(dir)) {}
  std::string version() const override { return util::first_line({"ovs-vswitchd", "--version"}); }
  int gen_rx_queues() const override { return 2; }
  Status start(const std::string& a, const std::string& b) override {
    run_ = dir_ + "/ovs";
    OvsSpec spec;
    spec.run_dir = run_;
    spec.file_prefix = "harness-rfc-ovs-" + std::to_string(getpid());
    // Main thread on core 1, the PMD thread on core 0: the dataplane's placement.
    spec.lcore_mask = "0x2";
    spec.pmd_mask = "0x1";
    spec.dev0 = "net_memif0,role=server,socket=" + a;
    spec.dev1 = "net_memif1,role=server,socket=" + b;
    SDN_TRY(ovs_.start(spec));
    return appctl({"dpctl/ct-set-maxconns", std::to_string(tracker_room(cfg_))});
  }
  Status flush() override { return appctl({"dpctl/flush-conntrack"}); }
  // Per port: transmit failures (into the generator's rings) are the
  // generator's; every other drop, error or miss, and upcalls lost, OVS's.
  Result<Drops> drops() override {
    Drops d;
    std::string out;
    if (Status s = appctl({"dpctl/show"}, &out); !s) return s;
    if (size_t p = out.find("lost:"); p != std::string::npos) d.own += atoll(out.c_str() + p + 5);
    for (const char* port : {"p0", "p1"}) {
      std::map<std::string, long long> m;
      if (Status s = cmd({"ovs-vsctl", "--db=unix:" + run_ + "/db.sock", "get", "Interface", port, "statistics"}, &out);
          !s)
        return s;
      util::ovs_port_drops(port, out, &m);
      const std::string P = std::string(port) + "_";
      const long long fail = m.count(P + "ovs_tx_failure_drops") ? m[P + "ovs_tx_failure_drops"] : m[P + "tx_dropped"];
      d.gen += fail;
      for (const auto& [k, v] : m)
        if (k != P + "ovs_tx_failure_drops" && k.rfind(P + "ovs_", 0) != 0) d.own += v;
      d.own -= fail;  // tx_dropped counts the failures too
    }
    return d;
  }
  long long ct_entries() override {
    std::string out;
    if (!appctl({"dpctl/ct-get-nconns"}, &out)) return -2;
    char* end;
    long long n = strtoll(out.c_str(), &end, 10);
    return end == out.c_str() ? -2 : n;
  }

 private:
  Status cmd(const std::vector<std::string>& argv, std::string* out = nullptr) { return ovs_.cmd(argv, out); }
  Status appctl(std::vector<std::string> args, std::string* out = nullptr) { return ovs_.appctl(std::move(args), out); }
  Rfc2544Config cfg_;
  std::string dir_, run_;
  LocalOvs ovs_;
};

// harness-gen's stderr, a complete line at a time as it grows.
class LogLines {
 public:
  explicit LogLines(std::string path) : path_(std::move(path)) {}
  bool next(std::string* line) {
    size_t nl = buf_.find('\n');
    if (nl == std::string::npos) {
      std::ifstream in(path_);
      in.seekg(static_cast<std::streamoff>(off_));
      std::string more((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      off_ += more.size();
      buf_ += more;
      nl = buf_.find('\n');
      if (nl == std::string::npos) return false;
    }
    *line = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    return true;
  }

 private:
  std::string path_, buf_;
  size_t off_ = 0;
};

// One harness-gen run against sockets a/b; its JSON, or why there is none.
// With a DUT: after the set-up the generator holds, the DUT's tracker must
// count all `conns`, and only then do the trials run; around each trial the
// generator waits while the DUT's drop counters are read (--sync), and is
// told the difference. `drops_why` says why they could not be read, if so.
Result<nlohmann::json> generate(const Rfc2544Config& cfg, const std::string& a, const std::string& b, int frame,
                                int conns, MemifDut* dut, const std::string& raw, long long* ct_seen = nullptr,
                                std::string* drops_why = nullptr) {
  const std::string prefix = "harness-rfc-gen-" + std::to_string(getpid());
  std::vector<std::string> argv = {cfg.build_dir + "/harness/harness-gen", "-l", "1", "--no-pci", "--file-prefix",
                                   prefix, "--log-level", "lib.eal:warning"};
  struct Tidy {  // once the generator is gone, however this returns
    const std::string& prefix;
    ~Tidy() { testbed::Testbed::remove_dpdk_prefix(prefix); }
  } tidy{prefix};
  if (!huge_ok()) argv.insert(argv.end(), {"--no-huge", "-m", "1024"});
  const int setup_s = std::max(60, conns / 5000);
  // Rings of 4096 (rsize=12; the memif client sets them for both sides):
  // what the DUT forwards while the generator is briefly off its core waits
  // there instead of being dropped at the DUT's transmit.
  argv.insert(argv.end(), {"--", "--client", "net_memif0,role=client,rsize=12,socket=" + a, "--server",
                           "net_memif1,role=client,rsize=12,socket=" + b, "--conns", std::to_string(conns), "--frame",
                           std::to_string(frame), "--trial", fmt(cfg.trial_s, 1), "--loss", fmt(cfg.loss, 6),
                           "--setup-timeout", std::to_string(setup_s), "--proto", cfg.proto});
  if (!dut) {
    argv.push_back("--full-rate-only");
  } else {
    argv.insert(argv.end(), {"--hold", "--sync", "--rx-queues", std::to_string(dut->gen_rx_queues())});
    if (cfg.churn_s > 0 && cfg.proto == "tcp")
      argv.insert(argv.end(), {"--churn", fmt(cfg.churn_s, 1), "--churn-conns", std::to_string(cfg.churn_conns)});
  }
  SpawnOptions o;
  o.stdout_path = raw + ".json";
  o.stderr_path = raw + ".err";
  int in[2] = {-1, -1};
  if (dut) {
    if (pipe2(in, O_CLOEXEC) != 0) return Status::error("pipe failed");
    o.stdin_fd = in[0];
  }
  auto p = Process::spawn(argv, o);
  if (in[0] >= 0) close(in[0]);
  if (!p) {
    if (in[1] >= 0) close(in[1]);
    return p.status();
  }
  auto result = [&](Result<int> rc, int budget) -> Result<nlohmann::json> {
    if (!rc) return Status::error("harness-gen did not finish in " + std::to_string(budget) + " s");
    auto j = nlohmann::json::parse(slurp(raw + ".json"), nullptr, false);
    if (j.is_discarded())
      return Status::error("harness-gen exit " + std::to_string(*rc) + ": " + tail(slurp(raw + ".err")));
    if (j.contains("error")) return Status::error("harness-gen: " + j["error"].get<std::string>());
    if (*rc != 0) return Status::error("harness-gen exit status " + std::to_string(*rc));
    return j;
  };
  const int budget = 60 + static_cast<int>(cfg.trial_s * 20 + cfg.churn_s * 3);
  if (!dut) return result(p->wait(std::chrono::seconds(budget)), budget);

  // The conversation. A write to a generator that has gone fails (EPIPE,
  // SIGPIPE ignored) and the wait below reports how it ended.
  auto say = [&](const std::string& line) {
    return in[1] >= 0 && write(in[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
  };
  auto hang_up = [&] {
    if (in[1] >= 0) close(in[1]);
    in[1] = -1;
  };
  LogLines lines(raw + ".err");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(setup_s + 40);
  bool held = false;
  MemifDut::Drops before;
  bool before_ok = false;
  std::string why_not;
  for (;;) {
    std::string l;
    if (!lines.next(&l)) {
      if (!p->running() || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(2ms);
      continue;
    }
    if (l.rfind("harness-gen: set-up done", 0) == 0) {
      held = true;
      const long long ct = dut->ct_entries();
      if (ct_seen) *ct_seen = ct;
      std::string why;
      if (ct == -2) why = "the DUT did not answer for its tracker's count";
      else if (ct >= 0 && ct < conns)
        why = "the DUT's tracker holds " + std::to_string(ct) + " of the " + std::to_string(conns) +
              " connections set up (counted before measuring)";
      if (!why.empty()) {
        say("stop\n");
        hang_up();
        p->wait(10s);
        return Status::error(why);
      }
      if (!say("go\n")) break;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(budget);
    } else if (l.rfind("harness-gen: trial ", 0) == 0 && l.ends_with(" ready")) {
      auto d = dut->drops();
      before_ok = d.ok();
      if (d) before = *d;
      else why_not = d.message();
      if (!say("go\n")) break;
    } else if (l.rfind("harness-gen: trial ", 0) == 0 && l.ends_with(" done")) {
      auto d = dut->drops();
      if (!d) why_not = d.message();
      const bool known = before_ok && d.ok();
      if (!say(known ? "dut " + std::to_string(std::max(0ll, d->own - before.own)) + " " +
                           std::to_string(std::max(0ll, d->gen - before.gen)) + "\n"
                     : std::string("dut unknown\n")))
        break;
    }
  }
  hang_up();
  if (drops_why && !why_not.empty()) *drops_why = why_not;
  auto j = result(p->wait(30s), budget);
  if (!held && j) return Status::error("harness-gen never held after set-up");
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
  out = std::filesystem::absolute(out, ec).lexically_normal().string();  // handed to programs that chdir
  std::filesystem::create_directories(out + "/raw", ec);
  if (ec) return Status::error(out + ": " + ec.message());
  // What killed runs left: their DPDK hugepage files and runtime dirs, and
  // their memif sockets (named by the dead harness's pid).
  if (auto swept = testbed::Testbed::sweep_stale(); !swept)
    fprintf(stderr, "harness: %s\n", swept.message().c_str());
  for (const auto& e : std::filesystem::directory_iterator("/run", ec)) {
    const std::string f = e.path().filename();
    if (f.rfind("harness-memif-", 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(atol(f.c_str() + 14));
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(e.path(), ec);
  }
  // --resume: the cells already in the CSV (same columns) are not measured again.
  std::set<std::string> done;
  const std::string csv = out + "/rfc2544.csv";
  if (cfg.resume && std::filesystem::exists(csv)) {
    std::ifstream in(csv);
    std::string header, want;
    std::getline(in, header);
    for (const auto& c : rfc2544_columns()) want += (want.empty() ? "" : ",") + c;
    if (header != want) return Status::error(csv + ": its columns are not this version's; resume it with the version that began it");
    auto rows = read_csv(csv);
    if (!rows) return rows.status();
    for (auto& r : *rows)
      if (r["proto"] == cfg.proto) done.insert(r["dut"] + "|" + r["frame_bytes"] + "|" + r["conns"] + "|" + r["repeat"]);
    fprintf(stderr, "harness: resuming %s: %zu rows already measured\n", out.c_str(), rows->size());
  }
  auto cell_done = [&](const std::string& d, int f, int k, int round) {
    return done.count(d + "|" + std::to_string(f) + "|" + std::to_string(k) + "|" + std::to_string(round)) > 0;
  };
  auto round_done = [&](const std::string& d, int round) {
    for (int k : cfg.conns)
      for (int f : cfg.frames)
        if (!cell_done(d, f, k, round)) return false;
    return true;
  };
  if (!std::filesystem::exists(out + "/machine.txt")) {
    std::ofstream m(out + "/machine.txt");
    m << "cores: " << std::thread::hardware_concurrency() << "\nkernel: " << util::first_line({"uname", "-r"})
      << "\ndpdk: " << util::first_line({"pkg-config", "--modversion", "libdpdk"})
      << "\novs: " << util::first_line({"ovs-vswitchd", "--version"}) << "\nhugepages: " << (huge_ok() ? "yes" : "no")
      << "\n";
  }
  CsvWriter w, tw;
  if (Status s = w.open(csv, rfc2544_columns()); !s) return s;
  if (Status s = tw.open(out + "/rfc2544-trials.csv", rfc2544_trial_columns()); !s) return s;
  const std::string placement =
      "CPU placement: harness-gen on lcore 1; the DUT's forwarding lcore 0, its main lcore 1 (shared, mostly idle)";
  fprintf(stderr, "harness: %s\n", placement.c_str());
  std::ofstream(out + "/machine.txt", std::ios::app) << placement << "\n";
  auto git = testbed::run_capture({"git", "-C", cfg.source_dir, "rev-parse", "--short", "HEAD"}, nullptr, 10s);
  const std::string rev = git && git->status == 0 ? tail(git->output) : "unknown";
  const std::string a = "/run/harness-memif-" + std::to_string(getpid()) + "-a.sock",
                    b = "/run/harness-memif-" + std::to_string(getpid()) + "-b.sock";
  int errors = 0;
  for (int round = 1; round <= cfg.repeat && !stop; round++) {
    bool all_done = true;
    for (const std::string& d : cfg.duts) all_done = all_done && round_done(d, round);
    if (all_done) continue;
    // The generator's own ceiling per frame size, in every round next to the
    // DUTs (this host's speed drifts): against testpmd rxonly (it drops
    // everything), what the generator offers at full rate.
    std::map<int, std::string> ceiling;
    {
      TestpmdMemif rx(out + "/raw", "rxonly");
      Status s = rx.start(a, b);
      for (int f : cfg.frames) {
        if (!s) {
          ceiling[f] = "unknown: rxonly peer: " + s.message();
          continue;
        }
        auto j = generate(cfg, a, b, f, 1000, nullptr,
                          out + "/raw/ceiling-" + std::to_string(f) + "-r" + std::to_string(round));
        ceiling[f] = j ? fmt((*j)["full_rate"].value("offered_mpps", 0.0)) : "unknown: " + j.message();
      }
    }
    for (const std::string& dname : cfg.duts) {
      if (stop) break;
      if (round_done(dname, round)) continue;
      std::string ddir = out + "/raw/" + dname + "-r" + std::to_string(round);
      std::filesystem::create_directories(ddir, ec);
      std::unique_ptr<MemifDut> dut;
      std::string why;
      if (dname == "testpmd-io") dut = std::make_unique<TestpmdMemif>(ddir, "io");
      else if (dname == "dataplane") dut = std::make_unique<DataplaneMemif>(cfg, ddir);
      else if (dname == "kernel-ct") why = "skipped: the kernel has no DPDK port to attach to memif";
      else if (dname == "ovs-dpdk") dut = std::make_unique<OvsMemif>(cfg, ddir);
      else why = "no memif profile for " + dname;
      if (dut && why.empty())
        if (Status s = dut->start(a, b); !s) why = "start: " + s.message();
      for (int k : cfg.conns)
        for (int f : cfg.frames) {
          if (stop) break;
          if (cell_done(dname, f, k, round)) continue;
          Row r;
          r["timestamp"] = now_iso();
          r["git_rev"] = rev;
          r["dut"] = dname;
          r["dut_version"] = dut ? dut->version() : dname;
          r["frame_bytes"] = std::to_string(f);
          r["conns"] = std::to_string(k);
          r["proto"] = cfg.proto;
          r["repeat"] = std::to_string(round);
          r["generator_ceiling_mpps"] = ceiling[f];
          std::string err = why;
          if (err.empty())
            if (Status s = dut->flush(); !s) err = s.message();
          Result<nlohmann::json> j = Status::error(err);
          long long ct = -1;
          std::string drops_why;
          if (err.empty())
            j = generate(cfg, a, b, f, k, dut.get(), ddir + "/gen-" + std::to_string(k) + "-" + std::to_string(f), &ct,
                         &drops_why);
          if (ct != -1)
            r["ct_entries"] = ct == -2 ? "unavailable: the DUT did not answer" : std::to_string(ct);
          if (!j && dname == "kernel-ct") {
            r["status"] = "skipped";
            r["error"] = j.message();
            w.write(r);
            continue;
          }
          if (!j) {
            r["status"] = "error";
            r["error"] = j.message();
            if (dut && err.empty() && ct == -1) {  // failed before the count: what the DUT holds now
              const long long now_ct = dut->ct_entries();
              if (now_ct >= 0) {
                r["ct_entries"] = std::to_string(now_ct);
                r["error"] += "; the DUT's tracker holds " + std::to_string(now_ct);
              }
            }
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
          r["lost_at_max_to_server"] = std::to_string(g["full_rate"].value("lost_to_server", 0ull));
          r["lost_at_max_to_client"] = std::to_string(g["full_rate"].value("lost_to_client", 0ull));
          r["limited_by"] = g.value("limited_by", "");
          r["retried"] = std::to_string(g.value("retried", 0));
          // A trial's drop counts, or why there are none.
          auto drops = [&](const nlohmann::json& t, const char* key) {
            if (t.contains(key) && t[key].is_number()) return std::to_string(t[key].get<long long>());
            return "unavailable: " + (drops_why.empty() ? std::string("the DUT's counters were not read") : drops_why);
          };
          r["dut_drops_at_max"] = drops(g["full_rate"], "dut_drops");
          r["gen_drops_at_max"] = drops(g["full_rate"], "gen_drops");
          if (g.contains("zero_loss_trial") && g["zero_loss_trial"].is_object()) {
            const auto& z = g["zero_loss_trial"];
            r["zero_loss_trial_lost"] = std::to_string(z.value("lost", 0ll));
            r["zero_loss_trial_dut_drops"] = drops(z, "dut_drops");
            r["zero_loss_trial_gen_drops"] = drops(z, "gen_drops");
          } else {
            for (const char* c : {"zero_loss_trial_lost", "zero_loss_trial_dut_drops", "zero_loss_trial_gen_drops"})
              r[c] = "n/a: no zero-loss rate";
          }
          for (const char* pct : {"10", "50", "90"}) {
            const std::string L = std::string("lat") + pct + "_";
            if (!g.contains("latency_at") || !g["latency_at"].contains(pct)) {
              for (const char* q : {"p50_us", "p99_us", "p999_us", "offered_mpps", "lost"})
                r[L + q] = "n/a: no zero-loss rate to take it at";
              continue;
            }
            const auto& t = g["latency_at"][pct];
            const double target = t.value("target_mpps", 0.0), offered = t.value("offered_mpps", 0.0);
            r[L + "offered_mpps"] = fmt(offered);
            r[L + "lost"] = std::to_string(t.value("lost", 0ll));
            // Latency at a load the generator did not reach is not latency at that load.
            const bool reached = offered >= 0.97 * target;
            for (const char* q : {"p50", "p99", "p999"})
              r[L + q + "_us"] = reached ? fmt(t["latency_us"].value(q, 0.0))
                                         : "n/a: the trial reached " + fmt(offered) + " of " + fmt(target) + " Mpps";
          }
          if (g.contains("trials"))
            for (const auto& t : g["trials"]) {
              Row tr;
              for (const char* c : {"dut", "frame_bytes", "conns", "proto", "repeat"}) tr[c] = r[c];
              tr["trial"] = std::to_string(t.value("id", 0));
              tr["kind"] = t.value("kind", "");
              for (const char* c : {"target_mpps", "offered_mpps", "fwd_mpps"}) tr[c] = fmt(t.value(c, 0.0));
              for (const char* c : {"sent", "received", "lost", "late", "tx_full"}) tr[c] = std::to_string(t.value(c, 0ll));
              tr["dut_drops"] = drops(t, "dut_drops");
              tr["gen_drops"] = drops(t, "gen_drops");
              tr["generator_dropped"] = t.value("generator_dropped", false) ? "yes" : "no";
              tr["drain_ms"] = fmt(t.value("drain_ms", 0.0), 1);
              tw.write(tr);
            }
          r["setup_per_s"] = fmt(g["setup"].value("per_s", 0.0), 0);
          if (g.contains("churn")) {
            const auto& c = g["churn"];
            r["cps_established"] = fmt(c.value("established_per_s", 0.0), 0);
            r["cps_closed"] = fmt(c.value("closed_per_s", 0.0), 0);
            r["cps_failed"] = std::to_string(c.value("failed", 0));
          } else {
            for (const char* c : {"cps_established", "cps_closed", "cps_failed"})
              r[c] = cfg.proto == "udp" ? "n/a: churn opens and closes TCP connections" : "n/a: no churn (--churn 0)";
          }
          if (ct == -1) r["ct_entries"] = "n/a: no tracker";
          r["status"] = "ok";
          if (g.value("zero_loss_mpps", 0.0) <= 0) {
            r["status"] = "error";
            r["error"] = "no rate without loss: every trial lost packets (full rate: " + r["max_fwd_mpps"] + " of " +
                         r["offered_at_max_mpps"] + " Mpps forwarded)";
            errors++;
          }
          w.write(r);
          fprintf(stderr, "harness: %s %d conns %d B: zero-loss %s Mpps, full rate %s Mpps fwd (%s)\n", dname.c_str(), k, f,
                  r["zero_loss_mpps"].c_str(), r["max_fwd_mpps"].c_str(), r["limited_by"].c_str());
        }
    }
  }
  std::filesystem::remove(a, ec);
  std::filesystem::remove(b, ec);
  fprintf(stderr, "harness: results in %s/rfc2544.csv\n", out.c_str());
  if (Status s = write_report(out); !s) fprintf(stderr, "harness: report: %s\n", s.message().c_str());
  else fprintf(stderr, "harness: report in %s/report.md\n", out.c_str());
  return errors;
}

}  // namespace harness
