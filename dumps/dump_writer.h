#pragma once
// The dump instrumentation: after each selected pass, writes `DIR/rank_<r>/<pass>_XXXX.ir` for
// every dumped rank (spec/ir-dump.md "Files"; XXXX is the pass's position in the pipeline).
//
// Each dump is written to disk as soon as it is printed, into a private staging folder per rank
// (`DIR/.rank_<r>.irc-XXXXXX`, made by mkdtemp). `commit`, which the driver calls only when the
// whole compile succeeded, swaps each staging folder in place of `rank_<r>` with one rename, so
// a rank folder holds exactly one run's files: no stale file of an earlier run survives, two
// concurrent runs never splice their files, and a rejected model, a full disk or a crash leaves
// the previous dumps as they were. Staging folders not committed are removed.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "plan/parallel_config.h"
#include "dumps/ir_printer.h"
#include "passes/manager/pass_manager.h"

namespace irc {

struct DumpOptions {
  std::string dir;
  std::vector<int64_t> ranks;   // one folder each
  bool all = false;             // --dump-all
  std::set<std::string> after;  // --dump-after (dump names)
  bool locations = false;       // --dump-locations
  bool scopes = false;          // --dump-scopes
  bool dot = false;             // --dump-dot: a <pass>_XXXX.dot beside each .ir
  std::string modelFileName;
  const ParallelSettings* settings = nullptr;  // the compile's effective settings, for the dumps' header
};

// `<pass>_XXXX.ir`: MindSpore's file name for the dump of the pass at `position` (`ending`
// ".failed.ir" for the input of a pass that rejected the model).
std::string dumpFileName(std::string_view dumpName, int position, std::string_view ending = ".ir");

// The reverse of dumpFileName for a `.ir` dump: its pass's dump name and position; nullopt for a
// file name that is not one (`<pass>_XXXX.ir`, four digits).
struct DumpFileName {
  std::string dumpName;
  int position = 0;
};
std::optional<DumpFileName> parseDumpFileName(std::string_view fileName);

class DumpWriter : public PassInstrumentation {
 public:
  explicit DumpWriter(DumpOptions options) : options_(std::move(options)) {}
  ~DumpWriter() override;
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  void afterPass(const PassStage& stage, const Graph& graph) override;
  void afterRankPass(const PassStage& stage, const Graph& graph, int64_t rank) override;
  // Writes `<pass>_XXXX.failed.ir` (whatever --dump-after selects): the failing pass's input.
  void passFailed(const PassStage& stage, const Graph& graph, int64_t rank) override;

  // Puts every rank's staged folder in place; returns the first error of the whole run (a write
  // that failed while the passes ran, or a rename), in which case nothing of this run is left.
  std::optional<std::string> commit();
  // Final paths of the files `commit` put in place, in order.
  const std::vector<std::string>& written() const { return written_; }

 private:
  bool selected(std::string_view passName, std::string_view dumpName) const;
  void dump(int position, std::string_view dumpName, const Graph& graph, int64_t rank, std::string_view ending = ".ir");
  std::optional<std::string> stagingFolder(int64_t rank);
  void removeStaging();
  void removeOtherRanks(const std::set<std::string>& written) const;

  DumpOptions options_;
  std::map<int64_t, std::string> staging_;              // rank -> its staging folder
  std::vector<std::pair<int64_t, std::string>> files_;  // rank, file name, in the order written
  std::optional<std::string> error_;
  std::vector<std::string> written_;
};

// Writes `text` to `path` through a uniquely named temporary file beside it and a rename; a
// device, pipe or symlink target is written through in place. Returns an error message with the
// system's reason.
std::optional<std::string> writeFileAtomically(const std::string& path, const std::string& text);
// The same for text written as it is produced: `produce` writes to a stream that goes straight
// to the file (in 1 MiB blocks), never held whole in memory.
std::optional<std::string> writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& produce);

// A file written in full under a unique temporary name beside its target, and renamed over it
// by commit(), so that no reader ever sees part of it; removed if never committed. (A symlink or
// device target is written through in place at once.)
class StagedFile {
 public:
  StagedFile(std::string path, const std::function<void(std::ostream&)>& produce);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  // Puts the file in place; the error of the write or of the rename, if any.
  std::optional<std::string> commit();

 private:
  std::string path_, tmp_;
  std::optional<std::string> error_;
};

}  // namespace irc
