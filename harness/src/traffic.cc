// Traffic through a DUT: client ports outside the ephemeral range,
// background connections (harness-conns), iperf3/sockperf runs.
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

// ------------------------------------------------------------------ client ports

Result<std::vector<int>> pick_client_ports(const std::string& text, int n, int* cursor) {
  std::istringstream in(text);
  long lo = 0, hi = 0;
  if (!(in >> lo >> hi) || lo < 1 || hi > 65535 || lo > hi)
    return Status::error("cannot read the client host's ip_local_port_range from: " + text.substr(0, 80));
  std::set<int> used;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    // ss -Htuan: Netid State Recv-Q Send-Q Local-Address:Port Peer-Address:Port
    std::istringstream l(line);
    std::string f[5];
    for (auto& x : f) l >> x;
    const size_t c = f[4].rfind(':');
    if (c == std::string::npos) continue;
    const std::string port = f[4].substr(c + 1);
    if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos) used.insert(atoi(port.c_str()));
  }
  auto usable = [&](int p) { return (p < lo || p > hi) && !used.count(p); };
  std::vector<int> v;
  const int span = 65536 - kClientPortLo;
  int p = std::clamp(*cursor, kClientPortLo, 65535);
  for (int tried = 0; tried < span && static_cast<int>(v.size()) < n; tried++) {
    if (usable(p)) v.push_back(p);
    p = p == 65535 ? kClientPortLo : p + 1;
  }
  if (static_cast<int>(v.size()) < n)
    return Status::error("only " + std::to_string(v.size()) + " free ports outside the ephemeral range " +
                         std::to_string(lo) + "-" + std::to_string(hi) + " from " + std::to_string(kClientPortLo));
  *cursor = p;
  return v;
}

// ------------------------------------------------------------------ background connections

namespace {


// The last complete JSON line a generator wrote, or a discarded value.
nlohmann::json last_json_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.back() == '}') last = line;
  return nlohmann::json::parse(last, nullptr, false);
}

}  // namespace

Result<std::unique_ptr<BackgroundConns>> BackgroundConns::open(Transport& tr, const std::string& program, int count,
                                                              int first_port, const std::string& raw_prefix,
                                                              const std::atomic<bool>& stop) {
  auto bc = std::unique_ptr<BackgroundConns>(new BackgroundConns());
  const std::string ports =
      std::to_string(first_port) + "-" + std::to_string(first_port + ports_for(count) - 1);
  const std::string srv_out = raw_prefix + ".server.jsonl", cli_out = raw_prefix + ".client.jsonl";
  SpawnOptions o;
  o.stdout_path = srv_out;
  o.stderr_path = "=stdout";
  auto s = tr.spawn(Side::kServer, {program, "serve", "--address", tr.server_address(), "--ports", ports, "--count", std::to_string(count)}, o);
  if (!s) return Status::error("background conns: server side: " + s.message());
  bc->server_ = std::move(s.value());
  for (int i = 0; i < 100; i++) {
    auto j = last_json_line(srv_out);
    if (!j.is_discarded() && (j.value("phase", "") == "ready" || j.value("phase", "") == "serving")) break;
    if (!bc->server_.running() || (!j.is_discarded() && j.value("phase", "") == "failed"))
      return Status::error("background conns: server side: " + (j.is_discarded() ? "exited; see " + srv_out
                                                                                  : j.value("error", "failed")));
    if (i == 99) return Status::error("background conns: server side not listening after 10 s; see " + srv_out);
    std::this_thread::sleep_for(100ms);
  }
  // --timeout: a set-up rate under 500/s is a DUT that cannot take them.
  const int timeout_s = 30 + count / 500;
  o.stdout_path = cli_out;
  auto c = tr.spawn(Side::kClient,
                    {program, "connect", "--to", tr.server_address(), "--ports", ports, "--count",
                     std::to_string(count), "--timeout", std::to_string(timeout_s)},
                    o);
  if (!c) return Status::error("background conns: client side: " + c.message());
  bc->client_ = std::move(c.value());
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 15);;) {
    auto j = last_json_line(cli_out);
    std::string phase = j.is_discarded() ? "" : j.value("phase", "");
    if (phase == "done") {
      Setup& st = bc->setup_;
      st.established = j.value("established", 0LL);
      st.failed = j.value("failed", 0LL);
      st.secs = j.value("secs", 0.0);
      st.per_s = j.value("per_s", 0.0);
      const nlohmann::json errs = j.value("errors", nlohmann::json::object());
      for (auto& [k, v] : errs.items())
        st.errors += (st.errors.empty() ? "" : " ") + k + "=" + std::to_string(v.get<long long>());
      if (st.errors.empty()) st.errors = "none";
      return bc;
    }
    if (phase == "failed")
      return Status::error("background conns: " + j.value("error", std::string("failed")) + " (" +
                           std::to_string(j.value("established", 0LL)) + " of " + std::to_string(count) +
                           " established, " + std::to_string(j.value("failed", 0LL)) + " connects failed)");
    if (!bc->client_.running())
      return Status::error("background conns: client side exited without a result; see " + cli_out);
    if (stop) return Status::error("background conns: interrupted");
    if (std::chrono::steady_clock::now() > deadline)
      return Status::error("background conns: no result from the client side after " +
                           std::to_string(timeout_s + 15) + " s; see " + cli_out);
    std::this_thread::sleep_for(200ms);
  }
}

Status BackgroundConns::alive() {
  if (!server_.running()) return Status::error("the background connections' server side exited");
  if (!client_.running()) return Status::error("the background connections' client side exited");
  return {};
}


// ------------------------------------------------------------------ traffic

using util::fmt;


void put_latency(Row& r, const SockperfResult& l) {
  r[Col::latency_p50_us] = fmt(l.p50_us);
  r[Col::latency_p90_us] = fmt(l.p90_us);
  r[Col::latency_p99_us] = fmt(l.p99_us);
  r[Col::latency_p999_us] = fmt(l.p999_us);
  r[Col::latency_max_us] = fmt(l.max_us);
  r[Col::latency_dropped] = l.dropped >= 0 ? std::to_string(l.dropped) : std::string("not reported by sockperf");
}


constexpr int kLoadedMps = 1000;  // sockperf messages per second under load

RunOut run_traffic(Transport& tr, const std::string& proto, int n, int size, int duration, int omit,
                   const std::string& raw_prefix, bool with_sockperf) {
  RunOut out;
  // Fixed client ports (one flow per instance, the same 5-tuple shape every
  // run), free on the client host now: see pick_client_ports.
  static int cursor = kClientPortLo;
  std::vector<int> cports;
  if (n > 0) {
    auto seen = tr.capture(Side::kClient, {"sh", "-c", "cat /proc/sys/net/ipv4/ip_local_port_range; ss -Htuan"});
    auto picked = seen ? pick_client_ports(*seen, n, &cursor) : Result<std::vector<int>>(seen.status());
    if (!picked) {
      out.error = "client ports: " + picked.message();
      return out;
    }
    cports = *picked;
  }
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    out.error = "pipe failed";
    return out;
  }
  std::vector<Job> procs;
  std::vector<std::string> files;
  int mss = std::max(88, std::min(size, tr.mtu() - 52));
  const std::string server = tr.server_address();
  for (int i = 0; i < n; i++) {
    std::vector<std::string> argv = {"iperf3", "-c", server, "-p", std::to_string(5201 + i), "--cport",
                                     std::to_string(cports[static_cast<size_t>(i)]), "-t", std::to_string(duration), "-J", "-l",
                                     std::to_string(size)};
    if (omit > 0) argv.insert(argv.end(), {"-O", std::to_string(omit)});
    if (!tr.client_address().empty()) argv.insert(argv.end(), {"-B", tr.client_address()});
    if (proto == "udp") argv.insert(argv.end(), {"-u", "-b", "0"});
    else argv.insert(argv.end(), {"-M", std::to_string(mss)});
    SpawnOptions o;
    o.barrier_fd = pfd[0];
    o.stdout_path = raw_prefix + "-iperf3-" + std::to_string(i) + ".json";
    o.stderr_path = raw_prefix + "-iperf3-" + std::to_string(i) + ".err";
    auto p = tr.spawn(Side::kClient, argv, o);
    if (!p) {
      out.error = "instance " + std::to_string(i) + ": " + p.message();
      break;
    }
    procs.push_back(std::move(p.value()));
    files.push_back(o.stdout_path);
  }
  std::string lat_file = raw_prefix + "-sockperf.txt";
  Job sp;
  if (with_sockperf && out.error.empty()) {
    SpawnOptions o;
    o.barrier_fd = pfd[0];
    o.stdout_path = lat_file;
    o.stderr_path = "=stdout";
    // One datagram per message: sizes past the MTU would be IP fragments,
    // which the DPDK DUTs here do not reassemble.
    // Idle: ping-pong, one message in flight. Under load: under-load mode at
    // a fixed light rate, every message answered, so that a datagram the
    // load crowds out counts as dropped instead of stalling ping-pong (which
    // waits for that reply for the rest of the run), starting when iperf3
    // starts counting.
    std::vector<std::string> argv = {"sockperf", n > 0 ? "under-load" : "ping-pong", "-i", server, "-p", "11111", "-t",
                                     std::to_string(duration), "-m", std::to_string(std::min(size, tr.mtu() - 28))};
    if (n > 0) argv.insert(argv.end(), {"--mps", std::to_string(kLoadedMps), "--reply-every", "1"});
    if (n > 0 && omit > 0) argv.insert(argv.end(), {"--pre-warmup-wait", std::to_string(omit)});
    if (!tr.client_address().empty()) argv.insert(argv.end(), {"--client_ip", tr.client_address()});
    auto p = tr.spawn(Side::kClient, argv, o);
    if (p) sp = std::move(p.value());
    out.have_lat = p.ok();
  }
  // Release everyone at once (remote ones once they wait at the barrier).
  if (out.error.empty())
    if (Status s = tr.ready(std::chrono::seconds(30)); !s) out.error = s.message();
  std::string go(procs.size() + (out.have_lat ? 1 : 0), 'g');
  if (!go.empty() && write(pfd[1], go.data(), go.size()) < 0) out.error = "barrier write failed";
  close(pfd[0]);
  close(pfd[1]);
  auto timeout = std::chrono::seconds(duration + omit + 20);
  for (size_t i = 0; i < procs.size(); i++) {
    auto rc = procs[i].wait(timeout);
    std::ifstream in(files[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    IperfResult r = parse_iperf3(ss.str());
    if (!rc) r = IperfResult{false, "timed out after " + std::to_string(timeout.count()) + " s"};
    else if (*rc == 255 && !procs[i].host().empty()) r = IperfResult{false, procs[i].explain(*rc)};
    else if (r.ok && *rc != 0) r = IperfResult{false, procs[i].explain(*rc)};
    if (!r.ok) out.error += (out.error.empty() ? "" : "; ") + ("instance " + std::to_string(i) + ": " + r.error);
    out.server_busy |= r.server_busy;
    out.inst.push_back(r);
  }
  if (out.have_lat) {
    auto rc = sp.wait(timeout);
    std::ifstream in(lat_file);
    std::stringstream ss;
    ss << in.rdbuf();
    out.lat = !rc                                    ? SockperfResult{false, "sockperf timed out"}
              : *rc == 255 && !sp.host().empty() ? SockperfResult{false, "sockperf: " + sp.explain(*rc)}
                                                 : parse_sockperf(ss.str());
  }
  return out;
}

}  // namespace harness
