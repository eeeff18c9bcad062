// `harness run --mode rfc2544`: harness-gen against each DUT over net_memif,
// the DUT's two ports as memif servers and the generator's as clients, the
// same stateful firewall and the same K connections for every DUT.
//
// CPU placement on this 2-core host: the generator on lcore 1; the DUT's
// forwarding (worker, PMD) lcore 0, its main lcore 1 (mostly idle, shared
// with the generator). Printed at the start and in machine.txt.
//
// Each cell: the DUT started afresh; harness-gen sets up K connections and
// holds; the tracker must count K (checked here, before any trial); then the
// search, latency at 10/50/90 %, and churn; the DUT stopped before the
// generator disconnects (DPDK 22.11's memif server unmaps a departing
// client's rings under its polling lcore: testpmd and the dataplane died of
// it between cells).
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

#include "gen/search.h"
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
  return k + (c.churn_s > 0 && c.proto == Proto::kTcp ? c.churn_conns : 0) + kRoomHeadroom;
}

// A DUT on this machine whose two ports are memif servers on sockets `a`
// (client side) and `b` (server side): its main lcore 1 (shared with the
// generator), forwarding on lcore 0.
Result<std::unique_ptr<Dut>> memif_dut(const std::string& name, const Rfc2544Config& c, DutHost& host,
                                       const std::string& dir, const std::string& a, const std::string& b,
                                       const Scenario& scenario = scenario_of(ScenarioKind::kFirewall)) {
  DutSite site;
  site.scenario = &scenario;
  site.host = &host;
  site.ports = {DutPort{Attach::kMemif, a}, DutPort{Attach::kMemif, b}};
  site.main_lcore = 1;
  site.fwd_lcore = 0;
  site.place_dataplane = true;
  site.dir = dir;
  site.prefix_tag = "harness-rfc-";
  site.tracker_room = tracker_room(c);
  site.tracker_room_exact = c.tracker_capacity > 0;
  site.dataplane = c.build_dir + "/dataplane/dataplane";
  site.dataplane_ctl = c.build_dir + "/dataplane/dataplane-ctl";
  site.dataplane_config = scenario.dataplane_config_for(c.dataplane_config, c.source_dir);
  site.source_dir = c.source_dir;
  return make_dut(name, site);
}

// Each DUT session and the generator facing it run in a network namespace
// of their own (memif's sockets are abstract, per namespace): what the DUT
// makes there (OVS's persistent tap ports, the overlay's VTEP address) goes
// with the namespace, never into this host's network or the next DUT's.
struct Netspace {
  std::unique_ptr<testbed::Testbed> tb;
  const testbed::Netns* ns = nullptr;
  Status make() {
    auto t = testbed::Testbed::create();
    if (!t) return t.status();
    tb = std::move(t.value());
    auto n = tb->add_netns("memif");
    if (!n) return Status::error("a namespace for memif: " + n.message());
    ns = *n;
    return {};
  }
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

// " cpu RUN_US WAIT_US": the DUT's forwarding thread's time on a CPU and
// waiting for one since `before` (told to the generator beside the drops:
// it names the machine, not the DUT, as the limit when that thread waited
// for its CPU); "" when either read failed.
std::string cpu_since(Dut& dut, const Result<Dut::CpuTime>& before) {
  auto after = dut.forwarding_cpu();
  if (!after || !before) return "";
  return " cpu " + std::to_string(std::max(0ll, after->run_ns - before->run_ns) / 1000) + " " +
         std::to_string(std::max(0ll, after->wait_ns - before->wait_ns) / 1000);
}

// One harness-gen run against sockets a/b; its JSON, or why there is none.
// With a DUT: after the set-up the generator holds, the DUT's tracker must
// count all `conns`, and only then do the trials run; around each trial the
// generator waits while the DUT's drop counters are read (--sync), and is
// told the difference. `drops_why` says why they could not be read, if so.
Result<nlohmann::json> generate(const Rfc2544Config& cfg, const testbed::Netns* ns, const std::string& a,
                                const std::string& b, int frame,
                                int conns, Dut* dut, const std::string& raw, long long* ct_seen = nullptr,
                                std::string* drops_why = nullptr,
                                const Scenario& scenario = scenario_of(ScenarioKind::kFirewall),
                                const std::function<void()>& release = {}) {
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
                           "--setup-timeout", std::to_string(setup_s), "--proto", std::string(name(cfg.proto)), "--linger"});
  for (const std::string& x : scenario.gen_args()) argv.push_back(x);
  if (!dut) {
    argv.push_back("--full-rate-only");
  } else {
    argv.insert(argv.end(), {"--hold", "--sync", "--rx-queues", std::to_string(dut->gen_rx_queues())});
    if (cfg.churn_s > 0 && cfg.proto == Proto::kTcp)
      argv.insert(argv.end(), {"--churn", fmt(cfg.churn_s, 1), "--churn-conns", std::to_string(cfg.churn_conns)});
  }
  SpawnOptions o;
  o.ns = ns;
  o.stdout_path = raw + ".json";
  o.stderr_path = raw + ".err";
  int in[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0) return Status::error("pipe failed");
  o.stdin_fd = in[0];
  auto p = Process::spawn(argv, o);
  close(in[0]);
  if (!p) {
    close(in[1]);
    return p.status();
  }
  auto result = [&](Result<int> rc, int budget) -> Result<nlohmann::json> {
    if (!rc) return Status::error("harness-gen did not finish in " + std::to_string(budget) + " s");
    auto j = nlohmann::json::parse(slurp(raw + ".json"), nullptr, false);
    if (j.is_discarded())
      return Status::error("harness-gen exit " + std::to_string(*rc) + ": " + tail(slurp(raw + ".err")));
    if (j.contains("error")) {
      std::string why = "harness-gen: " + j["error"].get<std::string>();
      // overlay-nat: what its server side refused says why it saw nothing.
      if (j.contains("overlay") && j["overlay"].is_object())
        for (const auto& [k, v] : j["overlay"].items())
          if (k != "learnt" && v.is_number() && v.get<long long>() > 0)
            why += "; the server side refused " + std::to_string(v.get<long long>()) + " frames as " + k;
      return Status::error(why);
    }
    if (*rc != 0) return Status::error("harness-gen exit status " + std::to_string(*rc));
    return j;
  };
  const int budget = 60 + static_cast<int>(cfg.trial_s * 20 + cfg.churn_s * 3);

  // The conversation. A write to a generator that has gone fails (EPIPE,
  // SIGPIPE ignored) and the wait below reports how it ended.
  auto say = [&](const std::string& line) {
    return in[1] >= 0 && write(in[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
  };
  LogLines lines(raw + ".err");
  // The generator lingers connected once its JSON is out (--linger): the DUT
  // is released (stopped) first, then the generator may go.
  bool finished = false;
  auto hang_up = [&](std::chrono::seconds wait = 10s) {
    if (in[1] < 0) return;
    for (auto until = std::chrono::steady_clock::now() + wait;
         !finished && p->running() && std::chrono::steady_clock::now() < until;) {
      std::string l;
      if (lines.next(&l)) {
        finished = l == "harness-gen: finished";
      } else {
        std::this_thread::sleep_for(2ms);
      }
    }
    if (release) release();
    close(in[1]);
    in[1] = -1;
  };
  if (!dut) {
    hang_up(std::chrono::seconds(budget));
    return result(p->wait(30s), budget);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(setup_s + 40);
  bool held = false;
  Dut::DropSplit before;
  bool before_ok = false;
  Result<Dut::CpuTime> cpu_before = Status::error("not read");
  std::string why_not;
  for (;;) {
    std::string l;
    if (!lines.next(&l)) {
      if (!p->running() || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(2ms);
      continue;
    }
    if (l == "harness-gen: finished") {
      finished = true;
      break;
    }
    if (l.rfind("harness-gen: set-up done", 0) == 0) {
      held = true;
      long long ct = dut->ct_entries();
      if (ct < 0 && dut->no_tracker().empty()) ct = -2;
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
      auto d = dut->drop_split();
      before_ok = d.ok();
      if (d) before = *d;
      else why_not = d.message();
      cpu_before = dut->forwarding_cpu();
      if (!say("go\n")) break;
    } else if (l.rfind("harness-gen: trial ", 0) == 0 && l.ends_with(" done")) {
      auto d = dut->drop_split();
      if (!d) why_not = d.message();
      const bool known = before_ok && d.ok();
      if (!say((known ? "dut " + std::to_string(std::max(0ll, d->own - before.own)) + " " +
                            std::to_string(std::max(0ll, d->gen - before.gen))
                      : std::string("dut unknown")) +
               cpu_since(*dut, cpu_before) + "\n"))
        break;
    }
  }
  hang_up();
  if (drops_why && !why_not.empty()) *drops_why = why_not;
  auto j = result(p->wait(30s), budget);
  if (!held && j) return Status::error("harness-gen never held after set-up");
  return j;
}

// The row's measured columns from harness-gen's JSON, and a trials row per
// trial. `drops_why`: why the DUT's drop counters could not be read, if so.
void fill_from_gen(const Rfc2544Config& cfg, const nlohmann::json& g, const std::string& drops_why, Row& r,
                   CsvWriter& tw) {
    r[Col::zero_loss_mpps] = fmt(g.value("zero_loss_mpps", 0.0));
    r[Col::zero_loss_gbps] = fmt(g.value("zero_loss_gbps", 0.0));
    r[Col::max_fwd_mpps] = fmt(g["full_rate"].value("fwd_mpps", 0.0));
    r[Col::offered_at_max_mpps] = fmt(g["full_rate"].value("offered_mpps", 0.0));
    r[Col::loss_at_max] = fmt(g["full_rate"].value("loss", 0.0), 6);
    r[Col::lost_at_max_to_server] = std::to_string(g["full_rate"].value("lost_to_server", 0ull));
    r[Col::lost_at_max_to_client] = std::to_string(g["full_rate"].value("lost_to_client", 0ull));
    r[Col::limited_by] = g.value("limited_by", "");
    r[Col::retried] = std::to_string(g.value("retried", 0));
    // A trial's drop counts, or why there are none.
    auto drops = [&](const nlohmann::json& t, const char* key) {
      if (t.contains(key) && t[key].is_number()) return std::to_string(t[key].get<long long>());
      return "unavailable: " + (drops_why.empty() ? std::string("the DUT's counters were not read") : drops_why);
    };
    r[Col::dut_drops_at_max] = drops(g["full_rate"], "dut_drops");
    r[Col::gen_drops_at_max] = drops(g["full_rate"], "gen_drops");
    if (g.contains("zero_loss_trial") && g["zero_loss_trial"].is_object()) {
      const auto& z = g["zero_loss_trial"];
      r[Col::zero_loss_trial_lost] = std::to_string(z.value("lost", 0ll));
      r[Col::zero_loss_trial_dut_drops] = drops(z, "dut_drops");
      r[Col::zero_loss_trial_gen_drops] = drops(z, "gen_drops");
    } else {
      for (Col c : {Col::zero_loss_trial_lost, Col::zero_loss_trial_dut_drops, Col::zero_loss_trial_gen_drops})
        r[c] = "n/a: no zero-loss rate";
    }
    for (const char* pct : {"10", "50", "90"}) {
      const std::string L = std::string("lat") + pct + "_";
      if (!g.contains("latency_at") || !g["latency_at"].contains(pct)) {
        for (const char* q : {"p50_us", "p99_us", "p999_us", "offered_mpps", "lost"})
          r[col(L + q)] = "n/a: no zero-loss rate to take it at";
        continue;
      }
      const auto& t = g["latency_at"][pct];
      const double target = t.value("target_mpps", 0.0), offered = t.value("offered_mpps", 0.0);
      r[col(L + "offered_mpps")] = fmt(offered);
      r[col(L + "lost")] = std::to_string(t.value("lost", 0ll));
      // Latency at a load the generator did not reach is not latency at that load.
      const bool reached = offered >= gen::kPacedReached * target;
      for (const char* q : {"p50", "p99", "p999"})
        r[col(L + q + "_us")] = reached ? fmt(t["latency_us"].value(q, 0.0))
                                   : "n/a: the trial reached " + fmt(offered) + " of " + fmt(target) + " Mpps";
    }
    if (g.contains("trials"))
      for (const auto& t : g["trials"]) {
        Row tr;
        for (Col c : {Col::dut, Col::scenario, Col::frame_bytes, Col::conns, Col::proto, Col::repeat}) tr[c] = r[c];
        tr[Col::trial] = std::to_string(t.value("id", 0));
        tr[Col::kind] = t.value("kind", "");
        for (const char* c : {"target_mpps", "offered_mpps", "fwd_mpps"}) tr[col(c)] = fmt(t.value(c, 0.0));
        for (const char* c : {"sent", "received", "lost", "late", "tx_full"}) tr[col(c)] = std::to_string(t.value(c, 0ll));
        tr[Col::dut_drops] = drops(t, "dut_drops");
        tr[Col::gen_drops] = drops(t, "gen_drops");
        tr[Col::generator_dropped] = t.value("generator_dropped", false) ? "yes" : "no";
        tr[Col::drain_ms] = fmt(t.value("drain_ms", 0.0), 1);
        // The share of the trial each side's polling thread waited for a CPU.
        for (auto [c, key] : {std::pair{Col::dut_cpu_wait_pct, "dut_cpu_wait"}, std::pair{Col::gen_cpu_wait_pct, "gen_cpu_wait"}})
          tr[c] = t.contains(key) && t[key].is_number() ? fmt(100 * t[key].get<double>(), 1)
                                                         : std::string("unavailable: not read");
        tw.write(tr);
      }
    r[Col::setup_per_s] = fmt(g["setup"].value("per_s", 0.0), 0);
    if (g.contains("churn")) {
      const auto& c = g["churn"];
      r[Col::cps_established] = fmt(c.value("established_per_s", 0.0), 0);
      r[Col::cps_closed] = fmt(c.value("closed_per_s", 0.0), 0);
      r[Col::cps_failed] = std::to_string(c.value("failed", 0));
    } else {
      for (Col c : {Col::cps_established, Col::cps_closed, Col::cps_failed})
        r[c] = cfg.proto == Proto::kUdp ? "n/a: churn opens and closes TCP connections" : "n/a: no churn (--churn 0)";
    }
}

// The run directory (absolute: handed to programs that chdir), and what
// killed runs left: their DPDK hugepage files, runtime dirs and the
// dataplane's control sockets and locks, the sysctls they raised
// (sweep_dead_runs), and their memif sockets (named by the dead harness's pid).
Result<std::string> prepare_out_dir(const Rfc2544Config& cfg) {
  std::string out = cfg.out_dir;
  if (out.empty()) {
    char b[32];
    time_t t = time(nullptr);
    strftime(b, sizeof b, "%Y%m%d-%H%M%S", gmtime(&t));
    out = cfg.source_dir + "/results/runs/rfc2544-" + b;
  }
  std::error_code ec;
  out = std::filesystem::absolute(out, ec).lexically_normal().string();
  std::filesystem::create_directories(out + "/raw", ec);
  if (ec) return Status::error(out + ": " + ec.message());
  if (auto swept = sweep_dead_runs(); !swept)
    fprintf(stderr, "harness: %s\n", swept.message().c_str());
  for (const auto& e : std::filesystem::directory_iterator("/run", ec)) {
    const std::string f = e.path().filename();
    if (f.rfind("harness-memif-", 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(atol(f.c_str() + 14));
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(e.path(), ec);
  }
  return out;
}

// --resume: the cells already in the CSV (same columns), as dut|scenario|frame|conns|repeat.
Status cells_done(const Rfc2544Config& cfg, const std::string& csv, std::set<std::string>* done) {
  if (!cfg.resume || !std::filesystem::exists(csv)) return {};
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  if (header != csv_header(rfc2544_columns())) return Status::error(csv + ": its columns are not this version's; resume it with the version that began it");
  auto rows = read_csv(csv);
  if (!rows) return rows.status();
  for (auto& r : *rows)
    if (r[Col::proto] == name(cfg.proto))
      done->insert(r[Col::dut] + "|" + r[Col::scenario] + "|" + r[Col::frame_bytes] + "|" + r[Col::conns] + "|" +
                   r[Col::repeat]);
  fprintf(stderr, "harness: resuming %s: %zu rows already measured\n", csv.c_str(), rows->size());
  return {};
}

// The generator's own ceiling per frame size, in every round next to the
// DUTs (this host's speed drifts): against testpmd rxonly (it drops
// everything), what the generator offers at full rate.
std::map<int, std::string> generator_ceilings(const Rfc2544Config& cfg, const testbed::Netns* ns, const std::string& out,
                                              const std::string& a,
                                              const std::string& b, int round) {
  std::map<int, std::string> ceiling;
  auto host = local_host(ns, out + "/raw");
  for (int f : cfg.frames) {  // a peer per frame size: it goes before the generator (--linger)
    auto rx = memif_dut(std::string(name(DutKind::kTestpmdRxonly)), cfg, *host, out + "/raw", a, b);
    if (Status s = rx ? (*rx)->start() : rx.status(); !s) {
      ceiling[f] = "unknown: rxonly peer: " + s.message();
      continue;
    }
    auto j = generate(cfg, ns, a, b, f, 1000, nullptr, out + "/raw/ceiling-" + std::to_string(f) + "-r" + std::to_string(round),
                      nullptr, nullptr, scenario_of(ScenarioKind::kFirewall), [&] { (*rx)->stop(); });
    ceiling[f] = j ? fmt((*j)["full_rate"].value("offered_mpps", 0.0)) : "unknown: " + j.message();
  }
  return ceiling;
}

}  // namespace

Result<int> run_rfc2544(const Rfc2544Config& cfg, const std::atomic<bool>& stop) {
  auto prepared = prepare_out_dir(cfg);
  if (!prepared) return prepared.status();
  const std::string out = *prepared;
  std::error_code ec;
  std::set<std::string> done;
  const std::string csv = out + "/rfc2544.csv";
  SDN_TRY(cells_done(cfg, csv, &done));
  auto cell_done = [&](const std::string& d, const std::string& sc, int f, int k, int round) {
    return done.count(d + "|" + sc + "|" + std::to_string(f) + "|" + std::to_string(k) + "|" + std::to_string(round)) > 0;
  };
  auto round_done = [&](const std::string& d, const std::string& sc, int round) {
    for (int k : cfg.conns)
      for (int f : cfg.frames)
        if (!cell_done(d, sc, f, k, round)) return false;
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
    for (ScenarioKind sc : cfg.scenarios)
      for (const std::string& d : cfg.duts) all_done = all_done && round_done(d, std::string(name(sc)), round);
    if (all_done) continue;
    std::map<int, std::string> ceiling;
    {
      Netspace sp;
      if (Status st = sp.make(); !st) return st;
      ceiling = generator_ceilings(cfg, sp.ns, out, a, b, round);
    }
    for (ScenarioKind kind : cfg.scenarios)
    for (const std::string& dname : cfg.duts) {
      const Scenario& scenario = scenario_of(kind, cfg.tunnel);
      const std::string sc(scenario.name());
      if (stop) break;
      if (round_done(dname, sc, round)) continue;
      for (int k : cfg.conns)
        for (int f : cfg.frames) {
          if (stop) break;
          if (cell_done(dname, sc, f, k, round)) continue;
          // A DUT of its own per cell, stopped before its generator lets go
          // of the memif rings (harness-gen --linger).
          const std::string ddir = out + "/raw/" + dname + scenario.dir_suffix() + "-r" +
                                   std::to_string(round) + "/" + std::to_string(k) + "-" + std::to_string(f);
          Netspace sp;  // before the DUT: it goes after the DUT stopped
          if (Status st = sp.make(); !st) return st;
          const testbed::Netns* ns = sp.ns;
          std::filesystem::create_directories(ddir, ec);
          auto host = local_host(ns, ddir);
          std::unique_ptr<Dut> dut;
          std::string why;
          if (auto d = memif_dut(dname, cfg, *host, ddir, a, b, scenario); !d)
            why = d.message();
          else if (Status s = (dut = std::move(d.value()))->start(); !s)
            why = "start: " + s.message();
          Row r;
          r[Col::timestamp] = now_iso();
          r[Col::git_rev] = rev;
          r[Col::dut] = dname;
          r[Col::dut_version] = dut ? dut->version() : dname;
          r[Col::scenario] = sc;
          r[Col::overlay_check] = scenario.no_check();
          r[Col::frame_bytes] = std::to_string(f);
          r[Col::conns] = std::to_string(k);
          r[Col::proto] = name(cfg.proto);
          r[Col::repeat] = std::to_string(round);
          r[Col::generator_ceiling_mpps] = ceiling[f];
          Result<nlohmann::json> j = Status::error(why);
          long long ct = -1, ct_at_end = -1;
          std::string drops_why, died;
          if (why.empty())
            j = generate(cfg, ns, a, b, f, k, dut.get(), ddir + "/gen", &ct, &drops_why, scenario, [&] {
              if (Status alive = dut->alive(); !alive) died = "the DUT died during the cell: " + alive.message();
              else if (ct == -1) ct_at_end = dut->ct_entries();
              dut->stop();
            });
          if (dut) dut->stop();
          if (!died.empty()) j = Status::error(j ? died : died + "; then harness-gen: " + j.message());
          if (ct != -1)
            r[Col::ct_entries] = ct == -2 ? "unavailable: the DUT did not answer" : std::to_string(ct);
          // A DUT that cannot attach memif ports (kernel-ct) is skipped, not an error.
          if (!j && !(find_dut(dname)->attaches & bit(Attach::kMemif))) {
            r[Col::status] = "skipped";
            r[Col::error] = j.message();
            w.write(r);
            continue;
          }
          if (!j) {
            r[Col::status] = "error";
            r[Col::error] = j.message();
            if (ct_at_end >= 0) {  // failed before the count: what the DUT held at the end
              r[Col::ct_entries] = std::to_string(ct_at_end);
              r[Col::error] += "; the DUT's tracker holds " + std::to_string(ct_at_end);
            }
            errors++;
            w.write(r);
            fprintf(stderr, "harness: %s %d conns %d B: error: %s\n", dname.c_str(), k, f, r[Col::error].c_str());
            continue;
          }
          const auto& g = *j;
          fill_from_gen(cfg, g, drops_why, r, tw);
          scenario.check_gen(g, k, r);
          if (ct == -1) r[Col::ct_entries] = "n/a: no tracker";
          r[Col::status] = "ok";
          if (r[Col::overlay_check].rfind("error", 0) == 0) {
            r[Col::status] = "error";
            r[Col::error] = "overlay-nat check: " + r[Col::overlay_check];
            errors++;
            w.write(r);
            fprintf(stderr, "harness: %s %s %d conns %d B: error: %s\n", dname.c_str(), sc.c_str(), k, f,
                    r[Col::error].c_str());
            continue;
          }
          if (g.value("zero_loss_mpps", 0.0) <= 0) {
            r[Col::status] = "error";
            r[Col::error] = "no rate without loss: every trial lost packets (full rate: " + r[Col::max_fwd_mpps] + " of " +
                         r[Col::offered_at_max_mpps] + " Mpps forwarded)";
            errors++;
            fprintf(stderr, "harness: %s %d conns %d B: error: %s\n", dname.c_str(), k, f, r[Col::error].c_str());
          }
          w.write(r);
          fprintf(stderr, "harness: %s %d conns %d B: zero-loss %s Mpps, full rate %s Mpps fwd (%s)\n", dname.c_str(), k, f,
                  r[Col::zero_loss_mpps].c_str(), r[Col::max_fwd_mpps].c_str(), r[Col::limited_by].c_str());
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
