// What the report's two parts (report.cc: the sweep; report_rfc2544.cc:
// the RFC 2544 mode) share: sections, SVG charts and their rendering as
// Markdown and HTML. Internal to the harness library.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/profiles.h"
#include "harness/results.h"

namespace harness::report_detail {

// The DUTs the reports compare by role (profiles.h): every DUT against the
// dataplane, and against testpmd-io, the bed's ceiling.
inline const std::string kSubject(role_dut(DutRole::kSubject)), kCeiling(role_dut(DutRole::kCeiling));
inline const std::string kOvsDpdk(name(DutKind::kOvsDpdk));

// The fields of a cell key ("kind|proto|instances|size").
std::vector<std::string> split(const std::string& k);
std::string f2(double v);

struct Point {
  double v = 0, lo = -1, hi = -1;  // median and min..max over repetitions
};
using Series = std::map<std::string, std::map<int, Point>>;  // dut -> size -> point

// One SVG chart: a value (y) against size (x, log2), a line per DUT with
// min..max bars, and an optional dashed reference line (the ceiling).
std::string svg_chart(const std::string& title, const std::string& unit, const std::vector<int>& sizes,
                      const std::vector<std::string>& duts, const Series& series, double ref,
                      const std::string& ref_label);

// The report as sections, written once as Markdown and once as HTML.
struct Section {
  int level = 2;
  std::string title, text;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> svgs;  // HTML only
  std::string pre;                 // preformatted (machine info)
};

std::string to_markdown(const std::string& title, const std::vector<Section>& secs);
std::string to_html(const std::string& title, const std::vector<Section>& secs);

// The RFC 2544 mode's sections (report_rfc2544.cc), and its headline for
// the findings: the zero-loss rate per DUT at the smallest frame for each K,
// and the dataplane's over each DUT's round by round.
void rfc2544_sections(const std::vector<Row>& rows, std::vector<Section>& secs);
Section rfc2544_headline(const std::vector<Row>& rows);

}  // namespace harness::report_detail
