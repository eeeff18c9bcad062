// Sections, SVG charts and their Markdown and HTML (report_render.h).
#include "report_render.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace harness::report_detail {

namespace {

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// Text for HTML (element content and quoted attribute values).
std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

// Markdown table cells: a '|' would end the cell.
std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else o += c == '\n' ? ' ' : c;
  }
  return o;
}

}  // namespace

std::vector<std::string> split(const std::string& k) {
  std::vector<std::string> v;
  std::istringstream in(k);
  for (std::string p; std::getline(in, p, '|');) v.push_back(p);
  return v;
}

std::string f2(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string svg_chart(const std::string& title, const std::string& unit, const std::vector<int>& sizes,
                      const std::vector<std::string>& duts, const Series& series, double ref,
                      const std::string& ref_label) {
  const int W = 570, H = 320, L = 60, R = 150, T = 34, B = 40;
  double ymax = std::max(0.001, ref);
  for (const auto& [d, pts] : series)
    for (const auto& [sz, p] : pts) ymax = std::max({ymax, p.v, p.hi});
  ymax *= 1.1;
  double xmin = std::log2(sizes.front()), xmax = std::log2(sizes.back());
  if (xmax <= xmin) xmax = xmin + 1;
  auto X = [&](int sz) {
    return sizes.size() == 1 ? (L + W - R) / 2.0 : L + (std::log2(sz) - xmin) / (xmax - xmin) * (W - L - R);
  };
  auto Y = [&](double v) { return T + (1 - v / ymax) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='11' role='img'><title>" << esc(title) << "</title>";
  o << "<text x='" << L << "' y='16' font-size='13' font-weight='bold'>" << esc(title) << "</text>";
  o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "' stroke='black'/>";
  o << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "' stroke='black'/>";
  for (int i = 0; i <= 4; i++) {
    double v = ymax * i / 4;
    o << "<text x='" << L - 6 << "' y='" << Y(v) + 4 << "' text-anchor='end'>" << f2(v) << "</text>";
    o << "<line x1='" << L << "' y1='" << Y(v) << "' x2='" << W - R << "' y2='" << Y(v) << "' stroke='#ddd'/>";
  }
  for (int sz : sizes) o << "<text x='" << X(sz) << "' y='" << H - B + 15 << "' text-anchor='middle'>" << sz << "</text>";
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 5 << "' text-anchor='middle'>size (bytes)</text>";
  o << "<text x='" << L << "' y='" << T - 6 << "' text-anchor='end'>" << esc(unit) << "</text>";
  if (ref > 0) {
    o << "<line class='ceiling' x1='" << L << "' y1='" << Y(ref) << "' x2='" << W - R << "' y2='" << Y(ref)
      << "' stroke='#555' stroke-dasharray='6,4'/>";
    o << "<text x='" << L + 4 << "' y='" << Y(ref) - 4 << "' fill='#555'>" << esc(ref_label) << "</text>";
  }
  for (size_t i = 0; i < duts.size(); i++) {
    auto it = series.find(duts[i]);
    const char* col = kColors[i % 6];
    o << "<text x='" << W - R + 10 << "' y='" << T + 15 * static_cast<int>(i) << "' fill='" << col << "'>"
      << esc(duts[i]) << "</text>";
    if (it == series.end()) continue;
    std::string pts;
    // DUTs side by side around each size, so that their bars do not cover each other.
    const double dx = (static_cast<double>(i) - (static_cast<double>(duts.size()) - 1) / 2) * 7;
    for (const auto& [sz, p] : it->second) {
      double x = X(sz) + dx;
      pts += std::to_string(x) + "," + std::to_string(Y(p.v)) + " ";
      if (p.lo >= 0 && p.hi >= p.lo)
        o << "<line class='err' x1='" << x << "' y1='" << Y(p.lo) << "' x2='" << x << "' y2='" << Y(p.hi)
          << "' stroke='" << col << "' stroke-width='1.5'/>";
      o << "<circle cx='" << x << "' cy='" << Y(p.v) << "' r='3.5' fill='" << col << "'/>";
    }
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='2' points='" << pts << "'/>";
  }
  o << "</svg>";
  return o.str();
}

std::string to_markdown(const std::string& title, const std::vector<Section>& secs) {
  std::ostringstream o;
  o << "# " << title << "\n\n";
  for (const Section& s : secs) {
    o << std::string(static_cast<size_t>(s.level), '#') << " " << s.title << "\n\n";
    if (!s.text.empty()) o << s.text << "\n\n";
    if (!s.pre.empty()) o << "```\n" << s.pre << (s.pre.back() == '\n' ? "" : "\n") << "```\n\n";
    if (s.header.empty()) continue;
    o << "|";
    for (const auto& h : s.header) o << " " << md_cell(h) << " |";
    o << "\n|";
    for (size_t i = 0; i < s.header.size(); i++) o << "---|";
    o << "\n";
    for (const auto& r : s.rows) {
      o << "|";
      for (const auto& c : r) o << " " << md_cell(c) << " |";
      o << "\n";
    }
    o << "\n";
  }
  return o.str();
}

std::string to_html(const std::string& title, const std::vector<Section>& secs) {
  std::ostringstream o;
  o << "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>" << esc(title) << "</title><style>"
       "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:0 12px;color:#222}"
       "table{border-collapse:collapse;margin:8px 0 18px}th,td{border:1px solid #ccc;padding:3px 8px;"
       "text-align:right;font-size:13px}th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}"
       "td.error{color:#a00;text-align:left;max-width:420px}pre{background:#f4f4f4;padding:8px;overflow-x:auto}"
       ".charts{display:flex;flex-wrap:wrap;gap:8px}</style></head><body>";
  o << "<h1>" << esc(title) << "</h1>";
  for (const Section& s : secs) {
    o << "<h" << s.level << ">" << esc(s.title) << "</h" << s.level << ">";
    if (!s.text.empty()) o << "<p>" << esc(s.text) << "</p>";
    if (!s.pre.empty()) o << "<pre>" << esc(s.pre) << "</pre>";
    if (!s.svgs.empty()) {
      o << "<div class='charts'>";
      for (const auto& g : s.svgs) o << g;
      o << "</div>";
    }
    if (s.header.empty()) continue;
    o << "<table><thead><tr>";
    for (const auto& h : s.header) o << "<th>" << esc(h) << "</th>";
    o << "</tr></thead><tbody>";
    for (const auto& r : s.rows) {
      o << "<tr>";
      for (const auto& c : r) o << (c.rfind("error", 0) == 0 || c.rfind("missing", 0) == 0 ? "<td class='error'>" : "<td>")
                                << esc(c) << "</td>";
      o << "</tr>";
    }
    o << "</tbody></table>";
  }
  o << "</body></html>\n";
  return o.str();
}

// The iperf3/sockperf sweep (results.csv).

}  // namespace harness::report_detail
