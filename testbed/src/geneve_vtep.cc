#include "testbed/geneve_vtep.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace testbed {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Process> start_userspace(const GeneveVtepSpec& s) {
  std::vector<std::string> argv = {"/usr/bin/python3", s.script,      "--dev",  s.dev,
                                   "--vni",            std::to_string(s.vni), "--remote", s.remote,
                                   "--port",           std::to_string(s.port)};
  for (const std::string& o : s.options) argv.insert(argv.end(), {"--opt", o});
  SpawnOptions o;
  o.ns = s.ns;
  o.stdout_path = s.log_path;
  o.stderr_path = "=stdout";
  auto p = Process::spawn(argv, o);
  if (!p) return Status::error("the userspace Geneve VTEP: " + p.message());
  for (int i = 0; i < 200; i++) {
    if (slurp(s.log_path).find("geneve-vtep: ready") != std::string::npos) return std::move(p.value());
    if (!p->running()) break;
    std::this_thread::sleep_for(100ms);
  }
  p->stop();
  return Status::error("the userspace Geneve VTEP (" + s.script + ") did not come up: " +
                       slurp(s.log_path).substr(0, 600));
}

}  // namespace

std::string GeneveVtep::describe() const {
  return userspace ? "userspace (scapy), the kernel has no Geneve" : "kernel geneve device";
}

std::string geneve_vtep_script(const std::string& source_root) { return source_root + "/testbed/tools/geneve-vtep.py"; }

Result<GeneveVtep> make_geneve_vtep(const GeneveVtepSpec& s) {
  GeneveVtep v;
  if (!s.force_userspace) {
    auto r = run_capture(s.kernel_argv, s.ns, 10s);
    if (!r) return r.status();
    if (r->status == 0) return v;
    if (r->output.find("Unknown device type") == std::string::npos)
      return Status::error("ip link add " + s.dev + ": " + r->output.substr(0, 200));
    v.why = r->output;
    while (!v.why.empty() && v.why.back() == '\n') v.why.pop_back();
  }
  v.userspace = true;
  auto p = start_userspace(s);
  if (!p) return p.status();
  v.process = std::move(p.value());
  auto r = run_capture({"ip", "link", "set", "dev", s.dev, "address", s.mac}, s.ns, 10s);
  if (!r) return r.status();
  if (r->status != 0) return Status::error("ip link set dev " + s.dev + " address: " + r->output.substr(0, 200));
  return v;
}

}  // namespace testbed
