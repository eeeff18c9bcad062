// Unit tests for the harness: parsers on real iperf3 3.12 / sockperf 3.7
// output captured on this machine (tests/data), the CSV writer and resume,
// config validation, compare and report.
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/lab.h"
#include "harness/preconditions.h"
#include "harness/report.h"
#include "harness/results.h"
#include "harness/ssh.h"
#include "harness/sweep.h"
#include "harness/tools.h"
#include "testbed/process.h"
#include "../src/util.h"

using namespace harness;

using harness::Col;

namespace {

std::string data(const std::string& f) {
  std::ifstream in(std::string(TEST_DATA) + "/" + f);
  EXPECT_TRUE(in.good()) << f;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tmp(const std::string& name) { return "/tmp/harness-test-" + std::to_string(getpid()) + "-" + name; }

TEST(Iperf3, ParsesTcpSuccess) {
  IperfResult r = parse_iperf3(data("iperf3-tcp-ok.json"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.gbps, 10.77, 0.01);
  EXPECT_GE(r.retransmits, 0);
  EXPECT_GT(r.cpu_host, 0);
  EXPECT_GT(r.rtt_us, 0);
}

TEST(Iperf3, ParsesUdpLoss) {
  IperfResult r = parse_iperf3(data("iperf3-udp-loss.json"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.gbps, 0);
  EXPECT_NEAR(r.lost_percent, 0.813, 0.001);
  EXPECT_EQ(r.rtt_us, 0);
}

TEST(Iperf3, ErrorKeyIsAnErrorNotAZero) {
  IperfResult r = parse_iperf3(data("iperf3-error.json"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "unable to connect to server: Connection refused");
}

TEST(Iperf3, TruncatedOutputIsAnError) {
  IperfResult r = parse_iperf3(data("iperf3-truncated.json"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("unparsable"), std::string::npos) << r.error;
  EXPECT_FALSE(parse_iperf3("").ok);
}

TEST(Sockperf, ParsesPercentilesThroughAnsiCodes) {
  SockperfResult r = parse_sockperf(data("sockperf-pp.txt"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_DOUBLE_EQ(r.p50_us, 15.033);
  EXPECT_DOUBLE_EQ(r.p90_us, 16.476);
  EXPECT_DOUBLE_EQ(r.p99_us, 51.402);
  EXPECT_DOUBLE_EQ(r.p999_us, 77.942);
  EXPECT_DOUBLE_EQ(r.max_us, 1009.315);
  EXPECT_DOUBLE_EQ(r.avg_us, 16.491);
}

// Under load: percentiles of what came back, and how many did not.
TEST(Sockperf, UnderLoadCountsDroppedMessages) {
  auto r = parse_sockperf(data("sockperf-under-load.txt"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dropped, 0);
  EXPECT_NEAR(r.p50_us, 7.686, 1e-3);
  r = parse_sockperf(data("sockperf-under-load-drops.txt"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dropped, 90895);
  EXPECT_NEAR(r.p50_us, 24.516, 1e-3);
  EXPECT_EQ(parse_sockperf(data("sockperf-pp.txt")).dropped, 0);
}

TEST(Sockperf, NoServerIsAnError) {
  SockperfResult r = parse_sockperf(data("sockperf-error.txt"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no messages"), std::string::npos);
  EXPECT_EQ(strip_ansi("\x1b[2;35mhi\x1b[0m"), "hi");
}

// Through testpmd-io under iperf3 load: 263 replies in 10 s, too few for
// sockperf's percentiles. The reason carries the round-trip time.
TEST(Sockperf, TooFewRepliesSayHowSlowTheyWere) {
  SockperfResult r = parse_sockperf(data("sockperf-no-valid.txt"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.received, 263u);
  EXPECT_EQ(r.sent, 264u);
  EXPECT_NEAR(r.run_s, 10.001, 1e-9);
  EXPECT_NE(r.error.find("no valid observations: 263 round trips in 10.0 s (38027 us each on average)"), std::string::npos)
      << r.error;
}

// One column list: every schema's words are columns, each name maps back
// to its column, and a header word no schema has is refused by the reader
// with the file and line.
TEST(Csv, OneColumnListFeedsEverySchema) {
  for (const auto* schema : {&harness::csv_columns(), &harness::rfc2544_columns(), &harness::rfc2544_trial_columns()}) {
    std::set<Col> seen;
    for (Col c : *schema) {
      EXPECT_TRUE(seen.insert(c).second) << "twice in a schema: " << harness::col_name(c);
      EXPECT_EQ(harness::col_named(harness::col_name(c)), c);
    }
  }
  for (const char* pct : {"10", "50", "90"})
    for (const char* q : {"p50_us", "p99_us", "p999_us", "offered_mpps", "lost"})
      EXPECT_TRUE(harness::col_named(std::string("lat") + pct + "_" + q).has_value()) << pct << q;
  EXPECT_FALSE(harness::col_named("throughput").has_value());
  std::string p = tmp("foreign.csv");
  std::ofstream(p) << "dut,status,colour\ndataplane,ok,blue\n";
  auto rows = read_csv(p);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.message().find(p + ":1: column 'colour'"), std::string::npos) << rows.message();
  EXPECT_EQ(harness::csv_header({Col::dut, Col::status}), "dut,status");
}

TEST(Csv, WritesFlushesAndReadsBack) {
  std::string p = tmp("w.csv");
  unlink(p.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(p).ok());
    ASSERT_TRUE(w.write({{Col::dut, "dataplane"}, {Col::status, "ok"}, {Col::error, "a, \"quoted\" thing"}}).ok());
    // A column of another schema (rfc2544.csv's) is refused.
    EXPECT_FALSE(w.write({{Col::frame_bytes, "64"}}).ok());
  }
  {
    CsvWriter w;  // reopen: no second header
    ASSERT_TRUE(w.open(p).ok());
    ASSERT_TRUE(w.write({{Col::dut, "kernel-ct"}, {Col::status, "error"}}).ok());
  }
  auto rows = read_csv(p);
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0][Col::error], "a, \"quoted\" thing");
  EXPECT_EQ((*rows)[1][Col::dut], "kernel-ct");
  // A run killed mid-row leaves a short last line: resume ignores it.
  std::ofstream(p, std::ios::app) << "2026-01-01,abc,dataplane";
  rows = read_csv(p);
  ASSERT_TRUE(rows.ok()) << rows.message();
  EXPECT_EQ(rows->size(), 2u);
  // Issue 19, item 5: resuming after that appends whole rows, not the next
  // row glued to the cut one.
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(p).ok());
    ASSERT_TRUE(w.write({{Col::dut, "ovs-dpdk"}, {Col::status, "ok"}}).ok());
  }
  rows = read_csv(p);
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[2][Col::dut], "ovs-dpdk");
  EXPECT_EQ((*rows)[2][Col::status], "ok");
  // Another schema's file is refused, never appended to under its header.
  const std::vector<Col> other = {Col::dut, Col::status, Col::frame_bytes};
  CsvWriter w2;
  auto s = w2.open(p, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(p + ": its columns are not this version's"), std::string::npos) << s.message();
  rows = read_csv(p);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 3u);
  unlink(p.c_str());
}

TEST(Csv, SpreadIsMedianMinMax) {
  Spread s = spread({3, 1, 2, 10});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
}

// sweep's --proto: a list parsed once into Proto; an unknown value is named
// with the accepted ones, an empty list refused, and *out left alone.
TEST(Config, ProtoListParsesOnceAndNamesTheBadValue) {
  std::vector<Proto> v{Proto::kUdp};
  EXPECT_EQ(parse_proto_list("tcp,udp", &v), "");
  EXPECT_EQ(v, (std::vector<Proto>{Proto::kTcp, Proto::kUdp}));
  EXPECT_EQ(parse_proto_list("udp,", &v), "");
  EXPECT_EQ(v, (std::vector<Proto>{Proto::kUdp}));
  EXPECT_EQ(parse_proto_list("tcp,sctp", &v), "unknown value 'sctp' (one of: tcp, udp)");
  EXPECT_EQ(parse_proto_list("TCP", &v), "unknown value 'TCP' (one of: tcp, udp)");
  EXPECT_EQ(parse_proto_list("", &v), "names nothing (one or more of: tcp, udp)");
  EXPECT_EQ(parse_proto_list(",,", &v), "names nothing (one or more of: tcp, udp)");
  EXPECT_EQ(v, (std::vector<Proto>{Proto::kUdp}));  // left alone by the errors
}

TEST(Config, ErrorsNameFileLineAndKey) {
  std::string p = tmp("c.yaml");
  std::ofstream(p) << "instances: [4, 16]\nsizes: [64, big]\n";
  SweepConfig c;
  auto s = load_sweep_config(p, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(p + ":2: key 'sizes': 'big' is not a number"), std::string::npos) << s.message();
  std::ofstream(p) << "instances: [4]\nduts: [dataplane, vpp]\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(":2: key 'duts': unknown value 'vpp'"), std::string::npos) << s.message();
  std::ofstream(p) << "durations_s: 3\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(":1: key 'durations_s': unknown key"), std::string::npos) << s.message();
  std::ofstream(p) << "instances: &a [*a]\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(p + ":1: YAML an alias inside the node it refers to"), std::string::npos) << s.message();
  s = load_sweep_config("/dev/zero", &c);
  EXPECT_NE(s.message().find("/dev/zero: not a regular file"), std::string::npos) << s.message();
  std::ofstream(p) << "instances: [4]\nsegmentation: jumbo\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(p + ":2: key 'segmentation': expected wire or host"), std::string::npos) << s.message();
  std::ofstream(p) << "instances: [4]\nprotos: [tcp, sctp]\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(p + ":2: key 'protos': unknown value 'sctp' (one of: tcp, udp)"), std::string::npos)
      << s.message();
  std::ofstream(p) << "protos: []\n";
  s = load_sweep_config(p, &c);
  EXPECT_NE(s.message().find(p + ":1: key 'protos': expected a non-empty list"), std::string::npos) << s.message();
  std::ofstream(p) << "protos: [udp, tcp]\n";
  ASSERT_TRUE(load_sweep_config(p, &c).ok());
  EXPECT_EQ(c.protos, (std::vector<Proto>{Proto::kUdp, Proto::kTcp}));
  std::ofstream(p) << "instances: [1, 2]\nduration_s: 7\nduts: [testpmd-io]\nsegmentation: host\n";
  ASSERT_TRUE(load_sweep_config(p, &c).ok());
  EXPECT_EQ(c.segmentation, Segmentation::kHost);
  EXPECT_EQ(c.duration_s, 7);
  EXPECT_EQ(c.instances, (std::vector<int>{1, 2}));
  unlink(p.c_str());
}

Row summary(const std::string& dut, const std::string& kind, int size, double gbps, double p50,
            const std::string& status = "ok") {
  return {{Col::dut, dut},         {Col::kind, kind},
          {Col::proto, "tcp"},     {Col::instances, kind == "latency" ? "0" : "4"},
          {Col::size_bytes, std::to_string(size)}, {Col::repeat, "summary"},
          {Col::throughput_gbps, gbps >= 0 ? std::to_string(gbps) : ""},
          {Col::throughput_gbps_min, gbps >= 0 ? std::to_string(gbps * 0.95) : ""},
          {Col::throughput_gbps_max, gbps >= 0 ? std::to_string(gbps * 1.05) : ""},
          {Col::latency_p50_us, p50 >= 0 ? std::to_string(p50) : ""},
          {Col::status, status},   {Col::error, status == "ok" ? "" : "boom"}};
}

TEST(Compare, FindsRegressionsOverTheLimit) {
  std::string a = tmp("old.csv"), b = tmp("new.csv");
  unlink(a.c_str());
  unlink(b.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(a).ok());
    w.write(summary("dataplane", "throughput", 1460, 2.0, -1));
    w.write(summary("dataplane", "throughput", 8192, 4.0, -1));
    w.write(summary("dataplane", "latency", 64, -1, 20));
  }
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(b).ok());
    w.write(summary("dataplane", "throughput", 1460, 1.96, -1));  // -2%: within 5%
    w.write(summary("dataplane", "throughput", 8192, 3.0, -1));   // -25%
    w.write(summary("dataplane", "latency", 64, -1, 30));         // +50%
  }
  auto r = compare(a, b, 5);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_NE((*r)[0].find("8192B: throughput 4.00 -> 3.00"), std::string::npos) << (*r)[0];
  EXPECT_NE((*r)[1].find("latency p50 20.00 -> 30.00"), std::string::npos) << (*r)[1];
  EXPECT_TRUE(compare(a, a, 5)->empty());
  unlink(a.c_str());
  unlink(b.c_str());
}

// A gate that passes on missing data is worse than none: an empty NEW, a
// DUT gone, a cell gone, a blank or nan value are each a named failure.
TEST(Compare, MissingCellsDutsAndValuesFail) {
  std::string a = tmp("gate-old.csv"), b = tmp("gate-new.csv");
  unlink(a.c_str());
  unlink(b.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(a).ok());
    w.write(summary("dataplane", "throughput", 1460, 2.0, -1));
    w.write(summary("dataplane", "throughput", 8192, 4.0, -1));
    w.write(summary("dataplane", "latency", 64, -1, 20));
    w.write(summary("ovs-dpdk", "throughput", 1460, 1.5, -1));
    w.write(summary("ovs-dpdk", "throughput", 8192, 3.5, -1));
  }
  {
    CsvWriter w;  // a header and nothing else
    ASSERT_TRUE(w.open(b).ok());
  }
  auto r = compare(a, b, 5);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_NE((*r)[0].find("no summary rows"), std::string::npos) << (*r)[0];
  unlink(b.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(b).ok());
    Row nan = summary("dataplane", "throughput", 1460, 2.0, -1);
    nan[Col::throughput_gbps] = "nan";
    w.write(nan);
    w.write(summary("dataplane", "latency", 64, -1, -1));  // blank p50
  }
  r = compare(a, b, 5);
  ASSERT_TRUE(r.ok()) << r.message();
  std::string all;
  for (auto& l : *r) all += l + "\n";
  EXPECT_EQ(r->size(), 4u) << all;
  EXPECT_NE(all.find("MISSING dataplane throughput tcp x4 1460B: throughput_gbps is 'nan' in NEW"), std::string::npos)
      << all;
  EXPECT_NE(all.find("MISSING dataplane throughput tcp x4 8192B: not in NEW"), std::string::npos) << all;
  EXPECT_NE(all.find("MISSING dataplane latency tcp x0 64B: latency_p50_us is '' in NEW"), std::string::npos) << all;
  EXPECT_NE(all.find("MISSING dut ovs-dpdk: none of its 2 cells is in NEW"), std::string::npos) << all;
  unlink(a.c_str());
  unlink(b.c_str());
}

// The command line: problems exit 1, bad usage exits 2.
TEST(Compare, CommandLineRefusesBadFlags) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  std::string exe = std::string(self).substr(0, std::string(self).rfind('/')) + "/harness";
  std::string a = tmp("cli-old.csv");
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(a).ok());
    w.write(summary("dataplane", "throughput", 1460, 2.0, -1));
  }
  auto rc = [&](std::vector<std::string> args) {
    std::string cmd = exe;
    for (auto& x : args) cmd += " '" + x + "'";
    int st = system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(rc({"compare", a, a}), 0);
  EXPECT_EQ(rc({"compare", a, a, "--max-regression", "10"}), 0);
  EXPECT_EQ(rc({"compare", a, a, "--max-regression", "abc"}), 2);
  EXPECT_EQ(rc({"compare", a, a, "--max-regression", "-1000"}), 2);
  EXPECT_EQ(rc({"compare", a, a, "--max-regresion", "5"}), 2);
  EXPECT_EQ(rc({"compare", a}), 2);
  EXPECT_EQ(rc({"compare", a, "/nonexistent.csv"}), 2);
  std::string empty = tmp("cli-empty.csv");
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(empty).ok());
  }
  EXPECT_EQ(rc({"compare", a, empty}), 1);
  // `run` takes the YAML's limits on its flags, and bad input never starts a sweep.
  EXPECT_EQ(rc({"run", "--instances", "100000"}), 2);
  EXPECT_EQ(rc({"run", "--instances", "4,129"}), 2);
  EXPECT_EQ(rc({"run", "--sizes", "8"}), 2);
  EXPECT_EQ(rc({"run", "--dut", ""}), 2);
  EXPECT_EQ(rc({"run", "--dut", ","}), 2);
  EXPECT_EQ(rc({"run", "--dut", "vpp"}), 2);
  EXPECT_EQ(rc({"run", "--config", "/tmp"}), 2);
  EXPECT_EQ(rc({"run", "--duratoin", "5"}), 2);
  EXPECT_EQ(rc({"run", "--proto", "sctp"}), 2);
  EXPECT_EQ(rc({"run", "--proto", ","}), 2);
  unlink(a.c_str());
  unlink(empty.c_str());
}

// Issue 32, item 3: results for a CI system. The harness binary beside this
// test, and a Python of Debian's (jsonschema, junitparser) as the outside reader.
std::string harness_exe() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "harness";
  self[n] = 0;
  return std::string(self).substr(0, std::string(self).rfind('/')) + "/harness";
}
testbed::RunOutput run_argv(const std::vector<std::string>& argv) {
  auto r = testbed::run_capture(argv, nullptr, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : testbed::RunOutput{-1, ""};
}
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}
void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}
// Validates a file against `harness --schema` with python3-jsonschema: "valid"
// or the validator's complaint.
std::string validate(const std::string& schema, const std::string& data) {
  const char* py =
      "import json, sys, jsonschema\n"
      "s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))\n"
      "jsonschema.Draft202012Validator.check_schema(s)\n"
      "try:\n"
      "    jsonschema.Draft202012Validator(s).validate(d)\n"
      "except jsonschema.ValidationError as e:\n"
      "    print('invalid:', e.message); sys.exit(1)\n"
      "print('valid')\n";
  auto r = run_argv({"/usr/bin/python3", "-c", py, schema, data});
  return r.status == 0 ? "valid" : r.output;
}

TEST(ResultsJson, BesideEveryCsvTypedAndValidAgainstTheSchema) {
  const std::string dir = tmp("json");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string schema = dir + "/schema.json";
  auto sch = run_argv({harness_exe(), "--schema"});
  ASSERT_EQ(sch.status, 0) << sch.output;
  write_file(schema, sch.output);
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(dir + "/results.csv").ok());
    Row r = summary("dataplane", "throughput", 1460, 2.5, -1);
    r[Col::ct_entries] = "n/a: io forwarding tracks no connections";
    r[Col::dut_drops] = "17";
    r[Col::retransmits] = "3";
    r[Col::error] = std::string("bad \xff utf-8");
    ASSERT_TRUE(w.write(r).ok());
    Row n = summary("ovs-dpdk", "throughput", 1460, 2.0, -1);
    n[Col::throughput_gbps] = "nan";
    ASSERT_TRUE(w.write(n).ok());
  }
  {
    CsvWriter w;  // a resumed run: the JSON keeps the CSV's rows and adds the new one
    ASSERT_TRUE(w.open(dir + "/results.csv").ok());
    ASSERT_TRUE(w.write(summary("kernel-ct", "latency", 64, -1, 21.5)).ok());
  }
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(dir + "/rfc2544.csv", rfc2544_columns()).ok());
    Row r{{Col::dut, "dataplane"}, {Col::frame_bytes, "64"}, {Col::conns, "100000"}, {Col::zero_loss_mpps, "7.870"},
          {Col::lat90_p50_us, "n/a: the trial reached 4.306 of 5.055 Mpps"}, {Col::limited_by, "loss: the search found the rate"},
          {Col::status, "ok"}};
    ASSERT_TRUE(w.write(r).ok());
  }
  auto j = read_json(dir + "/results.json");
  ASSERT_TRUE(j.is_object()) << "results.json is not JSON";
  EXPECT_EQ(j["format"], "harness-results/1");
  EXPECT_EQ(j["table"], "results");
  ASSERT_EQ(j["rows"].size(), 3u) << j.dump();
  const auto& r0 = j["rows"][0];
  EXPECT_TRUE(r0["throughput_gbps"].is_number_float()) << r0.dump();
  EXPECT_DOUBLE_EQ(r0["throughput_gbps"].get<double>(), 2.5);
  EXPECT_TRUE(r0["instances"].is_number_integer()) << r0.dump();
  EXPECT_EQ(r0["dut_drops"], 17);
  EXPECT_EQ(r0["retransmits"], 3);
  EXPECT_TRUE(r0["ct_entries"].is_null()) << r0.dump();
  EXPECT_EQ(r0["reasons"]["ct_entries"], "n/a: io forwarding tracks no connections");
  EXPECT_EQ(r0["repeat"], "summary");
  EXPECT_TRUE(j["rows"][1]["throughput_gbps"].is_null());
  EXPECT_EQ(j["rows"][1]["reasons"]["throughput_gbps"], "nan");
  EXPECT_EQ(j["rows"][2]["dut"], "kernel-ct");
  EXPECT_DOUBLE_EQ(j["rows"][2]["latency_p50_us"].get<double>(), 21.5);
  auto rf = read_json(dir + "/rfc2544.json");
  ASSERT_TRUE(rf.is_object());
  EXPECT_EQ(rf["table"], "rfc2544");
  EXPECT_EQ(rf["rows"][0]["conns"], 100000);
  EXPECT_TRUE(rf["rows"][0]["lat90_p50_us"].is_null());
  EXPECT_EQ(validate(schema, dir + "/results.json"), "valid");
  EXPECT_EQ(validate(schema, dir + "/rfc2544.json"), "valid");
  // The schema can fail: a figure as text, a column no table has, an rfc2544
  // column in the sweep's table.
  for (auto [key, val] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"throughput_gbps", "fast"}, {"speed_gbps", 1.0}, {"zero_loss_mpps", 7.0}, {"instances", 4.5}}) {
    auto bad = j;
    bad["rows"][0][key] = val;
    write_file(dir + "/bad.json", bad.dump());
    EXPECT_NE(validate(schema, dir + "/bad.json"), "valid") << key;
  }
  std::filesystem::remove_all(dir);
}

// `compare --junit`: one test case per compared cell, read by junitparser (a
// real JUnit consumer); a run against itself passes, one cell 20 % worse
// fails exactly that case.
TEST(Compare, JunitHasOneCasePerCellAndFailsExactlyTheRegressedOne) {
  const std::string dir = tmp("junit");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = dir + "/old.csv", b = dir + "/new.csv", x = dir + "/junit.xml";
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(a).ok());
    w.write(summary("dataplane", "throughput", 1460, 2.0, -1));
    w.write(summary("dataplane", "throughput", 8192, 4.0, -1));
    w.write(summary("dataplane", "latency", 64, -1, 20));
    w.write(summary("ovs-dpdk", "throughput", 1460, 1.5, -1));
  }
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(b).ok());
    w.write(summary("dataplane", "throughput", 1460, 2.0, -1));
    w.write(summary("dataplane", "throughput", 8192, 3.2, -1));  // 20 % lower
    w.write(summary("dataplane", "latency", 64, -1, 20));
    w.write(summary("ovs-dpdk", "throughput", 1460, 1.5, -1));
  }
  const char* py =
      "import json, sys, junitparser\n"
      "out = []\n"
      "for suite in junitparser.JUnitXml.fromfile(sys.argv[1]):\n"
      "    for case in suite:\n"
      "        out.append({'classname': case.classname, 'name': case.name, 'passed': case.is_passed,\n"
      "                    'message': ' '.join(r.message or '' for r in case.result)})\n"
      "print(json.dumps(out))\n";
  auto cases = [&]() {
    auto r = run_argv({"/usr/bin/python3", "-c", py, x});
    EXPECT_EQ(r.status, 0) << r.output;
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    EXPECT_TRUE(j.is_array()) << r.output;
    return j.is_array() ? j : nlohmann::json::array();
  };
  auto self = run_argv({harness_exe(), "compare", a, a, "--junit", x});
  EXPECT_EQ(self.status, 0) << self.output;
  auto c = cases();
  ASSERT_EQ(c.size(), 4u) << c.dump();
  for (auto& k : c) EXPECT_TRUE(k["passed"].get<bool>()) << k.dump();
  EXPECT_EQ(run_argv({"xmllint", "--noout", x}).status, 0);

  auto worse = run_argv({harness_exe(), "compare", a, b, "--junit", x});
  EXPECT_EQ(worse.status, 1) << worse.output;
  c = cases();
  ASSERT_EQ(c.size(), 4u) << c.dump();
  int failed = 0;
  for (auto& k : c) {
    if (k["passed"].get<bool>()) continue;
    failed++;
    EXPECT_EQ(k["classname"], "dataplane") << k.dump();
    EXPECT_EQ(k["name"], "throughput tcp x4 8192B") << k.dump();
    EXPECT_NE(k["message"].get<std::string>().find("4.00 -> 3.20"), std::string::npos) << k.dump();
  }
  EXPECT_EQ(failed, 1) << c.dump();
  std::ifstream in(x);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("ratio 0.800, fails below 0.950"), std::string::npos) << text.str();
  EXPECT_NE(run_argv({harness_exe(), "compare", a, b, "--junit", ""}).status, 0);
  EXPECT_EQ(run_argv({harness_exe(), "compare", a, b, "--junit", "/nonexistent/dir/x.xml"}).status, 2);
  std::filesystem::remove_all(dir);
}

// Issue 19, item 2: NaN and infinities pass a `v < lo || v > hi` check.
// They are refused by name, before anything starts; `run --help` is help;
// harness-gen reads its flags before EAL (no hugepage file or runtime
// directory for a bad flag) and never prints the line the harness waits for.
TEST(Cli, NonFiniteNumbersAreRefusedBeforeAnythingStarts) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  const std::string dir = std::string(self).substr(0, std::string(self).rfind('/'));
  auto run = [&](std::vector<std::string> argv) {
    auto r = testbed::run_capture(argv, nullptr, std::chrono::seconds(30));
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : testbed::RunOutput{-1, ""};
  };
  const std::string h = dir + "/harness";
  for (auto [flag, v] : std::vector<std::pair<std::string, std::string>>{
           {"--trial", "nan"}, {"--loss", "nan"}, {"--loss", "inf"}, {"--churn", "nan"}, {"--trial", "1e999"},
           {"--trial", "-nan"}, {"--churn", "inf"}}) {
    auto r = run({h, "run", "--mode", "rfc2544", flag, v, "--out", "/nonexistent/x"});
    EXPECT_EQ(r.status, 2) << flag << " " << v << ": " << r.output;
    EXPECT_NE(r.output.find(flag + " '" + v + "'"), std::string::npos) << r.output;
  }
  auto cmp = run({h, "compare", "/dev/null", "/dev/null", "--max-regression", "nan"});
  EXPECT_EQ(cmp.status, 2) << cmp.output;
  for (auto args : std::vector<std::vector<std::string>>{{h, "run", "--help"}, {h, "run", "--mode", "rfc2544", "--help"}}) {
    auto r = run(args);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("usage: harness"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("unknown option"), std::string::npos) << r.output;
  }
  const std::string prefix = "harness-test-gen-" + std::to_string(getpid());
  for (auto args : std::vector<std::vector<std::string>>{
           {"--trial", "nan"}, {"--loss", "nan"}, {"--churn", "inf"}, {"--frame", "nan"}, {"--bogus", "1"}, {"--trial"}}) {
    std::vector<std::string> argv = {dir + "/harness-gen", "--no-pci", "--no-huge", "-m", "64", "--file-prefix", prefix,
                                     "--", "--client", "net_null0", "--server", "net_null1"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv);
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("harness-gen: " + args[0]), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("set-up done"), std::string::npos) << "the line the harness waits for:\n" << r.output;
    EXPECT_EQ(r.output.find("EAL"), std::string::npos) << "EAL started before the flags were read:\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix)) << "a runtime directory was left";
  }
  std::filesystem::remove_all("/var/run/dpdk/" + prefix);
}

// Issue 19, item 7: a client port an earlier cell's connection still holds
// (FIN_WAIT_2 here, as after a DUT dropped the last FIN) fails iperf3's
// --cport bind; the picker skips it, and everything in the ephemeral range.
TEST(ClientPorts, AFinWait2SocketHoldsItsPortAndThePickerSkipsIt) {
  auto host = [] {
    auto r = testbed::run_capture({"sh", "-c", "cat /proc/sys/net/ipv4/ip_local_port_range; ss -Htuan"});
    EXPECT_TRUE(r.ok() && r->status == 0);
    return r.ok() ? r->output : std::string();
  };
  int cursor = kClientPortLo;
  auto first = pick_client_ports(host(), 1, &cursor);
  ASSERT_TRUE(first.ok()) << first.message();
  const int held = (*first)[0];
  // A connection from `held`, closed by this side only: FIN_WAIT_2.
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(l, 1), 0);
  socklen_t al = sizeof a;
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &al);
  sockaddr_in me = a;
  me.sin_port = htons(static_cast<uint16_t>(held));
  ASSERT_EQ(bind(c, reinterpret_cast<sockaddr*>(&me), sizeof me), 0) << strerror(errno);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  int srv = accept(l, nullptr, nullptr);
  ASSERT_GE(srv, 0);
  close(c);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string seen = host();
  EXPECT_NE(seen.find("FIN-WAIT-2"), std::string::npos) << seen;
  // The race, as the fixed ports met it: iperf3 cannot bind the port.
  testbed::SpawnOptions so;
  so.stdout_path = tmp("iperf3-s.out");
  so.stderr_path = "=stdout";
  auto server = testbed::Process::spawn({"iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", "5999"}, so);
  ASSERT_TRUE(server.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto cl = testbed::run_capture({"iperf3", "-c", "127.0.0.1", "-p", "5999", "--cport", std::to_string(held), "-t", "1", "-J"},
                                 nullptr, std::chrono::seconds(20));
  ASSERT_TRUE(cl.ok());
  EXPECT_NE(cl->output.find("Address already in use"), std::string::npos) << cl->output;
  server->stop();
  // The picker, from the same place, never gives that port.
  cursor = held;
  auto again = pick_client_ports(seen, 8, &cursor);
  ASSERT_TRUE(again.ok()) << again.message();
  for (int p : *again) EXPECT_NE(p, held);
  EXPECT_GT(cursor, held);
  close(srv);
  close(l);
  // Nothing from the ephemeral range, wherever the cursor stands; a host with
  // no room says so.
  cursor = 32760;
  auto v = pick_client_ports("32768 60999\n", 20, &cursor);
  ASSERT_TRUE(v.ok());
  for (int p : *v) EXPECT_TRUE(p < 32768 || p > 60999) << p;
  cursor = kClientPortLo;
  EXPECT_FALSE(pick_client_ports("1024 65535\n", 4, &cursor).ok());
  EXPECT_FALSE(pick_client_ports("garbage", 4, &cursor).ok());
}

// What ssh hands the remote shell: every argument must come back exactly.
// harness-conns, the --background-conns generator, on loopback. With a
// descriptor limit far below the count (as on a host where RLIMIT_NOFILE
// cannot be raised), each side splits its ports over worker processes.
// harness-conns processes that are `pid` or its children.
std::vector<pid_t> conns_family(pid_t pid) {
  std::vector<pid_t> v;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    size_t rp = stat.rfind(')');
    if (rp == std::string::npos || stat.find("(harness-conns)") == std::string::npos) continue;
    pid_t self = atoi(stat.c_str()), ppid = 0;
    char st;
    sscanf(stat.c_str() + rp + 1, " %c %d", &st, &ppid);
    if (self == pid || ppid == pid) v.push_back(self);
  }
  return v;
}

nlohmann::json last_line(const std::string& path, const std::string& phase, std::chrono::seconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (!j.is_discarded() && (j.value("phase", "") == phase || j.value("phase", "") == "failed")) return j;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return nlohmann::json();
}

TEST(BackgroundConns, HoldsMoreConnectionsThanOneProcessMayOpenFiles) {
  const std::string sout = tmp("conns-server.jsonl"), cout = tmp("conns-client.jsonl");
  testbed::SpawnOptions o;
  o.stdout_path = sout;
  o.stderr_path = "=stdout";
  auto srv = testbed::Process::spawn({"prlimit", "--nofile=1000:1000", HARNESS_CONNS, "serve", "--address", "127.0.0.1",
                                      "--ports", "31000-31002", "--count", "2400"},
                                     o);
  ASSERT_TRUE(srv.ok()) << srv.message();
  auto ready = last_line(sout, "ready", std::chrono::seconds(10));
  ASSERT_EQ(ready.value("phase", ""), "ready") << ready.dump();
  EXPECT_EQ(ready.value("workers", 0), 3);  // 800 a port, under 1,000 descriptors each
  o.stdout_path = cout;
  auto cli = testbed::Process::spawn({"prlimit", "--nofile=1000:1000", HARNESS_CONNS, "connect", "--to", "127.0.0.1",
                                      "--ports", "31000-31002", "--count", "2400", "--concurrency", "64"},
                                     o);
  ASSERT_TRUE(cli.ok()) << cli.message();
  auto done = last_line(cout, "done", std::chrono::seconds(60));
  ASSERT_EQ(done.value("phase", ""), "done") << done.dump();
  EXPECT_EQ(done.value("established", 0), 2400);
  EXPECT_EQ(done.value("workers", 0), 3);
  EXPECT_GT(done.value("per_s", 0.0), 0.0);
  // Held: the server side counts every one accepted (it reports each second).
  long long accepted = 0;
  for (int i = 0; i < 50 && accepted != 2400; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(sout);
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (!j.is_discarded() && j.contains("accepted")) accepted = j["accepted"].get<long long>();
    }
  }
  EXPECT_EQ(accepted, 2400);
  auto cf = conns_family(cli->pid()), sf = conns_family(srv->pid());
  EXPECT_EQ(cf.size(), 1u + 3u);  // the parent and three workers
  EXPECT_EQ(sf.size(), 1u + 3u);
  // SIGTERM to a parent ends its workers; so does SIGKILL (they die with it).
  cli->signal(SIGKILL);
  srv->signal(SIGTERM);
  EXPECT_TRUE(cli->wait(std::chrono::seconds(10)).ok());
  EXPECT_TRUE(srv->wait(std::chrono::seconds(10)).ok());
  cf.insert(cf.end(), sf.begin(), sf.end());
  auto alive = [&] {
    size_t n = 0;
    for (pid_t p : cf) {
      std::ifstream in("/proc/" + std::to_string(p) + "/stat");
      std::string st;
      std::getline(in, st);
      n += !st.empty() && st.find(") Z") == std::string::npos;  // not reaped yet counts as gone
    }
    return n;
  };
  for (int i = 0; i < 50 && alive() > 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(alive(), 0u);
}

TEST(BackgroundConns, RefusesWhatCannotFitAndBadArguments) {
  // 3,000 connections on one server port cannot fit under 1,000 descriptors.
  auto r = testbed::run_capture({"prlimit", "--nofile=1000:1000", HARNESS_CONNS, "connect", "--to", "127.0.0.1",
                                 "--ports", "31010", "--count", "3000"},
                                nullptr, std::chrono::seconds(10));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->status, 1);
  EXPECT_NE(r->output.find("give more server ports"), std::string::npos) << r->output;
  for (std::vector<std::string> bad : {std::vector<std::string>{"connect", "--to", "x", "--ports", "1", "--count", "1"},
                                       {"connect", "--to", "127.0.0.1", "--ports", "9-1", "--count", "1"},
                                       {"serve", "--address", "127.0.0.1", "--ports", "1"},
                                       {"connect", "--to", "127.0.0.1", "--ports", "1", "--count", "0"},
                                       {"listen"}}) {
    bad.insert(bad.begin(), HARNESS_CONNS);
    auto b = testbed::run_capture(bad, nullptr, std::chrono::seconds(10));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->status, 2) << b->output;
  }
}

// DUT host facts and the hardware profiles' preconditions. The veth outputs
// were captured on this machine (the testbed's DUT ports); the ConnectX ones
// follow the formats of ethtool 6.1 and iproute2's devlink (`devlink dev
// eswitch show` in the kernel's devlink-eswitch-attr.rst, `dev info` in
// devlink-info.rst and mlx5.rst): there is no ConnectX here to capture from.
HostFacts facts_from(const std::string& ethtool_i, const std::string& ethtool_k, const std::string& eswitch,
                     const std::string& info, const std::string& kernel = "6.1.0-18-amd64") {
  HostRunner run = [&](const std::vector<std::string>& a) -> sdn::Result<std::string> {
    if (a[0] == "uname") return kernel + "\n";
    if (a[0] == "nproc") return std::string("8\n");
    if (a[0] == "cat") return std::string("performance\n");
    if (a[0] == "modprobe") return std::string();
    if (a[0] == "ethtool" && a[1] == "-i") return data(ethtool_i);
    if (a[0] == "ethtool" && a[1] == "-k") return data(ethtool_k);
    if (a[0] == "ip") return std::string("[{\"ifname\":\"p0\",\"mtu\":9000}]");
    if (a[0] == "devlink" && a[3] == "eswitch") {
      if (eswitch.empty()) return sdn::Status::error("Failed to connect to devlink Netlink");
      return data(eswitch);
    }
    if (a[0] == "devlink" && a[3] == "info") return data(info);
    return sdn::Status::error("unexpected command " + a[0]);
  };
  return gather_host_facts(run, {"p0"});
}

TEST(Preconditions, ParsesTheCommandsOutputs) {
  NicFacts n;
  parse_ethtool_i(data("ethtool-i-mlx5.txt"), &n);
  EXPECT_EQ(n.driver, "mlx5_core");
  EXPECT_EQ(n.firmware, "22.36.1010 (MT_0000000359)");
  EXPECT_EQ(n.bus, "0000:08:00.0");
  NicFacts v;
  parse_ethtool_i(data("ethtool-i-veth.txt"), &v);
  EXPECT_EQ(v.driver, "veth");
  EXPECT_EQ(v.bus, "");
  auto k = parse_ethtool_k(data("ethtool-k-veth.txt"));
  EXPECT_EQ(k["hw-tc-offload"], "off [fixed]");
  EXPECT_EQ(k["tx-checksum-ip-generic"], "on");  // indented sub-features too
  EXPECT_EQ(parse_ethtool_k(data("ethtool-k-mlx5-excerpt.txt"))["hw-tc-offload"], "on");
  EXPECT_EQ(parse_eswitch_json(data("devlink-eswitch-switchdev.json")), "switchdev");
  EXPECT_EQ(parse_eswitch_json(data("devlink-eswitch-legacy.json")), "legacy");
  EXPECT_EQ(parse_eswitch_json("garbage").rfind("n/a:", 0), 0u);
  EXPECT_EQ(parse_devlink_info_json(data("devlink-info-mlx5.json")), "mlx5_core MT_0000000359 fw 22.36.1010");
  EXPECT_EQ(kernel_version("6.1.0-18-amd64"), std::make_pair(6, 1));
  EXPECT_EQ(kernel_version("5.4.0-150-generic"), std::make_pair(5, 4));
  EXPECT_EQ(kernel_version("n/a: uname -r: failed"), std::make_pair(-1, -1));
}

TEST(Preconditions, AConnectXInSwitchdevModeMeetsBothProfiles) {
  HostFacts f = facts_from("ethtool-i-mlx5.txt", "ethtool-k-mlx5-excerpt.txt", "devlink-eswitch-switchdev.json",
                           "devlink-info-mlx5.json");
  std::map<std::string, std::string> ovs = {{"hw-offload", "true"}, {"tc-policy", "none"}};
  EXPECT_TRUE(missing_for("ovs-dpdk-offload", f, ovs).empty());
  EXPECT_TRUE(missing_for("ovs-kernel-tc", f, ovs).empty());
  std::string d = f.describe();
  EXPECT_NE(d.find("kernel: 6.1.0-18-amd64"), std::string::npos) << d;
  EXPECT_NE(d.find("model mlx5_core MT_0000000359 fw 22.36.1010"), std::string::npos) << d;
  EXPECT_NE(d.find("eswitch switchdev"), std::string::npos) << d;
  EXPECT_NE(d.find("mtu 9000"), std::string::npos) << d;
  EXPECT_NE(d.find("hw-tc-offload=on"), std::string::npos) << d;
  EXPECT_NE(d.find("cpu governor: performance"), std::string::npos) << d;
}

TEST(Preconditions, EachMissingPieceIsNamed) {
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    for (auto& x : v)
      if (x.find(s) != std::string::npos) return true;
    return false;
  };
  std::map<std::string, std::string> ovs = {{"hw-offload", "true"}, {"tc-policy", "none"}};
  // Legacy eswitch mode.
  HostFacts legacy = facts_from("ethtool-i-mlx5.txt", "ethtool-k-mlx5-excerpt.txt", "devlink-eswitch-legacy.json",
                                "devlink-info-mlx5.json");
  auto m = missing_for("ovs-kernel-tc", legacy, ovs);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(has(m, "eswitch mode legacy, not switchdev")) << m[0];
  // An old kernel.
  HostFacts old = facts_from("ethtool-i-mlx5.txt", "ethtool-k-mlx5-excerpt.txt", "devlink-eswitch-switchdev.json",
                             "devlink-info-mlx5.json", "5.4.0-150-generic");
  m = missing_for("ovs-kernel-tc", old, ovs);
  EXPECT_TRUE(has(m, "kernel 5.4.0-150-generic is older than 5.6")) << m.size();
  EXPECT_TRUE(missing_for("ovs-dpdk-offload", old, ovs).empty());  // OVS-DPDK offload does not need the kernel's TC
  // OVS not set for offload.
  m = missing_for("ovs-kernel-tc", legacy, {});
  EXPECT_TRUE(has(m, "hw-offload is not true"));
  EXPECT_TRUE(has(m, "tc-policy is not set"));
  // The testbed's veth: no ConnectX, no devlink device, no hw-tc-offload.
  HostFacts veth = facts_from("ethtool-i-veth.txt", "ethtool-k-veth.txt", "", "devlink-info-mlx5.json");
  m = missing_for("ovs-kernel-tc", veth, ovs);
  EXPECT_TRUE(has(m, "p0: driver veth, not mlx5_core"));
  EXPECT_TRUE(has(m, "p0: eswitch mode n/a: not a PCI device"));
  EXPECT_TRUE(has(m, "p0: hw-tc-offload is not on"));
  // A module missing.
  veth.modules["act_ct"] = false;
  EXPECT_TRUE(has(missing_for("ovs-kernel-tc", veth, ovs), "kernel module act_ct is not available"));
  // Profiles without hardware needs have none.
  EXPECT_TRUE(missing_for("kernel-ct", veth, {}).empty());
}

TEST(Lab, TheExampleInventoryLoads) {
  auto inv = load_inventory(std::string(TEST_DATA) + "/../../../configs/harness/lab.example.yaml");
  ASSERT_TRUE(inv.ok()) << inv.message();
  EXPECT_EQ(inv->client.ssh.destination, "client.lab.example");
  EXPECT_EQ(inv->client.ssh.jump, "bastion.lab.example");
  EXPECT_EQ(inv->client.cpus.at("iperf3"), "2-17");
  EXPECT_EQ(inv->server.address, "192.168.100.2");
  EXPECT_EQ(inv->dut.interfaces, (std::vector<std::string>{"p0", "p1"}));
  EXPECT_EQ(inv->dut.profiles.size(), 4u);
  EXPECT_EQ(inv->dut.hw_check, "0000:03:00.0");
  EXPECT_EQ(inv->link_gbps, 100);
  EXPECT_EQ(inv->ssh_hosts().size(), 3u);
  EXPECT_EQ(inv->ssh_hosts()[2].name, "dut");
  // Written and read back: the same.
  std::string p = tmp("lab-roundtrip.yaml");
  ASSERT_TRUE(write_inventory(*inv, p).ok());
  auto back = load_inventory(p);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->server.ssh.key, inv->server.ssh.key);
  EXPECT_EQ(back->client.cpus, inv->client.cpus);
  EXPECT_EQ(back->dut.dataplane_config, inv->dut.dataplane_config);
}

TEST(Lab, BadInventoriesNameFileLineAndKey) {
  const std::string good_client =
      "hosts:\n"
      "  client:\n"
      "    ssh: {destination: c.lab}\n"
      "    interface: e0\n"
      "    address: 10.1.0.1\n";
  const std::string rest =
      "  server:\n"
      "    ssh: {destination: s.lab}\n"
      "    interface: e0\n"
      "    address: 10.1.0.2\n"
      "  dut:\n"
      "    ssh: {destination: d.lab}\n"
      "    interfaces: [p0, p1]\n"
      "    profiles: [kernel-ct]\n";
  auto load = [&](const std::string& text) {
    std::string p = tmp("lab-bad.yaml");
    std::ofstream(p) << text;
    auto r = load_inventory(p);
    return r.ok() ? std::string("ok") : r.message();
  };
  EXPECT_EQ(load(good_client + rest), "ok");
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {good_client, ":2: key 'hosts.server': missing"},
      {"hosts:\n  client:\n    ssh: {destination: c.lab}\n    interface: e0\n    address: 10.1.0.300\n" + rest,
       ":5: key 'hosts.client.address': not an IPv4 address"},
      {good_client + "    colour: blue\n" + rest, ":6: key 'hosts.client.colour': unknown key"},
      {good_client + "    cpus: {iperf3: \"2-9; rm -rf /\"}\n" + rest, "key 'hosts.client.cpus.iperf3': '2-9; rm -rf /' is not a CPU list"},
      {"hosts:\n  client:\n    ssh: {destination: -oProxyCommand=x}\n    interface: e0\n    address: 10.1.0.1\n" + rest,
       "key 'hosts.client.ssh.destination': not a host name or address"},
      {good_client + rest + "    dataplane: {program: /x}\n", "key 'hosts.dut.dataplane.config': missing"},
      {good_client + rest.substr(0, rest.find("    profiles")) + "    profiles: [kernel-ct, openflow-magic]\n",
       "key 'hosts.dut.profiles': unknown DUT profile 'openflow-magic'"},
      {good_client + rest.substr(0, rest.find("    profiles")) + "    profiles: [dataplane]\n",
       "key 'hosts.dut.dataplane': missing (the dataplane profile needs its config)"},
      {good_client + rest.substr(0, rest.find("    interfaces")) + "    interfaces: [p0]\n    profiles: [kernel-ct]\n",
       "key 'hosts.dut.interfaces': expected two interfaces"},
      {"mtu: 100000\n" + good_client + rest, ":1: key 'mtu': '100000' is out of range 576..9000"},
      {good_client + rest + "ssh_options: -v\n", "key 'ssh_options': unknown key"},
      // Issue 19, item 10: interface names are names, never syntax.
      {good_client + rest.substr(0, rest.find("    interfaces")) + "    interfaces: [{a: 1}, p1]\n    profiles: [kernel-ct]\n",
       "key 'hosts.dut.interfaces[0]': expected an interface name"},
      {good_client + rest.substr(0, rest.find("    interfaces")) +
           "    interfaces: [\"p0;nft delete table inet x\", p1]\n    profiles: [kernel-ct]\n",
       "key 'hosts.dut.interfaces[0]': 'p0;nft delete table inet x' is not an interface name"},
      {good_client + rest.substr(0, rest.find("    interfaces")) + "    interfaces: [p0, averyveryverylongname]\n    profiles: [kernel-ct]\n",
       "key 'hosts.dut.interfaces[1]': 'averyveryverylongname' is not an interface name"},
      {"hosts:\n  client:\n    ssh: {destination: c.lab}\n    interface: \"e0 up\"\n    address: 10.1.0.1\n" + rest,
       ":4: key 'hosts.client.interface': 'e0 up' is not an interface name"},
      // Issue 19, item 1: an alias cycle is refused, not followed.
      {good_client + rest + "x: &a [*a]\n", "YAML an alias inside the node it refers to (a cycle)"},
  };
  for (const auto& c : cases) {
    std::string got = load(c.text);
    EXPECT_NE(got.find(c.want), std::string::npos) << "want '" << c.want << "', got '" << got << "'";
    EXPECT_EQ(got.rfind(tmp("lab-bad.yaml"), 0), 0u) << got;  // the file's name first
  }
  EXPECT_NE(load_inventory("/tmp").message().find("is a directory"), std::string::npos);
  EXPECT_NE(load_inventory("/nonexistent/lab.yaml").message().find("cannot open"), std::string::npos);
}

// Issue 19, item 9: the dataplane's drops include its port counters
// (af_packet ring drops, receive misses), as `dataplane-ctl --json stats`
// gives them, here and on a lab host.
TEST(Lab, DataplaneDropsIncludeThePortCounters) {
  const std::map<std::string, long long> reasons = {{"no_match", 1}, {"rule_drop", 4}, {"tx_full", 7},
                                                    {"parse_truncated", 2}};
  const std::map<std::string, long long> ports = {{"inside_rx_packets", 5},     {"inside_rx_missed", 2},
                                                  {"inside_rx_ring_drops", 74903}, {"outside_tx_errors", 1},
                                                  {"outside_rx_ring_drops", 0}, {"kernel_ip_reasm_fails", 3},
                                                  {"inside_link_up", 1}};
  auto m = util::dataplane_drops(reasons, ports);
  EXPECT_EQ(m["inside_rx_ring_drops"], 74903);
  EXPECT_EQ(m["inside_rx_missed"], 2);
  EXPECT_EQ(m["outside_tx_errors"], 1);
  EXPECT_EQ(m["kernel_ip_reasm_fails"], 3);
  EXPECT_EQ(m["tx_full"], 7);
  EXPECT_EQ(m["policy:rule_drop"], 4);
  EXPECT_EQ(m["policy:no_match"], 1);
  EXPECT_EQ(m.count("inside_rx_packets"), 0u);
  EXPECT_EQ(m.count("inside_link_up"), 0u);
}

// testpmd and OVS on net_af_packet cannot show their ring drops (DPDK
// 22.11's PMD leaves imissed 0): the harness reads them off the process's
// own sockets. A child holds a packet socket on lo with the smallest receive
// buffer and never reads; loopback datagrams overflow it; the counts come
// back by lo's index, then 0 (the kernel resets them on read).
TEST(RingDrops, ReadOffAnotherProcesssPacketSockets) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &one, sizeof one);
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_protocol = htons(ETH_P_ALL);
    ll.sll_ifindex = static_cast<int>(if_nametoindex("lo"));
    char c = s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&ll), sizeof ll) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y') << "no packet socket on lo in the child";
  ASSERT_TRUE(util::af_packet_ring_drops(child).ok());  // from zero
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char payload[1000] = {};
  for (int i = 0; i < 2000; i++) sendto(u, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  close(u);
  auto first = util::af_packet_ring_drops(child);
  auto second = util::af_packet_ring_drops(child);
  auto gone = util::af_packet_ring_drops(999999999);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(first.ok()) << first.message();
  const int lo = static_cast<int>(if_nametoindex("lo"));
  ASSERT_EQ(first->count(lo), 1u);
  EXPECT_GT(first->at(lo), 1000);  // of the 2,000 datagrams (and their ICMP errors)
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->at(lo), 0);
  EXPECT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("pidfd_open"), std::string::npos) << gone.message();
}

// Issue 33: the RFC 2544 mode reads the DUT's forwarding thread's CPU (the
// threads pinned to its lcore's CPU: run and wait) around every trial. A
// thread of this process pinned to CPU 0 that spins is found and has run;
// the threads allowed on every CPU are not counted; a process that is gone
// says so.
TEST(PinnedThreads, TheForwardingThreadsCpuIsItsOwn) {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 2 || !CPU_ISSET(0, &mine))
    GTEST_SKIP() << "this process may not run on CPU 0 and another: every thread would be pinned alike";
  std::atomic<bool> pinned{false}, stop{false};
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (!pinned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto a = util::pinned_threads_cpu(getpid(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto b = util::pinned_threads_cpu(getpid(), 0);
  stop = true;
  t.join();
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(a->threads, 1);  // the test's main thread may run anywhere: not counted
  EXPECT_GT(b->run_ns + b->wait_ns, a->run_ns + a->wait_ns + 50'000'000);  // 100 ms spinning or waiting to
  EXPECT_GT(b->run_ns, a->run_ns);
  auto none = util::pinned_threads_cpu(getpid(), 0);
  EXPECT_FALSE(none.ok());  // the pinned thread has ended
  auto gone = util::pinned_threads_cpu(999999999, 0);
  EXPECT_FALSE(gone.ok());
}

TEST(Ssh, QuotingRoundTripsThroughARealShell) {
  std::vector<std::string> args = {"plain", "", "two words", "it's", "\"dq\"", "$HOME", "`id`", "$(id)", "a\\b",
                                   "semi;colon", "pipe|x", "glob*?[a]", "new\nline", "tab\tx", "-n", "~root", "!bang",
                                   "\xc3\xbcnicode", "'", "''", "a'b'c", "x=1", "%s", "&&", "#hash", " lead", "trail "};
  std::string cmd = "printf '%s\\0' " + shell_join(args);
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(f), 0) << cmd;
  std::vector<std::string> back;
  for (size_t p = 0, q; (q = out.find('\0', p)) != std::string::npos; p = q + 1) back.push_back(out.substr(p, q - p));
  EXPECT_EQ(back, args) << cmd;
  EXPECT_EQ(shell_quote("iperf3"), "iperf3");
  EXPECT_EQ(shell_quote("10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(Ssh, ArgvHasBatchModeMultiplexingAndTimeouts) {
  SshHost h;
  h.name = "client";
  h.destination = "client.lab";
  h.user = "bench";
  h.port = 2222;
  h.key = "/keys/lab";
  h.jump = "bastion.lab";
  h.connect_timeout_s = 7;
  auto a = ssh_argv(h, "/tmp/ctl", "iperf3 -s");
  std::string all;
  for (auto& x : a) all += x + "\n";
  for (const char* want : {"BatchMode=yes\n", "ControlPath=/tmp/ctl/client.sock\n", "ConnectTimeout=7\n", "ServerAliveInterval=5\n",
                           "-p\n2222\n", "-l\nbench\n", "-i\n/keys/lab\n", "-J\nbastion.lab\n"})
    EXPECT_NE(all.find(want), std::string::npos) << want << " not in\n" << all;
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[a.size() - 2], "client.lab");
  EXPECT_EQ(a.back(), "iperf3 -s");
}

// Issue 28, item 18: a remote job's program is stopped on its host (and has
// gone) before the ssh carrying its output is stopped, so that what it says
// on its way out (the daemon's "stopping", "stopped") reaches the log.
TEST(Ssh, AJobStopsItsRemoteProgramBeforeTheSessionCarryingItsOutput) {
  auto carrier = testbed::Process::spawn({"sleep", "30"});
  ASSERT_TRUE(carrier.ok()) << carrier.message();
  const pid_t pid = carrier->pid();
  bool carrier_running = false;
  {
    Job j(std::move(carrier.value()), [&] { carrier_running = kill(pid, 0) == 0; }, "host dut (root@dut.lab)");
  }
  EXPECT_TRUE(carrier_running) << "the ssh carrying the program's output was stopped before the program";
  EXPECT_NE(kill(pid, 0), 0) << "the carrier outlived its job";
}

TEST(Report, WritesMarkdownAndSvg) {
  std::string d = tmp("run");
  mkdir(d.c_str(), 0755);
  std::string p = d + "/results.csv";
  unlink(p.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(p).ok());
    for (int size : {64, 1460, 8192}) {
      w.write(summary("testpmd-io", "throughput", size, size / 1000.0 + 1, -1));
      w.write(summary("dataplane", "throughput", size, size / 1000.0 + 0.95, -1));
      w.write(summary("kernel-ct", "throughput", size, size / 2000.0, -1));
    }
    w.write(summary("ovs-dpdk", "throughput", 64, -1, -1, "error"));
    w.write(summary("dataplane", "latency", 64, -1, 18));
    w.write(summary("testpmd-io", "latency", 64, -1, 17));
  }
  ASSERT_TRUE(write_report(d).ok());
  std::ifstream in(d + "/report.md");
  std::stringstream md;
  md << in.rdbuf();
  EXPECT_NE(md.str().find("| 1460 |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("error: boom"), std::string::npos);
  EXPECT_NE(md.str().find("90% of the testpmd-io ceiling"), std::string::npos);
  EXPECT_NE(md.str().find("| kernel-ct |"), std::string::npos);
  std::ifstream hin(d + "/report.html");
  std::stringstream html;
  html << hin.rdbuf();
  EXPECT_NE(html.str().find("<svg"), std::string::npos);
  EXPECT_NE(html.str().find("<polyline"), std::string::npos);
  // Tables are HTML tables, not Markdown in a <pre>.
  EXPECT_NE(html.str().find("<table><thead><tr><th>size (B)</th><th>testpmd-io</th>"), std::string::npos) << html.str();
  EXPECT_EQ(html.str().find("| 1460 |"), std::string::npos) << "Markdown table text in the page";
  EXPECT_NE(html.str().find("class='err'"), std::string::npos) << "no min..max bars";
  EXPECT_NE(html.str().find("class='ceiling'"), std::string::npos) << "no ceiling line";
}

// Issue 23: the report opens with the findings (per instance count: share
// of the ceiling, the dataplane against each DUT with the spread over
// sizes, latency), and the host facts come last, each distinct set once.
TEST(Report, OpensWithFindingsAndPrintsEachHostOnce) {
  std::string d = tmp("run-findings");
  mkdir(d.c_str(), 0755);
  unlink((d + "/results.csv").c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(d + "/results.csv").ok());
    for (int size : {64, 1460}) {
      w.write(summary("testpmd-io", "throughput", size, 10, -1));
      w.write(summary("dataplane", "throughput", size, size == 64 ? 9 : 10, -1));
      w.write(summary("ovs-dpdk", "throughput", size, size == 64 ? 6 : 5, -1));
    }
    w.write(summary("dataplane", "latency", 64, -1, 18));
    w.write(summary("ovs-dpdk", "latency", 64, -1, 20));
  }
  const std::string facts = "kernel: 6.1\ncores: 2\nd0: driver veth\n";
  std::ofstream(d + "/machine.txt") << "harness host (this machine):\ncores: 2\n"
                                    << "dut host of dataplane (round 1):\n" << facts
                                    << "dut host of ovs-dpdk (round 1):\n" << facts
                                    << "dut host of kernel-ct (round 1):\nkernel: 6.2\ncores: 2\nd0: driver veth\n";
  ASSERT_TRUE(write_report(d).ok());
  std::ifstream in(d + "/report.md");
  std::stringstream md;
  md << in.rdbuf();
  const std::string m = md.str();
  EXPECT_EQ(m.find("## "), m.find("## Findings")) << m.substr(0, 400);
  EXPECT_NE(m.find("| tcp x4 | dataplane | 95 % [90..100] | - | - |"), std::string::npos) << m;
  EXPECT_NE(m.find("| tcp x4 | ovs-dpdk | 55 % [50..60] | 1.75 [1.50..2.00] |"), std::string::npos) << m;
  EXPECT_NE(m.find("| ovs-dpdk | 20.0 | -2.0 |"), std::string::npos) << m;
  EXPECT_GT(m.find("## Run"), m.find("## Errors")) << "host facts after the evidence";
  EXPECT_NE(m.find("dut host of dataplane (round 1); dut host of ovs-dpdk (round 1) (the same facts):\nkernel: 6.1"),
            std::string::npos) << m;
  EXPECT_NE(m.find("dut host of kernel-ct (round 1):\nkernel: 6.2"), std::string::npos) << "a different host stays";
  size_t n = 0;
  for (size_t at = m.find("kernel: 6.1"); at != std::string::npos; at = m.find("kernel: 6.1", at + 1)) n++;
  EXPECT_EQ(n, 1u) << m;
}

// A lab run's machine.txt gives the line rate: the charts draw it, the
// throughput cells give their share of it, and "smallest size reaching 90%"
// is against it, not against testpmd-io.
TEST(Report, UsesTheInventorysLineRate) {
  std::string d = tmp("run-line-rate");
  mkdir(d.c_str(), 0755);
  std::string p = d + "/results.csv";
  unlink(p.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(p).ok());
    for (int size : {64, 1024, 8192}) {
      w.write(summary("testpmd-io", "throughput", size, size / 100.0, -1));  // 0.64, 10.24, 81.92
      w.write(summary("dataplane", "throughput", size, size / 110.0, -1));   // 0.58, 9.31, 74.5
    }
  }
  std::ofstream(d + "/machine.txt") << "cpu: x\nline_rate_gbps: 80\n";
  ASSERT_TRUE(write_report(d).ok());
  std::ifstream in(d + "/report.md");
  std::stringstream md;
  md << in.rdbuf();
  EXPECT_NE(md.str().find("90% of the line rate (80.00 Gbit/s)"), std::string::npos) << md.str();
  // 81.92 of 80 and 74.5 of 80 are over 90 %, 10.24 is not: both reach it at 8192.
  EXPECT_NE(md.str().find("| tcp x4 | 8192 B | 8192 B |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("10.24 [9.73..10.75] 13 %"), std::string::npos) << md.str();
  std::ifstream hin(d + "/report.html");
  std::stringstream html;
  html << hin.rdbuf();
  EXPECT_NE(html.str().find("line rate"), std::string::npos);
  // Without it, testpmd-io's cell is the yardstick: 8192 B for testpmd-io
  // itself is reached at 64 B already.
  std::ofstream(d + "/machine.txt") << "cpu: x\n";
  ASSERT_TRUE(write_report(d).ok());
  std::ifstream in2(d + "/report.md");
  std::stringstream md2;
  md2 << in2.rdbuf();
  EXPECT_NE(md2.str().find("90% of the testpmd-io ceiling"), std::string::npos);
  EXPECT_NE(md2.str().find("| tcp x4 | 64 B | 64 B |"), std::string::npos) << md2.str();
}

// Instance counts read as numbers (4, 16, 32), names are escaped in the
// page, and a cell without a figure says why.
// The page as a browser shows it: Debian's chromium, headless, renders the
// report; its DOM has the tables and charts, the console has no errors, and
// the screenshot is written (REPORT_SCREENSHOT=path keeps it to look at).
TEST(Report, RendersInHeadlessChromium) {
  if (access("/usr/bin/chromium", X_OK) != 0) GTEST_SKIP() << "chromium is not installed (scripts/deps installs it)";
  std::string d = tmp("render");
  mkdir(d.c_str(), 0755);
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(d + "/results.csv").ok());
    for (int inst : {4, 16, 32})
      for (int size : {64, 512, 1460}) {
        for (const char* dut : {"testpmd-io", "dataplane", "ovs-dpdk"}) {
          Row r = summary(dut, "throughput", size, size / 1000.0 + inst / 40.0, -1);
          r[Col::instances] = std::to_string(inst);
          w.write(r);
        }
      }
    w.write(summary("dataplane", "latency", 64, -1, 18));
    w.write(summary("testpmd-io", "latency", 64, -1, 17));
  }
  ASSERT_TRUE(write_report(d).ok());
  std::string profile = d + "/chromium-profile";
  std::string shot = getenv("REPORT_SCREENSHOT") ? getenv("REPORT_SCREENSHOT") : d + "/shot.png";
  auto chromium = [&](const std::string& what) {
    std::string cmd = "HOME=" + d + " /usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                      "--window-size=1280,2600 --enable-logging=stderr --v=0 --user-data-dir=" + profile + " " + what +
                      " file://" + d + "/report.html 2>" + d + "/chromium.err";
    FILE* f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    if (f) pclose(f);
    return out;
  };
  std::string dom = chromium("--dump-dom");
  size_t tables = 0, svgs = 0;
  for (size_t p = dom.find("<table"); p != std::string::npos; p = dom.find("<table", p + 1)) tables++;
  for (size_t p = dom.find("<svg"); p != std::string::npos; p = dom.find("<svg", p + 1)) svgs++;
  EXPECT_GE(tables, 5u) << dom.substr(0, 2000);
  EXPECT_EQ(svgs, 4u) << "three throughput charts (x4, x16, x32) and the latency chart";
  chromium("--screenshot=" + shot);
  struct stat st{};
  EXPECT_EQ(stat(shot.c_str(), &st), 0) << "no screenshot";
  EXPECT_GT(st.st_size, 20000) << "a near-empty page";
  std::ifstream ein(d + "/chromium.err");
  std::stringstream err;
  err << ein.rdbuf();
  EXPECT_EQ(err.str().find("CONSOLE"), std::string::npos) << err.str();
  EXPECT_EQ(err.str().find("Uncaught"), std::string::npos) << err.str();
  std::filesystem::remove_all(d);
}

TEST(Report, OrdersInstancesNumericallyAndEscapesNames) {
  std::string d = tmp("run2");
  mkdir(d.c_str(), 0755);
  std::string p = d + "/results.csv";
  unlink(p.c_str());
  {
    CsvWriter w;
    ASSERT_TRUE(w.open(p).ok());
    for (int inst : {16, 32, 4}) {
      Row r = summary("testpmd-io", "throughput", 1024, 1.0, -1);
      r[Col::instances] = std::to_string(inst);
      w.write(r);
      r[Col::dut] = "<script>alert(1)</script>";
      w.write(r);
    }
    Row e = summary("dataplane", "throughput", 1024, -1, -1, "error");
    e[Col::instances] = "4";
    w.write(e);
  }
  ASSERT_TRUE(write_report(d).ok());
  std::ifstream hin(d + "/report.html");
  std::stringstream ss;
  ss << hin.rdbuf();
  std::string html = ss.str();
  EXPECT_EQ(html.find("<script>"), std::string::npos) << "an unescaped name";
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  size_t x4 = html.find("tcp x4 instances"), x16 = html.find("tcp x16 instances"), x32 = html.find("tcp x32 instances");
  ASSERT_NE(x4, std::string::npos);
  ASSERT_NE(x16, std::string::npos);
  ASSERT_NE(x32, std::string::npos);
  EXPECT_LT(x4, x16);
  EXPECT_LT(x16, x32);
  EXPECT_NE(html.find("<td class='error'>error: boom</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>not run</td>"), std::string::npos) << "a DUT without the cell must say so";
}

}  // namespace

// Issue 30, step 5: the DUT profiles, scenarios and segmentation modes are
// written once (profiles.h). The names the command line and the YAML take
// are the ones they took before, each parses back to itself, and make_dut()
// refuses exactly what each profile cannot do, with the messages the rows
// carried before (the matrix here is written out by hand, not read from the
// registry).
TEST(Profiles, NamesRoundTripAndMakeDutRefusesWhatAProfileLacks) {
  EXPECT_EQ(dut_names(), (std::vector<std::string>{"dataplane", "ovs-dpdk", "kernel-ct", "testpmd-io",
                                                    "ovs-dpdk-offload", "ovs-kernel-tc"}));
  EXPECT_EQ(scenario_names(), (std::vector<std::string>{"firewall", "overlay-nat"}));
  EXPECT_EQ(tunnel_names(), (std::vector<std::string>{"vxlan", "geneve"}));
  for (const std::string& s : tunnel_names()) EXPECT_EQ(name(*parse_tunnel(s)), s);
  EXPECT_FALSE(parse_tunnel("VXLAN"));
  EXPECT_EQ(segmentation_names(), (std::vector<std::string>{"wire", "host"}));
  for (const std::string& s : scenario_names()) EXPECT_EQ(name(*parse_scenario(s)), s);
  for (const std::string& s : segmentation_names()) EXPECT_EQ(name(*parse_segmentation(s)), s);
  EXPECT_FALSE(parse_scenario("Firewall"));
  EXPECT_FALSE(parse_segmentation(""));
  EXPECT_EQ(role_dut(DutRole::kSubject), "dataplane");
  EXPECT_EQ(role_dut(DutRole::kCeiling), "testpmd-io");
  ASSERT_NE(find_dut("testpmd-rxonly"), nullptr);  // the generator's sink: made, not offered
  EXPECT_EQ(find_dut("openflow-magic"), nullptr);

  const std::set<std::string> overlay{"dataplane", "ovs-dpdk", "kernel-ct"};
  const std::set<std::string> host_mode{"kernel-ct", "ovs-kernel-tc"};
  const std::set<std::string> kernel_ports{"kernel-ct", "ovs-kernel-tc"};  // interfaces only: no DPDK port
  const std::string dir = ::testing::TempDir() + "/profiles";
  std::filesystem::create_directories(dir);
  auto host = local_host(nullptr, dir);
  for (const std::string& d : dut_names())
    for (ScenarioKind sc : {ScenarioKind::kFirewall, ScenarioKind::kOverlayNat})
      for (Tunnel tn : {Tunnel::kVxlan, Tunnel::kGeneve})
      for (Segmentation sg : {Segmentation::kWire, Segmentation::kHost})
        for (Attach at : {Attach::kAfPacket, Attach::kMemif, Attach::kPci}) {
          DutSite site;
          site.host = host.get();
          site.dir = dir;
          site.scenario = &scenario_of(sc, tn);
          site.segmentation = sg;
          site.ports = {DutPort{at, "p0"}, DutPort{at, "p1"}};
          const bool want = (sc == ScenarioKind::kFirewall || overlay.count(d)) &&
                            (sg == Segmentation::kWire || host_mode.count(d)) &&
                            (at == Attach::kAfPacket || !kernel_ports.count(d));
          auto r = make_dut(d, site);
          EXPECT_EQ(static_cast<bool>(r), want) << d << " " << name(sc) << " " << name(tn) << " " << name(sg) << " "
                                                << name(at) << ": "
                                                << (r ? "made" : r.message());
          if (r) {
            EXPECT_EQ((*r)->name(), d);
            continue;
          }
          if (sc == ScenarioKind::kOverlayNat && !overlay.count(d)) {
            EXPECT_EQ(r.message(), "the overlay-nat scenario is not built for " + d +
                                       " (dataplane, ovs-dpdk and kernel-ct have it)");
          } else if (sg == Segmentation::kHost && !host_mode.count(d)) {
            EXPECT_NE(r.message().find("(the kernel DUTs kernel-ct and ovs-kernel-tc run in host mode;"),
                      std::string::npos) << r.message();
          }
        }
  auto bad = make_dut("openflow-magic", DutSite{});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message(), "unknown DUT 'openflow-magic' (known: dataplane, ovs-dpdk, kernel-ct, testpmd-io, "
                           "ovs-dpdk-offload, ovs-kernel-tc)");
}

// Issue 30, step 5: each scenario's behaviour is its Scenario (scenario.h):
// the dataplane config it runs, the VTEP device it asks the kernel for,
// harness-gen's flags, what it refuses, and the evidence text of its rows
// (the VXLAN texts as they were before the refactor, Geneve's naming it).
TEST(Scenarios, EachSaysWhatItRunsRefusesAndChecks) {
  const Scenario& fw = scenario_of(ScenarioKind::kFirewall, Tunnel::kGeneve);  // no tunnel: it is ignored
  const Scenario& vx = scenario_of(ScenarioKind::kOverlayNat);
  const Scenario& gn = scenario_of(ScenarioKind::kOverlayNat, Tunnel::kGeneve);
  EXPECT_EQ(fw.overlay(), nullptr);
  ASSERT_NE(vx.overlay(), nullptr);
  ASSERT_NE(gn.overlay(), nullptr);
  EXPECT_EQ(fw.name(), "firewall");
  EXPECT_EQ(gn.name(), "overlay-nat");
  const std::string dflt = "/src/configs/dataplane/firewall.yaml";
  EXPECT_EQ(fw.dataplane_config_for(dflt, "/src"), dflt);
  EXPECT_EQ(vx.dataplane_config_for(dflt, "/src"), "/src/configs/dataplane/overlay-nat.yaml");
  EXPECT_EQ(gn.dataplane_config_for(dflt, "/src"), "/src/configs/dataplane/overlay-nat-geneve.yaml");
  EXPECT_EQ(gn.dataplane_config_for("/x/mine.yaml", "/src"), "/x/mine.yaml");
  EXPECT_TRUE(fw.gen_args().empty());
  EXPECT_EQ(vx.gen_args(), (std::vector<std::string>{"--overlay", "--tunnel", "vxlan"}));
  EXPECT_EQ(gn.gen_args(), (std::vector<std::string>{"--overlay", "--tunnel", "geneve"}));
  EXPECT_EQ(vtep_link_argv(*vx.overlay(), "M", "L", "R", "s0"),
            (std::vector<std::string>{"ip", "link", "add", "vx100", "address", "M", "type", "vxlan", "id", "100",
                                      "local", "L", "remote", "R", "dstport", "4789", "dev", "s0"}));
  EXPECT_EQ(vtep_link_argv(*gn.overlay(), "M", "L", "R", "s0"),
            (std::vector<std::string>{"ip", "link", "add", "gnv100", "address", "M", "type", "geneve", "id", "100",
                                      "remote", "R", "dstport", "6081"}));
  EXPECT_EQ(fw.refuse_rfc2544(Proto::kUdp), "");
  EXPECT_EQ(gn.refuse_rfc2544(Proto::kTcp), "");
  EXPECT_EQ(gn.refuse_rfc2544(Proto::kUdp), "the generator learns each translation from a TCP SYN; not with --proto udp");
  EXPECT_EQ(fw.refuse_lab(), "");
  EXPECT_NE(vx.refuse_lab().find("built on the namespace testbed only"), std::string::npos);
  EXPECT_FALSE(fw.server_json());
  EXPECT_TRUE(gn.server_json());
  EXPECT_EQ(fw.dir_suffix(), "");
  EXPECT_EQ(vx.dir_suffix(), "-overlay-nat");
  EXPECT_EQ(gn.dir_suffix(), "-overlay-nat-geneve");
  EXPECT_EQ(fw.base_check(), "n/a: no overlay in the firewall scenario");
  EXPECT_EQ(vx.base_check(), "n/a: checked in this DUT's throughput rows");
  EXPECT_EQ(vx.no_check(), "n/a: not measured");
  const auto g = nlohmann::json::parse(R"({"overlay": {"learnt": 500, "not_geneve": 0, "untranslated": 0}})");
  Row r;
  fw.check_gen(g, 500, r);
  EXPECT_EQ(r[Col::overlay_check], "n/a: no overlay in the firewall scenario");
  vx.check_gen(g, 500, r);
  EXPECT_EQ(r[Col::overlay_check], "ok: 500 translations to 203.0.113.7 learnt in VXLAN VNI 100 for 500 connections; "
                                   "refused: not_geneve 0, untranslated 0");
  gn.check_gen(g, 501, r);
  EXPECT_EQ(r[Col::overlay_check], "error: 500 translations to 203.0.113.7 learnt in Geneve VNI 100 for 501 "
                                   "connections; refused: not_geneve 0, untranslated 0");
  Row ok, bad, base;
  ok[Col::overlay_check] = "ok: server VTEP rx +1 tx +1 packets";
  bad[Col::overlay_check] = "error: the server's VTEP saw rx +0 tx +0";
  gn.summarize({ok, bad}, base);
  EXPECT_EQ(base[Col::overlay_check], "ok in 1 of 2 repetitions; error: the server's VTEP saw rx +0 tx +0");
  fw.summarize({ok}, base);  // the firewall leaves it as it is
  EXPECT_EQ(base[Col::overlay_check], "ok in 1 of 2 repetitions; error: the server's VTEP saw rx +0 tx +0");
}
