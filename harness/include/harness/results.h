// Result rows: one CSV row per DUT x proto x instances x size x repetition,
// plus a summary row per cell (median with min and max). Rows are written and
// flushed one at a time, so a killed run keeps what it measured.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sdn/status.h"

namespace harness {

// Every column of every results file, once, by the word in its CSV header.
// A name means the same in each file that has it (dut, status, error, ...).
#define HARNESS_COLUMNS(X) \
  X(timestamp) X(git_rev) X(dut) X(dut_version) X(kind) X(proto) \
  X(instances) X(size_bytes) X(repeat) X(throughput_gbps) X(throughput_gbps_min) X(throughput_gbps_max) \
  X(throughput_min_instance_gbps) X(throughput_max_instance_gbps) X(retransmits) X(cpu_host_pct) X(rtt_us) X(lost_percent) \
  X(latency_p50_us) X(latency_p50_us_min) X(latency_p50_us_max) X(latency_p90_us) X(latency_p99_us) X(latency_p99_us_min) \
  X(latency_p99_us_max) X(latency_p999_us) X(latency_max_us) X(latency_dropped) X(ct_entries) X(offloaded_entries) \
  X(dut_drops) X(dut_drops_detail) X(background_conns) X(background_setup_per_s) X(scenario) X(overlay_check) \
  X(status) X(error) \
  X(frame_bytes) X(conns) X(zero_loss_mpps) X(zero_loss_gbps) X(max_fwd_mpps) X(offered_at_max_mpps) \
  X(loss_at_max) X(lost_at_max_to_server) X(lost_at_max_to_client) X(dut_drops_at_max) X(gen_drops_at_max) X(limited_by) \
  X(retried) X(zero_loss_trial_lost) X(zero_loss_trial_dut_drops) X(zero_loss_trial_gen_drops) X(lat10_offered_mpps) X(lat10_lost) \
  X(lat10_p50_us) X(lat10_p99_us) X(lat10_p999_us) X(lat50_offered_mpps) X(lat50_lost) X(lat50_p50_us) \
  X(lat50_p99_us) X(lat50_p999_us) X(lat90_offered_mpps) X(lat90_lost) X(lat90_p50_us) X(lat90_p99_us) \
  X(lat90_p999_us) X(cps_established) X(cps_closed) X(cps_failed) X(setup_per_s) X(generator_ceiling_mpps) \
  X(trial) X(target_mpps) X(offered_mpps) X(fwd_mpps) X(sent) X(received) \
  X(lost) X(late) X(tx_full) X(gen_drops) X(generator_dropped) X(drain_ms) \
  /* end */

enum class Col : uint8_t {
#define HARNESS_COLUMN_ENUM(n) n,
  HARNESS_COLUMNS(HARNESS_COLUMN_ENUM)
#undef HARNESS_COLUMN_ENUM
};
inline constexpr size_t kColumnCount = 0
#define HARNESS_COLUMN_COUNT(n) +1
    HARNESS_COLUMNS(HARNESS_COLUMN_COUNT)
#undef HARNESS_COLUMN_COUNT
    ;

std::string_view col_name(Col c);
// A column by its header word; none when no file has it.
std::optional<Col> col_named(std::string_view name);
// A column whose name the code composes ("lat" + "10" + "_p50_us"): one
// that must exist, so a typo stops the program at once (a test finds it).
Col col(std::string_view name);

// One row of a results file: a cell per column, each a figure or a named
// reason. Reading a column the row does not have gives "".
class Row {
 public:
  Row() = default;
  Row(std::initializer_list<std::pair<Col, std::string>> cells) {
    for (const auto& [c, v] : cells) (*this)[c] = v;
  }
  std::string& operator[](Col c) {
    has_.set(i(c));
    return v_[i(c)];
  }
  const std::string& operator[](Col c) const { return v_[i(c)]; }
  bool has(Col c) const { return has_.test(i(c)); }
  void erase(Col c) {
    has_.reset(i(c));
    v_[i(c)].clear();
  }
  // The columns set, in schema order.
  std::vector<Col> columns() const;

 private:
  static size_t i(Col c) { return static_cast<size_t>(c); }
  std::array<std::string, kColumnCount> v_;
  std::bitset<kColumnCount> has_;
};

// The schemas, in column order. Documented in README.md ("CSV schema").
const std::vector<Col>& csv_columns();
// `harness run --mode rfc2544`'s schema (rfc2544.csv).
const std::vector<Col>& rfc2544_columns();
// One row per trial of harness-gen (rfc2544-trials.csv): what was sent and
// came back, late frames of earlier trials, and the DUT's drops in it.
const std::vector<Col>& rfc2544_trial_columns();
// The CSV header line of a schema.
std::string csv_header(const std::vector<Col>& columns);

std::string cell_key(const Row& r);  // dut|proto|instances|size|kind

class CsvWriter {
 public:
  ~CsvWriter();
  // Opens for appending; writes the header when the file is new or empty.
  sdn::Status open(const std::string& path, const std::vector<Col>& columns = csv_columns());
  sdn::Status write(const Row& r);  // unknown keys are an error: the schema is fixed
  const std::string& path() const { return path_; }

 private:
  FILE* f_ = nullptr;
  std::string path_;
  const std::vector<Col>* cols_ = nullptr;
};

// Reads a CSV written by CsvWriter. Errors name the file and line, and a
// header word that is no column of any schema.
sdn::Result<std::vector<Row>> read_csv(const std::string& path);

std::string csv_escape(const std::string& v);
std::vector<std::string> csv_split(const std::string& line);

double to_num(const std::string& s, double fallback = -1);

// Median, min and max of values (empty -> all zero).
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v);

}  // namespace harness
