// Running code inside a network namespace: a function on a helper thread, or
// a program from an argv vector (never a shell string).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace testbed {

using sdn::Result;
using sdn::Status;

class Netns;

// Runs fn on a thread that has joined `ns` (the caller's namespace if null)
// and waits for it. setns() is per thread, so the caller is never moved.
Status run_in(const Netns* ns, const std::function<void()>& fn);

struct SpawnOptions {
  const Netns* ns = nullptr;   // run inside this namespace (with its own /sys)
  std::string stdin_path;      // empty: /dev/null
  int stdin_fd = -1;           // if set (and no stdin_path), the child's stdin; the caller closes its copy
  std::string stdout_path;     // empty: inherit; otherwise truncated and written
  std::string stderr_path;     // empty: inherit; "=stdout" joins stdout
  std::vector<std::string> env;  // extra NAME=VALUE entries
  int barrier_fd = -1;           // if set, the child blocks reading one byte from it before exec
                                 // (a start barrier: write N bytes to release N children at once)
};

// A child process. Its own process group, killed with SIGKILL if the parent
// dies (PR_SET_PDEATHSIG); the destructor stops it (TERM, then KILL).
class Process {
 public:
  static Result<Process> spawn(const std::vector<std::string>& argv, const SpawnOptions& opts = {});

  Process() = default;
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  ~Process();

  pid_t pid() const { return pid_; }
  bool running();
  // Exit status (0..255), or 128+signal if killed. Error on timeout.
  Result<int> wait(std::chrono::milliseconds timeout);
  // TERM the process group, wait up to grace, then KILL. Returns the status.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  void signal(int sig);

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  bool reap(bool block);
  pid_t pid_ = -1;
  int status_ = -1;
};

// Convenience: run to completion and capture stdout+stderr.
struct RunOutput {
  int status = -1;
  std::string output;
};
Result<RunOutput> run_capture(const std::vector<std::string>& argv, const Netns* ns = nullptr,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace testbed
