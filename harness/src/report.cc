// `harness report DIR` and `harness compare OLD NEW`.
#include "harness/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace harness {

namespace {

struct Cell {
  double gbps = -1, gmin = -1, gmax = -1, p50 = -1, p99 = -1;
  bool ok = false;
  std::string error;
};

// (kind|proto|instances|size) -> dut -> summary cell
using Table = std::map<std::string, std::map<std::string, Cell>>;

std::string key(const Row& r) {
  return r.at("kind") + "|" + r.at("proto") + "|" + r.at("instances") + "|" + r.at("size_bytes");
}

Table summarize(const std::vector<Row>& rows, std::vector<std::string>* duts) {
  Table t;
  for (const auto& r : rows) {
    if (r.at("repeat") != "summary") continue;
    if (std::find(duts->begin(), duts->end(), r.at("dut")) == duts->end()) duts->push_back(r.at("dut"));
    Cell c;
    c.ok = r.at("status") == "ok";
    c.error = r.at("error");
    c.gbps = to_num(r.at("throughput_gbps"));
    c.gmin = to_num(r.at("throughput_gbps_min"));
    c.gmax = to_num(r.at("throughput_gbps_max"));
    c.p50 = to_num(r.at("latency_p50_us"));
    c.p99 = to_num(r.at("latency_p99_us"));
    t[key(r)][r.at("dut")] = c;
  }
  return t;
}

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

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// One SVG line chart: throughput (y) against size (x, log2), a line per DUT.
std::string svg_chart(const std::string& title, const std::vector<int>& sizes, const std::vector<std::string>& duts,
                      const std::map<std::string, std::map<int, double>>& series) {
  const int W = 560, H = 300, L = 60, R = 150, T = 30, B = 40;
  double ymax = 0.001;
  for (const auto& [d, pts] : series)
    for (const auto& [s, v] : pts) ymax = std::max(ymax, v);
  ymax *= 1.1;
  double xmin = std::log2(sizes.front()), xmax = std::log2(sizes.back());
  if (xmax <= xmin) xmax = xmin + 1;
  auto X = [&](int s) { return L + (std::log2(s) - xmin) / (xmax - xmin) * (W - L - R); };
  auto Y = [&](double v) { return T + (1 - v / ymax) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-family='sans-serif' font-size='11'>";
  o << "<text x='" << W / 2 - 100 << "' y='18' font-size='13'>" << title << "</text>";
  o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "' stroke='black'/>";
  o << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "' stroke='black'/>";
  for (int i = 0; i <= 4; i++) {
    double v = ymax * i / 4;
    o << "<text x='" << L - 50 << "' y='" << Y(v) + 4 << "'>" << f2(v) << "</text>";
    o << "<line x1='" << L << "' y1='" << Y(v) << "' x2='" << W - R << "' y2='" << Y(v) << "' stroke='#ddd'/>";
  }
  for (int s : sizes) o << "<text x='" << X(s) - 12 << "' y='" << H - B + 15 << "'>" << s << "</text>";
  o << "<text x='" << (W - R) / 2 << "' y='" << H - 5 << "'>size (bytes)</text>";
  o << "<text x='5' y='" << T - 10 << "'>Gbit/s</text>";
  for (size_t i = 0; i < duts.size(); i++) {
    auto it = series.find(duts[i]);
    const char* col = kColors[i % 6];
    o << "<text x='" << W - R + 10 << "' y='" << T + 15 * static_cast<int>(i) << "' fill='" << col << "'>" << duts[i] << "</text>";
    if (it == series.end()) continue;
    std::string pts;
    for (const auto& [s, v] : it->second) {
      pts += std::to_string(X(s)) + "," + std::to_string(Y(v)) + " ";
      o << "<circle cx='" << X(s) << "' cy='" << Y(v) << "' r='3' fill='" << col << "'/>";
    }
    o << "<polyline fill='none' stroke='" << col << "' stroke-width='2' points='" << pts << "'/>";
  }
  o << "</svg>";
  return o.str();
}

}  // namespace

sdn::Status write_report(const std::string& dir) {
  auto rows = read_csv(dir + "/results.csv");
  if (!rows) return rows.status();
  std::vector<std::string> duts;
  Table t = summarize(*rows, &duts);
  std::ostringstream md;
  std::ifstream mi(dir + "/machine.txt");
  std::stringstream machine;
  machine << mi.rdbuf();
  md << "# Benchmark report\n\nRun: `" << dir << "`\n\n```\n" << machine.str() << "```\n\n";
  md << "Figures are medians over repetitions, [min..max] beside them. Error cells name the failure.\n\n";

  // Throughput tables.
  std::map<std::string, std::vector<std::string>> groups;  // proto|instances -> keys
  std::set<int> sizes_set;
  for (const auto& [k, m] : t) {
    auto p = split(k);
    if (p[0] != "throughput") continue;
    groups[p[1] + "|" + p[2]].push_back(k);
    sizes_set.insert(static_cast<int>(to_num(p[3], 0)));
  }
  std::vector<int> sizes(sizes_set.begin(), sizes_set.end());
  std::string charts;
  md << "## Throughput (Gbit/s, all instances together)\n\n";
  for (auto& [g, keys] : groups) {
    auto gp = split(g);
    std::sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      return to_num(split(a)[3], 0) < to_num(split(b)[3], 0);
    });
    md << "### " << gp[0] << ", " << gp[1] << " instances\n\n| size |";
    for (const auto& d : duts) md << " " << d << " |";
    md << "\n|---|";
    for (size_t i = 0; i < duts.size(); i++) md << "---|";
    md << "\n";
    std::map<std::string, std::map<int, double>> series;
    for (const auto& k : keys) {
      int size = static_cast<int>(to_num(split(k)[3], 0));
      md << "| " << size << " |";
      for (const auto& d : duts) {
        auto it = t[k].find(d);
        if (it == t[k].end()) md << " – |";
        else if (!it->second.ok) md << " error: " << it->second.error.substr(0, 60) << " |";
        else {
          md << " " << f2(it->second.gbps) << " [" << f2(it->second.gmin) << "..." << f2(it->second.gmax) << "] |";
          series[d][size] = it->second.gbps;
        }
      }
      md << "\n";
    }
    md << "\n";
    charts += "<h3>" + gp[0] + ", " + gp[1] + " instances</h3>" +
              svg_chart("Throughput, " + gp[0] + " x" + gp[1], sizes.empty() ? std::vector<int>{64} : sizes, duts, series);
  }

  // 90% of the testpmd-io ceiling.
  md << "## Smallest size reaching 90% of the testpmd-io ceiling\n\n";
  bool have_ceiling = std::find(duts.begin(), duts.end(), "testpmd-io") != duts.end();
  if (!have_ceiling) {
    md << "No testpmd-io rows in this run.\n\n";
  } else {
    md << "| proto, instances |";
    for (const auto& d : duts) md << " " << d << " |";
    md << "\n|---|";
    for (size_t i = 0; i < duts.size(); i++) md << "---|";
    md << "\n";
    for (auto& [g, keys] : groups) {
      auto gp = split(g);
      md << "| " << gp[0] << " x" << gp[1] << " |";
      for (const auto& d : duts) {
        std::string found = "never";
        for (const auto& k : keys) {
          auto& m = t[k];
          if (!m.count("testpmd-io") || !m["testpmd-io"].ok || !m.count(d) || !m[d].ok) continue;
          if (m[d].gbps >= 0.9 * m["testpmd-io"].gbps) {
            found = split(k)[3] + " B";
            break;
          }
        }
        md << " " << found << " |";
      }
      md << "\n";
    }
    md << "\n";
  }

  // Latency.
  md << "## Latency, sockperf ping-pong without load (µs, p50 / p99)\n\n| size |";
  for (const auto& d : duts) md << " " << d << " |";
  md << "\n|---|";
  for (size_t i = 0; i < duts.size(); i++) md << "---|";
  md << "\n";
  std::vector<std::string> lat;
  for (const auto& [k, m] : t)
    if (split(k)[0] == "latency") lat.push_back(k);
  std::sort(lat.begin(), lat.end(),
            [&](const std::string& a, const std::string& b) { return to_num(split(a)[3], 0) < to_num(split(b)[3], 0); });
  for (const auto& k : lat) {
    md << "| " << split(k)[3] << " |";
    for (const auto& d : duts) {
      auto it = t[k].find(d);
      if (it == t[k].end()) md << " – |";
      else if (!it->second.ok) md << " error |";
      else md << " " << f2(it->second.p50) << " / " << f2(it->second.p99) << " |";
    }
    md << "\n";
  }
  md << "\n";

  // Paired ratios: repetition k of a DUT against repetition k of testpmd-io.
  // With interleaved rounds both ran in the same round, minutes apart, so the
  // ratio cancels most of the host's drift; the median over rounds is the figure.
  if (std::find(duts.begin(), duts.end(), "testpmd-io") != duts.end()) {
    std::map<std::string, std::map<std::string, std::map<std::string, const Row*>>> reps;  // key -> dut -> rep
    for (const auto& r : *rows)
      if (r.at("repeat") != "summary" && r.at("status") == "ok") reps[key(r)][r.at("dut")][r.at("repeat")] = &r;
    md << "## Paired against testpmd-io, round by round\n\n"
          "Per cell, DUT / testpmd-io in each repetition (round), then the median [min..max] over rounds. "
          "Throughput: higher is better; latency p50: lower is better.\n\n"
          "| cell | DUT | throughput ratio | latency p50 ratio (throughput cells: under that load) | rounds |\n|---|---|---|---|---|\n";
    for (auto& [k, by_dut] : reps) {
      auto base = by_dut.find("testpmd-io");
      if (base == by_dut.end()) continue;
      auto p = split(k);
      std::string cell = p[0] == "latency" ? "latency " + p[3] + " B" : p[1] + " x" + p[2] + " " + p[3] + " B";
      for (const auto& d : duts) {
        if (d == "testpmd-io" || !by_dut.count(d)) continue;
        std::vector<double> tr, lr;
        size_t paired = 0;
        std::string why_missing;  // the first reason a round has no latency pair
        for (auto& [rep, row] : by_dut[d]) {
          auto b = base->second.find(rep);
          if (b == base->second.end()) continue;
          paired++;
          double x = to_num(row->at("throughput_gbps")), y = to_num(b->second->at("throughput_gbps"));
          if (x > 0 && y > 0) tr.push_back(x / y);
          x = to_num(row->at("latency_p50_us"));
          y = to_num(b->second->at("latency_p50_us"));
          if (x > 0 && y > 0) lr.push_back(x / y);
          else if (why_missing.empty())
            why_missing = !(x > 0) ? d + ": " + row->at("error") : "testpmd-io: " + b->second->at("error");
        }
        // Every ratio with the rounds it stands on; a missing pair says why.
        auto show = [&](std::vector<double> v, const std::string& why) -> std::string {
          if (v.empty() && why.empty()) return "–";
          std::string o;
          if (!v.empty()) {
            Spread s = spread(v);
            char b[96];
            snprintf(b, sizeof b, "%.3f [%.2f..%.2f], %zu of %zu rounds", s.median, s.min, s.max, v.size(), paired);
            o = b;
          }
          if (v.size() < paired && !why.empty()) o += (o.empty() ? "" : "; ") + std::string("missing: ") + why;
          return o;
        };
        md << "| " << cell << " | " << d << " | " << show(tr, "") << " | " << show(lr, why_missing) << " | " << paired
           << " |\n";
      }
    }
    md << "\n";
  }

  // Relative, in the blog's terms: ours against each peer.
  if (std::find(duts.begin(), duts.end(), "dataplane") != duts.end()) {
    md << "## dataplane against its peers\n\nGeometric mean of dataplane / peer over the cells both have "
          "(throughput: higher is better; latency: lower is better).\n\n"
          "| peer | dataplane throughput | dataplane latency p50 |\n|---|---|---|\n";
    for (const auto& peer : duts) {
      if (peer == "dataplane") continue;
      double lt = 0, ll = 0;
      int nt = 0, nl = 0;
      for (auto& [k, m] : t) {
        if (!m.count("dataplane") || !m.count(peer) || !m["dataplane"].ok || !m[peer].ok) continue;
        if (split(k)[0] == "throughput" && m["dataplane"].gbps > 0 && m[peer].gbps > 0) {
          lt += std::log(m["dataplane"].gbps / m[peer].gbps);
          nt++;
        }
        if (split(k)[0] == "latency" && m["dataplane"].p50 > 0 && m[peer].p50 > 0) {
          ll += std::log(m["dataplane"].p50 / m[peer].p50);
          nl++;
        }
      }
      // "12.3% higher" / "4.5% lower": the word carries the sign.
      auto rel = [](double pct, const char* up, const char* down) {
        return f2(std::fabs(pct)) + "% " + (pct >= 0 ? up : down);
      };
      md << "| " << peer << " | "
         << (nt ? rel((std::exp(lt / nt) - 1) * 100, "higher", "lower") : std::string("–")) << " | "
         << (nl ? rel((std::exp(ll / nl) - 1) * 100, "higher", "lower") : std::string("–")) << " |\n";
    }
    md << "\n";
  }
  int errors = 0;
  for (const auto& r : *rows)
    if (r.at("status") != "ok") errors++;
  md << "Rows with errors: " << errors << " of " << rows->size() << ".\n";

  std::ofstream(dir + "/report.md") << md.str();
  std::ofstream html(dir + "/report.html");
  html << "<!doctype html><html><head><meta charset='utf-8'><title>Benchmark report</title>"
          "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}pre{background:#f4f4f4;padding:8px}</style>"
          "</head><body><h1>Benchmark report</h1>"
       << charts << "<h2>Tables</h2><pre>" << md.str() << "</pre></body></html>\n";
  return {};
}

sdn::Result<std::vector<std::string>> compare(const std::string& old_csv, const std::string& new_csv, double max_pct) {
  auto a = read_csv(old_csv);
  if (!a) return a.status();
  auto b = read_csv(new_csv);
  if (!b) return b.status();
  auto name = [](Row& r) {
    return r["dut"] + " " + r["kind"] + " " + r["proto"] + " x" + r["instances"] + " " + r["size_bytes"] + "B";
  };
  // A value that is there: a finite number.
  auto value = [](const std::string& v, double* out) {
    double x = to_num(v, std::nan(""));
    if (!std::isfinite(x)) return false;
    *out = x;
    return true;
  };
  std::map<std::string, Row> fresh;
  std::map<std::string, int> fresh_duts;
  for (auto& r : *b)
    if (r["repeat"] == "summary") {
      fresh[cell_key(r)] = r;
      fresh_duts[r["dut"]]++;
    }
  std::vector<std::string> out;
  if (fresh.empty()) return std::vector<std::string>{"MISSING " + new_csv + ": no summary rows (an empty or unfinished run)"};
  std::map<std::string, int> gone;  // DUTs of OLD with no cell in NEW
  for (auto& r : *a) {
    if (r["repeat"] != "summary" || r["status"] != "ok") continue;
    std::string cell = name(r);
    if (!fresh_duts.count(r["dut"])) {
      gone[r["dut"]]++;
      continue;
    }
    auto it = fresh.find(cell_key(r));
    if (it == fresh.end()) {
      out.push_back("MISSING " + cell + ": not in NEW");
      continue;
    }
    Row& n = it->second;
    if (n["status"] != "ok") {
      out.push_back("FAILING " + cell + ": " + n["status"] + ": " + n["error"]);
      continue;
    }
    double ot, nt, ol, nl;
    if (value(r["throughput_gbps"], &ot)) {
      if (!value(n["throughput_gbps"], &nt)) {
        out.push_back("MISSING " + cell + ": throughput_gbps is '" + n["throughput_gbps"] + "' in NEW");
      } else if (ot > 0 && (ot - nt) / ot * 100 > max_pct) {
        out.push_back("REGRESSION " + cell + ": throughput " + f2(ot) + " -> " + f2(nt) + " Gbit/s (" +
                      f2((ot - nt) / ot * 100) + "% lower)");
      }
    }
    if (r["kind"] == "latency" && value(r["latency_p50_us"], &ol)) {
      if (!value(n["latency_p50_us"], &nl)) {
        out.push_back("MISSING " + cell + ": latency_p50_us is '" + n["latency_p50_us"] + "' in NEW");
      } else if (ol > 0 && (nl - ol) / ol * 100 > max_pct) {
        out.push_back("REGRESSION " + cell + ": latency p50 " + f2(ol) + " -> " + f2(nl) + " us (" +
                      f2((nl - ol) / ol * 100) + "% higher)");
      }
    }
  }
  for (auto& [dut, cells] : gone)
    out.push_back("MISSING dut " + dut + ": none of its " + std::to_string(cells) + " cells is in NEW");
  return out;
}

}  // namespace harness
