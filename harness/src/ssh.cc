#include "harness/ssh.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

namespace harness {

using sdn::Result;
using sdn::Status;

std::string shell_quote(const std::string& arg) {
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  if (!arg.empty() && arg.find_first_not_of(plain) == std::string::npos) return arg;
  std::string o = "'";
  for (char c : arg) {
    if (c == '\'') o += "'\\''";  // close, an escaped quote, reopen
    else o += c;
  }
  return o + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string o;
  for (const auto& a : argv) o += (o.empty() ? "" : " ") + shell_quote(a);
  return o;
}

namespace {

// Each host's master socket is named after the host (the inventory's name),
// so that a dead master's socket can be removed before a new one starts.
std::string control_path(const SshHost& h, const std::string& control_dir) { return control_dir + "/" + h.name + ".sock"; }

std::vector<std::string> ssh_options(const SshHost& h, const std::string& control_dir) {
  std::vector<std::string> a = {"ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o",
                                "ControlPath=" + control_path(h, control_dir), "-o",
                                "ConnectTimeout=" + std::to_string(h.connect_timeout_s), "-o", "ServerAliveInterval=5",
                                "-o", "ServerAliveCountMax=2", "-o", "StrictHostKeyChecking=accept-new", "-o",
                                "LogLevel=ERROR", "-p", std::to_string(h.port), "-l", h.user};
  if (!h.known_hosts.empty()) a.insert(a.end(), {"-o", "UserKnownHostsFile=" + h.known_hosts});
  if (!h.key.empty()) a.insert(a.end(), {"-i", h.key, "-o", "IdentitiesOnly=yes"});
  if (!h.jump.empty()) a.insert(a.end(), {"-J", h.jump});
  return a;
}

// Shell functions the scripts below share (POSIX sh on the hosts):
// stop DIR: every process group with a pid file in DIR gets TERM (a clean
//   stop: the dataplane turns promiscuous mode off and removes its socket),
//   then up to 10 s to go, then KILL; adds how many ran to $n.
// undo DIR HOST: what the run changed on HOST, from the records in
//   DIR/undo-HOST (each line checked, passed as arguments, never run as
//   code), then the records go:
//   dpdk-prefixes: PREFIX  -> its hugepage files, runtime dir and (the
//                           dataplane's) control socket and lock removed
//   undo-sysctl: KEY VALUE -> sysctl KEY=VALUE (the value before the run)
//   undo-nft: FAMILY TABLE -> nft delete table FAMILY TABLE
//   Records are per host: hosts that share a file system (the namespace
//   testbed's) each undo their own, in their own network namespace.
// done DIR: DIR goes once no host's records are left in it.
const char* kFunctions =
    "stop() { set -- \"$1\"/*.pid; [ -e \"$1\" ] || return 0; "
    "for f; do g=$(cat \"$f\" 2>/dev/null); [ -n \"$g\" ] && kill -TERM -\"$g\" 2>/dev/null && n=$((n+1)); done; "
    "i=0; while [ $i -lt 100 ]; do a=0; for f; do g=$(cat \"$f\" 2>/dev/null); "
    "[ -n \"$g\" ] && kill -0 -\"$g\" 2>/dev/null && a=1; done; [ $a = 0 ] && break; sleep 0.1; i=$((i+1)); done; "
    "for f; do g=$(cat \"$f\" 2>/dev/null); [ -n \"$g\" ] && kill -KILL -\"$g\" 2>/dev/null; rm -f \"$f\"; done; }; "
    "undo() { u=\"$1/undo-$2\"; [ -d \"$u\" ] || return 0; "
    "[ -f \"$u/dpdk-prefixes\" ] && while read -r p; do case $p in ''|*[!A-Za-z0-9_-]*) continue;; esac; "
    "rm -f /dev/hugepages/\"$p\"map_* /run/dataplane/\"$p\".sock /run/dataplane/\"$p\".sock.lock; "
    "rm -rf /var/run/dpdk/\"$p\"; done < \"$u/dpdk-prefixes\"; "
    "[ -f \"$u/undo-sysctl\" ] && while read -r k v; do case $k in ''|*[!a-z0-9._]*) continue;; esac; "
    "case $v in ''|*[!0-9]*) continue;; esac; sysctl -q -w \"$k=$v\"; done < \"$u/undo-sysctl\"; "
    "[ -f \"$u/undo-nft\" ] && while read -r f t; do case $f$t in ''|*[!a-z0-9_]*) continue;; esac; "
    "nft delete table \"$f\" \"$t\" 2>/dev/null; done < \"$u/undo-nft\"; "
    "rm -rf \"$u\"; return 0; }; "
    "done_() { for x in \"$1\"/undo-*; do [ -e \"$x\" ] && return 0; done; rm -rf \"$1\"; }; ";

// Stops every program of the run whose directory is $1, undoes what it
// changed on this host ($2) and removes the directory once no host's records
// are left; prints how many programs it stopped.
const std::string kKillRunDir =
    std::string(kFunctions) + "n=0; stop \"$1\"; undo \"$1\" \"$2\"; done_ \"$1\"; echo \"$n\"";

// The same for every run directory under $1 but $2 (runs that were killed),
// on host $3.
const std::string kKillStaleRuns =
    std::string(kFunctions) +
    "n=0; for d in \"$1\"/*; do [ -d \"$d\" ] || continue; [ \"$d\" = \"$2\" ] && continue; "
    "stop \"$d\"; undo \"$d\" \"$3\"; done_ \"$d\"; done; echo \"$n\"";

// Undoes what this run ($1) changed on host $2, and keeps the directory.
const std::string kUndoRunDir = std::string(kFunctions) + "undo \"$1\" \"$2\"";

constexpr const char* kRunsRoot = "/tmp/harness-runs";

}  // namespace

std::vector<std::string> ssh_argv(const SshHost& h, const std::string& control_dir, const std::string& remote) {
  auto a = ssh_options(h, control_dir);
  a.push_back(h.destination);
  a.push_back(remote);
  return a;
}

SshSession::SshSession(std::vector<SshHost> hosts, std::string run_id, const testbed::Netns* ns)
    : hosts_(std::move(hosts)), run_id_(std::move(run_id)), ns_(ns) {
  run_dir_ = std::string(kRunsRoot) + "/" + run_id_;
  control_dir_ = "/tmp/harness-ssh-" + std::to_string(getpid()) + "-" + run_id_;
}

const SshHost* SshSession::host(const std::string& name) const {
  for (const auto& h : hosts_)
    if (h.name == name) return &h;
  return nullptr;
}

Status SshSession::run_script(const SshHost& h, const std::string& script, std::string* out,
                              std::chrono::milliseconds timeout) {
  if (Status s = ensure_master(h); !s) return s;
  auto r = testbed::run_capture(ssh_argv(h, control_dir_, script), ns_, timeout);
  if (!r) return Status::error("host " + h.name + " (" + h.destination + "): " + r.message());
  if (out) *out = r->output;
  if (r->status == 255)
    return Status::error("host " + h.name + " (" + h.destination + "): ssh failed: " + r->output.substr(0, 300));
  if (r->status != 0)
    return Status::error("host " + h.name + " (" + h.destination + "): exit status " + std::to_string(r->status) +
                         ": " + r->output.substr(0, 300));
  return {};
}

Status SshSession::start_master(size_t i) {
  const SshHost& h = hosts_[i];
  unlink(control_path(h, control_dir_).c_str());  // a dead master's
  auto m = ssh_options(h, control_dir_);
  m[4] = "ControlMaster=yes";
  m.insert(m.end(), {"-N", h.destination});
  testbed::SpawnOptions o;
  o.ns = ns_;
  o.stdout_path = "/dev/null";
  o.stderr_path = control_dir_ + "/" + h.name + ".err";
  auto p = testbed::Process::spawn(m, o);
  if (!p) return Status::error("host " + h.name + ": " + p.message());
  masters_[i] = std::move(p.value());
  auto check = ssh_options(h, control_dir_);
  check.insert(check.end(), {"-O", "check", h.destination});
  bool up = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(h.connect_timeout_s + 2);
  while (!up && std::chrono::steady_clock::now() < deadline && masters_[i].running()) {
    auto r = testbed::run_capture(check, ns_, std::chrono::seconds(5));
    up = r && r->status == 0;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (up) return {};
  std::error_code e2;
  std::string why;
  if (auto sz = std::filesystem::file_size(o.stderr_path, e2); !e2 && sz > 0) {
    FILE* f = fopen(o.stderr_path.c_str(), "r");
    char buf[512] = {};
    if (f) {
      size_t n = fread(buf, 1, sizeof buf - 1, f);
      buf[n] = 0;
      fclose(f);
    }
    why = buf;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  }
  return Status::error("host " + h.name + " (" + h.user + "@" + h.destination + ":" + std::to_string(h.port) +
                       "): cannot connect" + (why.empty() ? "" : ": " + why));
}

Status SshSession::open(std::string* report) {
  std::error_code ec;
  // Control directories of harness runs that are gone (their masters died
  // with them: each master is a child that dies with its parent).
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    std::string n = e.path().filename();
    if (n.rfind("harness-ssh-", 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(atoi(n.c_str() + 12));
    if (pid > 0 && pid != getpid() && kill(pid, 0) != 0) std::filesystem::remove_all(e.path(), ec);
  }
  std::filesystem::create_directories(control_dir_, ec);
  if (ec) return Status::error("ssh control directory " + control_dir_ + ": " + ec.message());
  masters_.resize(hosts_.size());
  for (size_t i = 0; i < hosts_.size(); i++) {
    const SshHost& h = hosts_[i];
    if (h.destination.empty() || h.destination[0] == '-')
      return Status::error("host " + h.name + ": bad ssh destination '" + h.destination + "'");
    if (h.name.empty() || h.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                              std::string::npos)
      return Status::error("host name '" + h.name + "': use letters, digits, '_' and '-'");
    if (Status s = start_master(i); !s) return s;
    std::string out;
    if (Status s = run_script(h, shell_join({"sh", "-c", kKillStaleRuns, "sh", kRunsRoot, run_dir_, h.name}), &out,
                              std::chrono::seconds(30));
        !s)
      return s;
    int killed = atoi(out.c_str());
    if (report && killed > 0)
      *report += "host " + h.name + ": killed " + std::to_string(killed) + " process group(s) earlier runs left\n";
  }
  return {};
}

SshSession::~SshSession() {
  for (const auto& h : hosts_) {
    if (masters_.empty()) break;
    run_script(h, shell_join({"sh", "-c", kKillRunDir, "sh", run_dir_, h.name}), nullptr, std::chrono::seconds(30));
  }
  masters_.clear();  // each master is stopped (TERM, then KILL)
  std::error_code ec;
  std::filesystem::remove_all(control_dir_, ec);
}

Status SshSession::ensure_master(const SshHost& h) {
  if (size_t i = static_cast<size_t>(&h - hosts_.data()); i < masters_.size() && !masters_[i].running()) {
    // The connection dropped (the master died with it): a new one. (Without
    // it, ssh warns about the dead control socket into the command's output.)
    fprintf(stderr, "harness: host %s: the ssh master connection is gone; connecting again\n", h.name.c_str());
    return start_master(i);
  }
  return {};
}

Result<Job> SshSession::spawn(const std::string& name, const std::vector<std::string>& argv,
                              testbed::SpawnOptions opts, bool graceful) {
  const SshHost* h = host(name);
  if (!h) return Status::error("no host '" + name + "' in the inventory");
  if (Status s = ensure_master(*h); !s) return s;
  for (const auto& a : argv)
    if (a.find('\0') != std::string::npos) return Status::error("an argument holds a NUL byte");
  const std::string n = std::to_string(++seq_);
  std::string pidfile = run_dir_ + "/" + n + ".pid";
  // The remote shell (a session leader: its pid is the group's) notes its
  // pid and becomes the program.
  std::string remote = "mkdir -p " + shell_quote(run_dir_) + " && echo $$ > " + shell_quote(pidfile) + " && ";
  int relay_w = -1;
  if (opts.barrier_fd >= 0) {
    // The remote barrier: the shell marks itself ready, then needs a 'g' on
    // stdin; a thread here passes one byte of the local barrier on to this
    // ssh's stdin (EOF, when the barrier is abandoned, never starts argv).
    std::string marker = run_dir_ + "/" + n + ".ready";
    remote += ": > " + shell_quote(marker) + " && b=$(head -c 1) && [ \"$b\" = g ] && ";
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::error("host " + name + ": pipe: " + strerror(errno));
    int b = fcntl(opts.barrier_fd, F_DUPFD_CLOEXEC, 0);
    if (b < 0) {
      close(pipe_fds[0]);
      close(pipe_fds[1]);
      return Status::error("host " + name + ": dup: " + strerror(errno));
    }
    opts.stdin_fd = pipe_fds[0];
    opts.barrier_fd = -1;
    relay_w = pipe_fds[1];
    std::thread([b, w = relay_w] {
      char c;
      ssize_t r;
      do r = read(b, &c, 1);
      while (r < 0 && errno == EINTR);
      if (r == 1) r = write(w, "g", 1);
      close(w);
      close(b);
    }).detach();
    pending_ready_[name].push_back(marker);
  }
  remote += "exec " + shell_join(argv);
  opts.ns = ns_;
  auto p = testbed::Process::spawn(ssh_argv(*h, control_dir_, remote), opts);
  if (opts.stdin_fd >= 0) close(opts.stdin_fd);
  if (!p) return Status::error("host " + name + ": " + p.message());
  // A graceful stop: TERM, up to 10 s, KILL (a DPDK program turns its
  // ports back); else KILL.
  std::vector<std::string> kill_argv = ssh_argv(
      *h, control_dir_,
      shell_join({"sh", "-c",
                  graceful ? "g=$(cat \"$1\" 2>/dev/null); [ -n \"$g\" ] || exit 0; kill -TERM -\"$g\" 2>/dev/null; "
                             "i=0; while kill -0 -\"$g\" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); "
                             "done; kill -KILL -\"$g\" 2>/dev/null; rm -f \"$1\""
                           : "kill -KILL -\"$(cat \"$1\" 2>/dev/null)\" 2>/dev/null; rm -f \"$1\"",
                  "sh", pidfile}));
  const testbed::Netns* ns = ns_;
  return Job(std::move(p.value()), [kill_argv, ns] { testbed::run_capture(kill_argv, ns, std::chrono::seconds(20)); },
             "host " + name + " (" + h->user + "@" + h->destination + ")");
}

Status SshSession::wait_ready(std::chrono::milliseconds timeout) {
  auto pending = std::move(pending_ready_);
  pending_ready_.clear();
  for (auto& [name, markers] : pending) {
    const SshHost* h = host(name);
    if (!h) return Status::error("no host '" + name + "' in the inventory");
    std::vector<std::string> argv = {"sh", "-c", "for f; do while [ ! -e \"$f\" ]; do sleep 0.01; done; done", "sh"};
    argv.insert(argv.end(), markers.begin(), markers.end());
    if (Status s = run_script(*h, shell_join(argv), nullptr, timeout); !s)
      return Status::error("host " + name + ": " + std::to_string(markers.size()) +
                           " program(s) not ready at their start barrier: " + s.message());
  }
  return {};
}

Status SshSession::record(const std::string& name, const std::string& file, const std::string& line) {
  const std::string dir = run_dir_ + "/undo-" + name;
  return run(name, {"sh", "-c", "mkdir -p \"$1\" && printf '%s\\n' \"$3\" >> \"$1/$2\"", "sh", dir, file, line},
             nullptr, std::chrono::seconds(20));
}

Status SshSession::undo(const std::string& name) {
  return run(name, {"sh", "-c", kUndoRunDir, "sh", run_dir_, name}, nullptr, std::chrono::seconds(30));
}

Status SshSession::run(const std::string& name, const std::vector<std::string>& argv, std::string* out,
                       std::chrono::milliseconds timeout) {
  const SshHost* h = host(name);
  if (!h) return Status::error("no host '" + name + "' in the inventory");
  return run_script(*h, shell_join(argv), out, timeout);
}

}  // namespace harness
