// The two places a DUT runs: a namespace on this machine, and a lab's DUT
// host over SSH (whose undo list lives on the host, so that a killed run's
// next run puts things back).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "harness/dut.h"
#include "sdn/number.h"
#include "testbed/testbed.h"
#include "util.h"

namespace harness {

using namespace std::chrono_literals;
using sdn::Result;
using sdn::Status;

namespace {

std::string sysctl_path(const std::string& key) {
  std::string p = "/proc/sys/" + key;
  for (size_t i = 10; i < p.size(); i++)
    if (p[i] == '.') p[i] = '/';
  return p;
}

Result<long long> parse_sysctl(const std::string& key, const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  double v;
  if (Status s = sdn::parse_number(t, true, 0, 9e15, &v); !s) return Status::error(key + ": " + s.message());
  return static_cast<long long>(v);
}

Status run_in(const testbed::Netns* ns, const std::vector<std::string>& argv, std::string* out,
              std::chrono::milliseconds timeout) {
  auto r = testbed::run_capture(argv, ns, timeout);
  if (!r) return r.status();
  if (out) *out = r->output;
  if (r->status != 0)
    return Status::error(argv[0] + " exit " + std::to_string(r->status) + ": " + util::tail(r->output, 300));
  return {};
}

// The host-wide sysctls that DUTs on this machine changed and have not put
// back yet, with their values before, in /run/harness-sysctl-<pid> ("KEY
// VALUE" lines, in the order of the changes), written before each change: a
// harness killed with -9 cannot put them back, the next run's start or
// `testbed down` does (sweep_dead_runs). The DUT namespace's own go with it.
constexpr const char* kSysctlStateDir = "/run";
constexpr const char* kSysctlStateTag = "harness-sysctl-";

struct HostSysctl {
  const void* owner;  // the LocalHost that changed it
  std::string key;
  long long before;
};
std::mutex g_host_sysctls_mu;
std::vector<HostSysctl> g_host_sysctls;  // every LocalHost's of this process

// The state file as g_host_sysctls has it (none when empty); caller holds
// the mutex. Written whole and renamed over the old one.
Status save_host_sysctls() {
  const std::string path = std::string(kSysctlStateDir) + "/" + kSysctlStateTag + std::to_string(getpid());
  if (g_host_sysctls.empty()) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return Status::error("remove " + path + ": " + strerror(errno));
    return {};
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::trunc);
    for (const auto& h : g_host_sysctls) o << h.key << " " << h.before << "\n";
    if (!o.flush()) return Status::error("cannot write " + tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) return Status::error("rename " + tmp + ": " + strerror(errno));
  return {};
}

// The values that the state files of harness processes that are gone hold,
// put back, last change first (so a key changed twice gets its first
// "before"); each file then removed. How many values it put back.
Result<int> put_back_dead_sysctls() {
  int n = 0;
  std::string errors;
  std::error_code ec;
  const std::string tag = kSysctlStateTag;
  for (const auto& e : std::filesystem::directory_iterator(kSysctlStateDir, ec)) {
    const std::string f = e.path().filename();
    if (f.rfind(tag, 0) != 0) continue;
    std::string id = f.substr(tag.size());
    const bool tmp = id.ends_with(".tmp");  // killed while writing: nothing changed after it
    if (tmp) id.resize(id.size() - 4);
    if (id.empty() || id.size() > 9 || id.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(id));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::vector<std::pair<std::string, long long>> lines;
    std::ifstream in(e.path());
    for (std::string key, value; !tmp && in >> key >> value;) {
      if (key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._") != std::string::npos ||
          value.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (auto v = parse_sysctl(key, value)) lines.push_back({key, *v});
    }
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      const std::string kv = it->first + "=" + std::to_string(it->second);
      if (Status s = run_in(nullptr, {"sysctl", "-q", "-w", kv}, nullptr, 10s); s) n++;
      else errors += "harness process " + id + "'s " + it->first + ": " + s.message() + "; ";
    }
    std::error_code rm;
    std::filesystem::remove(e.path(), rm);
    if (rm) errors += "remove " + e.path().string() + ": " + rm.message() + "; ";
  }
  if (!errors.empty()) return Status::error("sysctls of dead harness runs: " + errors);
  return n;
}

class LocalHost final : public DutHost {
 public:
  LocalHost(const testbed::Netns* ns, std::string dir) : ns_(ns), dir_(std::move(dir)) {}
  ~LocalHost() override { undo(); }
  std::string describe() const override { return ns_ ? "the DUT namespace" : "this machine"; }
  bool local() const override { return true; }
  std::string work_dir() const override { return dir_; }
  Status run(const std::vector<std::string>& argv, std::string* out, std::chrono::milliseconds timeout) override {
    return run_in(ns_, argv, out, timeout);
  }
  Result<Job> spawn(const std::vector<std::string>& argv, const std::string& log, bool graceful) override {
    testbed::SpawnOptions o;
    o.ns = ns_;
    o.stdout_path = log;
    o.stderr_path = "=stdout";
    auto p = testbed::Process::spawn(argv, o);
    if (!p) return p.status();
    return Job(std::move(p.value()), {}, {}, graceful ? 10000ms : 500ms);
  }
  Result<long long> read_sysctl(const std::string& key, bool host_wide) override {
    std::string out;
    SDN_TRY(run_in(host_wide ? nullptr : ns_, {"cat", sysctl_path(key)}, &out, 10s));
    return parse_sysctl(key, out);
  }
  Status set_sysctl(const std::string& key, long long value, bool host_wide) override {
    auto have = read_sysctl(key, host_wide);
    if (!have) return have.status();
    if (host_wide) {  // outlives this process: noted on disk first
      std::lock_guard<std::mutex> lk(g_host_sysctls_mu);
      g_host_sysctls.push_back({this, key, *have});
      if (Status s = save_host_sysctls(); !s) {
        g_host_sysctls.pop_back();
        return Status::error(key + ": not changed, its value before cannot be noted: " + s.message());
      }
    }
    sysctls_.push_back({key, *have, host_wide});
    return write_sysctl(key, value, host_wide);
  }
  Status note_dpdk_prefix(const std::string& prefix) override {
    prefixes_.push_back(prefix);
    return {};
  }
  Status note_nft_table(const std::string& table) override {
    tables_.push_back(table);
    return {};
  }
  void undo() override {
    for (auto it = sysctls_.rbegin(); it != sysctls_.rend(); ++it) write_sysctl(it->key, it->before, it->host_wide);
    {
      std::lock_guard<std::mutex> lk(g_host_sysctls_mu);
      const size_t had = g_host_sysctls.size();
      std::erase_if(g_host_sysctls, [this](const HostSysctl& h) { return h.owner == this; });
      if (g_host_sysctls.size() != had)
        if (Status s = save_host_sysctls(); !s) fprintf(stderr, "harness: %s\n", s.message().c_str());
    }
    for (const auto& t : tables_) {
      std::vector<std::string> argv = {"nft", "delete", "table"};
      for (size_t a = 0, b; a < t.size(); a = b + 1) {
        b = t.find(' ', a);
        if (b == std::string::npos) b = t.size();
        argv.push_back(t.substr(a, b - a));
      }
      run_in(ns_, argv, nullptr, 10s);
    }
    for (const auto& p : prefixes_) testbed::Testbed::remove_dpdk_prefix(p);
    sysctls_.clear();
    tables_.clear();
    prefixes_.clear();
  }

 private:
  Status write_sysctl(const std::string& key, long long v, bool host_wide) {
    return run_in(host_wide ? nullptr : ns_, {"sysctl", "-q", "-w", key + "=" + std::to_string(v)}, nullptr, 10s);
  }
  struct Sysctl {
    std::string key;
    long long before;
    bool host_wide;
  };
  const testbed::Netns* ns_;
  std::string dir_;
  std::vector<Sysctl> sysctls_;
  std::vector<std::string> tables_, prefixes_;
};

class SshDutHost final : public DutHost {
 public:
  explicit SshDutHost(SshSession& ssh) : ssh_(ssh) {}
  ~SshDutHost() override { undo(); }
  std::string describe() const override {
    const SshHost* h = ssh_.host("dut");
    return "the DUT host " + (h ? h->destination : std::string("(none in the inventory)"));
  }
  bool local() const override { return false; }
  std::string work_dir() const override { return ssh_.run_dir(); }
  Status run(const std::vector<std::string>& argv, std::string* out, std::chrono::milliseconds timeout) override {
    return ssh_.run("dut", argv, out, timeout);
  }
  Result<Job> spawn(const std::vector<std::string>& argv, const std::string& log, bool graceful) override {
    testbed::SpawnOptions o;
    o.stdout_path = log;
    o.stderr_path = "=stdout";
    return ssh_.spawn("dut", argv, o, graceful);
  }
  Result<long long> read_sysctl(const std::string& key, bool) override {
    std::string out;
    SDN_TRY(ssh_.run("dut", {"cat", sysctl_path(key)}, &out, 20s));
    return parse_sysctl(key, out);
  }
  Status set_sysctl(const std::string& key, long long value, bool host_wide) override {
    auto have = read_sysctl(key, host_wide);
    if (!have) return have.status();
    SDN_TRY(record("undo-sysctl", key + " " + std::to_string(*have)));
    return ssh_.run("dut", {"sysctl", "-q", "-w", key + "=" + std::to_string(value)}, nullptr, 20s);
  }
  Status note_dpdk_prefix(const std::string& prefix) override { return record("dpdk-prefixes", prefix); }
  Status note_nft_table(const std::string& table) override { return record("undo-nft", table); }
  void undo() override {
    if (recorded_) ssh_.undo("dut");
    recorded_ = false;
  }

 private:
  Status record(const std::string& file, const std::string& line) {
    recorded_ = true;
    return ssh_.record("dut", file, line);
  }
  SshSession& ssh_;
  bool recorded_ = false;
};

}  // namespace

Status DutHost::write_file(const std::string& path, const std::string& content) {
  return run({"sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", content, path}, nullptr, 20s);
}

Result<int> sweep_dead_runs() {
  auto swept = testbed::Testbed::sweep_stale();
  auto put_back = put_back_dead_sysctls();
  if (!swept || !put_back)
    return Status::error((swept ? "" : swept.message()) + (!swept && !put_back ? "; " : "") +
                         (put_back ? "" : put_back.message()));
  return *swept + *put_back;
}

HostRunner DutHost::runner() {
  return [this](const std::vector<std::string>& argv) -> Result<std::string> {
    std::string out;
    if (Status s = run(argv, &out, 30s); !s) return s;
    return out;
  };
}

std::unique_ptr<DutHost> local_host(const testbed::Netns* ns, std::string work_dir) {
  return std::make_unique<LocalHost>(ns, std::move(work_dir));
}

std::unique_ptr<DutHost> ssh_host(SshSession& ssh) { return std::make_unique<SshDutHost>(ssh); }

std::string port_devargs(const DutPort& p, int index, int mtu) {
  const std::string i = std::to_string(index);
  switch (p.attach) {
    case Attach::kMemif:
      return "net_memif" + i + ",role=server,socket=" + p.name;
    case Attach::kPci:
      return p.name;
    case Attach::kAfPacket:
    case Attach::kCount:
      break;
  }
  std::string d = "net_af_packet" + i + ",iface=" + p.name;
  if (mtu > 1500) d += ",framesz=16384,blocksz=16384,framecnt=256";
  return d;
}

}  // namespace harness
