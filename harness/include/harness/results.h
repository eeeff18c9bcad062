// Result rows: one CSV row per DUT x proto x instances x size x repetition,
// plus a summary row per cell (median with min and max). Rows are written and
// flushed one at a time, so a killed run keeps what it measured.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace harness {

// The schema, in column order. Documented in README.md ("CSV schema").
const std::vector<std::string>& csv_columns();
// `harness run --mode rfc2544`'s schema (rfc2544.csv).
const std::vector<std::string>& rfc2544_columns();
// One row per trial of harness-gen (rfc2544-trials.csv): what was sent and
// came back, late frames of earlier trials, and the DUT's drops in it.
const std::vector<std::string>& rfc2544_trial_columns();

using Row = std::map<std::string, std::string>;

std::string cell_key(const Row& r);  // dut|proto|instances|size|kind

class CsvWriter {
 public:
  ~CsvWriter();
  // Opens for appending; writes the header when the file is new or empty.
  sdn::Status open(const std::string& path, const std::vector<std::string>& columns = csv_columns());
  sdn::Status write(const Row& r);  // unknown keys are an error: the schema is fixed
  const std::string& path() const { return path_; }

 private:
  FILE* f_ = nullptr;
  std::string path_;
  const std::vector<std::string>* cols_ = nullptr;
};

// Reads a CSV written by CsvWriter. Errors name the file and line.
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
