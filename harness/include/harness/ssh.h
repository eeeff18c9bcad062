// Remote hosts through the system OpenSSH client: one multiplexed master
// connection per host (ControlMaster/ControlPersist), BatchMode (no prompt
// ever blocks), connect and keep-alive timeouts, and commands built from
// argv vectors by one quoting function, never by pasting strings.
//
// Every remote program runs under the run's id: its shell writes its pid
// (its process group: sshd starts a session per command) to
// /tmp/harness-runs/<run id>/<n>.pid and execs the program. Ending a job
// kills that group; closing the transport kills every group of the run; a
// new transport first kills what earlier runs left (a harness that was
// killed, or a connection that dropped).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sdn/status.h"
#include "testbed/process.h"

namespace harness {

// One argument for a POSIX shell: sh reads the result back as exactly
// `arg`. Plain words stay as they are; the rest go in single quotes.
std::string shell_quote(const std::string& arg);
// argv as one command line for the remote shell, every argument quoted.
std::string shell_join(const std::vector<std::string>& argv);

struct SshHost {
  std::string name;         // the inventory's name for it (client, server, dut)
  std::string destination;  // host name or address
  std::string user = "root";
  int port = 22;
  std::string key;          // identity file; empty: ssh's own defaults
  std::string jump;         // ProxyJump destination; empty: none
  int connect_timeout_s = 10;
  std::string known_hosts;  // UserKnownHostsFile; empty: ssh's default
};

// The local argv that runs `remote` (a command line for the remote shell)
// on `h`, multiplexed over the master at control_dir.
std::vector<std::string> ssh_argv(const SshHost& h, const std::string& control_dir, const std::string& remote);

// A program started through a Transport: a local process (the program
// itself, or the ssh that carries it) and, for a remote one, how to kill it
// on its host. Ending the job (destructor, or a new value assigned) stops
// both: a remote program first, on its host, and its ssh once that brought
// the rest of its output (a DUT's last log lines say how it stopped).
class Job {
 public:
  Job() = default;
  // `grace`: how long a local program gets between TERM and KILL when the
  // job ends (a DPDK program gives its ports and hugepages back).
  explicit Job(testbed::Process p, std::function<void()> kill_remote = {}, std::string host = {},
               std::chrono::milliseconds grace = std::chrono::milliseconds(500))
      : p_(std::move(p)), kill_remote_(std::move(kill_remote)), host_(std::move(host)), grace_(grace) {}
  Job(Job&& o) noexcept = default;
  Job& operator=(Job&& o) noexcept {
    if (this != &o) {
      end();
      p_ = std::move(o.p_);
      kill_remote_ = std::move(o.kill_remote_);
      host_ = std::move(o.host_);
      grace_ = o.grace_;
      exited_ = o.exited_;
    }
    return *this;
  }
  ~Job() { end(); }
  // Exit status (for ssh: the remote program's, or 255 when ssh failed).
  sdn::Result<int> wait(std::chrono::milliseconds timeout) {
    auto r = p_.wait(timeout);
    if (r && *r != 255) exited_ = true;  // the remote side ended by itself
    return r;
  }
  bool running() { return p_.running(); }
  pid_t pid() const { return p_.pid(); }
  // For a remote job: "host NAME (user@address)", for errors; empty when local.
  const std::string& host() const { return host_; }
  // What a status from wait() means when it is ssh's own failure (255).
  std::string explain(int status) const {
    if (host_.empty() || status != 255) return "exit status " + std::to_string(status);
    return "ssh to " + host_ + " failed or the connection was lost (exit 255)";
  }

 private:
  void end() {
    if (kill_remote_ && !exited_) {
      kill_remote_();  // returns once the program is gone (or killed)
      if (p_.pid() > 0) p_.wait(kCarrierDrain);  // its ssh ends with it
    }
    kill_remote_ = nullptr;
    if (p_.pid() > 0) p_.stop(grace_);
  }
  // How long the ssh of a remote program that was stopped gets to pass on
  // the program's last output and exit by itself.
  static constexpr std::chrono::milliseconds kCarrierDrain{2000};
  testbed::Process p_;
  std::function<void()> kill_remote_;
  std::string host_;
  std::chrono::milliseconds grace_{500};
  bool exited_ = false;
};

// Runs commands on a set of hosts for one run.
class SshSession {
 public:
  // `ns`: the namespace the ssh client runs in (null: this one).
  SshSession(std::vector<SshHost> hosts, std::string run_id, const testbed::Netns* ns);
  ~SshSession();  // kills every program of this run on every host, closes the masters
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // Opens each host's master connection and kills what earlier runs left
  // there. Errors name the host.
  sdn::Status open(std::string* report);
  // Starts argv on host `h` under this run's id. With opts.barrier_fd the
  // barrier is kept on the remote host: ssh and the remote shell start at
  // once and the shell waits before exec'ing argv until the byte read from
  // the barrier reaches it over ssh's stdin. Starting a remote program takes
  // a session, a shell and an exec (tens to hundreds of ms on a loaded host),
  // which a local barrier would leave staggered across the jobs it releases.
  // A job ends with KILL (a tool: iperf3, sockperf), or with `graceful` by
  // TERM, up to 10 s, then KILL (a DUT program that gives its ports back).
  sdn::Result<Job> spawn(const std::string& host, const std::vector<std::string>& argv, testbed::SpawnOptions opts,
                         bool graceful = false);
  // Waits until every job spawned behind a barrier since the last call is
  // waiting at it on its host (one ssh command per host). Errors name the host.
  sdn::Status wait_ready(std::chrono::milliseconds timeout);
  // Runs argv on `host` to completion; its output in *out.
  sdn::Status run(const std::string& host, const std::vector<std::string>& argv, std::string* out = nullptr,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Notes in this run's directory on `host` what to undo there, as one line
  // of `file` (dpdk-prefixes, undo-sysctl, undo-nft: see ssh.cc). The
  // session's end, or the next run's after a kill -9, undoes it.
  sdn::Status record(const std::string& host, const std::string& file, const std::string& line);
  // Undoes now what this run recorded on `host`.
  sdn::Status undo(const std::string& host);
  const SshHost* host(const std::string& name) const;
  const std::string& run_dir() const { return run_dir_; }  // on the hosts

 private:
  sdn::Status run_script(const SshHost& h, const std::string& script, std::string* out,
                         std::chrono::milliseconds timeout);
  // Starts host i's master connection and waits until it answers; a master
  // that died (a dropped connection) is started again by spawn().
  sdn::Status start_master(size_t i);
  sdn::Status ensure_master(const SshHost& h);
  std::vector<SshHost> hosts_;
  std::vector<testbed::Process> masters_;  // one per host, children of this process
  std::string run_id_, run_dir_, control_dir_;
  const testbed::Netns* ns_;
  int seq_ = 0;
  std::map<std::string, std::vector<std::string>> pending_ready_;  // host -> marker files of barriered jobs
};

}  // namespace harness
