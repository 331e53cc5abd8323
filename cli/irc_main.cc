// The `irc` driver: subcommand dispatch and the exit-status contract
// (0 ok, 1 rejected, 2 usage, 3 verify mismatch, 4 internal error).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"
#include "ir/suggest.h"

namespace {

bool asksForHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "-h" || a == "--help"; });
}

irc::cli::ExitStatus dispatch(const std::vector<std::string>& args) {
  using namespace irc::cli;
  if (args.empty()) {
    std::cerr << shortUsage();
    return ExitStatus::Usage;
  }
  const std::string& first = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  // The command table (cli/command_specs.cc) names the subcommands and their handlers.
  std::vector<std::string> subcommands;
  for (const CommandSpec& spec : commandSpecs())
    if (!spec.name.empty()) subcommands.push_back(spec.name);
  if (first == "help") {
    if (rest.empty()) {
      std::cout << commandHelp(commandSpec(""));
      return ExitStatus::Ok;
    }
    if (std::find(subcommands.begin(), subcommands.end(), rest[0]) == subcommands.end())
      throw UsageError(fmt::format("'{}' is not a subcommand{}; valid: {}", rest[0], irc::didYouMean(rest[0], subcommands),
                                   irc::joinNames(subcommands)));
    std::cout << commandHelp(commandSpec(rest[0]));
    return ExitStatus::Ok;
  }
  bool sub = std::find(subcommands.begin(), subcommands.end(), first) != subcommands.end();
  if (asksForHelp(sub ? rest : args)) {
    std::cout << commandHelp(commandSpec(sub ? first : ""));
    return ExitStatus::Ok;
  }
  if (sub) return commandSpec(first).handler(rest);
  for (const auto& a : args) {
    if (a == "--version") {
      std::cout << "irc " << IRC_VERSION << "\n";
      return ExitStatus::Ok;
    }
    if (a == "--list-ops") {
      printListOps();
      return ExitStatus::Ok;
    }
    if (a == "--list-passes") {
      printListPasses();
      return ExitStatus::Ok;
    }
  }
  return commandSpec("").handler(args);
}

// Results go to stdout; a full disk or a closed pipe there is a failed run, not a success.
int finishStdout(irc::cli::ExitStatus exit) {
  using irc::cli::ExitStatus;
  int status = static_cast<int>(exit);
  std::cout.flush();
  bool failed = std::cout.fail() || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (failed) {
    int error = errno;  // stdio leaves the first failure's reason in errno
    std::cerr << "irc: error: cannot write to standard output" << (error ? std::string(": ") + std::strerror(error) : "") << "\n";
    return exit == ExitStatus::Ok ? static_cast<int>(ExitStatus::Rejected) : status;
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
    return static_cast<int>(irc::cli::ExitStatus::Usage);
  } catch (const std::exception& e) {
    std::cerr << "irc: internal error: " << e.what()
              << "\nThis is a bug in irc, not in the model. Please report it with the model and the dumps "
                 "(--dump-all).\n";
    return static_cast<int>(irc::cli::ExitStatus::Internal);
  }
}
