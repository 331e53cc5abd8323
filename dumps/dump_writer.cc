#include "dumps/dump_writer.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <streambuf>

#include <fmt/format.h>

#include "plan/parallel_config.h"
#include "dumps/dot_printer.h"

namespace irc {
namespace fs = std::filesystem;

namespace {

std::string systemReason(int error) { return std::strerror(error); }

// A stream buffer that writes to a file descriptor in blocks, keeping the first write error.
// A block at least as large as its buffer (the .ir printer's) goes to the file without a copy.
class FdWriter : public std::streambuf {
 public:
  explicit FdWriter(int fd) : fd_(fd), buffer_(size_t{1} << 20) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (static_cast<size_t>(n) < buffer_.size()) return std::streambuf::xsputn(s, n);
    if (!flush() || !writeAll(s, static_cast<size_t>(n))) return 0;
    return n;
  }
  int sync() override { return flush() ? 0 : -1; }

 private:
  bool flush() {
    writeAll(pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }
  bool writeAll(const char* p, size_t size) {
    const char* end = p + size;
    while (p < end && error_ == 0) {
      ssize_t n = ::write(fd_, p, static_cast<size_t>(end - p));
      if (n < 0) {
        if (errno != EINTR) error_ = errno;
        continue;
      }
      p += n;
    }
    return error_ == 0;
  }
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// Runs `produce` on a stream into `fd`, then closes it; returns the first error (0: none).
int streamAndClose(int fd, const std::function<void(std::ostream&)>& produce) {
  FdWriter writer(fd);
  {
    std::ostream out(&writer);
    produce(out);
    out.flush();
  }
  int error = writer.error();
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

// A new file in a folder this run created: O_EXCL and O_NOFOLLOW, so nothing that appeared
// there meanwhile (a symlink planted by someone else) is followed or overwritten.
// `shown` is the path the file will have once its folder is in place (what a user looks for).
std::optional<std::string> writeNewFile(const std::string& path, const std::string& shown,
                                        const std::function<void(std::ostream&)>& produce) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot write '{}': {}", shown, systemReason(errno));
  if (int error = streamAndClose(fd, produce)) {
    ::unlink(path.c_str());
    return fmt::format("cannot write '{}': {}", shown, systemReason(error));
  }
  return std::nullopt;
}

// Puts `staged` at `target`: a plain rename when nothing is there, else an atomic exchange with
// the old folder, which is then removed. Either way `target` is never seen half-written.
std::optional<std::string> replaceFolder(const std::string& staged, const std::string& target) {
  if (::rename(staged.c_str(), target.c_str()) == 0) return std::nullopt;
  int error = errno;
  if (error == EEXIST || error == ENOTEMPTY || error == EISDIR || error == ENOTDIR) {
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
      std::error_code ec;
      fs::remove_all(staged, ec);  // the previous run's folder, now under the staging name
      return std::nullopt;
    }
    error = errno;
  }
  return fmt::format("cannot put the dumps in place at '{}': {}", target, systemReason(error));
}

}  // namespace

std::string dumpFileName(std::string_view dumpName, int position, std::string_view ending) {
  return fmt::format("{}_{:04d}{}", dumpName, position, ending);
}

std::optional<DumpFileName> parseDumpFileName(std::string_view fileName) {
  constexpr std::string_view kEnding = ".ir";
  // <name> '_' DDDD ".ir": at least one character of name.
  if (fileName.size() < kEnding.size() + 6 || !fileName.ends_with(kEnding)) return std::nullopt;
  std::string_view stem = fileName.substr(0, fileName.size() - kEnding.size());
  std::string_view digits = stem.substr(stem.size() - 4);
  if (stem[stem.size() - 5] != '_' || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return DumpFileName{std::string(stem.substr(0, stem.size() - 5)), std::stoi(std::string(digits))};
}

DumpWriter::~DumpWriter() { removeStaging(); }

void DumpWriter::removeStaging() {
  std::error_code ec;
  for (const auto& [rank, folder] : staging_) fs::remove_all(folder, ec);
  staging_.clear();
}

bool DumpWriter::selected(std::string_view passName, std::string_view dumpName) const {
  return options_.all || options_.after.count(std::string(dumpName)) || options_.after.count(std::string(passName));
}

std::optional<std::string> DumpWriter::stagingFolder(int64_t rank) {
  if (auto it = staging_.find(rank); it != staging_.end()) return it->second;
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) {
    error_ = fmt::format("cannot create directory '{}': {}", options_.dir, ec.message());
    return std::nullopt;
  }
  std::string pattern = fmt::format("{}/.rank_{}.irc-XXXXXX", options_.dir, rank);
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data())) {
    error_ = fmt::format("cannot create a folder in '{}': {}", options_.dir, systemReason(errno));
    return std::nullopt;
  }
  std::string folder(buffer.data());
  ::chmod(folder.c_str(), 0755);  // mkdtemp makes it private; a dump folder is an ordinary one
  staging_[rank] = folder;
  return folder;
}

void DumpWriter::dump(int position, std::string_view dumpName, const Graph& graph, int64_t rank, std::string_view ending) {
  if (error_) return;  // the run already failed; commit reports it
  auto folder = stagingFolder(rank);
  if (!folder) return;
  PrintOptions print;
  print.rank = rank;
  print.locations = options_.locations;
  print.scopes = options_.scopes;
  print.modelFileName = options_.modelFileName;
  print.settings = options_.settings;
  std::string name = dumpFileName(dumpName, position, ending);
  std::string shown = fmt::format("{}/rank_{}/{}", options_.dir, rank, name);
  if (auto err = writeNewFile(*folder + "/" + name, shown, [&](std::ostream& out) { printGraph(graph, print, out); })) {
    error_ = *err;
    return;
  }
  files_.emplace_back(rank, name);
  if (!options_.dot) return;
  std::string dotName = name.substr(0, name.size() - 3) + ".dot";
  if (auto err = writeNewFile(*folder + "/" + dotName, fmt::format("{}/rank_{}/{}", options_.dir, rank, dotName),
                              [&](std::ostream& out) { out << printDot(graph, print); })) {
    error_ = *err;
    return;
  }
  files_.emplace_back(rank, dotName);
}

void DumpWriter::afterPass(const PassStage& stage, const Graph& graph) {
  if (!selected(stage.name, stage.dumpName)) return;
  for (int64_t rank : options_.ranks) dump(stage.position, stage.dumpName, graph, rank);
}

void DumpWriter::afterRankPass(const PassStage& stage, const Graph& graph, int64_t rank) {
  if (!selected(stage.name, stage.dumpName)) return;
  if (std::find(options_.ranks.begin(), options_.ranks.end(), rank) == options_.ranks.end()) return;
  dump(stage.position, stage.dumpName, graph, rank);
}

void DumpWriter::passFailed(const PassStage& stage, const Graph& graph, int64_t rank) {
  for (int64_t r : options_.ranks)
    if (rank == kGlobalGraph || rank == r) dump(stage.position, stage.dumpName, graph, r, ".failed.ir");
}

// The folder holds this run's ranks only: an earlier run's rank_<r>/ folders that this one did not
// write (a run over all ranks, then one over rank 0) would read as this run's.
void DumpWriter::removeOtherRanks(const std::set<std::string>& written) const {
  if (written.empty()) return;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
    std::string name = entry.path().filename().string();
    bool rankFolder = name.size() > 5 && name.rfind("rank_", 0) == 0 &&
                      name.find_first_not_of("0123456789", 5) == std::string::npos && entry.is_directory(ec);
    if (rankFolder && !written.count(name)) fs::remove_all(entry.path(), ec);
  }
}

std::optional<std::string> DumpWriter::commit() {
  if (error_) {
    removeStaging();
    return error_;
  }
  std::set<std::string> written;
  for (auto it = staging_.begin(); it != staging_.end();) {
    std::string target = fmt::format("{}/rank_{}", options_.dir, it->first);
    if (auto err = replaceFolder(it->second, target)) {
      removeStaging();
      return err;
    }
    written.insert(fmt::format("rank_{}", it->first));
    it = staging_.erase(it);
  }
  removeOtherRanks(written);
  for (const auto& [rank, name] : files_) written_.push_back(fmt::format("{}/rank_{}/{}", options_.dir, rank, name));
  return std::nullopt;
}

StagedFile::StagedFile(std::string path, const std::function<void(std::ostream&)>& produce) : path_(std::move(path)) {
  std::error_code ec;
  fs::path target(path_);
  fs::file_status status = fs::symlink_status(target, ec);
  if (fs::is_directory(status)) {
    error_ = fmt::format("cannot write '{}': {}", path_, systemReason(EISDIR));
    return;
  }
  // Only a plain regular file (or a new path) is replaced by rename. A symlink, device, pipe or
  // terminal (`--report /dev/stdout`, `/dev/null`) is written through in place: a rename would
  // replace the link or the device node itself with a regular file (as root, even /dev/null).
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) error_ = fmt::format("cannot write '{}': {}", path_, systemReason(errno));
    else if (int error = streamAndClose(fd, produce)) error_ = fmt::format("cannot write '{}': {}", path_, systemReason(error));
    return;
  }
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) {
    error_ = fmt::format("cannot create directory '{}': {}", parent.string(), ec.message());
    return;
  }
  // A unique temporary name beside the target (same file system, so the rename is atomic);
  // mkstemp opens it with O_EXCL, so a planted symlink is never followed.
  std::string pattern = (parent / fmt::format(".{}.irc-XXXXXX", target.filename().string())).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  int fd = ::mkstemp(buffer.data());
  if (fd < 0) {
    error_ = fmt::format("cannot write '{}': {}", path_, systemReason(errno));
    return;
  }
  tmp_ = buffer.data();
  ::fchmod(fd, 0644);
  if (int error = streamAndClose(fd, produce)) error_ = fmt::format("cannot write '{}': {}", path_, systemReason(error));
}

StagedFile::~StagedFile() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

std::optional<std::string> StagedFile::commit() {
  if (error_) return error_;
  if (tmp_.empty()) return std::nullopt;  // written through in place (or already committed)
  std::string tmp = std::move(tmp_);
  tmp_.clear();
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    int error = errno;
    ::unlink(tmp.c_str());
    return fmt::format("cannot write '{}': {}", path_, systemReason(error));
  }
  return std::nullopt;
}

std::optional<std::string> writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& produce) {
  return StagedFile(path, produce).commit();
}

std::optional<std::string> writeFileAtomically(const std::string& path, const std::string& text) {
  return writeFileAtomically(path, [&](std::ostream& out) { out << text; });
}

}  // namespace irc
