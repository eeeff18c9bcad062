// Helpers the harness's control code shares (dut.cc, lab_dut.cc, rfc2544.cc,
// sweep.cc). Internal to the harness library.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "harness/preconditions.h"
#include "sdn/status.h"
#include "testbed/process.h"

namespace harness::util {

std::string slurp(const std::string& path);
// The last `n` characters of a log on one line, for an error row.
std::string tail(const std::string& s, size_t n = 300);
// The first line argv prints, or `fallback` when it prints nothing or fails.
std::string first_line(const std::vector<std::string>& argv, const std::string& fallback = "unknown");
std::string fmt(double v, int prec = 3);
std::string now_iso();
// DPDK programs get hugepages unless DPDK_HUGE=0.
bool huge_ok();
// Waits until `needle` shows up in p's log.
sdn::Status wait_for_log(testbed::Process& p, const std::string& log, const std::string& needle,
                         std::chrono::seconds within);
// The stateful firewall as OpenFlow rules for ovs-ofctl replace-flows:
// ports 1 (client side) and 2 (server side), ct() both ways, new
// connections only from port 1. Every OVS profile loads the same rules.
std::string ovs_firewall_flows();
std::string ovs_overlay_nat_flows();  // 203.0.113.7: Bed::kFloatingIp
// The drop, error and missed counters of `ovs-vsctl get Interface PORT
// statistics` output ({k=v, k=v, ...}) into *m as PORT_k.
void ovs_port_drops(const std::string& port, const std::string& statistics, std::map<std::string, long long>* m);
// The dataplane's drop counters by name, from its drop reasons and its
// ports' counters (telemetry /dataplane/stats or `dataplane-ctl stats`):
// every reason (rule_drop and no_match as "policy:"), and each port's
// receive misses and errors, transmit errors and af_packet ring drops.
std::map<std::string, long long> dataplane_drops(const std::map<std::string, long long>& reasons,
                                                 const std::map<std::string, long long>& ports);
// Runs commands in a namespace (null: this one) for gather_host_facts().
HostRunner netns_runner(const testbed::Netns* ns);

// The receive-ring drops of another process's AF_PACKET sockets, by
// interface index: the kernel's PACKET_STATISTICS tp_drops, which DPDK
// 22.11's net_af_packet does not put in its ethdev stats (imissed stays 0),
// so testpmd and OVS cannot show them. Each socket is duplicated into this
// process with pidfd_getfd (Linux 5.6; root, PTRACE_MODE_ATTACH) and read.
// A read resets the kernel's counts: callers add the reads up.
sdn::Result<std::map<int, long long>> af_packet_ring_drops(pid_t pid);

// The time the threads of process `pid` that may run on CPU `cpu` only
// (DPDK's lcore threads pin themselves) spent on it and waiting for it, ns,
// summed from /proc/PID/task/TID/schedstat. An error when it has none.
struct ThreadCpu {
  long long run_ns = 0, wait_ns = 0;
  int threads = 0;
};
sdn::Result<ThreadCpu> pinned_threads_cpu(pid_t pid, int cpu);

}  // namespace harness::util
