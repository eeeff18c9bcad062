// dataplane: the DPDK daemon. See `dataplane --help` and configs/dataplane/.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_version.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include "dataplane/log.h"
#include "socket.h"
#include "daemon.h"
#include "metrics.h"
#include "dataplane/config.h"
#include "version.h"

namespace dp {
int hw_check(const std::string& pci, bool no_huge, const std::string& nic, const std::string& peer);  // hwcheck.cc
}

namespace {

void usage() {
  printf(
      "usage: dataplane --config FILE [--check [--no-host-checks]] [--no-huge] [--file-prefix NAME]\n"
      "                 [--log-level LEVEL]\n"
      "       dataplane --version\n"
      "       dataplane --hw-check PCI[,devargs] [--peer DEV] [--no-huge]\n"
      "       dataplane --hw-check model [--nic PROFILE]\n"
      "\n"
      "  --config FILE       the YAML config (configs/dataplane/*.yaml)\n"
      "  --check             validate FILE and exit: 0 if good, 2 with file:line: key 'x': reason if not;\n"
      "                      includes what this host must have (lcores, memory for conntrack, the\n"
      "                      ports' interfaces or PCI devices); the control socket and metrics address\n"
      "                      of a running instance of FILE itself are not counted as taken (a note says so)\n"
      "  --no-host-checks    with --check: the file alone, for a config meant for another host\n"
      "  --no-huge           run DPDK without hugepages (overrides eal.no_huge)\n"
      "  --file-prefix NAME  DPDK runtime prefix (overrides eal.file_prefix; the telemetry socket\n"
      "                      is /var/run/dpdk/NAME/dpdk_telemetry.v2)\n"
      "  --log-level LEVEL   the daemon's rte_log types dataplane.control, .offload, .pipeline:\n"
      "                      error, warning, notice, info (default) or debug\n"
      "  --version           the version, git revision and DPDK version (built against, running)\n"
      "\n"
      "Offload (offload.provider): none | rte_flow (mlx5) | emulated (the same\n"
      "rte_flow provider on a model of the mlx5 22.11 driver, which also steers packets as the first\n"
      "stage of each worker) | auto (rte_flow if the ports can, else none). offload.engine: hws\n"
      "(hardware steering, dv_flow_en=2: templates and queues) | sws (DV software steering,\n"
      "dv_flow_en=1: rte_flow_validate and rte_flow_create per rule) | auto (an mlx5 PCI port without\n"
      "dv_flow_en in its devargs gets 2 when its firmware has HWS, xx.35.1012 or newer, else the\n"
      "driver's default 1; the provider then runs the engine the port was probed with; where\n"
      "hardware steering does not configure, the daemon starts itself again with dv_flow_en=1).\n"
      "--hw-check PCI probes an mlx5 port and offloads one connection through it; with --peer DEV (a port\n"
      "cabled to PCI's: a PCI address or a vdev such as net_af_packet0,iface=eth2) it makes the connection\n"
      "with frames from the peer and checks that its data segments come back forwarded by the NIC, not\n"
      "software, and counted by the NIC. --hw-check model runs the same sequence against the model, its\n"
      "ports cabled to peers by rings, once per NIC profile (--nic PROFILE: one of cx6dx-legacy,\n"
      "cx6dx-switchdev, bf2-switchdev, cx6dx-switchdev-ct-fdb, cx6dx-legacy-fw22.31, bf2-switchdev-fw24.32),\n"
      "printing first the firmware and whether it has HWS, then the engine, the domain (transfer: the\n"
      "e-switch; ingress: each port's NIC Rx) and the conntrack strategy (aso: CONNTRACK objects; flows:\n"
      "exact rules, SYN/FIN/RST to software) it chose and why (offload.domain, offload.conntrack).\n"
      "`dataplane-ctl offload testpmd` prints the hardware rules as dpdk-testpmd commands\n"
      "(template/queue form on HWS, `flow create` on SWS).\n"
      "\n"
      "Control: dataplane-ctl talks to the root-only socket control.socket\n"
      "(default /run/dataplane/PREFIX.sock; PATH.lock keeps a second daemon off it).\n"
      "SIGHUP or `dataplane-ctl reload` re-reads FILE and applies the tables and conntrack\n"
      "timeouts; a change to ports, workers, eal, other conntrack or offload settings is\n"
      "refused whole and the running config kept (README: Reload). Ports are bound by name.\n"
      "Telemetry (dpdk-telemetry.py -f PREFIX): /dataplane/stats, /dataplane/ct/list, /dataplane/rules.\n"
      "SIGINT/SIGTERM stop it cleanly, during start-up too (the control socket and DPDK runtime dir removed).\n"
      "Exit status: 0 clean stop, 1 runtime error, 2 config error (nothing started: checked before EAL,\n"
      "including lcores against this host's CPUs, conntrack memory, the control socket and its lock).\n");
}

}  // namespace

int main(int argc, char** argv) {
  dp::log_open_stream();  // rte_log's lines once, to stderr, with journal priorities (dataplane/log.h)
  // EAL pins this thread to the main lcore; a start again (execve) begins
  // with the CPUs this one began with.
  cpu_set_t cpus0;
  const bool have_cpus0 = sched_getaffinity(0, sizeof cpus0, &cpus0) == 0;
  std::string file, prefix, hw, log_level, nic, peer;
  bool check = false, no_huge = false, host_checks = true;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) file = argv[++i];
    else if (a == "--check") check = true;
    else if (a == "--no-host-checks") host_checks = false;
    else if (a == "--hw-check" && i + 1 < argc) hw = argv[++i];
    else if (a == "--nic" && i + 1 < argc) nic = argv[++i];
    else if (a == "--peer" && i + 1 < argc) peer = argv[++i];
    else if (a == "--no-huge") no_huge = true;
    else if (a == "--file-prefix" && i + 1 < argc) prefix = argv[++i];
    else if (a == "--log-level" && i + 1 < argc) log_level = argv[++i];
    else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--version") {
      // Built against: rte_version.h's macros; running: the librte_eal
      // loaded now (rte_version() needs no EAL init).
      printf("dataplane %s (revision %s)\nDPDK %d.%02d.%d built against, %s running\n", DP_VERSION, DP_REVISION,
             RTE_VER_YEAR, RTE_VER_MONTH, RTE_VER_MINOR, rte_version());
      return 0;
    } else {
      fprintf(stderr, "dataplane: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (!nic.empty() && hw != "model") {
    fprintf(stderr, "dataplane: --nic names a profile of the NIC model: with --hw-check model\n");
    return 2;
  }
  if (!peer.empty() && (hw.empty() || hw == "model")) {
    fprintf(stderr, "dataplane: --peer names a port cabled to the one --hw-check PCI checks\n");
    return 2;
  }
  if (!hw.empty()) return dp::hw_check(hw, no_huge, nic, peer);
  if (file.empty()) {
    fprintf(stderr, "dataplane: --config FILE is required (see --help)\n");
    return 2;
  }
  // Everything that can be refused is refused here, before EAL touches a port.
  auto cfg = dp::load_config(file);
  if (!cfg) {
    dp::log_error(dp::LogType::kControl, cfg.message());
    return 2;
  }
  cfg->cli.file_prefix = prefix;
  cfg->cli.log_level = log_level;
  cfg->cli.no_huge = no_huge;
  if (dp::Status s = cfg->apply_cli(); !s) {
    dp::log_error(dp::LogType::kControl, s.message());
    return 2;
  }
  if (!host_checks && !check) {
    dp::log_error(dp::LogType::kControl, "--no-host-checks goes with --check only");
    return 2;
  }
  std::vector<std::string> notes;  // --check of a running instance's own config: what it skipped
  if (dp::Status s = host_checks ? dp::check_host(*cfg, check ? &notes : nullptr) : dp::Status(); !s) {
    dp::log_error(dp::LogType::kControl, s.message());
    return 2;
  }
  for (const auto& n : notes) printf("%s: note: %s\n", file.c_str(), n.c_str());
  if (check) {
    int tables = 0;
    for (const auto& r : cfg->rules) tables = std::max(tables, r.table + 1);
    printf("%s: ok: %zu ports, %zu workers, %zu rules in %d tables, offload %s\n", file.c_str(), cfg->ports.size(),
           cfg->workers.lcores.size(), cfg->rules.size(), tables, cfg->offload.provider.c_str());
    return 0;
  }
  // From here a SIGINT/SIGTERM is a clean stop, even before the control
  // loop runs: the start looks at it between steps (nothing is left behind
  // that a stop from the loop would not remove).
  dp::install_signal_handlers();
  // The socket before EAL: a second daemon on the same path stops here.
  auto ctl = dp::ControlServer::open(cfg->control_socket);
  if (!ctl) {
    dp::log_error(dp::LogType::kControl, ctl.message());
    return 2;
  }
  // The metrics endpoint too, when configured (an address in use stops here).
  std::unique_ptr<dp::MetricsServer> metrics;
  if (!cfg->metrics_listen.empty()) {
    auto m = dp::MetricsServer::open(cfg->metrics_listen);
    if (!m) {
      dp::log_error(dp::LogType::kControl, cfg->file + ":" + std::to_string(cfg->metrics_line) +
                                               ": key 'metrics.listen': " + m.message());
      return 2;
    }
    metrics = std::move(m.value());
  }
  // A peer that goes away (a telemetry or control client) is its problem:
  // DPDK's telemetry thread write()s without MSG_NOSIGNAL.
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args = dp::eal_args(*cfg, no_huge);
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  if (dp::stop_requested()) {
    fprintf(stderr, "dataplane: stopping: a signal during start-up\n");
    return 0;
  }
  if (rte_eal_init(static_cast<int>(av.size()), av.data()) < 0) {
    dp::log_error(dp::LogType::kControl, std::string("DPDK EAL init failed: ") + rte_strerror(rte_errno));
    return 1;
  }
  int rc = 0;
  std::string hws_failed;  // start again with DV software steering
  if (dp::stop_requested()) {
    fprintf(stderr, "dataplane: stopping: a signal during start-up\n");
  } else {
    dp::Daemon d(std::move(cfg.value()), std::move(ctl.value()), std::move(metrics));
    if (dp::Status s = d.start(); !s && d.interrupted()) {
      fprintf(stderr, "dataplane: stopping: a signal during start-up\n");
    } else if (!s) {
      dp::log_error(dp::LogType::kControl, s.message());
      rc = 1;
      // The engine is fixed when EAL probes a port: a port probed with
      // hardware steering that would not configure is probed again, by a
      // new EAL in this same process (execve: the same PID for systemd),
      // with DV software steering. Once: the variable marks the second start.
      if (dp::hws_did_not_start_before().empty()) hws_failed = d.hws_did_not_start();
    } else {
      rc = d.run();
    }
  }
  // EAL keeps its runtime directory (config, fbarray_*) for secondary
  // processes; none attaches to a primary that is gone, so a stop leaves none.
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);
  if (ec) fprintf(stderr, "dataplane: remove %s: %s\n", runtime_dir.c_str(), ec.message().c_str());
  if (!hws_failed.empty()) {
    fprintf(stderr, "dataplane: hardware steering did not start (%s): starting again with DV software steering "
                    "(dv_flow_en=1)\n", hws_failed.c_str());
    fflush(nullptr);
    setenv(dp::kHwsDidNotStartEnv, hws_failed.c_str(), 1);
    if (have_cpus0) sched_setaffinity(0, sizeof cpus0, &cpus0);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "dataplane: execv /proc/self/exe: %s\n", strerror(errno));
  }
  return rc;
}
