#include "util.h"

#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace harness::util {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tail(const std::string& s, size_t n) {
  std::string t = s.size() > n ? s.substr(s.size() - n) : s;
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

std::string first_line(const std::vector<std::string>& argv, const std::string& fallback) {
  auto r = testbed::run_capture(argv, nullptr, std::chrono::seconds(10));
  if (!r) return fallback;
  std::string s = r->output.substr(0, r->output.find('\n'));
  return s.empty() ? fallback : s;
}

std::string fmt(double v, int prec) {
  char b[64];
  snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string now_iso() {
  time_t t = time(nullptr);
  char b[32];
  strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  return b;
}

bool huge_ok() {
  const char* e = getenv("DPDK_HUGE");
  return !e || std::string(e) != "0";
}

sdn::Status wait_for_log(testbed::Process& p, const std::string& log, const std::string& needle,
                         std::chrono::seconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (slurp(log).find(needle) != std::string::npos) return {};
    if (!p.running()) return sdn::Status::error("exited during start; log " + log + ": " + tail(slurp(log)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return sdn::Status::error("not ready after " + std::to_string(within.count()) + " s; log " + log + ": " +
                            tail(slurp(log)));
}

std::string ovs_firewall_flows() {
  std::string fl =
      "table=0,priority=100,arp,actions=NORMAL\n"
      "table=0,priority=100,icmp6,icmp_type=135,actions=NORMAL\n"
      "table=0,priority=100,icmp6,icmp_type=136,actions=NORMAL\n"
      "table=0,priority=50,ip,actions=ct(table=1)\n"
      "table=0,priority=50,ipv6,actions=ct(table=1)\n"
      "table=0,priority=0,actions=drop\n";
  for (std::string l3 : {"ip", "ipv6"})  // ct() needs the L3 type in the match
    fl += "table=1,priority=100," + l3 + ",in_port=1,ct_state=+trk+new,actions=ct(commit),output:2\n" +
          "table=1,priority=100," + l3 + ",in_port=1,ct_state=+trk+est,actions=output:2\n" +
          "table=1,priority=100," + l3 + ",in_port=2,ct_state=+trk+est,actions=output:1\n" +
          "table=1,priority=90," + l3 + ",in_port=1,ct_state=+trk+rel,actions=output:2\n" +
          "table=1,priority=90," + l3 + ",in_port=2,ct_state=+trk+rel,actions=output:1\n";
  return fl + "table=1,priority=0,actions=drop\n";
}

// overlay-nat on br-int (p0 is port 1, the tunnel port 3): the VM's new
// connections committed with the floating address as their source, every
// packet of a tracked connection through ct(nat) both ways.
std::string ovs_overlay_nat_flows() {
  return "table=0,priority=100,in_port=1,ip,actions=ct(table=1,zone=1,nat)\n"
         "table=0,priority=100,in_port=3,ip,actions=ct(table=2,zone=1,nat)\n"
         "table=0,priority=0,actions=drop\n"
         "table=1,priority=100,ip,ct_state=+trk+new,actions=ct(commit,zone=1,nat(src=203.0.113.7)),output:3\n"
         "table=1,priority=100,ip,ct_state=+trk+est,actions=output:3\n"
         "table=1,priority=90,ip,ct_state=+trk+rel,actions=output:3\n"
         "table=1,priority=0,actions=drop\n"
         "table=2,priority=100,ip,ct_state=+trk+est,actions=output:1\n"
         "table=2,priority=90,ip,ct_state=+trk+rel,actions=output:1\n"
         "table=2,priority=0,actions=drop\n";
}

void ovs_port_drops(const std::string& port, const std::string& statistics, std::map<std::string, long long>* m) {
  std::string t = statistics;
  for (char& c : t)
    if (c == '{' || c == '}' || c == ',') c = ' ';
  std::istringstream in(t);
  for (std::string kv; in >> kv;) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (k.find("drop") != std::string::npos || k.find("error") != std::string::npos || k.find("missed") != std::string::npos)
      (*m)[port + "_" + k] = atoll(kv.c_str() + eq + 1);
  }
}

std::map<std::string, long long> dataplane_drops(const std::map<std::string, long long>& reasons,
                                                 const std::map<std::string, long long>& ports) {
  std::map<std::string, long long> m;
  for (const auto& [k, v] : reasons) m[(k == "rule_drop" || k == "no_match" ? "policy:" : "") + k] = v;
  for (const auto& [k, v] : ports)
    if (k.ends_with("_rx_missed") || k.ends_with("_rx_errors") || k.ends_with("_tx_errors") ||
        k.ends_with("_rx_ring_drops") || k == "kernel_ip_reasm_fails")
      m[k] = v;
  return m;
}

HostRunner netns_runner(const testbed::Netns* ns) {
  return [ns](const std::vector<std::string>& argv) -> sdn::Result<std::string> {
    auto r = testbed::run_capture(argv, ns, std::chrono::seconds(10));
    if (!r) return r.status();
    if (r->status != 0)
      return sdn::Status::error(r->output.empty() ? "exit status " + std::to_string(r->status) : r->output);
    return r->output;
  };
}

sdn::Result<std::map<int, long long>> af_packet_ring_drops(pid_t pid) {
  // By number: glibc 2.36's <sys/pidfd.h> declares them without C linkage.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return sdn::Status::error("pidfd_open(" + std::to_string(pid) + "): " + strerror(errno));
  std::map<int, long long> drops;
  std::string refused;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    if (std::filesystem::read_symlink(e.path(), lec).string().rfind("socket:", 0) != 0) continue;
    const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, atoi(e.path().filename().c_str()), 0));
    if (fd < 0) {  // closed since the listing, or not ours to take
      if (errno != EBADF) refused = strerror(errno);
      continue;
    }
    int domain = 0;
    socklen_t l = sizeof domain;
    sockaddr_ll ll{};
    socklen_t al = sizeof ll;
    tpacket_stats st{};
    socklen_t sl = sizeof st;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) == 0 && domain == AF_PACKET &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&ll), &al) == 0 &&
        getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
      drops[ll.sll_ifindex] += st.tp_drops;
    close(fd);
  }
  close(pidfd);
  if (ec) return sdn::Status::error("/proc/" + std::to_string(pid) + "/fd: " + ec.message());
  if (drops.empty() && !refused.empty())
    return sdn::Status::error("pidfd_getfd on process " + std::to_string(pid) + ": " + refused);
  return drops;
}

sdn::Result<ThreadCpu> pinned_threads_cpu(pid_t pid, int cpu) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  const std::string want = std::to_string(cpu);
  ThreadCpu t;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    // Cpus_allowed_list: exactly this CPU (an lcore thread), not a range.
    std::ifstream st(e.path() / "status");
    std::string line, allowed;
    while (std::getline(st, line))
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        const size_t at = line.find_first_not_of(" \t", 18);
        if (at != std::string::npos) allowed = line.substr(at);
        break;
      }
    if (allowed != want) continue;
    std::ifstream ss(e.path() / "schedstat");
    long long run = -1, wait = -1;
    if (!(ss >> run >> wait) || run < 0 || wait < 0) continue;  // (a thread that just ended)
    t.run_ns += run;
    t.wait_ns += wait;
    t.threads++;
  }
  if (ec) return sdn::Status::error(dir + ": " + ec.message());
  if (!t.threads) return sdn::Status::error("process " + std::to_string(pid) + " has no thread pinned to CPU " + want);
  return t;
}

}  // namespace harness::util
