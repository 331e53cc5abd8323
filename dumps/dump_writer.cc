#include "dumps/dump_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace irc {

std::optional<std::string> writeFileAtomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  // Only a plain regular file (or a new path) is replaced by rename. A symlink, device, pipe or
  // terminal (`--report /dev/stdout`, `/dev/null`) is written through in place: a rename would
  // replace the link or the device node itself with a regular file (as root, even /dev/null).
  fs::file_status status = fs::symlink_status(target, ec);
  bool replaceable = !fs::exists(status) || fs::is_regular_file(status);
  if (!replaceable && !fs::is_directory(status)) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) return fmt::format("cannot write '{}': {}", path, std::strerror(errno));
    return std::nullopt;
  }
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) return fmt::format("cannot create directory '{}': {}", target.parent_path().string(), ec.message());
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fmt::format("cannot write '{}': {}", tmp, std::strerror(errno));
    out << text;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return fmt::format("cannot write '{}': {}", tmp, std::strerror(errno));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fmt::format("cannot rename '{}' to '{}': {}", tmp, path, ec.message());
  }
  return std::nullopt;
}

bool DumpWriter::selected(std::string_view passName, std::string_view dumpName) const {
  return options_.all || options_.after.count(std::string(dumpName)) || options_.after.count(std::string(passName));
}

void DumpWriter::dump(int position, std::string_view dumpName, const Graph& graph, int64_t rank) {
  PrintOptions print;
  print.rank = rank;
  print.locations = options_.locations;
  print.modelFileName = options_.modelFileName;
  int& counter = counters_[rank];
  std::string path = fmt::format("{}/rank_{}/{:02d}_{}_{:04d}.ir", options_.dir, rank, position, dumpName, counter++);
  pending_.emplace_back(path, printGraph(graph, print));
}

void DumpWriter::afterPass(int position, std::string_view passName, std::string_view dumpName, const Graph& graph) {
  if (!selected(passName, dumpName)) return;
  for (int64_t rank : options_.ranks) dump(position, dumpName, graph, rank);
}

void DumpWriter::afterRankPass(int position, std::string_view passName, std::string_view dumpName, const Graph& graph,
                               int64_t rank) {
  if (!selected(passName, dumpName)) return;
  if (std::find(options_.ranks.begin(), options_.ranks.end(), rank) == options_.ranks.end()) return;
  dump(position, dumpName, graph, rank);
}

std::optional<std::string> DumpWriter::flush() {
  for (const auto& [path, text] : pending_) {
    if (auto err = writeFileAtomically(path, text)) return err;
    written_.push_back(path);
  }
  pending_.clear();
  return std::nullopt;
}

}  // namespace irc
