// Reports and comparisons over result CSVs.
#pragma once

#include <string>
#include <vector>

#include "harness/results.h"

namespace harness {

// Writes DIR/report.md and DIR/report.html (SVG charts) from DIR/results.csv.
sdn::Status write_report(const std::string& dir);

// Cells of NEW that regressed against OLD by more than max_pct (throughput
// lower, or idle latency higher), and cells that now fail. Empty: no regression.
sdn::Result<std::vector<std::string>> compare(const std::string& old_csv, const std::string& new_csv, double max_pct);

}  // namespace harness
