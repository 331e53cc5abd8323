#pragma once
// The dump instrumentation: after each selected pass, writes `DIR/rank_<r>/NN_<pass>_XXXX.ir`
// for every dumped rank (spec/ir-dump.md "Files"). Dumps are kept in memory until `flush`, which
// the driver calls only when the whole compile succeeded: a rejected model leaves no partial
// set of dumps, and each file is written whole or not at all.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dumps/ir_printer.h"
#include "passes/pass_manager.h"

namespace irc {

struct DumpOptions {
  std::string dir;
  std::vector<int64_t> ranks;          // one folder each
  bool all = false;                    // --dump-all
  std::set<std::string> after;         // --dump-after (dump names)
  bool locations = false;              // --dump-locations
  std::string modelFileName;
};

class DumpWriter : public PassInstrumentation {
 public:
  explicit DumpWriter(DumpOptions options) : options_(std::move(options)) {}

  void afterPass(int position, std::string_view passName, std::string_view dumpName, const Graph& graph) override;
  void afterRankPass(int position, std::string_view passName, std::string_view dumpName, const Graph& graph,
                     int64_t rank) override;

  // Writes every pending dump; returns the first error (the compile then fails with status 1).
  std::optional<std::string> flush();
  // Paths written by `flush`, in order.
  const std::vector<std::string>& written() const { return written_; }

 private:
  bool selected(std::string_view passName, std::string_view dumpName) const;
  void dump(int position, std::string_view dumpName, const Graph& graph, int64_t rank);

  DumpOptions options_;
  std::map<int64_t, int> counters_;  // .ir files per rank folder in this run
  std::vector<std::pair<std::string, std::string>> pending_;  // path, text
  std::vector<std::string> written_;
};

// Writes `text` to `path` through a temporary file and a rename; returns an error message.
std::optional<std::string> writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace irc
