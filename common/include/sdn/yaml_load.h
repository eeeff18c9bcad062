// One YAML document from text or a file, refusing what would make any walk
// of the node unbounded. yaml-cpp shares an aliased node instead of copying
// it: an alias inside the node it names (`x: &a [*a]`) makes a cycle that
// every recursive walk follows until the stack runs out, and nested aliases
// ("billion laughs") expand to exponentially many nodes. Both are found from
// the parser's events before a node exists.
#pragma once

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace sdn {

// Nodes that aliases may add to a document, in all. A config names each
// setting once; a template reused a few thousand times stays far below.
inline constexpr uint64_t kYamlMaxAliasNodes = 100000;
// Config files are small; anything bigger is not one (and /dev/zero never ends).
inline constexpr uintmax_t kYamlMaxFileBytes = 16u << 20;

namespace yaml_detail {

struct Refused {
  std::string why;
  int line;
};

class AliasBound final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t a) override { leaf(a); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t a, const std::string&) override { leaf(a); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    if (open_.count(a)) throw Refused{"an alias inside the node it refers to (a cycle)", m.line + 1};
    const uint64_t n = size_[a];
    aliased_ += n;
    if (aliased_ > kYamlMaxAliasNodes)
      throw Refused{"aliases expand to more than " + std::to_string(kYamlMaxAliasNodes) + " nodes", m.line + 1};
    add(n);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(a);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(a);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    uint64_t nodes;
  };
  void add(uint64_t n) {
    if (!stack_.empty()) stack_.back().nodes += n;
  }
  void leaf(YAML::anchor_t a) {
    if (a) size_[a] = 1;
    add(1);
  }
  void open(YAML::anchor_t a) {
    stack_.push_back({a, 1});
    if (a) open_.insert(a);
  }
  void close() {
    const Open o = stack_.back();
    stack_.pop_back();
    if (o.anchor) {
      size_[o.anchor] = o.nodes;
      open_.erase(o.anchor);
    }
    add(o.nodes);
  }
  std::vector<Open> stack_;
  std::set<YAML::anchor_t> open_;
  std::map<YAML::anchor_t, uint64_t> size_;
  uint64_t aliased_ = 0;
};

}  // namespace yaml_detail

// `name` starts every message ("name:line: ..."). Exactly one document.
inline Result<YAML::Node> load_yaml(const std::string& text, const std::string& name) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    yaml_detail::AliasBound bound;
    parser.HandleNextDocument(bound);
    yaml_detail::AliasBound rest;
    if (parser.HandleNextDocument(rest))
      return Status::error(name + ": more than one YAML document (only the first would be read)");
    return YAML::Load(text);
  } catch (const yaml_detail::Refused& r) {
    return Status::error(name + ":" + std::to_string(r.line) + ": YAML " + r.why);
  } catch (const YAML::Exception& e) {
    return Status::error(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax: " + e.msg);
  }
}

// A regular file of at most kYamlMaxFileBytes (a FIFO would block, a device
// never end), read whole.
inline Result<std::string> read_config_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::error(path + ": cannot open: " + strerror(errno));
  if (S_ISDIR(st.st_mode)) return Status::error(path + ": is a directory, not a YAML config file");
  if (!S_ISREG(st.st_mode)) return Status::error(path + ": not a regular file (a config is read from a file)");
  if (static_cast<uintmax_t>(st.st_size) > kYamlMaxFileBytes)
    return Status::error(path + ": " + std::to_string(st.st_size) + " bytes; a config has at most " +
                         std::to_string(kYamlMaxFileBytes));
  std::ifstream in(path);
  if (!in) return Status::error(path + ": cannot open: " + strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Result<YAML::Node> load_yaml_file(const std::string& path) {
  auto text = read_config_file(path);
  if (!text) return text.status();
  return load_yaml(*text, path);
}

}  // namespace sdn
