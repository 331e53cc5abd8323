#include "frontends/document/yaml_document.h"

#include <map>
#include <istream>
#include <streambuf>
#include <string_view>
#include <unordered_map>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace irc {

// Builds the arena from parser events. A collection's children are collected on a stack until
// it ends, then copied to children_ in one piece, so the children of every collection are
// contiguous and no node owns a vector.
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  using Kind = YamlDocuments::Kind;
  YamlTreeBuilder(YamlDocuments& doc, size_t bytes) : doc_(doc), limit_(4 * bytes + 64) {
    // A node takes at least a few bytes of text (`- 1\n` is 4 for 2 nodes); reserving by the
    // text's size saves the copies of growing. Pages never written are never touched.
    doc_.nodes_.reserve(bytes / 4 + 16);
    doc_.children_.reserve(bytes / 4 + 16);
    doc_.scalars_.reserve(bytes / 8 + 16);
  }

  std::vector<uint32_t> roots;

  void OnDocumentStart(const YAML::Mark& m) override { count(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    count(m);
    add(node(Kind::Null, m), anchor);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    count(m);
    auto it = anchors_.find(anchor);
    attach(it != anchors_.end() ? it->second : node(Kind::Null, m));
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    count(m);
    uint32_t index = node(Kind::Scalar, m);
    doc_.nodes_[index].quoted = tag == "!";  // yaml-cpp's non-specific tag of a quoted scalar
    doc_.nodes_[index].first = static_cast<uint32_t>(doc_.scalars_.size());
    doc_.scalars_.push_back(value);
    add(index, anchor);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(Kind::Sequence, m, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(Kind::Map, m, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    uint32_t node;
    size_t pendingStart;  // where its children start on pending_
  };

  void count(const YAML::Mark& m) {
    if (++events_ > limit_) throw YamlRunaway{m};
  }
  uint32_t node(Kind kind, const YAML::Mark& m) {
    doc_.nodes_.push_back({kind, false, 0, 0, m});
    return static_cast<uint32_t>(doc_.nodes_.size() - 1);
  }
  void add(uint32_t index, YAML::anchor_t anchor) {
    if (anchor) anchors_[anchor] = index;
    attach(index);
  }
  void attach(uint32_t index) {
    if (open_.empty()) roots.push_back(index);
    else pending_.push_back(index);
  }
  void open(Kind kind, const YAML::Mark& m, YAML::anchor_t anchor) {
    count(m);
    uint32_t index = node(kind, m);
    add(index, anchor);
    open_.push_back({index, pending_.size()});
  }
  void close() {
    const Open o = open_.back();
    open_.pop_back();
    YamlDocuments::Node& n = doc_.nodes_[o.node];
    n.first = static_cast<uint32_t>(doc_.children_.size());
    n.count = static_cast<uint32_t>(pending_.size() - o.pendingStart);
    doc_.children_.insert(doc_.children_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(o.pendingStart), pending_.end());
    pending_.resize(o.pendingStart);
  }

  YamlDocuments& doc_;
  size_t limit_;
  size_t events_ = 0;
  std::vector<Open> open_;
  std::vector<uint32_t> pending_;
  std::map<YAML::anchor_t, uint32_t> anchors_;
};

namespace {

// The text as yaml-cpp's input stream, read in place: an istringstream would copy the whole
// model first (and free the copy after).
class TextStreamBuf : public std::streambuf {
 public:
  explicit TextStreamBuf(const std::string& text) {
    char* begin = const_cast<char*>(text.data());  // only read: the get area is never written
    setg(begin, begin, begin + text.size());
  }
};

}  // namespace

YamlDocuments::YamlDocuments(const std::string& text) {
  TextStreamBuf buffer(text);
  std::istream in(&buffer);
  YAML::Parser parser(in);
  YamlTreeBuilder builder(*this, text.size());
  while (parser.HandleNextDocument(builder)) {}
  roots_ = std::move(builder.roots);
}

YamlNode YamlDocuments::root(size_t document) const { return YamlNode(this, roots_.at(document)); }

std::optional<YamlDocuments::DuplicateKey> YamlDocuments::firstDuplicateKey() const {
  std::optional<DuplicateKey> found;
  std::unordered_map<std::string_view, uint32_t> seen;
  for (const Node& n : nodes_) {
    if (n.kind != Kind::Map || n.count < 4) continue;
    seen.clear();
    for (uint32_t k = 0; k + 1 < n.count; k += 2) {
      const Node& key = nodes_[children_[n.first + k]];
      if (key.kind != Kind::Scalar) continue;
      auto [it, added] = seen.emplace(scalars_[key.first], children_[n.first + k]);
      if (added) continue;
      const Node& first = nodes_[it->second];
      bool earlier = found && (key.mark.line < found->again.line ||
                               (key.mark.line == found->again.line && key.mark.column < found->again.column));
      if (!found || earlier) found = DuplicateKey{scalars_[key.first], key.mark, first.mark};
      break;
    }
  }
  return found;
}

const std::string& YamlNode::Scalar() const {
  static const std::string empty;
  return IsScalar() ? doc_->scalars_[node().first] : empty;
}

size_t YamlNode::size() const {
  if (!doc_) return 0;
  const auto& n = node();
  if (n.kind == YamlDocuments::Kind::Sequence) return n.count;
  if (n.kind == YamlDocuments::Kind::Map) return n.count / 2;
  return 0;
}

YamlNode YamlNode::operator[](size_t i) const {
  if (!IsSequence() || i >= node().count) return {};
  return YamlNode(doc_, doc_->childrenOf(node())[i]);
}

YamlNode YamlNode::find(std::string_view key) const {
  if (!IsMap()) return {};
  const uint32_t* children = doc_->childrenOf(node());
  for (size_t i = 0; i + 1 < node().count; i += 2) {
    const auto& k = doc_->nodes_[children[i]];
    if (k.kind == YamlDocuments::Kind::Scalar && doc_->scalars_[k.first] == key) return YamlNode(doc_, children[i + 1]);
  }
  return {};
}

YamlNode::iterator YamlNode::begin() const { return iterator(*this, 0); }
YamlNode::iterator YamlNode::end() const { return iterator(*this, size()); }

void YamlNode::iterator::load() {
  if (position_ >= owner_.size()) return;
  const uint32_t* children = owner_.doc_->childrenOf(owner_.node());
  if (owner_.IsMap()) {
    item_.first = YamlNode(owner_.doc_, children[2 * position_]);
    item_.second = YamlNode(owner_.doc_, children[2 * position_ + 1]);
    static_cast<YamlNode&>(item_) = item_.second;
  } else {
    static_cast<YamlNode&>(item_) = YamlNode(owner_.doc_, children[position_]);
  }
}

}  // namespace irc
