#include "tests/test_util.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace irc::test {
namespace fs = std::filesystem;

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "irc-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> listFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string sourceDir() { return IRC_SOURCE_DIR; }

namespace {
// Runs `command` in `cwd` with stdout and stderr captured and no stdin.
RunResult runCaptured(const std::string& command, const std::string& cwd) {
  TempDir capture;
  std::string cmd = "cd " + quote(cwd) + " && " + command + " >" + quote(capture.path() + "/out") + " 2>" +
                    quote(capture.path() + "/err") + " </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(capture.path() + "/out");
  r.err = readFile(capture.path() + "/err");
  return r;
}
}  // namespace

RunResult runIrc(const std::vector<std::string>& args, const std::string& cwd) {
  std::string cmd = "NO_COLOR=1 " + quote(IRC_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  return runCaptured(cmd, cwd);
}

RunResult runShell(const std::string& script, const std::string& cwd) {
  TempDir file;
  writeFile(file.path() + "/script", script);
  return runCaptured("NO_COLOR=1 IRC=" + quote(IRC_BINARY) + " bash " + quote(file.path() + "/script"), cwd);
}

}  // namespace irc::test
