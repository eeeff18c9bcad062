#include "testbed/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "testbed/testbed.h"

extern char** environ;

namespace testbed {

Status run_in(const Netns* ns, const std::function<void()>& fn) {
  Status st;
  std::thread t([&] {
    if (ns && setns(ns->fd(), CLONE_NEWNET) != 0) {
      st = Status::error("setns into " + ns->full_name() + ": " + strerror(errno));
      return;
    }
    fn();
  });
  t.join();
  return st;
}

namespace {

// Only async-signal-safe calls between fork and exec. Reports the failing step
// and errno over the CLOEXEC pipe.
[[noreturn]] void child_fail(int fd, int step) {
  int msg[2] = {step, errno};
  ssize_t r = write(fd, msg, sizeof msg);
  (void)r;
  _exit(127);
}

const char* const kSteps[] = {"prctl", "setns", "unshare mount namespace", "remount /sys",
                              "open stdout", "open stderr", "dup2", "exec", "open stdin"};

}  // namespace

Result<Process> Process::spawn(const std::vector<std::string>& argv, const SpawnOptions& opts) {
  if (argv.empty()) return Status::error("spawn: empty argv");
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  for (const auto& e : opts.env) envs.push_back(e);
  std::vector<char*> cenv;
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const char* out = opts.stdout_path.empty() ? nullptr : opts.stdout_path.c_str();
  bool err_to_out = opts.stderr_path == "=stdout";
  const char* err = opts.stderr_path.empty() || err_to_out ? nullptr : opts.stderr_path.c_str();
  const char* in_path = opts.stdin_path.empty() ? nullptr : opts.stdin_path.c_str();
  int nsfd = opts.ns ? opts.ns->fd() : -1;
  int barrier = opts.barrier_fd;
  int in_fd = opts.stdin_fd;
  pid_t parent = getpid();

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return Status::error(std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pipefd[0]);
    close(pipefd[1]);
    return Status::error(std::string("fork: ") + strerror(e));
  }
  if (pid == 0) {
    close(pipefd[0]);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(pipefd[1], 0);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (nsfd >= 0) {
      if (setns(nsfd, CLONE_NEWNET) != 0) child_fail(pipefd[1], 1);
      // Like `ip netns exec`: a private /sys that shows this namespace's links.
      if (unshare(CLONE_NEWNS) != 0) child_fail(pipefd[1], 2);
      if (mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0) child_fail(pipefd[1], 2);
      umount2("/sys", MNT_DETACH);
      if (mount(opts.ns->full_name().c_str(), "/sys", "sysfs", 0, nullptr) != 0) child_fail(pipefd[1], 3);
    }
    if (out) {
      int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) child_fail(pipefd[1], 4);
      if (dup2(fd, 1) < 0) child_fail(pipefd[1], 6);
      close(fd);
    }
    if (err_to_out) {
      if (dup2(1, 2) < 0) child_fail(pipefd[1], 6);
    } else if (err) {
      int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) child_fail(pipefd[1], 5);
      if (dup2(fd, 2) < 0) child_fail(pipefd[1], 6);
      close(fd);
    }
    if (!in_path && in_fd >= 0) {
      if (dup2(in_fd, 0) < 0) child_fail(pipefd[1], 6);
    } else {
      int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
      if (in < 0) child_fail(pipefd[1], 8);
      dup2(in, 0);
      close(in);
    }
    if (barrier >= 0) {
      char b;
      ssize_t r;
      do r = read(barrier, &b, 1);
      while (r < 0 && errno == EINTR);
      if (r != 1) _exit(126);  // the barrier was abandoned: never start
    }
    execvpe(cargv[0], cargv.data(), cenv.data());
    child_fail(pipefd[1], 7);
  }
  close(pipefd[1]);
  if (barrier >= 0) {
    // The child waits for the barrier before exec; a failed exec shows as exit 127.
    close(pipefd[0]);
    return Process(pid);
  }
  int msg[2];
  ssize_t n;
  do n = read(pipefd[0], msg, sizeof msg);
  while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  if (n == sizeof msg) {
    int st;
    waitpid(pid, &st, 0);
    return Status::error("cannot start '" + argv[0] + "': " + kSteps[msg[0]] + ": " + strerror(msg[1]));
  }
  return Process(pid);
}

Process::Process(Process&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) stop();
    pid_ = o.pid_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0) stop();
}

bool Process::reap(bool block) {
  if (pid_ <= 0) return true;
  int st;
  pid_t r;
  do r = waitpid(pid_, &st, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  if (r == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  else status_ = 255;  // already reaped elsewhere
  // Kill stragglers the program left in its group.
  kill(-pid_, SIGKILL);
  pid_ = -1;
  return true;
}

bool Process::running() { return pid_ > 0 && !reap(false); }

Result<int> Process::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reap(false)) {
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::error(sdn::ErrorKind::kTimeout, "timed out after " + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

void Process::signal(int sig) {
  if (pid_ > 0) kill(-pid_, sig);
}

int Process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_;
  kill(-pid_, SIGTERM);
  if (!wait(grace)) {
    kill(-pid_, SIGKILL);
    reap(true);
  }
  return status_;
}

Result<RunOutput> run_capture(const std::vector<std::string>& argv, const Netns* ns,
                              std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/testbed-out-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return Status::error(std::string("mkstemp: ") + strerror(errno));
  close(fd);
  SpawnOptions o;
  o.ns = ns;
  o.stdout_path = tmpl;
  o.stderr_path = "=stdout";
  auto p = Process::spawn(argv, o);
  if (!p) {
    unlink(tmpl);
    return p.status();
  }
  auto st = p->wait(timeout);
  if (!st) p->stop();
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(tmpl);
  if (!st) return st.status().context(argv[0] + ": ");
  return RunOutput{*st, ss.str()};
}

}  // namespace testbed
