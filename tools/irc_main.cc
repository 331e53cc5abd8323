// The `irc` driver: subcommand dispatch and the exit-status contract
// (0 ok, 1 rejected, 2 usage, 3 verify mismatch, 4 internal error).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace {

int dispatch(const std::vector<std::string>& args) {
  using namespace irc::cli;
  if (args.empty()) {
    printHelp();
    return 2;
  }
  const std::string& first = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (first == "-h" || first == "--help") {
    printHelp();
    return 0;
  }
  if (first == "--version") {
    std::cout << "irc " << IRC_VERSION << "\n";
    return 0;
  }
  if (first == "--list-ops") {
    printListOps();
    return 0;
  }
  if (first == "--list-passes") {
    printListPasses();
    return 0;
  }
  if (first == "layout") return runLayout(rest);
  if (first == "verify") return runVerify(rest);
  if (first == "explain") return runExplain(rest);
  if (first == "diff") return runDiff(rest);
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      printHelp();
      return 0;
    }
    if (a == "--list-ops") {
      printListOps();
      return 0;
    }
    if (a == "--list-passes") {
      printListPasses();
      return 0;
    }
  }
  return runCompile(args);
}

// Results go to stdout; a full disk or a closed pipe there is a failed run, not a success.
int finishStdout(int status) {
  std::cout.flush();
  bool failed = std::cout.fail() || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (failed) {
    int error = errno;  // stdio leaves the first failure's reason in errno
    std::cerr << "irc: error: cannot write to standard output" << (error ? std::string(": ") + std::strerror(error) : "")
              << "\n";
    return status == 0 ? 1 : status;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  errno = 0;
  try {
    return finishStdout(dispatch(args));
  } catch (const irc::cli::UsageError& e) {
    std::cerr << "irc: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irc: internal error: " << e.what()
              << "\nThis is a bug in irc, not in the model. Please report it with the model and the dumps "
                 "(--dump-all).\n";
    return 4;
  }
}
