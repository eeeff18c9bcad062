// harness-conns: holds K idle TCP connections open through a DUT, so that its
// connection tracker carries them while the sweep measures (the "hundreds of
// thousands of connections" of a fair stateful benchmark).
//
//   harness-conns serve   --address IP --ports P1-P2 --count K
//   harness-conns connect --to IP --ports P1-P2 --count K [--concurrency C] [--timeout S]
//
// A process may hold only RLIMIT_NOFILE descriptors (and without
// CAP_SYS_RESOURCE cannot raise the hard limit), so each side splits its
// server ports over as many worker processes as that takes and sums their
// reports. Both run until SIGTERM/SIGINT (or, for connect, until set-up
// failed) and report on stdout, one JSON object per line:
//   {"role":"client","phase":"setup","established":N,"failed":F,"in_flight":X,"secs":T}   once a second
//   {"role":"client","phase":"done","established":K,"failed":F,"secs":T,"per_s":R,"errors":{...}}
//   {"role":"client","phase":"failed",...,"error":"..."}                               (exit 1)
//   {"role":"server","phase":"ready","ports":N}, then {"role":"server","phase":"serving","accepted":N} once a second
// The harness starts both through its transport (namespace or SSH) and reads
// these lines back.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include "sdn/json.h"
#include "sdn/number.h"

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void emit(const nlohmann::json& j) {
  std::string s = sdn::json_dump(j) + "\n";
  fwrite(s.data(), 1, s.size(), stdout);
  fflush(stdout);
}

[[noreturn]] void usage_error(const std::string& why) {
  fprintf(stderr, "harness-conns: %s\n", why.c_str());
  fprintf(stderr,
          "usage: harness-conns serve --address IP --ports P1-P2 --count K\n"
          "       harness-conns connect --to IP --ports P1-P2 --count K [--concurrency C] [--timeout S]\n");
  exit(2);
}

bool parse_int(const std::string& s, long lo, long hi, long* out) {
  double v;
  if (!sdn::parse_number(s, true, static_cast<double>(lo), static_cast<double>(hi), &v)) return false;
  *out = static_cast<long>(v);
  return true;
}

bool parse_ports(const std::string& s, int* lo, int* hi) {
  size_t dash = s.find('-');
  long a, b;
  if (!parse_int(s.substr(0, dash), 1, 65535, &a)) return false;
  b = a;
  if (dash != std::string::npos && !parse_int(s.substr(dash + 1), 1, 65535, &b)) return false;
  if (b < a) return false;
  *lo = static_cast<int>(a);
  *hi = static_cast<int>(b);
  return true;
}

// Descriptors one process may hold: the soft limit raised to the hard one
// (and the hard one to fs.nr_open where that is allowed: CAP_SYS_RESOURCE).
rlim_t fd_budget() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlim_t nr_open = 1048576;
  std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
  rlimit want{nr_open, nr_open};
  if (setrlimit(RLIMIT_NOFILE, &want) != 0) {
    want = {rl.rlim_max, rl.rlim_max};
    setrlimit(RLIMIT_NOFILE, &want);
  }
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur;
}

sockaddr_in addr(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

int serve(const std::string& ip, int plo, int phi) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> listeners;
  for (int p = plo; p <= phi; p++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = addr(ip, p);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 65535) != 0) {
      emit({{"role", "server"}, {"phase", "failed"}, {"error", "listen on " + ip + ":" + std::to_string(p) + ": " + strerror(errno)}});
      return 1;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    listeners.push_back(fd);
  }
  emit({{"role", "server"}, {"phase", "ready"}, {"ports", listeners.size()}});
  long accepted = 0, failed = 0;
  std::map<std::string, long> errors;
  auto last = Clock::now();
  epoll_event evs[64];
  while (!g_stop) {
    int n = epoll_wait(ep, evs, 64, 200);
    for (int i = 0; i < n; i++) {
      for (;;) {
        int c = accept4(evs[i].data.fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          accepted++;
          continue;
        }
        if (errno != EAGAIN && errno != EINTR) {
          failed++;
          errors[strerror(errno)]++;
        }
        break;
      }
    }
    if (since(last) >= 1.0) {
      last = Clock::now();
      emit({{"role", "server"}, {"phase", "serving"}, {"accepted", accepted}, {"failed", failed}, {"errors", errors}});
    }
  }
  return 0;
}

int connect_all(const std::string& ip, int plo, int phi, long count, long concurrency, long timeout_s) {
  const auto t0 = Clock::now();
  const int nports = phi - plo + 1;
  auto fail = [&](const std::string& why) {
    emit({{"role", "client"}, {"phase", "failed"}, {"established", 0}, {"secs", since(t0)}, {"error", why}});
    return 1;
  };
  // connect() picks a local port per (destination address, port): each
  // server port takes at most the size of ip_local_port_range.
  int elo = 32768, ehi = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> elo >> ehi;
  long per_port = (count + nports - 1) / nports, room = ehi - elo + 1;
  if (per_port > room * 9 / 10)
    return fail(std::to_string(count) + " connections over " + std::to_string(nports) + " server port(s) need " +
                std::to_string(per_port) + " local ports each; ip_local_port_range has " + std::to_string(room) +
                ": give more server ports");

  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> held;
  held.reserve(static_cast<size_t>(count));
  std::vector<long> per(static_cast<size_t>(nports), 0);  // established or in flight per port
  long in_flight = 0, failed = 0, started = 0;
  std::map<std::string, long> errors;
  int next_port = 0;
  auto start_one = [&]() -> bool {
    for (int k = 0; k < nports; k++) {
      int pi = (next_port + k) % nports;
      if (per[static_cast<size_t>(pi)] >= per_port) continue;
      next_port = (pi + 1) % nports;
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        errors[std::string("socket: ") + strerror(errno)]++;
        failed++;
        return false;
      }
      int syn = 3;  // SYN retries: ~15 s, not the default two minutes
      setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &syn, sizeof syn);
      sockaddr_in a = addr(ip, plo + pi);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        errors[strerror(errno)]++;
        failed++;
        close(fd);
        return false;
      }
      epoll_event ev{};
      ev.events = EPOLLOUT;
      ev.data.u64 = (static_cast<uint64_t>(pi) << 32) | static_cast<uint32_t>(fd);
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
      per[static_cast<size_t>(pi)]++;
      in_flight++;
      started++;
      return true;
    }
    return false;
  };
  auto last = Clock::now();
  epoll_event evs[256];
  while (!g_stop && static_cast<long>(held.size()) < count) {
    while (in_flight < concurrency && static_cast<long>(held.size()) + in_flight < count)
      if (!start_one()) break;
    if (failed > count) return fail("gave up after " + std::to_string(failed) + " failed connects");
    if (since(t0) > static_cast<double>(timeout_s)) {
      emit({{"role", "client"}, {"phase", "failed"}, {"established", held.size()}, {"failed", failed},
            {"secs", since(t0)}, {"errors", errors},
            {"error", "timed out after " + std::to_string(timeout_s) + " s with " + std::to_string(held.size()) + " of " +
                          std::to_string(count) + " established"}});
      return 1;
    }
    int n = epoll_wait(ep, evs, 256, 100);
    for (int i = 0; i < n; i++) {
      int fd = static_cast<int>(evs[i].data.u64 & 0xFFFFFFFFu);
      size_t pi = static_cast<size_t>(evs[i].data.u64 >> 32);
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
      in_flight--;
      if (err == 0) {
        held.push_back(fd);
      } else {
        errors[strerror(err)]++;
        failed++;
        per[pi]--;
        close(fd);
      }
    }
    if (since(last) >= 1.0) {
      last = Clock::now();
      emit({{"role", "client"}, {"phase", "setup"}, {"established", held.size()}, {"failed", failed},
            {"in_flight", in_flight}, {"secs", since(t0)}});
    }
  }
  if (g_stop) return 0;
  double secs = since(t0);
  emit({{"role", "client"}, {"phase", "done"}, {"established", held.size()}, {"failed", failed}, {"secs", secs},
        {"per_s", secs > 0 ? static_cast<double>(held.size()) / secs : 0.0}, {"errors", errors}});
  while (!g_stop) pause();
  return 0;
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;  // its stdout
  std::string buf;
  nlohmann::json last;  // its latest report
  bool ended = false;
};

// Splits the ports over worker processes that each stay within the
// descriptor budget, and reports their sum.
int run_workers(bool server, const std::string& ip, int plo, int phi, long count, long concurrency, long timeout_s) {
  const char* role = server ? "server" : "client";
  const int nports = phi - plo + 1;
  const long per_port = (count + nports - 1) / nports;
  const long budget = static_cast<long>(fd_budget()) - (server ? nports : concurrency) - 64;
  if (budget < per_port) {
    emit({{"role", role}, {"phase", "failed"}, {"established", 0},
          {"error", std::to_string(per_port) + " connections per server port do not fit in one process's " +
                        std::to_string(budget + 64) + " descriptors (RLIMIT_NOFILE): give more server ports"}});
    return 1;
  }
  const int ports_per_worker = static_cast<int>(std::min<long>(nports, budget / per_port));
  std::vector<Worker> ws;
  for (int lo = plo; lo <= phi; lo += ports_per_worker) {
    int hi = std::min(phi, lo + ports_per_worker - 1);
    long share = std::min(count - (lo - plo) * per_port, (hi - lo + 1) * per_port);
    if (share <= 0) break;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      emit({{"role", role}, {"phase", "failed"}, {"error", std::string("pipe: ") + strerror(errno)}});
      return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(p[1], 1);
      _exit(server ? serve(ip, lo, hi)
                   : connect_all(ip, lo, hi, share, std::max(1L, concurrency * share / count), timeout_s));
    }
    close(p[1]);
    if (pid < 0) {
      emit({{"role", role}, {"phase", "failed"}, {"error", std::string("fork: ") + strerror(errno)}});
      return 1;
    }
    Worker w;
    w.pid = pid;
    w.fd = p[0];
    ws.push_back(std::move(w));
  }
  const auto t0 = Clock::now();
  auto sum = [&](const char* k) {
    long long n = 0;
    for (auto& w : ws)
      if (w.last.is_object()) n += w.last.value(k, 0LL);
    return n;
  };
  auto errors = [&]() {
    nlohmann::json e = nlohmann::json::object();
    for (auto& w : ws)
      if (w.last.is_object() && w.last.contains("errors"))
        for (auto& [k, v] : w.last["errors"].items()) e[k] = e.value(k, 0LL) + v.get<long long>();
    return e;
  };
  bool reported_end = false;
  auto last = Clock::now();
  while (!g_stop) {
    std::vector<pollfd> pf;
    std::vector<Worker*> pw;
    for (auto& w : ws)
      if (!w.ended) {
        pf.push_back({w.fd, POLLIN, 0});
        pw.push_back(&w);
      }
    if (pf.empty()) break;
    if (poll(pf.data(), pf.size(), 200) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < pf.size(); i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = *pw[i];
      char b[4096];
      ssize_t n = read(w.fd, b, sizeof b);
      if (n == 0) w.ended = true;
      if (n <= 0) continue;
      w.buf.append(b, static_cast<size_t>(n));
      for (size_t nl; (nl = w.buf.find('\n')) != std::string::npos; w.buf.erase(0, nl + 1)) {
        auto j = nlohmann::json::parse(w.buf.substr(0, nl), nullptr, false);
        if (!j.is_discarded()) w.last = j;
      }
    }
    auto phase = [&](const Worker& w) { return w.last.is_object() ? w.last.value("phase", "") : std::string(); };
    if (!reported_end) {
      for (auto& w : ws)
        if (phase(w) == "failed" || (w.ended && phase(w) != "done" && !server)) {
          nlohmann::json f = w.last.is_object() ? w.last : nlohmann::json::object();
          emit({{"role", role}, {"phase", "failed"}, {"established", sum("established")}, {"failed", sum("failed")},
                {"secs", since(t0)}, {"errors", errors()},
                {"error", f.value("error", std::string("a worker exited without a result"))}});
          for (auto& x : ws) kill(x.pid, SIGTERM);
          for (auto& x : ws) waitpid(x.pid, nullptr, 0);
          return 1;
        }
      bool all = true;
      for (auto& w : ws) all = all && (server ? phase(w) == "ready" || phase(w) == "serving" : phase(w) == "done");
      if (all) {
        reported_end = true;
        if (server) {
          emit({{"role", role}, {"phase", "ready"}, {"ports", nports}, {"workers", ws.size()}});
        } else {
          double secs = since(t0);
          long long est = sum("established");
          emit({{"role", role}, {"phase", "done"}, {"established", est}, {"failed", sum("failed")}, {"secs", secs},
                {"per_s", secs > 0 ? static_cast<double>(est) / secs : 0.0}, {"errors", errors()},
                {"workers", ws.size()}});
        }
      }
    }
    if (since(last) >= 1.0) {
      last = Clock::now();
      if (server) emit({{"role", role}, {"phase", "serving"}, {"accepted", sum("accepted")}, {"failed", sum("failed")}});
      else if (!reported_end)
        emit({{"role", role}, {"phase", "setup"}, {"established", sum("established")}, {"failed", sum("failed")},
              {"in_flight", sum("in_flight")}, {"secs", since(t0)}});
    }
  }
  for (auto& w : ws) kill(w.pid, SIGTERM);
  for (auto& w : ws) waitpid(w.pid, nullptr, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage_error("a mode: serve or connect");
  std::string mode = argv[1];
  if (mode == "--help" || mode == "-h") {
    printf("usage: harness-conns serve --address IP --ports P1-P2 --count K\n"
           "       harness-conns connect --to IP --ports P1-P2 --count K [--concurrency C] [--timeout S]\n"
           "Holds K idle TCP connections from this host to the server's ports until\n"
           "SIGTERM; progress and the set-up rate as JSON lines on stdout.\n"
           "  --concurrency C  connects in flight at once (default 512)\n"
           "  --timeout S      give up when set-up takes longer (default 600)\n");
    return 0;
  }
  std::string ip, to;
  int plo = 0, phi = 0;
  long count = 0, concurrency = 512, timeout_s = 600;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage_error(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--address" || a == "--to") {
      in_addr x{};
      if (inet_pton(AF_INET, v.c_str(), &x) != 1) usage_error(a + " '" + v + "': not an IPv4 address");
      (a == "--to" ? to : ip) = v;
    } else if (a == "--ports") {
      if (!parse_ports(v, &plo, &phi)) usage_error("--ports '" + v + "': want P or P1-P2 within 1-65535");
    } else if (a == "--count") {
      if (!parse_int(v, 1, 10000000, &count)) usage_error("--count '" + v + "': want 1..10000000");
    } else if (a == "--concurrency") {
      if (!parse_int(v, 1, 65536, &concurrency)) usage_error("--concurrency '" + v + "': want 1..65536");
    } else if (a == "--timeout") {
      if (!parse_int(v, 1, 86400, &timeout_s)) usage_error("--timeout '" + v + "': want 1..86400 s");
    } else {
      usage_error("unknown option " + a);
    }
  }
  if (mode != "serve" && mode != "connect") usage_error("unknown mode '" + mode + "'");
  const bool server = mode == "serve";
  if ((server ? ip : to).empty() || !plo || !count)
    usage_error(server ? "serve needs --address, --ports and --count" : "connect needs --to, --ports and --count");
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);
  return run_workers(server, server ? ip : to, plo, phi, count, concurrency, timeout_s);
}
