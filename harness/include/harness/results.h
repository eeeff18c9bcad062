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

// Every column of every results file, once, by the word in its CSV header,
// with its JSON type (S string, I integer, N number) and unit ("" for text).
// A name means the same in each file that has it (dut, status, error, ...).
// A numeric cell holds a figure or a named reason ("n/a: ..."): results.json
// writes the figure as a number, a reason as null with the text in the row's
// "reasons" (`harness --schema` prints the schema).
#define HARNESS_COLUMNS(X) \
  X(timestamp, S, "") X(git_rev, S, "") X(dut, S, "") X(dut_version, S, "") X(kind, S, "") X(proto, S, "") \
  X(instances, I, "count") X(size_bytes, I, "bytes") X(repeat, S, "") X(throughput_gbps, N, "Gbit/s") \
  X(throughput_gbps_min, N, "Gbit/s") X(throughput_gbps_max, N, "Gbit/s") \
  X(throughput_min_instance_gbps, N, "Gbit/s") X(throughput_max_instance_gbps, N, "Gbit/s") \
  X(retransmits, I, "segments") X(cpu_host_pct, N, "percent") X(rtt_us, N, "us") X(lost_percent, N, "percent") \
  X(latency_p50_us, N, "us") X(latency_p50_us_min, N, "us") X(latency_p50_us_max, N, "us") \
  X(latency_p90_us, N, "us") X(latency_p99_us, N, "us") X(latency_p99_us_min, N, "us") \
  X(latency_p99_us_max, N, "us") X(latency_p999_us, N, "us") X(latency_max_us, N, "us") \
  X(latency_dropped, I, "messages") X(ct_entries, I, "connections") X(offloaded_entries, I, "connections") \
  X(dut_drops, I, "packets") X(dut_drops_detail, S, "") X(segmentation, S, "") \
  X(dut_in_frame_bytes, N, "bytes") X(dut_out_frame_bytes, N, "bytes") X(background_conns, I, "connections") \
  X(background_setup_per_s, N, "connections/s") X(scenario, S, "") X(overlay_check, S, "") X(status, S, "") \
  X(error, S, "") X(frame_bytes, I, "bytes") X(conns, I, "connections") X(zero_loss_mpps, N, "Mpps") \
  X(zero_loss_gbps, N, "Gbit/s") X(max_fwd_mpps, N, "Mpps") X(offered_at_max_mpps, N, "Mpps") \
  X(loss_at_max, N, "fraction") X(lost_at_max_to_server, I, "frames") X(lost_at_max_to_client, I, "frames") \
  X(dut_drops_at_max, I, "frames") X(gen_drops_at_max, I, "frames") X(limited_by, S, "") X(retried, I, "trials") \
  X(zero_loss_trial_lost, I, "frames") X(zero_loss_trial_dut_drops, I, "frames") \
  X(zero_loss_trial_gen_drops, I, "frames") X(lat10_offered_mpps, N, "Mpps") X(lat10_lost, I, "frames") \
  X(lat10_p50_us, N, "us") X(lat10_p99_us, N, "us") X(lat10_p999_us, N, "us") X(lat50_offered_mpps, N, "Mpps") \
  X(lat50_lost, I, "frames") X(lat50_p50_us, N, "us") X(lat50_p99_us, N, "us") X(lat50_p999_us, N, "us") \
  X(lat90_offered_mpps, N, "Mpps") X(lat90_lost, I, "frames") X(lat90_p50_us, N, "us") X(lat90_p99_us, N, "us") \
  X(lat90_p999_us, N, "us") X(cps_established, N, "connections/s") X(cps_closed, N, "connections/s") \
  X(cps_failed, I, "connections") X(setup_per_s, N, "connections/s") X(generator_ceiling_mpps, N, "Mpps") \
  X(trial, I, "count") X(target_mpps, N, "Mpps") X(offered_mpps, N, "Mpps") X(fwd_mpps, N, "Mpps") \
  X(sent, I, "frames") X(received, I, "frames") X(lost, I, "frames") X(late, I, "frames") X(tx_full, I, "frames") \
  X(gen_drops, I, "frames") X(generator_dropped, S, "") X(drain_ms, N, "ms") X(dut_cpu_wait_pct, N, "%") \
  X(gen_cpu_wait_pct, N, "%") \
  /* end */

enum class Col : uint8_t {
#define HARNESS_COLUMN_ENUM(n, t, u) n,
  HARNESS_COLUMNS(HARNESS_COLUMN_ENUM)
#undef HARNESS_COLUMN_ENUM
};
inline constexpr size_t kColumnCount = 0
#define HARNESS_COLUMN_COUNT(n, t, u) +1
    HARNESS_COLUMNS(HARNESS_COLUMN_COUNT)
#undef HARNESS_COLUMN_COUNT
    ;

std::string_view col_name(Col c);
enum class ColType : uint8_t { S, I, N };
ColType col_type(Col c);
std::string_view col_unit(Col c);  // "" for a text column
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
// A schema's name in results.json's "table": results, rfc2544, rfc2544-trials.
std::string_view table_name(const std::vector<Col>& columns);
// The JSON file beside a CSV: results.csv -> results.json.
std::string json_path(const std::string& csv_path);
// One row as a JSON object (text, without a newline): each cell the row has
// by its column's type; a numeric cell that is not a finite number is null,
// its text under "reasons". Invalid UTF-8 is replaced, never thrown on.
std::string row_json(const Row& r, const std::vector<Col>& columns);
// The JSON Schema (draft 2020-12) of every results JSON file: `harness --schema`.
std::string results_json_schema();

std::string cell_key(const Row& r);  // dut|proto|instances|size|kind

// Writes a CSV and, beside it, the same rows typed in JSON (json_path()):
// the CSV row first (appended, flushed), then the JSON file replaced whole
// (written aside and renamed), so each always holds whole rows and a killed
// run's JSON is its CSV's.
class CsvWriter {
 public:
  ~CsvWriter();
  // Opens for appending; writes the header when the file is new or empty.
  // The JSON starts from the rows the CSV already has (a resumed run).
  sdn::Status open(const std::string& path, const std::vector<Col>& columns = csv_columns());
  sdn::Status write(const Row& r);  // unknown keys are an error: the schema is fixed
  const std::string& path() const { return path_; }

 private:
  sdn::Status write_json() const;
  FILE* f_ = nullptr;
  std::string path_;
  const std::vector<Col>* cols_ = nullptr;
  std::vector<std::string> json_rows_;
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
