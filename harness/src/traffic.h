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
struct Progress {
  int done = 0, total = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  bool tty = isatty(2);
  void step(const std::string& what) {
    done++;
    if (!tty) return;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double eta = done ? el / done * (total - done) : 0;
    fprintf(stderr, "\r\033[K[%d/%d] %s  ETA %dm%02ds", done, total, what.c_str(), static_cast<int>(eta) / 60,
            static_cast<int>(eta) % 60);
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
