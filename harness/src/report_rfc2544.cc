// `harness report`'s RFC 2544 part: zero-loss rates against frame size, the
// pairs against the peers, the generator's headroom, churn and latency.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "harness/profiles.h"
#include "report_render.h"

namespace harness::report_detail {

namespace {

// K with its protocol ("100000", "100000 udp").
using Kp = std::pair<std::string, int>;
std::string kp_label(const Kp& k) { return std::to_string(k.second) + (k.first == "tcp" ? "" : " " + k.first); }
double ok_num(const Row* r, Col c) { return (*r)[Col::status] == "ok" ? to_num((*r)[c], -1) : -1; }

// Median [min..max] of a column over the rounds, or the first error.
std::string round_summary(const std::map<std::string, const Row*>& by_round, Col c, int prec = 2) {
  std::vector<double> v;
  std::string err;
  for (auto& [round, r] : by_round) {
    double x = ok_num(r, c);
    if (x >= 0) v.push_back(x);
    else if (err.empty()) err = (*r)[Col::status] == "ok" ? (*r)[c] : (*r)[Col::status] + ": " + (*r)[Col::error];
  }
  if (v.empty()) return err.empty() ? "not measured" : err;
  Spread sp = spread(v);
  auto f = [&](double x) { return prec == 0 ? std::to_string(std::llround(x)) : f2(x); };
  std::string o = f(sp.median);
  if (v.size() > 1) o += " [" + f(sp.min) + ".." + f(sp.max) + "]";
  if (v.size() < by_round.size()) o += " (" + std::to_string(v.size()) + " of " + std::to_string(by_round.size()) + " rounds)";
  return o;
}

// The RFC 2544 rows by cell: (conns, frame, dut) -> round -> row.
struct RfcView {
  std::vector<std::string> duts;
  std::vector<int> frames;
  std::set<Kp> conns_set;
  std::map<std::tuple<Kp, int, std::string>, std::map<std::string, const Row*>> cells;
  std::map<int, std::vector<double>> ceiling;  // frame -> generator ceiling (Mpps)
  // fn(conns, frame, dut, rounds) for each cell that ran, in table order.
  template <typename F>
  void each_cell(F fn) const {
    for (const Kp& k : conns_set)
      for (int f : frames)
        for (const auto& d : duts)
          if (auto it = cells.find({k, f, d}); it != cells.end()) fn(k, f, d, it->second);
  }
};

RfcView rfc_view(const std::vector<Row>& rows) {
  RfcView v;
  std::set<int> frames_set;
  for (const auto& r : rows) {
    // A scenario other than the firewall is a column of its own.
    const std::string d = r[Col::scenario].empty() || r[Col::scenario] == name(ScenarioKind::kFirewall)
                              ? r[Col::dut]
                              : r[Col::dut] + " " + r[Col::scenario];
    if (std::find(v.duts.begin(), v.duts.end(), d) == v.duts.end()) v.duts.push_back(d);
    const int f = static_cast<int>(to_num(r[Col::frame_bytes], 0));
    const Kp k{r[Col::proto].empty() ? "tcp" : r[Col::proto], static_cast<int>(to_num(r[Col::conns], 0))};
    frames_set.insert(f);
    v.conns_set.insert(k);
    v.cells[{k, f, d}][r[Col::repeat]] = &r;
    if (double c = to_num(r[Col::generator_ceiling_mpps], 0); c > 0) v.ceiling[f].push_back(c);
  }
  v.frames.assign(frames_set.begin(), frames_set.end());
  return v;
}

void rfc_rate_sections(RfcView& view, Section* charts_out, std::vector<Section>* tables_out) {
  auto& [duts, frames, conns_set, cells, ceiling] = view;
  Section charts;
  charts.title = "RFC 2544 over memif: zero-loss rate against frame size";
  charts.text = "harness-gen against each DUT over net_memif, K live TCP connections through the same stateful "
                "firewall. Mpps of both directions together; bars are min..max over rounds; the dashed line is the "
                "generator's own ceiling at the smallest frame (against testpmd rxonly; median over rounds).";
  std::vector<Section> tables;
  for (const Kp& k : conns_set) {
    Series series;
    Section t;
    t.level = 3;
    t.title = "Zero-loss rate, " + kp_label(k) + " connections (Mpps; Gbit/s at the frame size)";
    t.header = {"frame (B)"};
    for (const auto& d : duts) t.header.push_back(d);
    t.header.push_back("generator ceiling (Mpps)");
    for (int f : frames) {
      std::vector<std::string> row = {std::to_string(f)};
      for (const auto& d : duts) {
        auto it = cells.find({k, f, d});
        if (it == cells.end()) {
          row.push_back("not run");
          continue;
        }
        std::vector<double> v;
        for (auto& [round, r] : it->second)
          if (double x = ok_num(r, Col::zero_loss_mpps); x >= 0) v.push_back(x);
        if (!v.empty()) {
          Spread sp = spread(v);
          series[d][f] = Point{sp.median, sp.min, sp.max};
        }
        std::string cell = round_summary(it->second, Col::zero_loss_mpps);
        if (!v.empty()) cell += "; " + round_summary(it->second, Col::zero_loss_gbps) + " Gbit/s";
        row.push_back(cell);
      }
      row.push_back(ceiling.count(f) ? f2(spread(ceiling[f]).median) : "unknown");
      t.rows.push_back(row);
    }
    const double ref = frames.empty() || !ceiling.count(frames.front()) ? 0 : spread(ceiling[frames.front()]).median;
    charts.svgs.push_back(svg_chart("Zero-loss rate, K = " + kp_label(k), "Mpps", frames, duts, series, ref,
                                    "generator ceiling"));
    tables.push_back(t);
  }

  *charts_out = charts;
  *tables_out = tables;
}

Section rfc_paired_section(RfcView& view) {
  auto& [duts, frames, conns_set, cells, ceiling] = view;
  // Paired ratios: round r of a DUT against round r of the peer.
  Section paired;
  paired.title = "RFC 2544: paired against testpmd-io and OVS-DPDK, round by round";
  paired.text = "Per cell, DUT / peer in each round (both ran in the same round, minutes apart), then the median "
                "[min..max] over rounds: zero-loss rate and established connections per second under churn.";
  paired.header = {"conns", "frame (B)", "DUT", "peer", "zero-loss ratio", "churn cps ratio"};
  for (const Kp& k : conns_set)
    for (int f : frames)
      for (const auto& d : duts)
        for (const std::string& peer : {kCeiling, kOvsDpdk}) {
          if (d == peer || d == kCeiling || !cells.count({k, f, d}) || !cells.count({k, f, peer})) continue;
          auto& mine = cells[{k, f, d}];
          auto& theirs = cells[{k, f, peer}];
          auto ratio = [&](Col c) -> std::string {
            std::vector<double> v;
            std::string why;
            for (auto& [round, r] : mine) {
              auto o = theirs.find(round);
              if (o == theirs.end()) continue;
              double x = ok_num(r, c), y = ok_num(o->second, c);
              if (x > 0 && y > 0) v.push_back(x / y);
              else if (why.empty())
                why = x > 0 ? std::string(peer) + ": " + ((*o->second)[Col::status] == "ok" ? (*o->second)[c]
                                                                                             : (*o->second)[Col::error])
                            : d + ": " + ((*r)[Col::status] == "ok" ? (*r)[c] : (*r)[Col::error]);
            }
            if (v.empty()) return why.empty() ? "no common round" : "missing: " + why;
            Spread sp = spread(v);
            return f2(sp.median) + " [" + f2(sp.min) + ".." + f2(sp.max) + "], " + std::to_string(v.size()) + " rounds";
          };
          paired.rows.push_back({kp_label(k), std::to_string(f), d, peer, ratio(Col::zero_loss_mpps),
                                 std::string(peer) == kCeiling ? "n/a: testpmd-io tracks nothing"
                                                                   : ratio(Col::cps_established)});
        }
  return paired;
}

Section rfc_headroom_section(const RfcView& view) {
  // The generator's headroom: its ceiling in a round over a DUT's zero-loss
  // rate in the same round. Below 1.5 the generator, not the DUT, may be
  // what the figure shows.
  Section headroom;
  headroom.title = "RFC 2544: the generator's headroom (its ceiling / the DUT's zero-loss rate, same round)";
  headroom.header = {"conns", "frame (B)", "DUT", "ceiling / zero-loss"};
  view.each_cell([&](const Kp& k, int f, const std::string& d, const std::map<std::string, const Row*>& rounds) {
    std::vector<double> v;
    for (auto& [round, r] : rounds) {
      double c = to_num((*r)[Col::generator_ceiling_mpps], -1), z = ok_num(r, Col::zero_loss_mpps);
      if (c > 0 && z > 0) v.push_back(c / z);
    }
    if (v.empty()) return;
    Spread sp = spread(v);
    headroom.rows.push_back({kp_label(k), std::to_string(f), d,
                             f2(sp.median) + " [" + f2(sp.min) + ".." + f2(sp.max) + "], " + std::to_string(v.size()) +
                                 " rounds"});
  });
  return headroom;
}

void rfc_churn_latency_sections(const RfcView& view, Section* churn, Section* lat) {
  churn->title = "RFC 2544: churn (connections opened and closed per second beside the K)";
  churn->header = {"conns", "frame (B)", "DUT", "established/s", "closed/s", "failed", "set-up of the K (/s)", "tracker count"};
  lat->title = "RFC 2544: latency at 10 / 50 / 90 % of the zero-loss rate (µs, p50 / p99 / p99.9)";
  lat->header = {"conns", "frame (B)", "DUT", "10 %", "50 %", "90 %"};
  view.each_cell([&](const Kp& k, int f, const std::string& d, const std::map<std::string, const Row*>& rounds) {
    churn->rows.push_back({kp_label(k), std::to_string(f), d, round_summary(rounds, Col::cps_established, 0),
                           round_summary(rounds, Col::cps_closed, 0), round_summary(rounds, Col::cps_failed, 0),
                           round_summary(rounds, Col::setup_per_s, 0), round_summary(rounds, Col::ct_entries, 0)});
    std::vector<std::string> row = {kp_label(k), std::to_string(f), d};
    for (const char* pct : {"10", "50", "90"}) {
      std::string c = std::string("lat") + pct + "_";
      row.push_back(round_summary(rounds, col(c + "p50_us")) + " / " + round_summary(rounds, col(c + "p99_us")) + " / " +
                    round_summary(rounds, col(c + "p999_us")));
    }
    lat->rows.push_back(row);
  });
}

}  // namespace

Section rfc2544_headline(const std::vector<Row>& rows) {
  RfcView v = rfc_view(rows);
  Section h;
  h.level = 3;
  h.title = "Findings: RFC 2544 over memif";
  h.text = "The zero-loss rate at the smallest frame, median [min..max] over rounds, and the dataplane's over the "
           "DUT's in the same round.";
  h.header = {"conns", "frame (B)", "DUT", "zero-loss Mpps", "dataplane / DUT"};
  if (v.frames.empty()) return h;
  const int f = v.frames.front();
  for (const Kp& k : v.conns_set)
    for (const auto& d : v.duts) {
      auto it = v.cells.find({k, f, d});
      if (it == v.cells.end()) continue;
      std::string ratio = "-";
      auto dp = v.cells.find({k, f, kSubject});
      if (d != kSubject && dp != v.cells.end()) {
        std::vector<double> r;
        for (auto& [round, row] : it->second) {
          auto o = dp->second.find(round);
          if (o == dp->second.end()) continue;
          const double x = ok_num(o->second, Col::zero_loss_mpps), y = ok_num(row, Col::zero_loss_mpps);
          if (x > 0 && y > 0) r.push_back(x / y);
        }
        if (r.empty()) {
          ratio = "no round with both figures";
        } else {
          Spread sp = spread(r);
          ratio = f2(sp.median) + (r.size() > 1 ? " [" + f2(sp.min) + ".." + f2(sp.max) + "]" : "") + ", " +
                  std::to_string(r.size()) + " rounds";
        }
      } else if (d != kSubject) {
        ratio = "no dataplane rows";
      }
      h.rows.push_back({kp_label(k), std::to_string(f), d, round_summary(it->second, Col::zero_loss_mpps), ratio});
    }
  return h;
}

void rfc2544_sections(const std::vector<Row>& rows, std::vector<Section>& secs) {
  RfcView v = rfc_view(rows);
  Section charts, churn, lat;
  std::vector<Section> tables;
  rfc_rate_sections(v, &charts, &tables);
  Section paired = rfc_paired_section(v), headroom = rfc_headroom_section(v);
  rfc_churn_latency_sections(v, &churn, &lat);
  secs.push_back(charts);
  if (!paired.rows.empty()) secs.push_back(paired);
  if (!headroom.rows.empty()) secs.push_back(headroom);
  for (auto& t : tables) secs.push_back(t);
  secs.push_back(churn);
  secs.push_back(lat);
}

}  // namespace harness::report_detail
