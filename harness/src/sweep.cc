// The sweep runner: a run directory, each DUT in a session (DutSession),
// its cells and their summary rows.
#include "harness/sweep.h"
#include "traffic.h"
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

using util::fmt;
using util::now_iso;

namespace {

// What one sweep shares across its DUTs and cells.
struct SweepRun {
  SweepRun(const SweepConfig& c, const std::atomic<bool>& s) : cfg(c), stop(s) {}
  const SweepConfig& cfg;
  const std::atomic<bool>& stop;
  std::string out, raw, csv;
  std::string run_id;  // names this run's processes on remote hosts (SSH transport)
  std::string git;
  std::set<std::string> done;  // "cell|repeat" already in the CSV (resume)
  std::map<std::string, std::vector<Row>> cell_reps;  // repetitions so far per cell, across rounds
  CsvWriter w;
  Progress prog;
  int errors = 0;
  int max_inst = 0;
  bool endpoints_described = false;

  bool measured(const Row& base, const std::string& rep) const { return done.count(cell_key(base) + "|" + rep) > 0; }
};

// The run directory (made absolute: it is handed to programs that change
// directory), its raw/ folder, and the rows a resumed run already has.
Status prepare_run_dir(SweepRun& run) {
  const SweepConfig& cfg = run.cfg;
  std::string out = !cfg.resume_dir.empty() ? cfg.resume_dir : cfg.out_dir;
  if (out.empty()) {
    time_t t = time(nullptr);
    char b[32];
    strftime(b, sizeof b, "%Y%m%d-%H%M%S", gmtime(&t));
    out = cfg.source_dir + "/results/runs/" + b;
  }
  {
    std::error_code ec;
    out = std::filesystem::absolute(out, ec).lexically_normal().string();
  }
  run.out = out;
  run.raw = out + "/raw";
  {
    std::error_code ec;
    std::filesystem::create_directories(run.raw, ec);
    if (ec) return Status::error("cannot make " + run.raw + ": " + ec.message());
  }
  run.run_id = "r" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr));
  run.csv = out + "/results.csv";
  if (!cfg.resume_dir.empty() && access(run.csv.c_str(), F_OK) == 0) {
    auto rows = read_csv(run.csv);
    if (!rows) return rows.status();
    for (auto& r : rows.value()) {
      run.done.insert(cell_key(r) + "|" + r[Col::repeat]);
      if (r[Col::repeat] != "summary") run.cell_reps[cell_key(r)].push_back(r);
    }
    fprintf(stderr, "harness: resuming %s: %zu rows already measured\n", out.c_str(), rows->size());
  }
  return {};
}

// machine.txt: the harness host (and the lab, when there is one), once per
// run directory.
void write_machine_txt(const SweepRun& run) {
  const SweepConfig& cfg = run.cfg;
  if (access((run.out + "/machine.txt").c_str(), F_OK) == 0) return;
  std::ofstream m(run.out + "/machine.txt");
  std::string cpu = "unknown";
  std::ifstream ci("/proc/cpuinfo");
  for (std::string l; std::getline(ci, l);)
    if (l.rfind("model name", 0) == 0) {
      cpu = l.substr(l.find(':') + 2);
      break;
    }
  m << "harness host (this machine; on the namespace testbed also the client, server and DUT hosts):\n";
  m << "cpu: " << cpu << "\ncores: " << std::thread::hardware_concurrency() << "\nkernel: " << cmd_line({"uname", "-r"})
    << "\ndpdk: " << cmd_line({"pkg-config", "--modversion", "libdpdk"}) << "\novs: " << cmd_line({"ovs-vswitchd", "--version"})
    << "\niperf3: " << cmd_line({"iperf3", "--version"}) << "\nsockperf: " << cmd_line({"sockperf", "--version"})
    << "\ngit: " << run.git << "\nmtu: " << cfg.mtu << "\nhugepages: " << (getenv("DPDK_HUGE") && std::string(getenv("DPDK_HUGE")) == "0" ? "no" : "yes")
    << "\n";
  if (cfg.inventory)
    m << "lab: " << cfg.inventory->path << " (client " << cfg.inventory->client.ssh.destination << ", server "
      << cfg.inventory->server.ssh.destination << ", dut " << cfg.inventory->dut.ssh.destination << "), link "
      << (cfg.inventory->link_gbps > 0 ? fmt(cfg.inventory->link_gbps, 0) + " Gbit/s" : std::string("not given"))
      << "\n";
  if (cfg.inventory && cfg.inventory->link_gbps > 0)
    m << "line_rate_gbps: " << fmt(cfg.inventory->link_gbps, 3) << "\n";
}

// One DUT brought up for a round: the bed (or the lab's SSH session), the
// transport, the DUT, its iperf3 and sockperf servers and background
// connections. Whatever it started is stopped when it goes, on every path.
// error() says why no cell can run ("" when ready).
class DutSession {
 public:
  DutSession(SweepRun& run, const std::string& name, int round);
  ~DutSession();
  DutSession(const DutSession&) = delete;
  DutSession& operator=(const DutSession&) = delete;

  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }
  Transport& transport() { return *tr_; }
  Dut& dut() { return *dut_; }

  // After a run: fresh servers for the instances that failed.
  void renew_servers(const RunOut& o, int n);
  // Scenario::server_json(): iperf3 server i's JSON log (here; the testbed's server is a namespace of this machine).
  std::string server_log(int i) const { return dir_ + "/iperf3-server-" + std::to_string(i) + ".json"; }
  std::vector<std::string> server_logs(int n) const {
    std::vector<std::string> v;
    for (int i = 0; i < n; i++) v.push_back(server_log(i));
    return v;
  }
  // A row's columns every cell of this DUT has.
  Row base_row(const std::string& kind, const std::string& proto, int inst, int size) const;
  // The DUT's counters before a run, for dut_view to take the difference.
  struct Counters {
    Result<std::map<std::string, long long>> drops;
    Result<std::map<std::string, LinkCount>> links;
  };
  Counters counters() { return {dut_->drops(), dut_->link_counts()}; }
  // The DUT's own view of a run: its tracker's entries, what its drop
  // counters added (a number, or why there is none), and the mean frame its
  // links carried in and out.
  void dut_view(Row& r, const Counters& before);

 private:
  void open_lab();
  void open_testbed();
  void start_dut(int round);
  Status testbed_path_check();
  Status lab_path_check();
  void describe_endpoints();
  Status start_server(int i);
  void start_sockperf();
  std::string open_background();

  SweepRun& run_;
  const SweepConfig& cfg_;
  std::string name_, dir_, version_ = "unknown", error_;
  std::unique_ptr<SshSession> ssh_;
  std::unique_ptr<Transport> tr_;
  std::unique_ptr<Bed> bed_;
  std::unique_ptr<DutHost> host_;
  DutSite site_;
  std::string facts_label_;  // how machine.txt names the DUT host
  std::unique_ptr<Dut> dut_;
  std::vector<Job> servers_;  // iperf3 instance i's server
  Job sockperf_;
  std::unique_ptr<BackgroundConns> bg_;
};

DutSession::DutSession(SweepRun& run, const std::string& name, int round)
    : run_(run), cfg_(run.cfg), name_(name), dir_(run.raw + "/" + name) {
  std::error_code mk;
  std::filesystem::create_directories(dir_, mk);
  if (cfg_.inventory) open_lab();
  else open_testbed();
  if (error_.empty()) start_dut(round);
  if (!cfg_.inventory && bed_ && cfg_.lab == "testbed-ssh") {
    ssh_ = std::make_unique<SshSession>(bed_->ssh_hosts(), run_.run_id, bed_->mgmt);
    std::string report;
    if (Status s = ssh_->open(&report); !s) error_ = "ssh: " + s.message();
    if (!report.empty()) fprintf(stderr, "harness: %s", report.c_str());
    tr_ = std::make_unique<SshTransport>(*ssh_, bed_->server_ip, cfg_.mtu);
  } else if (!cfg_.inventory && bed_) {
    tr_ = std::make_unique<NetnsTransport>(*bed_);
  }
  servers_.resize(static_cast<size_t>(run_.max_inst));
  if (!error_.empty()) return;
  for (int i = 0; i < run_.max_inst && error_.empty(); i++)
    if (Status st = start_server(i); !st) error_ = st.message();
  if (cfg_.sockperf && error_.empty()) start_sockperf();
  std::this_thread::sleep_for(300ms);
  if (cfg_.background_conns > 0 && error_.empty()) error_ = open_background();
}

// A lab: every host over SSH, nothing built here (the Bed stays empty); the
// DUT on the inventory's DUT host, its ports as that host has them (PCI
// devices by bus address, other interfaces through net_af_packet).
void DutSession::open_lab() {
  const Inventory& inv = *cfg_.inventory;
  bed_ = std::make_unique<Bed>();
  bed_->mtu = inv.mtu;
  ssh_ = std::make_unique<SshSession>(inv.ssh_hosts(), run_.run_id, nullptr);
  std::string report;
  if (Status s = ssh_->open(&report); !s) error_ = "ssh: " + s.message();
  if (!report.empty()) fprintf(stderr, "harness: %s", report.c_str());
  tr_ = std::make_unique<SshTransport>(*ssh_, inv.server.address, inv.mtu, &inv);
  if (error_.empty() && !run_.endpoints_described) describe_endpoints();
  host_ = ssh_host(*ssh_);
  site_.mtu = inv.mtu;
  site_.prefix_tag = "harness-lab-";
  site_.dataplane = inv.dut.dataplane_program;
  site_.dataplane_ctl = inv.dut.dataplane_ctl;
  site_.dataplane_config = inv.dut.dataplane_config;
  site_.config_as_is = true;
  site_.hw_check = inv.dut.hw_check;
  facts_label_ = "dut host " + inv.dut.ssh.destination + " for " + name_ + ":\n";
  bool listed = false;
  for (const auto& p : inv.dut.profiles) listed = listed || p == name_;
  if (!listed && error_.empty()) error_ = "start: the inventory's DUT host does not list profile " + name_;
}

// The client and server hosts, once per run, as the DUT host is.
void DutSession::describe_endpoints() {
  const Inventory& inv = *cfg_.inventory;
  run_.endpoints_described = true;
  std::ofstream m(run_.out + "/machine.txt", std::ios::app);
  for (const LabHost* h : {&inv.client, &inv.server}) {
    HostRunner runner = [&](const std::vector<std::string>& argv) -> Result<std::string> {
      std::string o;
      if (Status s = ssh_->run(h->ssh.name, argv, &o, 30s); !s) return s;
      return o;
    };
    m << h->ssh.name << " host " << h->ssh.destination << " (" << h->interface << " " << h->address << "):\n"
      << gather_host_facts(runner, {h->interface}).describe();
  }
}

// The namespace testbed: the DUT in its DUT namespace on d0 and d1.
void DutSession::open_testbed() {
  auto b = Bed::build(cfg_.mtu, cfg_.lab == "testbed-ssh", cfg_.run_scenario(), cfg_.segmentation, cfg_.source_dir, dir_);
  if (!b) {
    error_ = b.message();
    return;
  }
  bed_ = std::move(b.value());
  host_ = local_host(bed_->dut, dir_);
  site_.ports = {DutPort{Attach::kAfPacket, "d0"}, DutPort{Attach::kAfPacket, "d1"}};
  site_.mtu = bed_->mtu;
  site_.prefix_tag = "harness-";
  site_.dataplane = cfg_.build_dir + "/dataplane/dataplane";
  site_.dataplane_ctl = cfg_.build_dir + "/dataplane/dataplane-ctl";
  site_.dataplane_config = cfg_.run_scenario().dataplane_config_for(cfg_.dataplane_config, cfg_.source_dir);
  site_.scenario = &cfg_.run_scenario();
  site_.segmentation = cfg_.segmentation;
  site_.source_dir = cfg_.source_dir;
  // The tracker is preallocated at start: room for the background
  // connections (each worker's shard could get all of them) goes in now.
  if (cfg_.background_conns > 0) site_.tracker_room = cfg_.background_conns + kRoomHeadroom;
  site_.router_client_ip = Bed::kClientIp;
  site_.router_server_ip = Bed::kServerIp;
}

// The DUT host as it is before any traffic (in the machine info), the
// profile's preconditions there, then the DUT started and the path through
// it checked.
void DutSession::start_dut(int round) {
  site_.host = host_.get();
  site_.dir = dir_;
  std::vector<std::string> ifaces = cfg_.inventory ? cfg_.inventory->dut.interfaces : std::vector<std::string>{"d0", "d1"};
  HostFacts facts = gather_host_facts(host_->runner(), ifaces);
  if (facts_label_.empty()) facts_label_ = "dut host of " + name_ + " (round " + std::to_string(round) + "):\n";
  std::ofstream(run_.out + "/machine.txt", std::ios::app) << facts_label_ << facts.describe();
  if (cfg_.inventory)
    for (size_t i = 0; i < 2; i++) {
      const NicFacts* n = i < facts.nics.size() ? &facts.nics[i] : nullptr;
      site_.ports[i] = n && is_pci_bus(n->bus) ? DutPort{Attach::kPci, n->bus} : DutPort{Attach::kAfPacket, ifaces[i]};
    }
  auto d = make_dut(name_, site_);
  if (!d) {
    error_ = d.message();
    return;
  }
  dut_ = std::move(d.value());
  version_ = dut_->version();
  // What the profile itself sets in OVS before its first flow.
  const std::map<std::string, std::string> ovs = {{"hw-offload", "true"}, {"tc-policy", "none"}};
  if (auto miss = missing_for(name_, facts, ovs); !miss.empty()) {
    std::string m;
    for (auto& x : miss) m += (m.empty() ? "" : "; ") + x;
    error_ = "start: preconditions not met on the DUT host: " + m;
    return;
  }
  if (Status s = dut_->start(); !s) error_ = "start: " + s.message();
  else if (Status h = cfg_.inventory ? lab_path_check() : testbed_path_check(); !h) error_ = "start: " + h.message();
}

// Waits until a ping crosses the DUT (ARP included).
Status DutSession::testbed_path_check() {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = testbed::run_capture({"ping", "-c", "1", "-W", "1", bed_->server_ip}, bed_->client, 5s);
    if (r && r->status == 0) return {};
    last = r ? r->output : r.message();
  }
  return Status::error("health check: no ping across the DUT: " + last.substr(0, 200));
}

// The endpoints may hold the neighbour entries of the DUT run before (a
// bump in the wire passes the hosts' own MACs; a router answers for them):
// each DUT starts from empty neighbour tables.
Status DutSession::lab_path_check() {
  const Inventory& inv = *cfg_.inventory;
  for (const LabHost* h : {&inv.client, &inv.server})
    if (Status s = ssh_->run(h->ssh.name, {"ip", "neigh", "flush", "dev", h->interface}, nullptr, 20s); !s)
      return Status::error("flushing the neighbour table: " + s.message());
  std::string last;
  for (int i = 0; i < 10; i++) {
    if (ssh_->run("client", {"ping", "-c", "1", "-W", "1", inv.server.address}, &last, 10s)) return {};
    std::this_thread::sleep_for(500ms);
  }
  return Status::error("health check: no ping from the client host to " + inv.server.address + " across the DUT: " +
                       util::tail(last));
}

// Stops in order: the load first, then the DUT and what it changed on its
// host, then the transport, the session and the bed.
DutSession::~DutSession() {
  bg_.reset();
  servers_.clear();
  sockperf_ = Job();
  if (dut_) dut_->stop();
  dut_.reset();
  host_.reset();
  tr_.reset();
  ssh_.reset();
  bed_.reset();
}

// iperf3 3.12 servers wait forever for a client that went away mid-test
// (and so would every later test on that port): a server whose instance
// failed is replaced before the next run. --rcv-timeout ends a test whose
// data stopped.
Status DutSession::start_server(int i) {
  servers_[static_cast<size_t>(i)] = Job();
  SpawnOptions o;
  o.stdout_path = "/dev/null";
  o.stderr_path = "/dev/null";
  std::vector<std::string> argv = {"iperf3", "-s", "-p", std::to_string(5201 + i), "--rcv-timeout",
                                   std::to_string((cfg_.duration_s + 10) * 1000), "-B", tr_->server_address()};
  if (cfg_.run_scenario().server_json()) {  // its JSON names the peer each test came from (the translation)
    argv.push_back("-J");
    o.stdout_path = server_log(i);
  }
  auto p = tr_->spawn(Side::kServer, argv, o);
  if (!p) return Status::error("iperf3 server: " + p.message());
  servers_[static_cast<size_t>(i)] = std::move(p.value());
  return {};
}

void DutSession::start_sockperf() {
  sockperf_ = Job();
  SpawnOptions o;
  o.stdout_path = "/dev/null";
  o.stderr_path = "/dev/null";
  auto p = tr_->spawn(Side::kServer, {"sockperf", "server", "-i", tr_->server_address(), "-p", "11111"}, o);
  if (p) sockperf_ = std::move(p.value());
}

void DutSession::renew_servers(const RunOut& o, int n) {
  bool any = false;
  for (int i = 0; i < n; i++) {
    bool ok = static_cast<size_t>(i) < o.inst.size() && o.inst[static_cast<size_t>(i)].ok;
    if (ok && servers_[static_cast<size_t>(i)].running()) continue;
    if (Status st = start_server(i); !st) error_ = st.message();
    any = true;
  }
  if (o.have_lat && !o.lat.ok && cfg_.sockperf) {
    start_sockperf();
    any = true;
  }
  if (any) std::this_thread::sleep_for(300ms);
}

// --background-conns: room in the tracker, the connections set up through
// the transport, then the tracker's count checked. Returns why not, or "".
std::string DutSession::open_background() {
  Dut& dut = *dut_;
  const int k = cfg_.background_conns;
  auto room = dut.make_room(k);
  if (!room) return "background conns: making room in the tracker: " + room.message();
  auto bc = BackgroundConns::open(*tr_, cfg_.inventory ? cfg_.inventory->harness_conns : cfg_.build_dir + "/harness/harness-conns",
                                  k, kBackgroundPort, dir_ + "/background", run_.stop);
  if (!bc) return bc.message();
  bg_ = std::move(bc.value());
  const auto& su = bg_->setup();
  long long ce = dut.ct_entries();
  std::string held = ce >= 0 ? std::to_string(ce) : dut.no_tracker().empty() ? "unreadable" : dut.no_tracker();
  char line[512];
  snprintf(line, sizeof line,
           "%s: %lld background connections in %.1f s (%.0f/s), %lld connects failed (%s); tracker: %s; limit: %s\n",
           dut.name().c_str(), su.established, su.secs, su.per_s, su.failed, su.errors.c_str(), held.c_str(),
           room->c_str());
  fprintf(stderr, "harness: %s", line);
  std::ofstream(run_.out + "/machine.txt", std::ios::app) << "background " << line;
  if (ce >= 0 && ce < k)
    return "the tracker holds " + std::to_string(ce) + " entries after " + std::to_string(su.established) +
           " background connections were established: it cannot hold " + std::to_string(k);
  if (ce < 0 && dut.no_tracker().empty()) return "background conns: the DUT's tracker count cannot be read";
  return "";
}

Row DutSession::base_row(const std::string& kind, const std::string& proto, int inst, int size) const {
  Row r;
  r[Col::timestamp] = now_iso();
  r[Col::git_rev] = run_.git;
  r[Col::dut] = name_;
  r[Col::dut_version] = version_;
  r[Col::kind] = kind;
  r[Col::proto] = proto;
  r[Col::instances] = std::to_string(inst);
  r[Col::size_bytes] = std::to_string(size);
  r[Col::background_conns] = std::to_string(bg_ ? bg_->setup().established : 0);
  r[Col::background_setup_per_s] = bg_ ? fmt(bg_->setup().per_s, 0) : std::string("n/a: none asked for");
  r[Col::scenario] = cfg_.run_scenario().name();
  r[Col::segmentation] = harness::name(cfg_.segmentation);
  // The throughput rows carry the scenario's evidence; the rest say so.
  r[Col::overlay_check] = cfg_.run_scenario().base_check();
  return r;
}

// The frames a DUT's links carried in a run: the largest mean size (bytes
// per frame) over its links' receive side (what reached the DUT) and over
// their transmit side (what it sent), or why there is none.
void frame_sizes(Row& r, const Result<std::map<std::string, LinkCount>>& before,
                 const Result<std::map<std::string, LinkCount>>& after) {
  if (!before || !after) {
    const std::string why = before ? after.message() : before.message();
    r[Col::dut_in_frame_bytes] = r[Col::dut_out_frame_bytes] = why.rfind("n/a:", 0) == 0 ? why : "unavailable: " + why;
    return;
  }
  double in = -1, out = -1;
  for (const auto& [ifc, a] : *after) {
    auto b = before->find(ifc);
    if (b == before->end()) continue;
    long long rb = a.rx_bytes - b->second.rx_bytes, rp = a.rx_packets - b->second.rx_packets;
    long long tb = a.tx_bytes - b->second.tx_bytes, tp = a.tx_packets - b->second.tx_packets;
    if (rp > 0) in = std::max(in, static_cast<double>(rb) / static_cast<double>(rp));
    if (tp > 0) out = std::max(out, static_cast<double>(tb) / static_cast<double>(tp));
  }
  r[Col::dut_in_frame_bytes] = in >= 0 ? fmt(in, 1) : "unavailable: its links received no frame in the run";
  r[Col::dut_out_frame_bytes] = out >= 0 ? fmt(out, 1) : "unavailable: its links sent no frame in the run";
}

void DutSession::dut_view(Row& r, const Counters& before_all) {
  const auto& before = before_all.drops;
  frame_sizes(r, before_all.links, dut_->link_counts());
  if (Status a = dut_->alive(); !a) {
    if (r[Col::status] == "ok") run_.errors++;
    r[Col::status] = "error";
    r[Col::error] = a.message() + (r[Col::error].empty() ? "" : "; " + r[Col::error]);
    error_ = "the DUT was lost in an earlier cell: " + a.message();
  }
  long long ce = dut_->ct_entries(), off = dut_->offloaded();
  // The background connections must still be there: generators alive,
  // the tracker still holding them.
  if (bg_ && r[Col::status] == "ok") {
    Status a = bg_->alive();
    if (!a || (ce >= 0 && ce < cfg_.background_conns)) {
      r[Col::status] = "error";
      r[Col::error] = !a ? a.message()
                      : "the tracker holds " + std::to_string(ce) + " entries, fewer than the " +
                            std::to_string(cfg_.background_conns) + " background connections";
      run_.errors++;
    }
  }
  r[Col::ct_entries] = ce >= 0 ? std::to_string(ce)
                            : !dut_->no_tracker().empty() ? dut_->no_tracker()
                                                          : std::string("unavailable: the DUT did not report it");
  r[Col::offloaded_entries] = off >= 0 ? std::to_string(off) : std::string("n/a: no offload counters");
  auto after = dut_->drops();
  if (!before || !after) {
    r[Col::dut_drops] = "unavailable: " + (before ? after.message() : before.message());
    return;
  }
  long long total = 0;
  std::string detail;
  for (auto& [k, v] : *after) {
    auto was = before->find(k);
    long long d = v - (was == before->end() ? 0 : was->second);
    if (d == 0) continue;
    if (k.rfind("policy:", 0) != 0) total += d;
    detail += (detail.empty() ? "" : " ") + k + "=" + std::to_string(d);
  }
  r[Col::dut_drops] = std::to_string(total);
  r[Col::dut_drops_detail] = detail.empty() ? "none" : detail;
  if (!dut_->drops_blind_spot().empty()) r[Col::dut_drops_detail] += "; not seen: " + dut_->drops_blind_spot();
}

// The summary row of a cell: medians and spreads over its repetitions, the
// DUT's view over them (drops summed; the tracker's and the NIC's largest
// counts, or the reason there is none).
void finish_cell(SweepRun& run, Row base, std::vector<Row> reps) {
  std::vector<double> tp, p50, p99;
  std::string first_err;
  for (auto& r : reps) {
    if (r[Col::status] == "ok") {
      if (!r[Col::throughput_gbps].empty()) tp.push_back(to_num(r[Col::throughput_gbps]));
      if (!r[Col::latency_p50_us].empty()) p50.push_back(to_num(r[Col::latency_p50_us]));
      if (!r[Col::latency_p99_us].empty()) p99.push_back(to_num(r[Col::latency_p99_us]));
    } else if (first_err.empty()) {
      first_err = r[Col::error];
    }
  }
  base[Col::repeat] = "summary";
  auto put = [&](Col median, Col min, Col max, const std::vector<double>& v) {
    if (v.empty()) return;
    Spread s = spread(v);
    base[median] = fmt(s.median);
    base[min] = fmt(s.min);
    base[max] = fmt(s.max);
  };
  put(Col::throughput_gbps, Col::throughput_gbps_min, Col::throughput_gbps_max, tp);
  put(Col::latency_p50_us, Col::latency_p50_us_min, Col::latency_p50_us_max, p50);
  put(Col::latency_p99_us, Col::latency_p99_us_min, Col::latency_p99_us_max, p99);
  long long drops = 0, ct = -1, off = -1;
  std::string drops_why, ct_why, off_why;
  for (auto& r : reps) {
    double d = to_num(r[Col::dut_drops], -1), c = to_num(r[Col::ct_entries], -1), o = to_num(r[Col::offloaded_entries], -1);
    if (d >= 0) drops += static_cast<long long>(d);
    else if (drops_why.empty()) drops_why = r[Col::dut_drops].empty() ? "not measured" : r[Col::dut_drops];
    if (c >= 0) ct = std::max(ct, static_cast<long long>(c));
    else if (ct_why.empty()) ct_why = r[Col::ct_entries].empty() ? "not measured" : r[Col::ct_entries];
    if (o >= 0) off = std::max(off, static_cast<long long>(o));
    else if (off_why.empty()) off_why = r[Col::offloaded_entries].empty() ? "not measured" : r[Col::offloaded_entries];
  }
  if (base[Col::kind] == "throughput") run.cfg.run_scenario().summarize(reps, base);
  // Frame sizes: the largest over the repetitions, or the first reason.
  for (Col c : {Col::dut_in_frame_bytes, Col::dut_out_frame_bytes}) {
    double mx = -1;
    std::string why;
    for (auto& r : reps) {
      double v = to_num(r[c], -1);
      if (v >= 0) mx = std::max(mx, v);
      else if (why.empty()) why = r[c].empty() ? "not measured" : r[c];
    }
    base[c] = mx >= 0 ? fmt(mx, 1) : why;
  }
  base[Col::dut_drops] = drops_why.empty() ? std::to_string(drops) : drops_why;
  base[Col::ct_entries] = ct >= 0 ? std::to_string(ct) : ct_why;
  base[Col::offloaded_entries] = off >= 0 ? std::to_string(off) : off_why;
  bool any_ok = !tp.empty() || !p50.empty();
  base[Col::status] = any_ok ? "ok" : "error";
  if (!any_ok) base[Col::error] = first_err.empty() ? "no repetition succeeded" : first_err;
  run.w.write(base);
}

// One repetition of a throughput cell (iperf3 instances, sockperf under
// load when asked for) into row r.
void throughput_rep(SweepRun& run, DutSession& s, const std::string& proto, int inst, int size, int rep,
                    const std::string& what, Row& r) {
  const SweepConfig& cfg = run.cfg;
  std::string rp = s.dir() + "/" + proto + "-x" + std::to_string(inst) + "-" + std::to_string(size) + "-r" +
                   std::to_string(rep);
  auto drops_before = s.counters();
  const Scenario& sc = cfg.run_scenario();
  auto check_before = sc.before_run(s.transport());
  RunOut o = run_traffic(s.transport(), proto, inst, size, cfg.duration_s, cfg.omit_s, rp, cfg.sockperf);
  s.renew_servers(o, inst);
  if (o.server_busy && !run.stop) {
    // An iperf3 3.12 server can still be closing its last test when the
    // next client connects (seen once in 48 cells right after a warm-up):
    // not the DUT's failure. The cell once more.
    fprintf(stderr, "harness: %s: an iperf3 server was still busy with its last test; once more\n", what.c_str());
    std::this_thread::sleep_for(1s);
    drops_before = s.counters();
    o = run_traffic(s.transport(), proto, inst, size, cfg.duration_s, cfg.omit_s, rp, cfg.sockperf);
    s.renew_servers(o, inst);
  }
  double sum = 0, mn = 1e18, mx = 0, cpu = 0, rtt = 0, loss = 0;
  long long retr = 0;
  for (auto& x : o.inst) {
    sum += x.gbps;
    mn = std::min(mn, x.gbps);
    mx = std::max(mx, x.gbps);
    retr += x.retransmits;
    cpu += x.cpu_host;
    rtt += x.rtt_us;
    loss += x.lost_percent;
  }
  if (o.error.empty() && !o.inst.empty()) {
    double k = static_cast<double>(o.inst.size());
    r[Col::throughput_gbps] = fmt(sum);
    r[Col::throughput_min_instance_gbps] = fmt(mn);
    r[Col::throughput_max_instance_gbps] = fmt(mx);
    r[Col::retransmits] = std::to_string(retr);
    r[Col::cpu_host_pct] = fmt(cpu / k, 1);
    if (proto == "tcp") r[Col::rtt_us] = fmt(rtt / k, 1);
    else r[Col::lost_percent] = fmt(loss / k, 3);
    r[Col::status] = "ok";
  } else {
    r[Col::status] = "error";
    r[Col::error] = o.error.empty() ? "no iperf3 instance ran" : o.error;
    run.errors++;
  }
  // The latency columns are numbers or the error says why not.
  if (o.have_lat && o.lat.ok) {
    put_latency(r, o.lat);
  } else if (o.have_lat && r[Col::status] == "ok") {
    r[Col::error] = "latency under load: " + o.lat.error;
  }
  s.dut_view(r, drops_before);
  const bool was_ok = r[Col::status] == "ok";
  sc.check_run(s.transport(), check_before, s.server_logs(inst), r);
  if (was_ok && r[Col::status] != "ok") run.errors++;
}

// Repetition `rep` of the cell `base`: skipped when a resumed run has it,
// an error row when the session cannot run cells, else `measure` fills it.
// The row is written and kept for the cell's summary.
Status one_rep(SweepRun& run, DutSession& s, const Row& base, int rep, const std::string& what, std::vector<Row>& reps,
               const std::function<void(Row&)>& measure) {
  if (run.measured(base, std::to_string(rep))) {
    run.prog.step(what, "measured before (resumed)");
    return {};
  }
  Row r = base;
  r[Col::timestamp] = now_iso();
  r[Col::repeat] = std::to_string(rep);
  if (!s.error().empty()) {
    r[Col::status] = "error";
    r[Col::error] = s.error();
    run.errors++;
  } else {
    measure(r);
  }
  SDN_TRY(run.w.write(r));
  reps.push_back(r);
  run.prog.step(what, r[Col::status] == "ok" ? std::string("ok") : "error: " + r[Col::error].substr(0, 160));
  return {};
}

// Throughput cells (with sockperf under load), repetitions rep_lo..rep_hi.
Status throughput_cells(SweepRun& run, DutSession& s, int rep_lo, int rep_hi) {
  const SweepConfig& cfg = run.cfg;
  for (const Proto p : cfg.protos) {
    const std::string proto(name(p));
    for (int inst : cfg.instances) {
      if (s.error().empty() && cfg.warmup_s > 0 && !run.stop)
        s.renew_servers(run_traffic(s.transport(), proto, inst, 1460, cfg.warmup_s, 0, s.dir() + "/warmup", false), inst);
      for (int size : cfg.sizes) {
        Row base = s.base_row("throughput", proto, inst, size);
        std::vector<Row>& reps = run.cell_reps[cell_key(base)];
        for (int rep = rep_lo; rep <= rep_hi; rep++) {
          if (run.stop) break;
          std::string what = s.name() + " " + proto + " x" + std::to_string(inst) + " " + std::to_string(size) +
                             "B rep " + std::to_string(rep);
          SDN_TRY(one_rep(run, s, base, rep, what, reps,
                          [&](Row& r) { throughput_rep(run, s, proto, inst, size, rep, what, r); }));
        }
        bool all_done = true;
        for (int rep = 1; rep <= cfg.repeat; rep++)
          if (!run.measured(base, std::to_string(rep)) && run.stop) all_done = false;
        if (rep_hi == cfg.repeat && all_done && !run.measured(base, "summary")) finish_cell(run, base, reps);
      }
    }
  }
  return {};
}

// Idle latency: sockperf ping-pong alone, per size.
Status latency_cells(SweepRun& run, DutSession& s, int rep_lo, int rep_hi) {
  const SweepConfig& cfg = run.cfg;
  for (int size : cfg.sizes) {
    Row base = s.base_row("latency", "udp", 0, size);
    std::vector<Row>& reps = run.cell_reps[cell_key(base)];
    for (int rep = rep_lo; rep <= rep_hi && !run.stop; rep++) {
      std::string what = s.name() + " latency " + std::to_string(size) + "B rep " + std::to_string(rep);
      SDN_TRY(one_rep(run, s, base, rep, what, reps, [&](Row& r) {
        auto drops_before = s.counters();
        RunOut o = run_traffic(s.transport(), "udp", 0, size, cfg.duration_s, 0,
                               s.dir() + "/latency-" + std::to_string(size) + "-r" + std::to_string(rep), true);
        s.renew_servers(o, 0);
        if (o.have_lat && o.lat.ok) {
          put_latency(r, o.lat);
          r[Col::status] = "ok";
        } else {
          r[Col::status] = "error";
          r[Col::error] = o.have_lat ? o.lat.error : "sockperf did not start";
          run.errors++;
        }
        s.dut_view(r, drops_before);
      }));
    }
    if (rep_hi == cfg.repeat && !run.stop && !run.measured(base, "summary")) finish_cell(run, base, reps);
  }
  return {};
}

// One DUT on a fresh testbed (or lab session), repetitions rep_lo..rep_hi of
// every cell.
Status run_dut(SweepRun& run, const std::string& name, int rep_lo, int rep_hi) {
  DutSession s(run, name, rep_lo);
  SDN_TRY(throughput_cells(run, s, rep_lo, rep_hi));
  if (run.cfg.sockperf) SDN_TRY(latency_cells(run, s, rep_lo, rep_hi));
  return {};
}

}  // namespace

Result<SweepOutcome> run_sweep(const SweepConfig& cfg, const std::atomic<bool>& stop) {
  SweepRun run(cfg, stop);
  SDN_TRY(prepare_run_dir(run));
  if (auto swept = sweep_dead_runs(); !swept) fprintf(stderr, "harness: %s\n", swept.message().c_str());
  run.git = cmd_line({"git", "-C", cfg.source_dir, "rev-parse", "--short", "HEAD"});
  write_machine_txt(run);
  SDN_TRY(run.w.open(run.csv));
  for (int i : cfg.instances) run.max_inst = std::max(run.max_inst, i);
  run.prog.total = static_cast<int>(cfg.duts.size() *
                                    (cfg.protos.size() * cfg.instances.size() * cfg.sizes.size() +
                                     (cfg.sockperf ? cfg.sizes.size() : 0)) *
                                    cfg.repeat);
  if (cfg.interleave) {
    // Round k runs every DUT once, so the DUTs of one cell are measured
    // minutes apart rather than a whole sweep apart (this host drifts).
    for (int round = 1; round <= cfg.repeat && !stop; round++)
      for (const std::string& name : cfg.duts) {
        if (stop) break;
        SDN_TRY(run_dut(run, name, round, round));
      }
  } else {
    for (const std::string& name : cfg.duts) {
      if (stop) break;
      SDN_TRY(run_dut(run, name, 1, cfg.repeat));
    }
  }
  run.prog.end();
  fprintf(stderr, "harness: results in %s\n", run.csv.c_str());
  return SweepOutcome{run.errors, run.out};
}

}  // namespace harness
