#include "harness/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace harness {

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> c = {
      "timestamp", "git_rev", "dut", "dut_version", "kind", "proto", "instances", "size_bytes", "repeat",
      "throughput_gbps", "throughput_gbps_min", "throughput_gbps_max", "throughput_min_instance_gbps",
      "throughput_max_instance_gbps", "retransmits", "cpu_host_pct", "rtt_us", "lost_percent", "latency_p50_us",
      "latency_p50_us_min", "latency_p50_us_max", "latency_p90_us", "latency_p99_us", "latency_p99_us_min",
      "latency_p99_us_max", "latency_p999_us", "latency_max_us", "latency_dropped", "ct_entries", "offloaded_entries", "dut_drops",
      "dut_drops_detail",
      "background_conns", "background_setup_per_s", "status", "error"};
  return c;
}

const std::vector<std::string>& rfc2544_columns() {
  static const std::vector<std::string> c = {
      "timestamp", "git_rev", "dut", "dut_version", "frame_bytes", "conns", "proto", "repeat", "zero_loss_mpps",
      "zero_loss_gbps", "max_fwd_mpps", "offered_at_max_mpps", "loss_at_max", "lost_at_max_to_server",
      "lost_at_max_to_client", "dut_drops_at_max", "gen_drops_at_max", "limited_by", "retried",
      "zero_loss_trial_lost", "zero_loss_trial_dut_drops", "zero_loss_trial_gen_drops", "lat10_offered_mpps",
      "lat10_lost", "lat10_p50_us", "lat10_p99_us", "lat10_p999_us", "lat50_offered_mpps", "lat50_lost",
      "lat50_p50_us", "lat50_p99_us", "lat50_p999_us", "lat90_offered_mpps", "lat90_lost", "lat90_p50_us",
      "lat90_p99_us", "lat90_p999_us", "cps_established", "cps_closed", "cps_failed", "setup_per_s",
      "generator_ceiling_mpps", "ct_entries", "status", "error"};
  return c;
}

const std::vector<std::string>& rfc2544_trial_columns() {
  static const std::vector<std::string> c = {
      "dut", "frame_bytes", "conns", "proto", "repeat", "trial", "kind", "target_mpps", "offered_mpps", "fwd_mpps",
      "sent", "received", "lost", "late", "tx_full", "dut_drops", "gen_drops", "generator_dropped", "drain_ms"};
  return c;
}

std::string cell_key(const Row& r) {
  auto g = [&](const char* k) {
    auto it = r.find(k);
    return it == r.end() ? std::string() : it->second;
  };
  return g("dut") + "|" + g("kind") + "|" + g("proto") + "|" + g("instances") + "|" + g("size_bytes");
}

std::string csv_escape(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string o = "\"";
  for (char c : v) {
    if (c == '"') o += '"';
    o += c == '\n' || c == '\r' ? ' ' : c;
  }
  return o + "\"";
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); i++) {
    char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        i++;
      } else if (c == '"') {
        q = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

CsvWriter::~CsvWriter() {
  if (f_) fclose(f_);
}

sdn::Status CsvWriter::open(const std::string& path, const std::vector<std::string>& columns) {
  path_ = path;
  cols_ = &columns;
  std::string want;
  for (const auto& c : *cols_) want += (want.empty() ? "" : ",") + c;
  // An existing file: the same columns, and whole lines only. A run killed
  // mid-row leaves a cut last line (read_csv skips it): it goes, so that the
  // next row starts on its own line.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0) {
    std::ifstream in(path, std::ios::binary);
    std::string header;
    std::getline(in, header);
    if (header != want)
      return sdn::Status::error(path + ": its columns are not this version's (" + std::to_string(csv_split(header).size()) +
                                " columns, this version writes " + std::to_string(cols_->size()) +
                                "); write into a new directory, or resume with the version that began it");
    in.clear();
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uintmax_t>(in.tellg());
    std::string all(size, '\0');
    in.seekg(0);
    in.read(all.data(), static_cast<std::streamsize>(size));
    if (!all.empty() && all.back() != '\n') {
      const size_t keep = all.rfind('\n') + 1;
      std::filesystem::resize_file(path, keep, ec);
      if (ec) return sdn::Status::error(path + ": dropping a cut last row: " + ec.message());
      fprintf(stderr, "harness: %s: dropped a cut last row (%zu bytes) of a run that was killed\n", path.c_str(),
              all.size() - keep);
    }
  }
  f_ = fopen(path.c_str(), "a");
  if (!f_) return sdn::Status::error(path + ": " + strerror(errno));
  if (ftell(f_) == 0) {
    fprintf(f_, "%s\n", want.c_str());
    fflush(f_);
  }
  return {};
}

sdn::Status CsvWriter::write(const Row& r) {
  for (const auto& [k, v] : r)
    if (std::find(cols_->begin(), cols_->end(), k) == cols_->end())
      return sdn::Status::error("row has a column the schema lacks: " + k);
  std::string line;
  bool first = true;
  for (const auto& c : *cols_) {
    auto it = r.find(c);
    line += (first ? "" : ",") + (it == r.end() ? std::string() : csv_escape(it->second));
    first = false;
  }
  if (fprintf(f_, "%s\n", line.c_str()) < 0 || fflush(f_) != 0)
    return sdn::Status::error(path_ + ": write: " + strerror(errno));
  fsync(fileno(f_));
  return {};
}

sdn::Result<std::vector<Row>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return sdn::Status::error(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) return sdn::Status::error(path + ":1: empty file");
  std::vector<std::string> header = csv_split(line);
  std::vector<Row> rows;
  int n = 1;
  while (std::getline(in, line)) {
    n++;
    if (line.empty()) continue;
    auto f = csv_split(line);
    if (f.size() != header.size()) {
      // A run killed mid-write leaves at most one short last line; anything else is corrupt.
      if (in.peek() == EOF) break;
      return sdn::Status::error(path + ":" + std::to_string(n) + ": " + std::to_string(f.size()) + " fields, header has " +
                                std::to_string(header.size()));
    }
    Row r;
    for (size_t i = 0; i < f.size(); i++) r[header[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

double to_num(const std::string& s, double fallback) {
  if (s.empty()) return fallback;
  char* end;
  double v = strtod(s.c_str(), &end);
  return *end ? fallback : v;
}

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

}  // namespace harness
