#include "ovs.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "testbed/testbed.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Status;
using testbed::Process;
using testbed::SpawnOptions;

namespace {
constexpr const char* kVswitchd = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";
}

Status LocalOvs::start(const OvsSpec& spec) {
  if (access(kVswitchd, X_OK) != 0)
    return Status::error(std::string(kVswitchd) + " missing (Debian package openvswitch-switch-dpdk)");
  spec_ = spec;
  const std::string& run = spec_.run_dir;
  std::filesystem::create_directories(run);
  env_ = {"OVS_RUNDIR=" + run, "OVS_DBDIR=" + run, "OVS_LOGDIR=" + run, "OVS_SYSCONFDIR=" + run};
  const std::string db = run + "/conf.db", sock = "unix:" + run + "/db.sock";
  std::filesystem::remove(db);
  SDN_TRY(cmd({"ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema"}));
  SpawnOptions o;
  o.ns = spec_.ns;
  o.env = env_;
  o.stdout_path = run + "/ovsdb-server.out";
  o.stderr_path = "=stdout";
  auto d = Process::spawn({"ovsdb-server", db, "--remote=punix:" + run + "/db.sock", "--pidfile=" + run + "/ovsdb.pid",
                           "--unixctl=" + run + "/ovsdb.ctl"},
                          o);
  if (!d) return d.status();
  db_ = std::move(d.value());
  for (int i = 0; i < 50 && access((run + "/db.sock").c_str(), F_OK) != 0; i++) std::this_thread::sleep_for(100ms);
  std::string extra = "--no-pci --file-prefix " + spec_.file_prefix;
  if (!util::huge_ok()) extra += " --no-huge -m 1024";
  SDN_TRY(vsctl({"--no-wait", "init", "--", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                 "other_config:dpdk-lcore-mask=" + spec_.lcore_mask, "other_config:pmd-cpu-mask=" + spec_.pmd_mask,
                 "other_config:dpdk-extra=" + extra}));
  o.stdout_path = run + "/ovs-vswitchd.out";
  auto v = Process::spawn({kVswitchd, sock, "--pidfile=" + run + "/vswitchd.pid", "--unixctl=" + run + "/vswitchd.ctl",
                           "--log-file=" + run + "/ovs-vswitchd.log"},
                          o);
  if (!v) return v.status();
  vs_ = std::move(v.value());
  std::vector<std::string> br = {"add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev"};
  int ofport = 1;
  for (const std::string* dev : {&spec_.dev0, &spec_.dev1}) {
    const std::string p = "p" + std::to_string(ofport - 1);
    br.insert(br.end(), {"--", "add-port", "br0", p, "--", "set", "Interface", p, "type=dpdk",
                         "options:dpdk-devargs=" + *dev, "ofport_request=" + std::to_string(ofport)});
    if (spec_.mtu > 0) br.push_back("mtu_request=" + std::to_string(spec_.mtu));
    ofport++;
  }
  SDN_TRY(vsctl(br));
  const std::string flows = run + "/flows.txt";
  std::ofstream(flows) << util::ovs_firewall_flows();
  return cmd({"ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "unix:" + run + "/br0.mgmt", flows});
}

void LocalOvs::stop() {
  if (vs_.pid() > 0) {
    vs_.stop(5000ms);
    testbed::Testbed::remove_dpdk_prefix(spec_.file_prefix);
  }
  vs_ = Process();
  if (db_.pid() > 0) db_.stop(2000ms);
  db_ = Process();
}

Status LocalOvs::cmd(const std::vector<std::string>& argv, std::string* out) {
  SpawnOptions o;
  o.ns = spec_.ns;
  o.env = env_;
  o.stdout_path = spec_.run_dir + "/cmd.out";
  o.stderr_path = "=stdout";
  auto p = Process::spawn(argv, o);
  if (!p) return p.status();
  auto rc = p->wait(60s);
  if (out) *out = util::slurp(spec_.run_dir + "/cmd.out");
  if (!rc || *rc != 0) return Status::error(argv[0] + " failed: " + util::slurp(spec_.run_dir + "/cmd.out").substr(0, 400));
  return {};
}

Status LocalOvs::vsctl(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), {"ovs-vsctl", "--db=unix:" + spec_.run_dir + "/db.sock", "--timeout=60"});
  return cmd(args, out);
}

Status LocalOvs::appctl(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), {"ovs-appctl", "-t", spec_.run_dir + "/vswitchd.ctl"});
  return cmd(args, out);
}

}  // namespace harness
