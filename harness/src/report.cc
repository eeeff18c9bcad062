// `harness report DIR` and `harness compare OLD NEW`.
#include "harness/report.h"
#include "report_render.h"
#include "util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <variant>

namespace harness {

using namespace report_detail;

namespace {

struct Cell {
  double gbps = -1, gmin = -1, gmax = -1, p50 = -1, p50min = -1, p50max = -1, p99 = -1;
  bool ok = false;
  std::string error;
};

// (kind|proto|instances|size) -> dut -> summary cell
using Table = std::map<std::string, std::map<std::string, Cell>>;

std::string key(const Row& r) {
  return r[Col::kind] + "|" + r[Col::proto] + "|" + r[Col::instances] + "|" + r[Col::size_bytes];
}

Table summarize(const std::vector<Row>& rows, std::vector<std::string>* duts) {
  Table t;
  for (const auto& r : rows) {
    if (r[Col::repeat] != "summary") continue;
    if (std::find(duts->begin(), duts->end(), r[Col::dut]) == duts->end()) duts->push_back(r[Col::dut]);
    Cell c;
    c.ok = r[Col::status] == "ok";
    c.error = r[Col::error];
    c.gbps = to_num(r[Col::throughput_gbps]);
    c.gmin = to_num(r[Col::throughput_gbps_min]);
    c.gmax = to_num(r[Col::throughput_gbps_max]);
    c.p50 = to_num(r[Col::latency_p50_us]);
    c.p50min = to_num(r[Col::latency_p50_us_min]);
    c.p50max = to_num(r[Col::latency_p50_us_max]);
    c.p99 = to_num(r[Col::latency_p99_us]);
    t[key(r)][r[Col::dut]] = c;
  }
  return t;
}

// The cell of `dut`, or null and the words that stand in its place.
const Cell* find_cell(const std::map<std::string, Cell>& m, const std::string& dut, std::string* instead) {
  auto it = m.find(dut);
  if (it == m.end()) {
    *instead = "not run";
    return nullptr;
  }
  if (!it->second.ok) {
    *instead = "error: " + it->second.error;
    return nullptr;
  }
  return &it->second;
}

// What the sweep's sections are built from: the summary table, its DUTs,
// the throughput cells grouped by (proto, instances), and the ceiling.
struct SweepView {
  Table t;
  std::vector<std::string> duts;
  std::map<std::pair<std::string, int>, std::vector<std::string>> groups;
  std::vector<int> sizes;
  bool have_ceiling = false;
  // The line rate: the lab inventory's link speed (machine.txt); 0 on the
  // namespace testbed, where the testpmd-io ceiling stands in for it.
  double line_rate = 0;
  // The rows' segmentation modes ("wire", "host"; none in runs before the
  // column) and per DUT the largest mean frame its links received.
  std::set<std::string> segmentation;
  std::map<std::string, double> in_frame;
};

int cell_size(const std::string& k) { return static_cast<int>(to_num(split(k)[3], 0)); }
bool by_size(const std::string& a, const std::string& b) { return cell_size(a) < cell_size(b); }

SweepView sweep_view(const std::vector<Row>& rows, const std::stringstream& machine) {
  SweepView v;
  v.t = summarize(rows, &v.duts);
  for (const auto& r : rows) {
    if (!r[Col::segmentation].empty()) v.segmentation.insert(r[Col::segmentation]);
    double f = to_num(r[Col::dut_in_frame_bytes], -1);
    if (f >= 0 && r[Col::kind] == "throughput") v.in_frame[r[Col::dut]] = std::max(v.in_frame[r[Col::dut]], f);
  }
  std::set<int> sizes_set;
  for (const auto& [k, m] : v.t) {
    auto p = split(k);
    if (p[0] != "throughput") continue;
    v.groups[{p[1], static_cast<int>(to_num(p[2], 0))}].push_back(k);
    sizes_set.insert(cell_size(k));
  }
  v.sizes.assign(sizes_set.begin(), sizes_set.end());
  if (v.sizes.empty()) v.sizes = {64};
  v.have_ceiling = std::find(v.duts.begin(), v.duts.end(), kCeiling) != v.duts.end();
  std::istringstream ms(machine.str());
  for (std::string line; std::getline(ms, line);)
    if (line.rfind("line_rate_gbps: ", 0) == 0) v.line_rate = to_num(line.substr(16), 0);
  return v;
}

// The throughput charts (one per instance count) and their tables.
void throughput_sections(SweepView& v, Section* charts_out, std::vector<Section>* tables_out) {
  auto& t = v.t;
  const auto& duts = v.duts;
  auto& groups = v.groups;
  const auto& sizes = v.sizes;
  const bool have_ceiling = v.have_ceiling;
  const double line_rate = v.line_rate;
  Section charts;
  charts.title = "Throughput against size";
  charts.text = "All instances together, Gbit/s. One chart per instance count" +
                std::string(line_rate > 0  ? "; the dashed line is the line rate (" + f2(line_rate) +
                                                 " Gbit/s, the lab inventory's link_gbps)."
                            : have_ceiling ? "; the dashed line is the testpmd-io ceiling (its best cell), the "
                                             "namespace testbed's stand-in for the line rate."
                                           : ".");
  std::vector<Section> tables;
  for (auto& [g, keys] : groups) {
    std::sort(keys.begin(), keys.end(), by_size);
    Section s;
    s.level = 3;
    s.title = "Throughput, " + g.first + " x" + std::to_string(g.second) + " instances (Gbit/s)";
    s.header = {"size (B)"};
    for (const auto& d : duts) s.header.push_back(d);
    Series series;
    double ceiling = 0;
    for (const auto& k : keys) {
      int size = cell_size(k);
      std::vector<std::string> row = {std::to_string(size)};
      for (const auto& d : duts) {
        std::string instead;
        if (const Cell* found = find_cell(t[k], d, &instead); !found) {
          row.push_back(instead);
        } else {
          const Cell& c = *found;
          row.push_back(f2(c.gbps) + " [" + f2(c.gmin) + ".." + f2(c.gmax) + "]" +
                        (line_rate > 0 ? " " + std::to_string(std::lround(100 * c.gbps / line_rate)) + " %" : ""));
          series[d][size] = Point{c.gbps, c.gmin, c.gmax};
          if (d == kCeiling) ceiling = std::max(ceiling, c.gbps);
        }
      }
      s.rows.push_back(row);
    }
    charts.svgs.push_back(svg_chart("Throughput, " + g.first + " x" + std::to_string(g.second), "Gbit/s", sizes, duts,
                                    series, line_rate > 0 ? line_rate : ceiling,
                                    line_rate > 0 ? "line rate" : "testpmd-io ceiling"));
    tables.push_back(s);
  }

  *charts_out = charts;
  *tables_out = tables;
}

Section paired_section(const std::vector<Row>* rows, SweepView& v) {
  const auto& duts = v.duts;
  const bool have_ceiling = v.have_ceiling;
  // Paired ratios: repetition k of a DUT against repetition k of testpmd-io.
  // With interleaved rounds both ran in the same round, minutes apart, so the
  // ratio cancels most of the host's drift; the median over rounds is the figure.
  Section paired;
  if (have_ceiling) {
    std::map<std::string, std::map<std::string, std::map<std::string, const Row*>>> reps;  // key -> dut -> rep
    for (const auto& r : *rows)
      if (r[Col::repeat] != "summary" && r[Col::status] == "ok") reps[key(r)][r[Col::dut]][r[Col::repeat]] = &r;
    paired.title = "Paired against testpmd-io, round by round";
    paired.text = "Per cell, DUT / testpmd-io in each repetition (round), then the median [min..max] over rounds. "
                  "Throughput: higher is better; latency p50: lower is better (throughput cells: under that load).";
    paired.header = {"cell", "DUT", "throughput ratio", "latency p50 ratio", "rounds"};
    std::vector<std::string> pkeys;
    for (auto& [k, by_dut] : reps) pkeys.push_back(k);
    std::sort(pkeys.begin(), pkeys.end(), [&](const std::string& a, const std::string& b) {
      auto x = split(a), y = split(b);
      return std::make_tuple(x[0], x[1], to_num(x[2], 0), to_num(x[3], 0)) <
             std::make_tuple(y[0], y[1], to_num(y[2], 0), to_num(y[3], 0));
    });
    for (const auto& k : pkeys) {
      auto& by_dut = reps[k];
      auto base = by_dut.find(kCeiling);
      if (base == by_dut.end()) continue;
      auto p = split(k);
      std::string cell = p[0] == "latency" ? "latency " + p[3] + " B" : p[1] + " x" + p[2] + " " + p[3] + " B";
      for (const auto& d : duts) {
        if (d == kCeiling || !by_dut.count(d)) continue;
        std::vector<double> tr, lr;
        size_t npaired = 0;
        std::string why_missing;  // the first reason a round has no latency pair
        for (auto& [rep, row] : by_dut[d]) {
          auto b = base->second.find(rep);
          if (b == base->second.end()) continue;
          npaired++;
          double x = to_num((*row)[Col::throughput_gbps]), y = to_num((*b->second)[Col::throughput_gbps]);
          if (x > 0 && y > 0) tr.push_back(x / y);
          x = to_num((*row)[Col::latency_p50_us]);
          y = to_num((*b->second)[Col::latency_p50_us]);
          if (x > 0 && y > 0) lr.push_back(x / y);
          else if (why_missing.empty())
          {
            const std::string& e = !(x > 0) ? (*row)[Col::error] : (*b->second)[Col::error];
            why_missing = (!(x > 0) ? d : kCeiling) + ": " +
                          (e.empty() ? std::string("no latency figure, no reason recorded") : e);
          }
        }
        // Every ratio with the rounds it stands on; a missing pair says why.
        auto show = [&](std::vector<double> vals, const std::string& why) -> std::string {
          if (vals.empty() && why.empty()) return "not measured";
          std::string o;
          if (!vals.empty()) {
            Spread sp = spread(vals);
            char b[96];
            snprintf(b, sizeof b, "%.3f [%.2f..%.2f], %zu of %zu rounds", sp.median, sp.min, sp.max, vals.size(), npaired);
            o = b;
          }
          if (vals.size() < npaired && !why.empty()) o += (o.empty() ? "" : "; ") + std::string("missing: ") + why;
          return o;
        };
        paired.rows.push_back({cell, d, p[0] == "latency" ? "not measured (latency cell)" : show(tr, ""),
                               show(lr, why_missing), std::to_string(npaired)});
      }
    }
  }

  return paired;
}

Section reach_section(SweepView& v) {
  auto& t = v.t;
  const auto& duts = v.duts;
  auto& groups = v.groups;
  const bool have_ceiling = v.have_ceiling;
  const double line_rate = v.line_rate;
  // The smallest size that reaches 90% of the ceiling.
  Section reach;
  reach.title = line_rate > 0 ? "Smallest size reaching 90% of the line rate (" + f2(line_rate) + " Gbit/s)"
                              : "Smallest size reaching 90% of the testpmd-io ceiling";
  if (!have_ceiling && line_rate <= 0) {
    reach.text = "No testpmd-io rows in this run and no line rate in machine.txt.";
  } else {
    if (line_rate <= 0)
      reach.text = "Per cell, against testpmd-io's figure in that cell (the namespace testbed has no line rate).";
    reach.header = {"proto, instances"};
    for (const auto& d : duts) reach.header.push_back(d);
    for (auto& [g, keys] : groups) {
      std::vector<std::string> row = {g.first + " x" + std::to_string(g.second)};
      for (const auto& d : duts) {
        std::string found = "never";
        for (const auto& k : keys) {
          auto& m = t[k];
          if (!m.count(d) || !m[d].ok) continue;
          if (line_rate <= 0 && (!m.count(kCeiling) || !m[kCeiling].ok)) continue;
          if (m[d].gbps >= 0.9 * (line_rate > 0 ? line_rate : m[kCeiling].gbps)) {
            found = split(k)[3] + " B";
            break;
          }
        }
        row.push_back(found);
      }
      reach.rows.push_back(row);
    }
  }

  return reach;
}

Section latency_section(SweepView& v) {
  auto& t = v.t;
  const auto& duts = v.duts;
  // Latency without load.
  Section lat;
  lat.title = "Latency, sockperf ping-pong without load (µs, p50 / p99)";
  lat.header = {"size (B)"};
  for (const auto& d : duts) lat.header.push_back(d);
  std::vector<std::string> lkeys;
  for (const auto& [k, m] : t)
    if (split(k)[0] == "latency") lkeys.push_back(k);
  std::sort(lkeys.begin(), lkeys.end(), by_size);
  Series lseries;
  std::set<int> lsizes;
  for (const auto& k : lkeys) {
    std::vector<std::string> row = {split(k)[3]};
    for (const auto& d : duts) {
      std::string instead;
      if (const Cell* found = find_cell(t[k], d, &instead); !found) {
        row.push_back(instead);
      } else {
        const Cell& c = *found;
        row.push_back(f2(c.p50) + " / " + (c.p99 >= 0 ? f2(c.p99) : std::string("no p99")));
        lseries[d][cell_size(k)] = Point{c.p50, c.p50min, c.p50max};
        lsizes.insert(cell_size(k));
      }
    }
    lat.rows.push_back(row);
  }
  if (!lsizes.empty())
    lat.svgs.push_back(svg_chart("Latency p50 without load", "µs", std::vector<int>(lsizes.begin(), lsizes.end()), duts,
                                 lseries, 0, ""));

  return lat;
}

Section relative_section(SweepView& v) {
  auto& t = v.t;
  const auto& duts = v.duts;
  // Relative, in the blog's terms: ours against each peer.
  Section rel;
  if (std::find(duts.begin(), duts.end(), kSubject) != duts.end()) {
    rel.title = "dataplane against its peers";
    rel.text = "Geometric mean of dataplane / peer over the cells both have (throughput: higher is better; latency: "
               "lower is better).";
    rel.header = {"peer", "dataplane throughput", "dataplane latency p50"};
    for (const auto& peer : duts) {
      if (peer == kSubject) continue;
      double lt = 0, ll = 0;
      int nt = 0, nl = 0;
      for (auto& [k, m] : t) {
        if (!m.count(kSubject) || !m.count(peer) || !m[kSubject].ok || !m[peer].ok) continue;
        if (split(k)[0] == "throughput" && m[kSubject].gbps > 0 && m[peer].gbps > 0) {
          lt += std::log(m[kSubject].gbps / m[peer].gbps);
          nt++;
        }
        if (split(k)[0] == "latency" && m[kSubject].p50 > 0 && m[peer].p50 > 0) {
          ll += std::log(m[kSubject].p50 / m[peer].p50);
          nl++;
        }
      }
      // "12.3% higher" / "4.5% lower": the word carries the sign.
      auto pct = [](double x, const char* up, const char* down) { return f2(std::fabs(x)) + "% " + (x >= 0 ? up : down); };
      rel.rows.push_back({peer, nt ? pct((std::exp(lt / nt) - 1) * 100, "higher", "lower") : "no common cell",
                          nl ? pct((std::exp(ll / nl) - 1) * 100, "higher", "lower") : "no common cell"});
    }
  }
  return rel;
}

// "87 % [80..93]" / "1.05 [0.98..1.10]" / "+3.2 [-1.0..+5.5]": the median
// of `v` (times `scale`) with its range when there is more than one value.
std::string spread_text(const std::vector<double>& v, double scale, int prec, const char* suffix, bool sign = false) {
  Spread sp = spread(v);
  auto one = [&](double x) {
    char b[48];
    snprintf(b, sizeof b, sign ? "%+.*f" : "%.*f", prec, x * scale);
    return std::string(b);
  };
  std::string o = one(sp.median) + suffix;
  if (v.size() > 1) o += " [" + one(sp.min) + ".." + one(sp.max) + "]";
  return o;
}

// What the run's segmentation mode means, in one sentence, with the largest
// mean frame each DUT's links received in a throughput row.
std::string segmentation_sentence(const SweepView& v) {
  std::string o;
  if (v.segmentation.empty())
    o = "The rows do not say how the endpoints segmented TCP (a run before the segmentation column).";
  else if (v.segmentation.size() > 1)
    o = "The rows mix segmentation modes (wire and host): compare a DUT only with rows of its own mode.";
  else if (*v.segmentation.begin() == "wire")
    o = "Segmentation wire: every DUT was handed MTU-size frames, as a real wire carries them (what a kernel DUT merges "
        "with GRO afterwards is its own cost).";
  else
    o = "Segmentation host: the endpoints' TSO/GSO packets of up to 64 KB crossed into the DUT whole, so a kernel DUT "
        "paid no per-frame cost; no real wire allows this, and DPDK DUTs cannot take it.";
  std::string sizes;
  for (const auto& [d, f] : v.in_frame) sizes += (sizes.empty() ? "" : ", ") + d + " " + f2(f) + " B";
  if (!sizes.empty()) o += " Largest mean frame received on a DUT's links in a throughput row: " + sizes + ".";
  return o;
}

// The findings, first in the report: per instance count and DUT, over the
// sizes measured, throughput as a share of the line rate (or of testpmd-io's
// figure in the same cell), the dataplane against the DUT, and latency
// under that load; then latency without load.
std::vector<Section> findings_sections(SweepView& v) {
  const bool line = v.line_rate > 0;
  const bool have_dp = std::find(v.duts.begin(), v.duts.end(), kSubject) != v.duts.end();
  Section f;
  f.title = "Findings";
  f.text = "Per instance count, over the sizes measured (median [min..max] over sizes): each DUT's throughput as a "
           "share of " +
           std::string(line ? "the line rate (" + f2(v.line_rate) + " Gbit/s)" : "testpmd-io's throughput in the same cell") +
           ", the dataplane's throughput over the DUT's, and latency p50 under that load, dataplane minus the DUT. "
           "The sections after this one hold the evidence. " +
           segmentation_sentence(v);
  f.header = {"cell", "DUT", line ? "share of line rate" : "share of testpmd-io", "dataplane / DUT throughput",
              "latency p50 under load, dataplane - DUT (µs)"};
  for (auto& [g, keys] : v.groups)
    for (const auto& d : v.duts) {
      std::vector<double> share, ratio, dlat;
      std::string why;
      for (const auto& k : keys) {
        auto& m = v.t[k];
        if (!m.count(d)) continue;
        const Cell& c = m[d];
        if (!c.ok || c.gbps <= 0) {
          if (why.empty()) why = c.error.empty() ? "no figure" : c.error;
          continue;
        }
        const double ref = line ? v.line_rate : m.count(kCeiling) && m[kCeiling].ok ? m[kCeiling].gbps : 0;
        if (ref > 0) share.push_back(c.gbps / ref);
        if (have_dp && d != kSubject && m.count(kSubject) && m[kSubject].ok && m[kSubject].gbps > 0) {
          ratio.push_back(m[kSubject].gbps / c.gbps);
          if (m[kSubject].p50 > 0 && c.p50 > 0) dlat.push_back(m[kSubject].p50 - c.p50);
        }
      }
      // A DUT without a figure says why once (its rows carry the whole reason).
      if (share.empty() && !why.empty()) {
        f.rows.push_back({g.first + " x" + std::to_string(g.second), d,
                          "no figure: " + (why.size() > 160 ? why.substr(0, 160) + "..." : why), "-", "-"});
        continue;
      }
      const std::string peer = d == kSubject ? "-" : !have_dp ? "no dataplane rows" : "";
      f.rows.push_back({g.first + " x" + std::to_string(g.second), d,
                        share.empty() ? (line || v.have_ceiling ? "no cell with testpmd-io's figure"
                                                                : "no line rate or testpmd-io rows")
                                      : spread_text(share, 100, 0, " %"),
                        !peer.empty() ? peer : ratio.empty() ? "no common cell" : spread_text(ratio, 1, 2, ""),
                        !peer.empty() ? peer : dlat.empty() ? "no latency figures under load" : spread_text(dlat, 1, 1, "", true)});
    }
  Section idle;
  idle.level = 3;
  idle.title = "Findings: latency without load";
  idle.text = "sockperf ping-pong alone: p50 in µs, median [min..max] over sizes, and the dataplane minus the DUT.";
  idle.header = {"DUT", "latency p50 (µs)", "dataplane - DUT (µs)"};
  for (const auto& d : v.duts) {
    std::vector<double> p50, diff;
    for (auto& [k, m] : v.t) {
      if (split(k)[0] != "latency" || !m.count(d) || !m[d].ok || m[d].p50 <= 0) continue;
      p50.push_back(m[d].p50);
      if (have_dp && d != kSubject && m.count(kSubject) && m[kSubject].ok && m[kSubject].p50 > 0)
        diff.push_back(m[kSubject].p50 - m[d].p50);
    }
    if (p50.empty()) continue;
    idle.rows.push_back({d, spread_text(p50, 1, 1, ""),
                         d == kSubject ? "-" : diff.empty() ? "no common size" : spread_text(diff, 1, 1, "", true)});
  }
  std::vector<Section> out;
  if (!f.rows.empty()) out.push_back(f);
  if (!idle.rows.empty()) out.push_back(idle);
  return out;
}

// machine.txt with each distinct set of host facts printed once: blocks
// ("dut host of X (round N):" and the lines under it) whose lines are the
// same are merged under one heading naming them all.
std::string dedupe_host_facts(const std::string& machine) {
  struct Block {
    std::vector<std::string> heads;
    std::string body;
  };
  std::vector<std::variant<std::string, size_t>> order;  // a plain line, or a block's index
  std::vector<Block> blocks;
  std::map<std::string, size_t> by_body;
  std::istringstream in(machine);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  auto is_head = [](const std::string& l) {
    return !l.empty() && l.back() == ':' && l.find(" host") != std::string::npos && l.find(": ") == std::string::npos;
  };
  for (size_t i = 0; i < lines.size();) {
    if (!is_head(lines[i])) {
      order.emplace_back(lines[i++]);
      continue;
    }
    const std::string head = lines[i].substr(0, lines[i].size() - 1);
    i++;
    std::string body;
    while (i < lines.size() && !is_head(lines[i])) body += lines[i++] + "\n";
    auto it = by_body.find(body);
    if (it != by_body.end()) {
      blocks[it->second].heads.push_back(head);
      continue;
    }
    by_body[body] = blocks.size();
    order.emplace_back(blocks.size());
    blocks.push_back({{head}, body});
  }
  std::string out;
  for (const auto& o : order) {
    if (const auto* l = std::get_if<std::string>(&o)) {
      out += *l + "\n";
      continue;
    }
    const Block& b = blocks[std::get<size_t>(o)];
    std::string heads;
    for (const auto& h : b.heads) heads += (heads.empty() ? "" : "; ") + h;
    out += heads + (b.heads.size() > 1 ? " (the same facts):\n" : ":\n") + b.body;
  }
  return out;
}

void sweep_sections(const std::vector<Row>* rows, const std::stringstream& machine, std::vector<Section>& secs) {
  SweepView v = sweep_view(*rows, machine);
  Section charts;
  std::vector<Section> tables;
  throughput_sections(v, &charts, &tables);
  Section paired = paired_section(rows, v), rel = relative_section(v);
  // The order the post reads in: charts, the ratios at a glance, tables.
  if (!v.groups.empty()) secs.push_back(charts);
  if (!paired.rows.empty()) secs.push_back(paired);
  if (!rel.title.empty()) secs.push_back(rel);
  for (auto& s : tables) secs.push_back(s);
  secs.push_back(reach_section(v));
  secs.push_back(latency_section(v));
}

// RFC 2544 over memif (rfc2544.csv): zero-loss rate against frame size per
// DUT and K, ratios paired by round against testpmd-io and OVS-DPDK, churn,
// latency at 10/50/90 % of the zero-loss rate.
}  // namespace

sdn::Status write_report(const std::string& dir) {
  const bool have_sweep = access((dir + "/results.csv").c_str(), F_OK) == 0,
             have_rfc = access((dir + "/rfc2544.csv").c_str(), F_OK) == 0;
  if (!have_sweep && !have_rfc) return sdn::Status::error(dir + ": no results.csv or rfc2544.csv");
  std::ifstream mi(dir + "/machine.txt");
  std::stringstream machine;
  machine << mi.rdbuf();
  // The findings first, then the evidence, then the machines.
  std::vector<Section> findings, body;
  size_t errors = 0, total = 0;
  for (const char* file : {"results.csv", "rfc2544.csv"}) {
    if (access((dir + "/" + file).c_str(), F_OK) != 0) continue;
    auto rows = read_csv(dir + "/" + file);
    if (!rows) return rows.status();
    if (std::string(file) == "results.csv") {
      SweepView v = sweep_view(*rows, machine);
      for (auto& f : findings_sections(v)) findings.push_back(std::move(f));
      sweep_sections(&rows.value(), machine, body);
    } else {
      if (Section h = rfc2544_headline(*rows); !h.rows.empty()) {
        if (findings.empty()) h.level = 2;  // the report's first section
        findings.push_back(std::move(h));
      }
      rfc2544_sections(rows.value(), body);
    }
    for (const auto& r : *rows) errors += r[Col::status] != "ok" && r[Col::status] != "skipped";
    total += rows->size();
  }
  std::vector<Section> secs = std::move(findings);
  for (auto& b : body) secs.push_back(std::move(b));
  Section end;
  end.title = "Errors";
  end.text = "Rows with errors: " + std::to_string(errors) + " of " + std::to_string(total) + ".";
  secs.push_back(end);
  Section run;
  run.title = "Run";
  run.text = "Run directory: " + dir + ". Figures are medians over repetitions with [min..max] beside them (bars in the "
             "charts). A cell without a figure names its failure. The hosts as they were, each distinct set of facts "
             "once:";
  run.pre = machine.str().empty() ? "(no machine.txt)" : dedupe_host_facts(machine.str());
  secs.push_back(run);

  const std::string title = "Benchmark report";
  std::ofstream md(dir + "/report.md");
  md << to_markdown(title, secs);
  std::ofstream html(dir + "/report.html");
  html << to_html(title, secs);
  if (!md || !html) return sdn::Status::error(dir + ": cannot write the report");
  return {};
}

sdn::Result<std::vector<CellVerdict>> compare_cells(const std::string& old_csv, const std::string& new_csv,
                                                    double max_pct) {
  auto a = read_csv(old_csv);
  if (!a) return a.status();
  auto b = read_csv(new_csv);
  if (!b) return b.status();
  auto name = [](Row& r) {
    return r[Col::kind] + " " + r[Col::proto] + " x" + r[Col::instances] + " " + r[Col::size_bytes] + "B";
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
    if (r[Col::repeat] == "summary") {
      fresh[cell_key(r)] = r;
      fresh_duts[r[Col::dut]]++;
    }
  std::vector<CellVerdict> out;
  if (fresh.empty()) {
    CellVerdict v{"run", "summary rows", {"MISSING " + new_csv + ": no summary rows (an empty or unfinished run)"}, {}};
    return std::vector<CellVerdict>{v};
  }
  const double lo = 1 - max_pct / 100, hi = 1 + max_pct / 100;
  for (auto& r : *a) {
    if (r[Col::repeat] != "summary" || r[Col::status] != "ok") continue;
    CellVerdict v;
    v.dut = r[Col::dut];
    v.cell = name(r);
    const std::string full = v.dut + " " + v.cell;
    auto it = fresh.find(cell_key(r));
    if (!fresh_duts.count(v.dut)) {
      v.dut_gone = true;
      v.problems.push_back("MISSING dut " + v.dut + ": none of its cells is in NEW");
    } else if (it == fresh.end()) {
      v.problems.push_back("MISSING " + full + ": not in NEW");
    } else if (Row& n = it->second; n[Col::status] != "ok") {
      v.problems.push_back("FAILING " + full + ": " + n[Col::status] + ": " + n[Col::error]);
    } else {
      // One figure of the cell, OLD against NEW: `worse` is +1 when a higher
      // value is the regression (latency), -1 when a lower one is (throughput).
      auto figure = [&](Col c, const char* label, const char* unit, int worse, double limit) {
        double o, nv;
        if (!value(r[c], &o)) return;
        if (!value(n[c], &nv)) {
          v.problems.push_back("MISSING " + full + ": " + std::string(col_name(c)) + " is '" + n[c] + "' in NEW");
          return;
        }
        const double ratio = o > 0 ? nv / o : 1;
        v.compared.push_back(std::string(label) + " " + f2(o) + " -> " + f2(nv) + " " + unit + " (ratio " +
                             util::fmt(ratio, 3) + (worse < 0 ? ", fails below " : ", fails above ") +
                             util::fmt(limit, 3) + ")");
        const double pct = (nv - o) / (o > 0 ? o : 1) * 100 * worse;
        if (o > 0 && pct > max_pct)
          v.problems.push_back("REGRESSION " + full + ": " + label + " " + f2(o) + " -> " + f2(nv) + " " + unit +
                               " (" + f2(pct) + (worse < 0 ? "% lower)" : "% higher)"));
      };
      figure(Col::throughput_gbps, "throughput", "Gbit/s", -1, lo);
      if (r[Col::kind] == "latency") figure(Col::latency_p50_us, "latency p50", "us", +1, hi);
      if (v.compared.empty() && v.problems.empty()) v.compared.push_back("no figure in OLD to compare (its cell is ok)");
    }
    out.push_back(std::move(v));
  }
  return out;
}

sdn::Result<std::vector<std::string>> compare(const std::string& old_csv, const std::string& new_csv, double max_pct) {
  auto cells = compare_cells(old_csv, new_csv, max_pct);
  if (!cells) return cells.status();
  std::vector<std::string> out;
  std::map<std::string, int> gone;  // DUTs of OLD with no cell in NEW: one line each
  for (const auto& c : *cells) {
    if (c.dut_gone) {
      gone[c.dut]++;
      continue;
    }
    out.insert(out.end(), c.problems.begin(), c.problems.end());
  }
  for (auto& [dut, n] : gone)
    out.push_back("MISSING dut " + dut + ": none of its " + std::to_string(n) + " cells is in NEW");
  return out;
}

namespace {
// Text for an XML attribute or element: the five entities escaped, control
// characters XML 1.0 cannot carry dropped.
std::string xml_text(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (c >= 0x20 || c == '\t' || c == '\n') o += static_cast<char>(c);
    }
  }
  return o;
}
std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (const auto& x : v) o += (o.empty() ? "" : sep) + x;
  return o;
}
}  // namespace

std::string junit_xml(const std::vector<CellVerdict>& cells, const std::string& old_csv, const std::string& new_csv,
                      double max_pct) {
  size_t failures = 0;
  for (const auto& c : cells) failures += !c.problems.empty();
  const std::string counts =
      "tests=\"" + std::to_string(cells.size()) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\"";
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"harness compare\" " + counts + ">\n";
  x += "  <testsuite name=\"" + xml_text("harness compare " + old_csv + " " + new_csv) + "\" " + counts +
       " skipped=\"0\" time=\"0\">\n";
  x += "    <properties>\n      <property name=\"old\" value=\"" + xml_text(old_csv) + "\"/>\n";
  x += "      <property name=\"new\" value=\"" + xml_text(new_csv) + "\"/>\n";
  x += "      <property name=\"max_regression_pct\" value=\"" + util::fmt(max_pct, 3) + "\"/>\n    </properties>\n";
  for (const auto& c : cells) {
    x += "    <testcase classname=\"" + xml_text(c.dut) + "\" name=\"" + xml_text(c.cell) + "\" time=\"0\">\n";
    if (!c.problems.empty())
      x += "      <failure type=\"regression\" message=\"" + xml_text(join(c.problems, "; ")) + "\">" +
           xml_text(join(c.problems, "\n") + (c.compared.empty() ? "" : "\n" + join(c.compared, "\n"))) +
           "</failure>\n";
    if (!c.compared.empty()) x += "      <system-out>" + xml_text(join(c.compared, "\n")) + "</system-out>\n";
    x += "    </testcase>\n";
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace harness
