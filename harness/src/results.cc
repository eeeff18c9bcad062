#include "harness/results.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

namespace harness {

namespace {
constexpr std::array<std::string_view, kColumnCount> kNames = {
#define HARNESS_COLUMN_NAME(n, t, u) #n,
    HARNESS_COLUMNS(HARNESS_COLUMN_NAME)
#undef HARNESS_COLUMN_NAME
};
constexpr std::array<ColType, kColumnCount> kTypes = {
#define HARNESS_COLUMN_TYPE(n, t, u) ColType::t,
    HARNESS_COLUMNS(HARNESS_COLUMN_TYPE)
#undef HARNESS_COLUMN_TYPE
};
constexpr std::array<std::string_view, kColumnCount> kUnits = {
#define HARNESS_COLUMN_UNIT(n, t, u) u,
    HARNESS_COLUMNS(HARNESS_COLUMN_UNIT)
#undef HARNESS_COLUMN_UNIT
};
constexpr std::string_view kJsonFormat = "harness-results/1";
}  // namespace

std::string_view col_name(Col c) { return kNames[static_cast<size_t>(c)]; }
ColType col_type(Col c) { return kTypes[static_cast<size_t>(c)]; }
std::string_view col_unit(Col c) { return kUnits[static_cast<size_t>(c)]; }

std::optional<Col> col_named(std::string_view name) {
  for (size_t i = 0; i < kColumnCount; i++)
    if (kNames[i] == name) return static_cast<Col>(i);
  return std::nullopt;
}

Col col(std::string_view name) {
  if (auto c = col_named(name)) return *c;
  fprintf(stderr, "harness: internal error: no column named '%.*s'\n", static_cast<int>(name.size()), name.data());
  abort();
}

std::vector<Col> Row::columns() const {
  std::vector<Col> out;
  for (size_t k = 0; k < kColumnCount; k++)
    if (has_.test(k)) out.push_back(static_cast<Col>(k));
  return out;
}

const std::vector<Col>& csv_columns() {
  static const std::vector<Col> c = {
      Col::timestamp, Col::git_rev, Col::dut, Col::dut_version, Col::kind, Col::proto,
      Col::instances, Col::size_bytes, Col::repeat, Col::throughput_gbps, Col::throughput_gbps_min, Col::throughput_gbps_max,
      Col::throughput_min_instance_gbps, Col::throughput_max_instance_gbps, Col::retransmits, Col::cpu_host_pct, Col::rtt_us, Col::lost_percent,
      Col::latency_p50_us, Col::latency_p50_us_min, Col::latency_p50_us_max, Col::latency_p90_us, Col::latency_p99_us, Col::latency_p99_us_min,
      Col::latency_p99_us_max, Col::latency_p999_us, Col::latency_max_us, Col::latency_dropped, Col::ct_entries, Col::offloaded_entries,
      Col::dut_drops, Col::dut_drops_detail, Col::segmentation, Col::dut_in_frame_bytes, Col::dut_out_frame_bytes,
      Col::background_conns, Col::background_setup_per_s, Col::scenario, Col::overlay_check, Col::status, Col::error};
  return c;
}

const std::vector<Col>& rfc2544_columns() {
  static const std::vector<Col> c = {
      Col::timestamp, Col::git_rev, Col::dut, Col::dut_version, Col::scenario, Col::frame_bytes, Col::conns,
      Col::proto, Col::repeat, Col::zero_loss_mpps, Col::zero_loss_gbps, Col::max_fwd_mpps, Col::offered_at_max_mpps,
      Col::loss_at_max, Col::lost_at_max_to_server, Col::lost_at_max_to_client, Col::dut_drops_at_max, Col::gen_drops_at_max, Col::limited_by,
      Col::retried, Col::zero_loss_trial_lost, Col::zero_loss_trial_dut_drops, Col::zero_loss_trial_gen_drops, Col::lat10_offered_mpps, Col::lat10_lost,
      Col::lat10_p50_us, Col::lat10_p99_us, Col::lat10_p999_us, Col::lat50_offered_mpps, Col::lat50_lost, Col::lat50_p50_us,
      Col::lat50_p99_us, Col::lat50_p999_us, Col::lat90_offered_mpps, Col::lat90_lost, Col::lat90_p50_us, Col::lat90_p99_us,
      Col::lat90_p999_us, Col::cps_established, Col::cps_closed, Col::cps_failed, Col::setup_per_s, Col::generator_ceiling_mpps,
      Col::ct_entries, Col::overlay_check, Col::status, Col::error};
  return c;
}

const std::vector<Col>& rfc2544_trial_columns() {
  static const std::vector<Col> c = {
      Col::dut, Col::scenario, Col::frame_bytes, Col::conns, Col::proto, Col::repeat, Col::trial,
      Col::kind, Col::target_mpps, Col::offered_mpps, Col::fwd_mpps, Col::sent, Col::received,
      Col::lost, Col::late, Col::tx_full, Col::dut_drops, Col::gen_drops, Col::generator_dropped,
      Col::drain_ms, Col::dut_cpu_wait_pct, Col::gen_cpu_wait_pct};
  return c;
}

std::string csv_header(const std::vector<Col>& columns) {
  std::string h;
  for (Col c : columns) h += (h.empty() ? "" : ",") + std::string(col_name(c));
  return h;
}

std::string_view table_name(const std::vector<Col>& columns) {
  if (&columns == &rfc2544_columns()) return "rfc2544";
  if (&columns == &rfc2544_trial_columns()) return "rfc2544-trials";
  return "results";
}

std::string json_path(const std::string& csv_path) {
  const std::string ext = ".csv";
  if (csv_path.size() > ext.size() && csv_path.compare(csv_path.size() - ext.size(), ext.size(), ext) == 0)
    return csv_path.substr(0, csv_path.size() - ext.size()) + ".json";
  return csv_path + ".json";
}

namespace {
// A cell's figure: the whole text a finite number (an integer column's
// integral text as an integer), or nothing.
std::optional<nlohmann::json> figure(ColType t, const std::string& v) {
  if (v.empty() || isspace(static_cast<unsigned char>(v[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  if (t == ColType::I) {
    long long i = strtoll(v.c_str(), &end, 10);
    if (*end == 0 && errno == 0) return nlohmann::json(i);
  }
  errno = 0;
  double d = strtod(v.c_str(), &end);
  if (*end != 0 || errno != 0 || !std::isfinite(d)) return std::nullopt;
  return nlohmann::json(d);
}
}  // namespace

std::string row_json(const Row& r, const std::vector<Col>& columns) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object(), reasons = nlohmann::ordered_json::object();
  for (Col c : columns) {
    if (!r.has(c) || r[c].empty()) continue;
    const std::string name(col_name(c));
    if (col_type(c) == ColType::S) {
      o[name] = r[c];
    } else if (auto f = figure(col_type(c), r[c])) {
      o[name] = *f;
    } else {
      o[name] = nullptr;
      reasons[name] = r[c];
    }
  }
  if (!reasons.empty()) o["reasons"] = reasons;
  return o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string results_json_schema() {
  using J = nlohmann::ordered_json;
  auto row_def = [](const std::vector<Col>& columns) {
    J props = J::object(), required = J::array();
    for (Col c : columns) {
      const std::string name(col_name(c));
      J p = J::object();
      switch (col_type(c)) {
        case ColType::S: p["type"] = "string"; break;
        case ColType::I: p["type"] = J::array({"integer", "null"}); break;
        case ColType::N: p["type"] = J::array({"number", "null"}); break;
      }
      if (col_type(c) != ColType::S) {
        p["unit"] = std::string(col_unit(c));
        p["description"] = "in " + std::string(col_unit(c)) + "; null when the CSV cell is a reason (in reasons)";
      }
      props[name] = p;
    }
    for (Col c : {Col::dut, Col::status})
      if (std::find(columns.begin(), columns.end(), c) != columns.end()) required.push_back(std::string(col_name(c)));
    props["reasons"] = J{{"type", "object"},
                         {"description", "why a numeric cell has no figure, by column (the CSV cell's text)"},
                         {"additionalProperties", J{{"type", "string"}}}};
    J d = J{{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
    if (!required.empty()) d["required"] = required;
    return d;
  };
  J variants = J::array(), defs = J::object();
  for (const auto* cols : {&csv_columns(), &rfc2544_columns(), &rfc2544_trial_columns()}) {
    const std::string t(table_name(*cols));
    defs[t + "_row"] = row_def(*cols);
    variants.push_back(J{{"properties",
                          J{{"table", J{{"const", t}}},
                            {"rows", J{{"type", "array"}, {"items", J{{"$ref", "#/$defs/" + t + "_row"}}}}}}}});
  }
  J s = J{{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "harness results: results.json, rfc2544.json, rfc2544-trials.json (beside the CSVs of a run)"},
          {"type", "object"},
          {"required", J::array({"format", "table", "rows"})},
          {"properties", J{{"format", J{{"const", std::string(kJsonFormat)}}},
                           {"table", J{{"enum", J::array({"results", "rfc2544", "rfc2544-trials"})}}},
                           {"rows", J{{"type", "array"}}}}},
          {"additionalProperties", false},
          {"oneOf", variants},
          {"$defs", defs}};
  return s.dump(2);
}

std::string cell_key(const Row& r) {
  return r[Col::dut] + "|" + r[Col::kind] + "|" + r[Col::proto] + "|" + r[Col::instances] + "|" + r[Col::size_bytes];
}

std::string csv_escape(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string o = "\"";
  for (char c : v) {
    if (c == '"') o += '"';
    o += c == '\n' || c == '\r' ? ' ' : c;
  }
  return o + "\"";
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); i++) {
    char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        i++;
      } else if (c == '"') {
        q = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

CsvWriter::~CsvWriter() {
  if (f_) fclose(f_);
}

sdn::Status CsvWriter::open(const std::string& path, const std::vector<Col>& columns) {
  path_ = path;
  cols_ = &columns;
  const std::string want = csv_header(columns);
  // An existing file: the same columns, and whole lines only. A run killed
  // mid-row leaves a cut last line (read_csv skips it): it goes, so that the
  // next row starts on its own line.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0) {
    std::ifstream in(path, std::ios::binary);
    std::string header;
    std::getline(in, header);
    if (header != want)
      return sdn::Status::error(path + ": its columns are not this version's (" + std::to_string(csv_split(header).size()) +
                                " columns, this version writes " + std::to_string(cols_->size()) +
                                "); write into a new directory, or resume with the version that began it");
    in.clear();
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uintmax_t>(in.tellg());
    std::string all(size, '\0');
    in.seekg(0);
    in.read(all.data(), static_cast<std::streamsize>(size));
    if (!all.empty() && all.back() != '\n') {
      const size_t keep = all.rfind('\n') + 1;
      std::filesystem::resize_file(path, keep, ec);
      if (ec) return sdn::Status::error(path + ": dropping a cut last row: " + ec.message());
      fprintf(stderr, "harness: %s: dropped a cut last row (%zu bytes) of a run that was killed\n", path.c_str(),
              all.size() - keep);
    }
  }
  f_ = fopen(path.c_str(), "a");
  if (!f_) return sdn::Status::error(path + ": " + strerror(errno));
  if (ftell(f_) == 0) {
    fprintf(f_, "%s\n", want.c_str());
    fflush(f_);
  } else {
    auto rows = read_csv(path);
    if (!rows) return rows.status();
    for (const auto& r : *rows) json_rows_.push_back(row_json(r, columns));
  }
  return write_json();
}

sdn::Status CsvWriter::write_json() const {
  const std::string out = json_path(path_), tmp = out + ".tmp";
  std::string text = "{\"format\": \"" + std::string(kJsonFormat) + "\", \"table\": \"" +
                     std::string(table_name(*cols_)) + "\", \"rows\": [";
  for (size_t i = 0; i < json_rows_.size(); i++) text += (i ? ",\n  " : "\n  ") + json_rows_[i];
  text += json_rows_.empty() ? "]}\n" : "\n]}\n";
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f) return sdn::Status::error(tmp + ": " + strerror(errno));
  const bool ok = fwrite(text.data(), 1, text.size(), f) == text.size() && fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int err = errno;
  if (fclose(f) != 0 || !ok) {
    unlink(tmp.c_str());
    return sdn::Status::error(tmp + ": write: " + strerror(ok ? errno : err));
  }
  if (rename(tmp.c_str(), out.c_str()) != 0) return sdn::Status::error(out + ": rename: " + strerror(errno));
  return {};
}

sdn::Status CsvWriter::write(const Row& r) {
  for (Col k : r.columns())
    if (std::find(cols_->begin(), cols_->end(), k) == cols_->end())
      return sdn::Status::error("row has a column the schema lacks: " + std::string(col_name(k)));
  std::string line;
  bool first = true;
  for (Col c : *cols_) {
    line += (first ? "" : ",") + csv_escape(r[c]);
    first = false;
  }
  if (fprintf(f_, "%s\n", line.c_str()) < 0 || fflush(f_) != 0)
    return sdn::Status::error(path_ + ": write: " + strerror(errno));
  fsync(fileno(f_));
  json_rows_.push_back(row_json(r, *cols_));
  return write_json();
}

sdn::Result<std::vector<Row>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return sdn::Status::error(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) return sdn::Status::error(path + ":1: empty file");
  std::vector<Col> header;
  for (const auto& w : csv_split(line)) {
    auto c = col_named(w);
    if (!c) return sdn::Status::error(path + ":1: column '" + w + "' is in no results schema of this version");
    header.push_back(*c);
  }
  std::vector<Row> rows;
  int n = 1;
  while (std::getline(in, line)) {
    n++;
    if (line.empty()) continue;
    auto f = csv_split(line);
    if (f.size() != header.size()) {
      // A run killed mid-write leaves at most one short last line; anything else is corrupt.
      if (in.peek() == EOF) break;
      return sdn::Status::error(path + ":" + std::to_string(n) + ": " + std::to_string(f.size()) + " fields, header has " +
                                std::to_string(header.size()));
    }
    Row r;
    for (size_t i = 0; i < f.size(); i++) r[header[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

double to_num(const std::string& s, double fallback) {
  if (s.empty()) return fallback;
  char* end;
  double v = strtod(s.c_str(), &end);
  return *end ? fallback : v;
}

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

}  // namespace harness
