#pragma once
// The names of a device matrix's axes, as one immutable list that copies share.
//
// Every tensor layout carries its device matrix, and a 100k-op graph holds over a million
// layouts: as a std::vector<std::string> the names were an allocation and three to five string
// copies per layout copy, and about a quarter of a compile's live heap. Here a copy is a
// reference count. The unnamed lists (`axis_0, axis_1, ...`) are made once per length.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace irc {

class AxisNames {
 public:
  using const_iterator = std::vector<std::string>::const_iterator;

  AxisNames() = default;
  AxisNames(std::vector<std::string> names);  // NOLINT: implicit, a list of names is what it holds
  AxisNames(std::initializer_list<std::string> names) : AxisNames(std::vector<std::string>(names)) {}
  // `axis_0, ..., axis_<count-1>`, shared by every caller asking for the same count.
  static AxisNames unnamed(size_t count);

  const std::vector<std::string>& list() const;
  operator const std::vector<std::string>&() const { return list(); }  // NOLINT: reads as the list

  size_t size() const { return list().size(); }
  bool empty() const { return list().empty(); }
  const std::string& operator[](size_t i) const { return list()[i]; }
  const std::string& at(size_t i) const { return list().at(i); }
  const_iterator begin() const { return list().begin(); }
  const_iterator end() const { return list().end(); }

  // Appends a name; the list is copied first when another holder shares it.
  void push_back(std::string name);

  bool operator==(const AxisNames& other) const { return names_ == other.names_ || list() == other.list(); }
  bool operator==(const std::vector<std::string>& other) const { return list() == other; }

 private:
  std::shared_ptr<const std::vector<std::string>> names_;  // null: no names
};

}  // namespace irc
