#pragma once
// Helpers for tests that run the `irc` binary or touch files: always inside a fresh temporary
// directory, removed afterwards.
#include <string>
#include <vector>

namespace irc::test {

struct RunResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

// Runs build/irc with `args` (shell-quoted here) in `cwd`.
RunResult runIrc(const std::vector<std::string>& args, const std::string& cwd = ".");
// Runs a bash script in `cwd` with $IRC naming the irc binary (for pipes, limits, background jobs).
RunResult runShell(const std::string& script, const std::string& cwd = ".");

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& text);
std::vector<std::string> listFiles(const std::string& dir);  // relative paths, sorted, recursive
std::string sourceDir();                                     // the repository root

}  // namespace irc::test
