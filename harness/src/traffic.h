// Internal to the sweep: one run of traffic through a DUT (iperf3 instances,
// sockperf), the client ports it uses, the rows' latency columns, progress.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep.h"
#include "harness/tools.h"
#include "util.h"

namespace harness {

constexpr int kBackgroundPort = 30000;  // the first of the background connections' server ports

inline std::string cmd_line(const std::vector<std::string>& argv) { return util::first_line(argv, "unavailable"); }

void put_latency(Row& r, const SockperfResult& l);

// The sweep's progress line on a terminal.
// Where the sweep is. On a terminal one line redrawn in place; elsewhere
// (CI, nohup, a log file) a line per finished repetition:
//   harness: [12/192] dataplane tcp x16 1460B rep 2: ok, 3m10s elapsed, ETA 47m30s
struct Progress {
  int done = 0, total = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  bool tty = isatty(2);
  void step(const std::string& what, const std::string& status) {
    done++;
    const int el = static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const int eta = done ? static_cast<int>(static_cast<double>(el) / done * (total - done)) : 0;
    if (tty)
      fprintf(stderr, "\r\033[K[%d/%d] %s: %s  ETA %dm%02ds", done, total, what.c_str(), status.c_str(), eta / 60,
              eta % 60);
    else
      fprintf(stderr, "harness: [%d/%d] %s: %s, %dm%02ds elapsed, ETA %dm%02ds\n", done, total, what.c_str(),
              status.c_str(), el / 60, el % 60, eta / 60, eta % 60);
    fflush(stderr);
  }
  void end() {
    if (tty) fprintf(stderr, "\n");
  }
};

struct RunOut {
  std::vector<IperfResult> inst;
  SockperfResult lat;
  bool have_lat = false;
  bool server_busy = false;  // an iperf3 server was still busy with its last test
  std::string error;         // aggregated
};


// n iperf3 clients (and sockperf, under load when n > 0) released together
// through the transport; raw output under raw_prefix.
RunOut run_traffic(Transport& tr, const std::string& proto, int n, int size, int duration, int omit,
                   const std::string& raw_prefix, bool with_sockperf);

}  // namespace harness
