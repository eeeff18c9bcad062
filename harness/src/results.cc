#include "harness/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace harness {

namespace {
constexpr std::array<std::string_view, kColumnCount> kNames = {
#define HARNESS_COLUMN_NAME(n) #n,
    HARNESS_COLUMNS(HARNESS_COLUMN_NAME)
#undef HARNESS_COLUMN_NAME
};
}  // namespace

std::string_view col_name(Col c) { return kNames[static_cast<size_t>(c)]; }

std::optional<Col> col_named(std::string_view name) {
  for (size_t i = 0; i < kColumnCount; i++)
    if (kNames[i] == name) return static_cast<Col>(i);
  return std::nullopt;
}

Col col(std::string_view name) {
  if (auto c = col_named(name)) return *c;
  fprintf(stderr, "harness: internal error: no column named '%.*s'\n", static_cast<int>(name.size()), name.data());
  abort();
}

std::vector<Col> Row::columns() const {
  std::vector<Col> out;
  for (size_t k = 0; k < kColumnCount; k++)
    if (has_.test(k)) out.push_back(static_cast<Col>(k));
  return out;
}

const std::vector<Col>& csv_columns() {
  static const std::vector<Col> c = {
      Col::timestamp, Col::git_rev, Col::dut, Col::dut_version, Col::kind, Col::proto,
      Col::instances, Col::size_bytes, Col::repeat, Col::throughput_gbps, Col::throughput_gbps_min, Col::throughput_gbps_max,
      Col::throughput_min_instance_gbps, Col::throughput_max_instance_gbps, Col::retransmits, Col::cpu_host_pct, Col::rtt_us, Col::lost_percent,
      Col::latency_p50_us, Col::latency_p50_us_min, Col::latency_p50_us_max, Col::latency_p90_us, Col::latency_p99_us, Col::latency_p99_us_min,
      Col::latency_p99_us_max, Col::latency_p999_us, Col::latency_max_us, Col::latency_dropped, Col::ct_entries, Col::offloaded_entries,
      Col::dut_drops, Col::dut_drops_detail, Col::background_conns, Col::background_setup_per_s, Col::scenario,
      Col::overlay_check, Col::status, Col::error};
  return c;
}

const std::vector<Col>& rfc2544_columns() {
  static const std::vector<Col> c = {
      Col::timestamp, Col::git_rev, Col::dut, Col::dut_version, Col::scenario, Col::frame_bytes, Col::conns,
      Col::proto, Col::repeat, Col::zero_loss_mpps, Col::zero_loss_gbps, Col::max_fwd_mpps, Col::offered_at_max_mpps,
      Col::loss_at_max, Col::lost_at_max_to_server, Col::lost_at_max_to_client, Col::dut_drops_at_max, Col::gen_drops_at_max, Col::limited_by,
      Col::retried, Col::zero_loss_trial_lost, Col::zero_loss_trial_dut_drops, Col::zero_loss_trial_gen_drops, Col::lat10_offered_mpps, Col::lat10_lost,
      Col::lat10_p50_us, Col::lat10_p99_us, Col::lat10_p999_us, Col::lat50_offered_mpps, Col::lat50_lost, Col::lat50_p50_us,
      Col::lat50_p99_us, Col::lat50_p999_us, Col::lat90_offered_mpps, Col::lat90_lost, Col::lat90_p50_us, Col::lat90_p99_us,
      Col::lat90_p999_us, Col::cps_established, Col::cps_closed, Col::cps_failed, Col::setup_per_s, Col::generator_ceiling_mpps,
      Col::ct_entries, Col::overlay_check, Col::status, Col::error};
  return c;
}

const std::vector<Col>& rfc2544_trial_columns() {
  static const std::vector<Col> c = {
      Col::dut, Col::scenario, Col::frame_bytes, Col::conns, Col::proto, Col::repeat, Col::trial,
      Col::kind, Col::target_mpps, Col::offered_mpps, Col::fwd_mpps, Col::sent, Col::received,
      Col::lost, Col::late, Col::tx_full, Col::dut_drops, Col::gen_drops, Col::generator_dropped,
      Col::drain_ms};
  return c;
}

std::string csv_header(const std::vector<Col>& columns) {
  std::string h;
  for (Col c : columns) h += (h.empty() ? "" : ",") + std::string(col_name(c));
  return h;
}

std::string cell_key(const Row& r) {
  return r[Col::dut] + "|" + r[Col::kind] + "|" + r[Col::proto] + "|" + r[Col::instances] + "|" + r[Col::size_bytes];
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

sdn::Status CsvWriter::open(const std::string& path, const std::vector<Col>& columns) {
  path_ = path;
  cols_ = &columns;
  const std::string want = csv_header(columns);
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
  for (Col k : r.columns())
    if (std::find(cols_->begin(), cols_->end(), k) == cols_->end())
      return sdn::Status::error("row has a column the schema lacks: " + std::string(col_name(k)));
  std::string line;
  bool first = true;
  for (Col c : *cols_) {
    line += (first ? "" : ",") + csv_escape(r[c]);
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
  std::vector<Col> header;
  for (const auto& w : csv_split(line)) {
    auto c = col_named(w);
    if (!c) return sdn::Status::error(path + ":1: column '" + w + "' is in no results schema of this version");
    header.push_back(*c);
  }
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
