#include "frontends/yaml_document.h"

#include <map>
#include <istream>
#include <streambuf>
#include <string_view>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace irc {

// Builds the arena from parser events; a collection's children are collected on a stack until
// it ends.
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  YamlTreeBuilder(std::vector<YamlDocuments::Node>& nodes, size_t bytes) : nodes_(nodes), limit_(4 * bytes + 64) {}

  std::vector<uint32_t> roots;

  void OnDocumentStart(const YAML::Mark& m) override { count(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    count(m);
    add(leaf(YamlDocuments::Kind::Null, m, {}), anchor);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    count(m);
    auto it = anchors_.find(anchor);
    attach(it != anchors_.end() ? it->second : leaf(YamlDocuments::Kind::Null, m, {}));
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    count(m);
    add(leaf(YamlDocuments::Kind::Scalar, m, value), anchor);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(YamlDocuments::Kind::Sequence, m, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(YamlDocuments::Kind::Map, m, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  void count(const YAML::Mark& m) {
    if (++events_ > limit_) throw YamlRunaway{m};
  }
  uint32_t leaf(YamlDocuments::Kind kind, const YAML::Mark& m, const std::string& value) {
    nodes_.push_back({kind, m, value, {}});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void add(uint32_t index, YAML::anchor_t anchor) {
    if (anchor) anchors_[anchor] = index;
    attach(index);
  }
  void attach(uint32_t index) {
    if (open_.empty()) roots.push_back(index);
    else nodes_[open_.back()].children.push_back(index);
  }
  void open(YamlDocuments::Kind kind, const YAML::Mark& m, YAML::anchor_t anchor) {
    count(m);
    uint32_t index = leaf(kind, m, {});
    add(index, anchor);
    open_.push_back(index);
  }
  void close() { open_.pop_back(); }

  std::vector<YamlDocuments::Node>& nodes_;
  size_t limit_;
  size_t events_ = 0;
  std::vector<uint32_t> open_;
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
  YamlTreeBuilder builder(nodes_, text.size());
  while (parser.HandleNextDocument(builder)) {
  }
  roots_ = std::move(builder.roots);
}

YamlNode YamlDocuments::root(size_t document) const { return YamlNode(this, roots_.at(document)); }

const std::string& YamlNode::Scalar() const {
  static const std::string empty;
  return IsScalar() ? node().scalar : empty;
}

size_t YamlNode::size() const {
  if (!doc_) return 0;
  const auto& n = node();
  if (n.kind == YamlDocuments::Kind::Sequence) return n.children.size();
  if (n.kind == YamlDocuments::Kind::Map) return n.children.size() / 2;
  return 0;
}

YamlNode YamlNode::operator[](size_t i) const {
  if (!IsSequence() || i >= node().children.size()) return {};
  return YamlNode(doc_, node().children[i]);
}

YamlNode YamlNode::find(std::string_view key) const {
  if (!IsMap()) return {};
  const auto& children = node().children;
  for (size_t i = 0; i + 1 < children.size(); i += 2) {
    const auto& k = doc_->nodes_[children[i]];
    if (k.kind == YamlDocuments::Kind::Scalar && k.scalar == key) return YamlNode(doc_, children[i + 1]);
  }
  return {};
}

YamlNode::iterator YamlNode::begin() const { return iterator(*this, 0); }
YamlNode::iterator YamlNode::end() const { return iterator(*this, size()); }

void YamlNode::iterator::load() {
  if (position_ >= owner_.size()) return;
  const auto& children = owner_.node().children;
  if (owner_.IsMap()) {
    item_.first = YamlNode(owner_.doc_, children[2 * position_]);
    item_.second = YamlNode(owner_.doc_, children[2 * position_ + 1]);
    static_cast<YamlNode&>(item_) = item_.second;
  } else {
    static_cast<YamlNode&>(item_) = YamlNode(owner_.doc_, children[position_]);
  }
}

}  // namespace irc
