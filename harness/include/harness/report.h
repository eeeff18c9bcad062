// Reports and comparisons over result CSVs.
#pragma once

#include <string>
#include <vector>

#include "harness/results.h"

namespace harness {

// Writes DIR/report.md and DIR/report.html (SVG charts) from DIR/results.csv.
sdn::Status write_report(const std::string& dir);

// One compared cell: each ok summary cell of OLD, against NEW.
struct CellVerdict {
  std::string dut;                    // a JUnit test case's classname
  std::string cell;                   // "throughput tcp x4 1460B": its name
  std::vector<std::string> problems;  // empty: passed; else compare()'s lines
  std::vector<std::string> compared;  // "throughput 2.00 -> 1.96 Gbit/s (ratio 0.980, fails below 0.950)"
  bool dut_gone = false;              // NEW has no cell of this DUT at all
};
sdn::Result<std::vector<CellVerdict>> compare_cells(const std::string& old_csv, const std::string& new_csv,
                                                    double max_pct);

// Cells of NEW that regressed against OLD by more than max_pct (throughput
// lower, or idle latency higher), and cells that now fail. Empty: no regression.
sdn::Result<std::vector<std::string>> compare(const std::string& old_csv, const std::string& new_csv, double max_pct);

// JUnit XML of a comparison: one test case per compared cell (classname the
// DUT), failed with compare()'s line, passed with what was compared.
std::string junit_xml(const std::vector<CellVerdict>& cells, const std::string& old_csv, const std::string& new_csv,
                      double max_pct);

}  // namespace harness
