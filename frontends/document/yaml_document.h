#pragma once
// A YAML file read with yaml-cpp's event parser into a compact tree of our own: every node with
// the mark yaml-cpp gives it, in one arena per document set. Building the graph from it costs a
// fraction of yaml-cpp's own node tree (shared pointers per node), and the event count bounds
// the parse: yaml-cpp 0.7 loops forever on some malformed flow collections (found by the
// fuzzer), and a well-formed document has fewer events than 4 per byte.
//
// YamlNode mirrors the part of YAML::Node's interface the frontends use.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/mark.h>

namespace irc {

class YamlNode;

// Every document of a text; nodes are handles into it and live as long as it does.
class YamlDocuments {
 public:
  // Parses `text`. Throws YAML::ParserException on a syntax error and YamlRunaway when yaml-cpp
  // makes no progress.
  explicit YamlDocuments(const std::string& text);
  size_t size() const { return roots_.size(); }
  YamlNode root(size_t document) const;
  // The first scalar key a mapping holds twice, in text order: the second occurrence and the
  // first. yaml-cpp keeps both and a reader would take one silently; YAML allows each key once.
  struct DuplicateKey {
    std::string key;
    YAML::Mark again, first;
  };
  std::optional<DuplicateKey> firstDuplicateKey() const;

 private:
  friend class YamlNode;
  friend class YamlTreeBuilder;
  enum class Kind : uint8_t { Null, Scalar, Sequence, Map };
  // 24 bytes and nothing to free: a model of 100k ops has millions of nodes.
  struct Node {
    Kind kind = Kind::Null;
    bool quoted = false;  // a scalar written in quotes (a string, in JSON)
    // A scalar's index in scalars_; a collection's first child in children_.
    uint32_t first = 0;
    // A collection's children: a sequence's elements; a map's keys and values, alternating.
    uint32_t count = 0;
    YAML::Mark mark;
  };
  const uint32_t* childrenOf(const Node& n) const { return children_.data() + n.first; }
  std::vector<Node> nodes_;
  std::vector<std::string> scalars_;
  std::vector<uint32_t> children_;  // each collection's children, contiguous
  std::vector<uint32_t> roots_;
};

// yaml-cpp went round in circles at `mark`.
struct YamlRunaway {
  YAML::Mark mark;
};

class YamlNode {
 public:
  YamlNode() = default;  // undefined (a missing key)

  bool IsDefined() const { return doc_ != nullptr; }
  bool IsNull() const { return !doc_ || node().kind == YamlDocuments::Kind::Null; }
  bool IsScalar() const { return doc_ && node().kind == YamlDocuments::Kind::Scalar; }
  bool IsSequence() const { return doc_ && node().kind == YamlDocuments::Kind::Sequence; }
  bool IsMap() const { return doc_ && node().kind == YamlDocuments::Kind::Map; }
  bool IsQuoted() const { return doc_ && node().quoted; }
  const std::string& Scalar() const;
  YAML::Mark Mark() const { return doc_ ? node().mark : YAML::Mark::null_mark(); }
  // Elements of a sequence, entries of a map.
  size_t size() const;
  YamlNode operator[](size_t i) const;  // a sequence's element i
  // A map's value under the scalar key `key` (the first such entry); undefined when there is
  // none or this is not a map.
  YamlNode find(std::string_view key) const;

  // Iteration yields items: a sequence's elements (the item itself), or a map's entries (the
  // item's `first` and `second`).
  struct Item;
  class iterator;
  iterator begin() const;
  iterator end() const;

 private:
  friend class YamlDocuments;
  YamlNode(const YamlDocuments* doc, uint32_t index) : doc_(doc), index_(index) {}
  const YamlDocuments::Node& node() const { return doc_->nodes_[index_]; }
  const YamlDocuments* doc_ = nullptr;
  uint32_t index_ = 0;
};

struct YamlNode::Item : YamlNode {
  YamlNode first, second;
};

class YamlNode::iterator {
 public:
  iterator(const YamlNode& owner, size_t position) : owner_(owner), position_(position) { load(); }
  const Item& operator*() const { return item_; }
  const Item* operator->() const { return &item_; }
  iterator& operator++() {
    ++position_;
    load();
    return *this;
  }
  bool operator!=(const iterator& o) const { return position_ != o.position_; }
  bool operator==(const iterator& o) const { return position_ == o.position_; }

 private:
  void load();
  YamlNode owner_;
  size_t position_;
  Item item_;
};

}  // namespace irc
