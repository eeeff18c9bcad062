// harness: builds the namespace testbed, starts a device under test, drives
// iperf3 and sockperf sweeps, writes CSV rows and a report. See --help.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sdn/number.h"
#include "harness/rfc2544.h"
#include "harness/report.h"
#include "harness/sweep.h"
#include "testbed/testbed.h"
#include "version.h"

using namespace harness;

namespace {
// Run directories are handed to programs that change their working
// directory (ovsdb-server's socket path, "unix:DIR/db.sock"): absolute.
std::string absolute(const std::string& p) {
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}
}  // namespace

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

const char* kHelp = R"(usage: harness COMMAND [options]

  run [--instances 4,16,32] [--sizes 64,512,1024,1460,4096,8192] [--proto tcp,udp]
      [--duration S] [--omit S] [--repeat N] [--warmup S] [--dut dataplane,ovs-dpdk,kernel-ct,testpmd-io]
      [--background-conns K] [--no-sockperf] [--no-interleave] [--mtu N] [--dataplane-config FILE]
      [--scenario firewall|overlay-nat] [--tunnel vxlan|geneve] [--segmentation wire|host]
      [--config configs/harness/FILE.yaml] [--out DIR] [--resume DIR] [--ci] [--lab testbed-ssh|FILE] [--no-rfc2544]
        Sweep every DUT over proto x instances x size with iperf3 (one flow per
        instance, one server port each, fixed --cport, all started behind a
        barrier) and sockperf under load, plus idle sockperf ping-pong per size.
        Each DUT gets a fresh namespace testbed: client c0 10.0.0.1 -- d0 [DUT] d1
        -- s0 10.0.0.2 server. Repetitions run in rounds: each round runs every
        DUT once, so DUTs are compared minutes apart (--no-interleave: all
        repetitions of one DUT, then the next). Flags override the YAML config.
        Rows go to DIR/results.csv one at a time (flushed), typed in
        DIR/results.json beside it (see --schema); raw tool output to
        DIR/raw/; machine info to DIR/machine.txt; then DIR/report.{md,html}.
        --duration S is what each iperf3 run measures, after --omit S seconds
        it leaves out (slow start; default 1); sockperf under load waits them
        out too.
        A failed instance or DUT is an error row, never a zero.
        --resume DIR continues a killed run from its last row.
        --ci prints a compact table and exits 1 if any row failed.
        A config with an rfc2544: section (the default config has a short
        one) runs `run --mode rfc2544` with it after the sweep, into the same
        directory and report; --no-rfc2544 skips it.
        --lab testbed-ssh runs iperf3 and sockperf over SSH (the system ssh
        client, one master connection per host, BatchMode) into the same
        namespaces, each running sshd with a key made for the run: the SSH
        transport end to end. Remote programs run under the run's id and are
        killed at exit; a new run first kills what killed runs left.
        --dut also takes ovs-dpdk-offload and ovs-kernel-tc, the hardware
        profiles: their preconditions (a ConnectX in switchdev mode, ...) are
        checked on the DUT host and each missing one is named in error rows.
        --scenario overlay-nat puts the server behind a VXLAN tunnel (the
        kernel's VTEP) that the DUT terminates, and has the DUT source-NAT
        the client to a floating address; each throughput row carries the
        evidence (overlay_check). dataplane, ovs-dpdk and kernel-ct have it.
        --tunnel geneve (with overlay-nat; default vxlan) makes that tunnel
        Geneve (RFC 8926, UDP 6081): the server's VTEP is the kernel's geneve
        device, the dataplane runs configs/dataplane/overlay-nat-geneve.yaml
        (overlay.geneve), OVS a geneve tunnel port, kernel-ct a geneve device;
        the rows' overlay_check ends "; tunnel geneve". A DUT without it is
        an error row naming why. On a kernel without geneve devices the
        server's VTEP is testbed/tools/geneve-vtep.py (userspace, scapy, on
        a TAP device; slow: the rows prove the path) and overlay_check says so.
        --segmentation wire (default) hands every DUT MTU-size frames, as a
        real wire does (the endpoints' veths segment TCP); host lets the
        endpoints' 64 KB TSO/GSO packets cross into a kernel DUT whole (no
        per-frame cost: no real wire does that; kernel DUTs only). Each row
        has the mode and the mean frame the DUT's links carried in and out
        (dut_in_frame_bytes, dut_out_frame_bytes, from the kernel's link
        counters of its ports).
        --lab FILE drives the hosts of a lab inventory over SSH
        (configs/harness/lab.example.yaml): iperf3, sockperf and harness-conns
        on the client and server hosts (pinned with taskset to the CPUs the
        inventory lists), the DUT profile on the DUT host, its preconditions
        checked and recorded in machine.txt first. No testbed is built.
  run --mode rfc2544 [--frame-sizes 64,512,1518] [--conns 1000,100000] [--dut dataplane,testpmd-io,ovs-dpdk]
      [--trial S] [--loss FRACTION] [--churn S] [--churn-conns N] [--tracker-capacity N] [--proto tcp|udp] [--repeat N]
      [--scenario firewall,overlay-nat] [--tunnel vxlan|geneve] [--out DIR | --resume DIR]
        Each DUT at its own limit over net_memif: harness-gen (stateful, K TCP
        connections set up with real handshakes first; the DUT's tracker must
        count all K before any trial) runs an RFC 2544 zero-loss binary search
        per frame size, the full-rate forwarding rate, latency at 10/50/90 %
        of the zero-loss rate, then --churn S seconds (default 2; 0: none) of
        connections opened and closed beside the K, at most --churn-conns N
        (default 500000): established, closed per second and failures. The
        generator's own ceiling (against testpmd rxonly) per frame size beside
        it. Rows in DIR/rfc2544.csv. CPUs: generator lcore 1, the DUT's worker
        (OVS: PMD) lcore 0, its main lcore 1. ovs-dpdk: memif ports in a netdev
        bridge with the sweep's ct() flows. kernel-ct: an error row (no DPDK
        port). Each DUT's tracker is sized to fit K and the churn;
        --tracker-capacity N sizes it to N instead (a full table: error rows
        saying how many connections the DUT held). --proto udp: K UDP flows
        (a datagram each way sets one up; no churn). Rounds: every DUT and the
        ceiling once per round (--repeat N); --resume DIR measures only the
        cells DIR/rfc2544.csv lacks. --scenario firewall,overlay-nat measures
        every DUT in each, in every round: in overlay-nat the generator's
        server side is a VXLAN VTEP (192.0.2.2, VNI 100) behind the DUT's
        source NAT to 203.0.113.7 (dataplane: configs/dataplane/overlay-nat.yaml;
        ovs-dpdk: userspace tunnelling and ct(nat)), server ports 80.. so one
        floating address holds 100K connections; each row's overlay_check says
        the generator saw every connection's translation and no untranslated
        frame (TCP only; the ceiling stays the firewall's). --tunnel geneve:
        the generator's server side speaks Geneve (UDP 6081) instead.
  report DIR                    write DIR/report.md and DIR/report.html
  compare OLD.csv NEW.csv [--max-regression PCT] [--junit FILE]
                                list cells that regressed by more than PCT (default 5);
                                exit 1 if any did. --junit FILE: JUnit XML, one test case
                                per compared cell (classname the DUT; the ratio and the
                                threshold in each), for a CI system to show which regressed
  --schema                      print the JSON Schema of results.json, rfc2544.json and
                                rfc2544-trials.json (written beside each CSV: typed numbers,
                                units; a cell that is a reason is null, its text in "reasons")
  testbed up [--inventory FILE] | down | status
                                up: build the testbed and hold it until Ctrl-C; with
                                --inventory, as a lab (sshd in the client, server and DUT
                                namespaces) described in FILE for `run --lab FILE`;
                                down: remove testbeds of dead runs (namespaces, links, and
                                their DUTs' DPDK hugepage files, runtime dirs, control sockets
                                and locks) and put back the nf_conntrack_max they raised;
                                status: list them
  check                         prerequisites, each missing one with its Debian package
  --version                     the version, git revision and DPDK version built against

Exit status: 0 ok, 1 failures (error rows, regressions), 2 bad usage or config.
)";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) v.push_back(x);
  return v;
}

bool parse_ints(const std::string& s, std::vector<int>* out) {
  out->clear();
  for (const auto& x : split_list(s)) {
    double v;
    if (!sdn::parse_number(x, true, 1, INT32_MAX, &v)) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

std::string exe_dir() {
  char b[4096];
  ssize_t n = readlink("/proc/self/exe", b, sizeof b - 1);
  if (n <= 0) return ".";
  std::string p(b, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

int cmd_check(const std::string& build_dir) {
  struct Need {
    std::string what, how, package;
  } needs[] = {
      {"iperf3", "iperf3", "iperf3"},
      {"sockperf", "sockperf", "sockperf"},
      {"dpdk-testpmd", "dpdk-testpmd", "dpdk-dev"},
      {"dpdk-telemetry.py", "dpdk-telemetry.py", "dpdk-dev"},
      {"ovs-vswitchd (DPDK build)", "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk", "openvswitch-switch-dpdk"},
      {"ovsdb-server", "ovsdb-server", "openvswitch-switch"},
      {"nft", "nft", "nftables"},
      {"ping", "ping", "iputils-ping"},
      {"dataplane daemon", build_dir + "/dataplane/dataplane", "(this project: ./scripts/bench builds it)"},
      {"dataplane-ctl", build_dir + "/dataplane/dataplane-ctl", "(this project: ./scripts/bench builds it; the harness reads the DUT's counters with it)"},
  };
  int missing = 0;
  for (const auto& n : needs) {
    bool ok;
    if (n.how[0] == '/') {
      ok = access(n.how.c_str(), X_OK) == 0;
    } else {
      auto r = testbed::run_capture({"sh", "-c", "command -v \"$0\"", n.how});
      ok = r && r->status == 0;
    }
    printf("%-28s %s\n", n.what.c_str(), ok ? "ok" : ("MISSING: install " + n.package).c_str());
    missing += !ok;
  }
  bool priv = testbed::have_privileges();
  printf("%-28s %s\n", "CAP_NET_ADMIN/CAP_SYS_ADMIN", priv ? "ok" : "MISSING: run as root");
  FILE* f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "r");
  int hp = 0;
  if (f) {
    if (fscanf(f, "%d", &hp) != 1) hp = 0;
    fclose(f);
  }
  printf("%-28s %s\n", "hugepages", hp > 0 ? (std::to_string(hp) + " x 2 MiB").c_str() : "none (DUTs run with --no-huge)");
  return missing || !priv ? 1 : 0;
}

int cmd_testbed(const std::string& sub, const std::string& inventory, const std::string& source_dir,
                const std::string& build_dir) {
  if (sub == "status") {
    int n = 0;
    for (const auto& ns : testbed::list_netns())
      if (ns.rfind("tb-", 0) == 0) {
        printf("%s\n", ns.c_str());
        n++;
      }
    printf("%d testbed namespace(s)\n", n);
    return 0;
  }
  if (sub == "down") {
    auto r = sweep_dead_runs();
    if (!r) {
      fprintf(stderr, "harness: %s\n", r.message().c_str());
      return 1;
    }
    printf("removed or put back %d object(s) of dead runs\n", *r);
    return 0;
  }
  if (sub == "up" && !inventory.empty()) {
    SweepConfig cfg;
    cfg.source_dir = source_dir;
    cfg.build_dir = build_dir;
    cfg.dataplane_config = source_dir + "/" + cfg.dataplane_config;
    Inventory inv;
    auto b = Bed::build_lab(cfg, &inv);
    if (!b) {
      fprintf(stderr, "harness: %s\n", b.message().c_str());
      return 1;
    }
    if (auto s = write_inventory(inv, inventory); !s) {
      fprintf(stderr, "harness: %s\n", s.message().c_str());
      return 1;
    }
    printf("testbed up as a lab: client %s, server %s, DUT %s over SSH; inventory %s\n"
           "(harness run --lab %s ...). Ctrl-C tears it down.\n",
           inv.client.ssh.destination.c_str(), inv.server.ssh.destination.c_str(), inv.dut.ssh.destination.c_str(),
           inventory.c_str(), inventory.c_str());
    fflush(stdout);
    while (!g_stop) pause();
    unlink(inventory.c_str());
    return 0;
  }
  if (sub == "up") {
    auto b = Bed::build(1500);
    if (!b) {
      fprintf(stderr, "harness: %s\n", b.message().c_str());
      return 1;
    }
    printf("testbed up: ip netns exec %s ... (client %s), %s (DUT ports d0 d1), %s (server %s)\n"
           "Ctrl-C tears it down.\n",
           b.value()->client->full_name().c_str(), Bed::kClientIp, b.value()->dut->full_name().c_str(),
           b.value()->server->full_name().c_str(), Bed::kServerIp);
    fflush(stdout);
    while (!g_stop) pause();
    return 0;
  }
  fprintf(stderr, "harness: testbed up [--inventory FILE]|down|status\n");
  return 2;
}

// --tunnel other than the default names the overlay's tunnel: refused
// (with a message) when no scenario of the run has an overlay.
bool tunnel_fits(Tunnel t, bool overlay) {
  if (t == Tunnel::kVxlan || overlay) return true;
  fprintf(stderr, "harness: --tunnel %s: the overlay-nat scenario's tunnel; not without --scenario overlay-nat\n",
          std::string(name(t)).c_str());
  return false;
}

// harness run --mode rfc2544 [--frame-sizes ..] [--conns ..] [--dut ..] [--trial S] [--loss F] [--repeat N] [--out DIR]
int cmd_rfc2544(int argc, char** argv, const std::string& build_dir) {
  Rfc2544Config c;
  c.build_dir = build_dir;
  std::string src = exe_dir() + "/../../..";
  char real[4096];
  c.source_dir = realpath(src.c_str(), real) ? real : src;
  c.dataplane_config = c.source_dir + "/configs/dataplane/firewall.yaml";
  auto list = [&](const std::string& flag, const std::string& v, int lo, int hi, std::vector<int>* out) {
    out->clear();
    std::stringstream ss(v);
    for (std::string x; std::getline(ss, x, ',');) {
      double n;
      if (!sdn::parse_number(x, true, lo, hi, &n)) {
        fprintf(stderr, "harness: %s '%s': want numbers %d..%d, comma-separated\n", flag.c_str(), v.c_str(), lo, hi);
        exit(2);
      }
      out->push_back(static_cast<int>(n));
    }
    if (out->empty()) {
      fprintf(stderr, "harness: %s: empty\n", flag.c_str());
      exit(2);
    }
  };
  // A finite number in lo..hi, or a message naming the flag.
  auto number = [](const std::string& flag, const std::string& v, double lo, double hi, double* out, const char* want) {
    if (sdn::Status s = sdn::parse_number(v, false, lo, hi, out); !s) {
      fprintf(stderr, "harness: %s %s (%s)\n", flag.c_str(), s.message().c_str(), want);
      return false;
    }
    return true;
  };
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fputs(kHelp, stdout);
      exit(0);
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "harness: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--mode") continue;
    else if (a == "--frame-sizes") list(a, v, 64, 1518, &c.frames);
    else if (a == "--conns") list(a, v, 1, 10000000, &c.conns);
    else if (a == "--repeat") {
      std::vector<int> r;
      list(a, v, 1, 100, &r);
      c.repeat = r[0];
    } else if (a == "--trial") {
      if (!number(a, v, 0.1, 600, &c.trial_s, "want 0.1..600 s")) return 2;
    } else if (a == "--loss") {
      if (!number(a, v, 0, 1, &c.loss, "want a fraction 0..1")) return 2;
    } else if (a == "--dut") {
      c.duts.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) {
        const DutProfile* p = find_dut(x);
        if (!p || p->role == DutRole::kTool) {
          fprintf(stderr, "harness: --dut: unknown DUT '%s'\n", x.c_str());
          return 2;
        }
        c.duts.push_back(x);
      }
      if (c.duts.empty()) {
        fprintf(stderr, "harness: --dut: empty\n");
        return 2;
      }
    } else if (a == "--churn") {
      if (!number(a, v, 0, 600, &c.churn_s, "want 0 (none) or 0.1..600 s")) return 2;
      if (c.churn_s > 0 && c.churn_s < 0.1) {
        fprintf(stderr, "harness: --churn '%s': want 0 (none) or 0.1..600 s\n", v.c_str());
        return 2;
      }
    } else if (a == "--proto") {
      const std::optional<Proto> p = parse_proto(v);
      if (!p) {
        fprintf(stderr, "harness: --proto '%s': want tcp or udp (one per run)\n", v.c_str());
        return 2;
      }
      c.proto = *p;
    } else if (a == "--tracker-capacity") {
      std::vector<int> r;
      list(a, v, 1, 100000000, &r);
      c.tracker_capacity = r[0];
    } else if (a == "--churn-conns") {
      std::vector<int> r;
      list(a, v, 1, 10000000, &r);
      c.churn_conns = r[0];
    } else if (a == "--out") c.out_dir = absolute(v);
    else if (a == "--resume") {
      c.out_dir = absolute(v);
      c.resume = true;
    } else if (a == "--dataplane-config") c.dataplane_config = v;
    else if (a == "--tunnel") {
      const std::optional<Tunnel> t = parse_tunnel(v);
      if (!t) {
        fprintf(stderr, "harness: --tunnel '%s': want vxlan or geneve\n", v.c_str());
        return 2;
      }
      c.tunnel = *t;
    } else if (a == "--scenario") {
      c.scenarios.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) {
        const std::optional<ScenarioKind> sc = parse_scenario(x);
        if (!sc) {
          fprintf(stderr, "harness: --scenario '%s': want firewall and/or overlay-nat, comma-separated\n", x.c_str());
          return 2;
        }
        if (std::find(c.scenarios.begin(), c.scenarios.end(), *sc) == c.scenarios.end()) c.scenarios.push_back(*sc);
      }
      if (c.scenarios.empty()) {
        fprintf(stderr, "harness: --scenario: empty\n");
        return 2;
      }
    } else {
      fprintf(stderr, "harness: --mode rfc2544: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  bool tunnelled = false;
  for (ScenarioKind k : c.scenarios) {
    tunnelled = tunnelled || scenario_of(k, c.tunnel).overlay();
    if (std::string why = scenario_of(k, c.tunnel).refuse_rfc2544(c.proto); !why.empty()) {
      fprintf(stderr, "harness: --scenario %s: %s\n", std::string(name(k)).c_str(), why.c_str());
      return 2;
    }
  }
  if (!tunnel_fits(c.tunnel, tunnelled)) return 2;
  if (!testbed::have_privileges()) {
    fprintf(stderr, "harness: run as root (DPDK and memif sockets under /run)\n");
    return 2;
  }
  auto r = run_rfc2544(c, g_stop);
  if (!r) {
    fprintf(stderr, "harness: %s\n", r.message().c_str());
    return 1;
  }
  if (g_stop) return 130;
  return *r > 0 ? 1 : 0;
}

int cmd_report(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: harness report DIR\n");
    return 2;
  }
  if (auto s = write_report(argv[2]); !s) {
    fprintf(stderr, "harness: %s\n", s.message().c_str());
    return 1;
  }
  printf("%s/report.md\n%s/report.html\n", argv[2], argv[2]);
  return 0;
}

int cmd_compare(int argc, char** argv) {
  const char* usage = "usage: harness compare OLD.csv NEW.csv [--max-regression PCT] [--junit FILE]\n";
  std::vector<std::string> files;
  std::string junit;
  double pct = 5;
  for (int i = 2; i < argc; i++) {
    std::string x = argv[i];
    if (x == "--junit") {
      if (i + 1 >= argc || !*argv[i + 1]) {
        fprintf(stderr, "harness: --junit needs a file\n%s", usage);
        return 2;
      }
      junit = argv[++i];
    } else if (x == "--max-regression") {
      if (i + 1 >= argc) {
        fprintf(stderr, "harness: --max-regression needs a value\n%s", usage);
        return 2;
      }
      std::string v = argv[++i];
      if (!sdn::parse_number(v, false, 0, 100, &pct)) {
        fprintf(stderr, "harness: bad value '%s' for --max-regression: want a percentage in 0..100\n", v.c_str());
        return 2;
      }
    } else if (x.rfind("-", 0) == 0) {
      fprintf(stderr, "harness: compare: unknown flag '%s'\n%s", x.c_str(), usage);
      return 2;
    } else {
      files.push_back(x);
    }
  }
  if (files.size() != 2) {
    fputs(usage, stderr);
    return 2;
  }
  auto cells = compare_cells(files[0], files[1], pct);
  auto r = compare(files[0], files[1], pct);
  if (!cells || !r) {
    fprintf(stderr, "harness: %s\n", (cells ? r.message() : cells.message()).c_str());
    return 2;
  }
  if (!junit.empty()) {
    const std::string tmp = junit + ".tmp";
    std::ofstream f(tmp, std::ios::trunc);
    f << junit_xml(*cells, files[0], files[1], pct);
    f.close();
    if (!f || rename(tmp.c_str(), junit.c_str()) != 0) {
      fprintf(stderr, "harness: --junit %s: cannot write it: %s\n", junit.c_str(), strerror(errno));
      unlink(tmp.c_str());
      return 2;
    }
  }
  for (const auto& l : *r) printf("%s\n", l.c_str());
  printf("%zu problem(s): regressions over %.1f%%, missing or failing cells\n", r->size(), pct);
  return r->empty() ? 0 : 1;
}

// `harness run`'s flags over the YAML's settings. Returns an exit status
// (--help, a bad flag), or -1 to go on.
int parse_sweep_flags(int argc, char** argv, SweepConfig* cfg, bool* no_rfc2544) {
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "harness: %s needs a value\n", a.c_str());
        exit(2);
      }
      return argv[++i];
    };
    auto bad = [&](const std::string& v) {
      fprintf(stderr, "harness: bad value '%s' for %s (see --help)\n", v.c_str(), a.c_str());
      exit(2);
    };
    auto num = [&](long lo, long hi) {
      std::string v = val();
      double n;
      if (sdn::Status st = sdn::parse_number(v, true, static_cast<double>(lo), static_cast<double>(hi), &n); !st) {
        fprintf(stderr, "harness: bad value for %s: %s\n", a.c_str(), st.message().c_str());
        exit(2);
      }
      return static_cast<int>(n);
    };
    // The same limits as the YAML's (sweep.h).
    auto ints = [&](Limit l, std::vector<int>* out) {
      std::string v = val();
      if (!parse_ints(v, out)) bad(v);
      for (int x : *out)
        if (x < l.lo || x > l.hi) {
          fprintf(stderr, "harness: bad value '%s' for %s: %d is out of range %d..%d\n", v.c_str(), a.c_str(), x, l.lo,
                  l.hi);
          exit(2);
        }
    };
    auto names = [&](const std::vector<std::string>& known, std::vector<std::string>* out) {
      std::string v = val();
      *out = split_list(v);
      if (out->empty()) {
        fprintf(stderr, "harness: %s '%s' names nothing (one or more of:", a.c_str(), v.c_str());
        for (auto& k : known) fprintf(stderr, " %s", k.c_str());
        fprintf(stderr, ")\n");
        exit(2);
      }
      for (auto& x : *out)
        if (std::find(known.begin(), known.end(), x) == known.end()) bad(x);
    };
    // One name of `known` (--scenario, --segmentation).
    auto one_of = [&](const std::vector<std::string>& known) -> std::string {
      std::vector<std::string> one;
      names(known, &one);
      if (one.size() != 1) {
        std::string all;
        for (auto& k : known) all += (all.empty() ? "" : ", ") + k;
        fprintf(stderr, "harness: %s takes one of %s\n", a.c_str(), all.c_str());
        exit(2);
      }
      return one[0];
    };
    if (a == "--help" || a == "-h") {
      fputs(kHelp, stdout);
      return 0;
    }
    if (a == "--config") val();
    else if (a == "--instances") ints(kInstancesLimit, &cfg->instances);
    else if (a == "--sizes") ints(kSizesLimit, &cfg->sizes);
    else if (a == "--proto") {
      const std::string v = val();
      if (std::string why = parse_proto_list(v, &cfg->protos); !why.empty()) {
        fprintf(stderr, "harness: --proto '%s': %s\n", v.c_str(), why.c_str());
        return 2;
      }
    }
    else if (a == "--dut") names(dut_names(), &cfg->duts);
    else if (a == "--duration") cfg->duration_s = num(kDurationLimit.lo, kDurationLimit.hi);
    else if (a == "--repeat") cfg->repeat = num(kRepeatLimit.lo, kRepeatLimit.hi);
    else if (a == "--warmup") cfg->warmup_s = num(kWarmupLimit.lo, kWarmupLimit.hi);
    else if (a == "--omit") cfg->omit_s = num(kOmitLimit.lo, kOmitLimit.hi);
    else if (a == "--background-conns") cfg->background_conns = num(kBackgroundLimit.lo, kBackgroundLimit.hi);
    else if (a == "--no-sockperf") cfg->sockperf = false;
    else if (a == "--no-rfc2544") *no_rfc2544 = true;
    else if (a == "--no-interleave") cfg->interleave = false;
    else if (a == "--mtu") cfg->mtu = num(kMtuLimit.lo, kMtuLimit.hi);
    else if (a == "--dataplane-config") cfg->dataplane_config = val();
    else if (a == "--scenario") cfg->scenario = *parse_scenario(one_of(scenario_names()));
    else if (a == "--tunnel") cfg->tunnel = *parse_tunnel(one_of(tunnel_names()));
    else if (a == "--segmentation") cfg->segmentation = *parse_segmentation(one_of(segmentation_names()));
    else if (a == "--out") cfg->out_dir = absolute(val());
    else if (a == "--resume") cfg->resume_dir = absolute(val());
    else if (a == "--ci") cfg->ci = true;
    else if (a == "--lab") {
      cfg->lab = val();
      if (cfg->lab != "testbed-ssh") {
        auto inv = load_inventory(cfg->lab);
        if (!inv) {
          fprintf(stderr, "harness: --lab: %s\n", inv.message().c_str());
          return 2;
        }
        cfg->inventory = std::make_shared<const Inventory>(inv.value());
      }
    }
    else {
      fprintf(stderr, "harness: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  return -1;
}

// --ci: the summary rows as a table on stdout.
void print_ci_table(const std::string& dir) {
  auto rows = read_csv(dir + "/results.csv");
  if (rows) {
    printf("%-11s %-10s %-4s %4s %6s %10s %9s %s\n", "dut", "kind", "prot", "inst", "size", "gbps", "p50_us", "status");
    for (auto& r : *rows)
      if (r[Col::repeat] == "summary")
        printf("%-11s %-10s %-4s %4s %6s %10s %9s %s\n", r[Col::dut].c_str(), r[Col::kind].c_str(), r[Col::proto].c_str(),
               r[Col::instances].c_str(), r[Col::size_bytes].c_str(), r[Col::throughput_gbps].c_str(),
               r[Col::latency_p50_us].c_str(), (r[Col::status] + (r[Col::error].empty() ? "" : ": " + r[Col::error])).c_str());
  }
}

// The config's rfc2544 stage after the sweep, into the same directory.
// Returns its error rows (1 when it could not run).
int rfc2544_stage(const SweepConfig& cfg, const std::string& dir) {
  if (!cfg.lab.empty()) {
    fprintf(stderr, "harness: the config's rfc2544 stage is skipped with --lab (memif runs on one host)\n");
    return 0;
  }
  Rfc2544Config rc = cfg.rfc;
  rc.build_dir = cfg.build_dir;
  rc.source_dir = cfg.source_dir;
  rc.dataplane_config = cfg.dataplane_config;
  rc.out_dir = dir;
  rc.scenarios = {cfg.scenario};
  rc.tunnel = cfg.tunnel;
  if (std::string why = cfg.run_scenario().refuse_rfc2544(rc.proto); !why.empty()) {
    fprintf(stderr, "harness: the config's rfc2544 stage is not run: %s: %s\n", std::string(name(cfg.scenario)).c_str(),
            why.c_str());
    return 1;
  }
  fprintf(stderr, "harness: the config's rfc2544 stage (memif) into %s\n", dir.c_str());
  auto r = run_rfc2544(rc, g_stop);
  if (!r) {
    fprintf(stderr, "harness: rfc2544: %s\n", r.message().c_str());
    return 1;
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A tool that exits early (harness-gen refusing a flag, an ssh that
  // died) must be an error row, not the death of the harness on a write.
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "--version") {
    printf("harness %s (revision %s)\nDPDK %s built against (libdpdk.pc: harness-gen's)\n", DP_VERSION, DP_REVISION,
           DP_DPDK_BUILD_VERSION);
    return 0;
  }
  if (cmd == "--schema") {
    if (argc != 2) {
      fprintf(stderr, "usage: harness --schema\n");
      return 2;
    }
    printf("%s\n", results_json_schema().c_str());
    return 0;
  }
  std::string build_dir = exe_dir() + "/..";
  if (cmd == "check") return cmd_check(build_dir);
  if (cmd == "testbed") {
    std::string sub = argc > 2 ? argv[2] : "", inventory;
    if (argc == 5 && std::string(argv[3]) == "--inventory") inventory = argv[4];
    else if (argc != 3) sub = "";
    return cmd_testbed(sub, inventory, exe_dir() + "/../../..", build_dir);
  }
  if (cmd == "report") return cmd_report(argc, argv);
  if (cmd == "compare") return cmd_compare(argc, argv);
  if (cmd != "run") {
    fprintf(stderr, "harness: unknown command '%s' (see --help)\n", cmd.c_str());
    return 2;
  }

  for (int i = 2; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--mode")) {
      std::string m = argv[i + 1];
      if (m == "rfc2544") return cmd_rfc2544(argc, argv, build_dir);
      if (m != "sweep") {
        fprintf(stderr, "harness: --mode '%s': want sweep (the default) or rfc2544\n", m.c_str());
        return 2;
      }
    }
  SweepConfig cfg;
  bool no_rfc2544 = false;
  cfg.build_dir = build_dir;
  std::string src = exe_dir() + "/../../..";
  char real[4096];
  cfg.source_dir = realpath(src.c_str(), real) ? real : src;
  cfg.dataplane_config = cfg.source_dir + "/configs/dataplane/firewall.yaml";
  // The YAML first, then the flags over it.
  for (int i = 2; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--config"))
      if (auto s = load_sweep_config(argv[i + 1], &cfg); !s) {
        fprintf(stderr, "harness: %s\n", s.message().c_str());
        return 2;
      }
  if (int rc = parse_sweep_flags(argc, argv, &cfg, &no_rfc2544); rc >= 0) return rc;
  if (!tunnel_fits(cfg.tunnel, cfg.run_scenario().overlay() != nullptr)) return 2;
  if (std::string why = cfg.run_scenario().refuse_lab(); cfg.inventory && !why.empty()) {
    fprintf(stderr, "harness: --scenario %s: %s\n", std::string(name(cfg.scenario)).c_str(), why.c_str());
    return 2;
  }
  if (!cfg.lab.empty() && cfg.segmentation != Segmentation::kWire) {
    fprintf(stderr,
            "harness: --segmentation %s: the namespace testbed's setting; a lab's hosts send what their NICs put on "
            "the wire\n",
            std::string(name(cfg.segmentation)).c_str());
    return 2;
  }
  if (cfg.inventory) {
    cfg.mtu = cfg.inventory->mtu;
    for (const auto& d : cfg.duts)
      if (std::find(cfg.inventory->dut.profiles.begin(), cfg.inventory->dut.profiles.end(), d) ==
          cfg.inventory->dut.profiles.end()) {
        fprintf(stderr, "harness: --dut %s: the inventory %s does not list it under hosts.dut.profiles\n", d.c_str(),
                cfg.lab.c_str());
        return 2;
      }
  }
  if (!cfg.dataplane_config.empty() && cfg.dataplane_config[0] != '/' && access(cfg.dataplane_config.c_str(), R_OK) != 0)
    cfg.dataplane_config = cfg.source_dir + "/" + cfg.dataplane_config;
  if (!testbed::have_privileges()) {
    fprintf(stderr, "harness: run as root (the testbed needs CAP_NET_ADMIN and CAP_SYS_ADMIN)\n");
    return 2;
  }
  auto outcome = run_sweep(cfg, g_stop);
  if (!outcome) {
    fprintf(stderr, "harness: %s\n", outcome.message().c_str());
    return 1;
  }
  std::string dir = outcome->dir;
  int rfc_errors = 0;
  if (cfg.rfc2544 && !no_rfc2544 && !g_stop && !dir.empty()) rfc_errors = rfc2544_stage(cfg, dir);
  if (!dir.empty()) {
    if (auto s = write_report(dir); !s) fprintf(stderr, "harness: report: %s\n", s.message().c_str());
    else fprintf(stderr, "harness: report in %s/report.md\n", dir.c_str());
  }
  if (cfg.ci && !dir.empty()) print_ci_table(dir);
  if (g_stop) {
    fprintf(stderr, "harness: interrupted; rows so far are kept (resume with --resume %s)\n", dir.c_str());
    return 130;
  }
  return outcome->error_rows || rfc_errors ? 1 : 0;
}
