#pragma once
// The subcommands of `irc`; each returns the process exit status (spec/cli.md).
#include <string>
#include <vector>

namespace irc::cli {

// The process exit statuses (spec/cli.md).
enum class ExitStatus {
  Ok = 0,
  Rejected = 1,        // a model, file or array refused, or an output not written
  Differs = 1,         // irc diff: the inputs differ (diff(1)'s status)
  Usage = 2,           // an unknown flag or a missing argument
  VerifyMismatch = 3,  // irc verify: a rank, or the single-device outputs, disagree
  Internal = 4,        // a bug in irc
};

ExitStatus runCompile(const std::vector<std::string>& args);
ExitStatus runLayout(const std::vector<std::string>& args);
ExitStatus runVerify(const std::vector<std::string>& args);
ExitStatus runExplain(const std::vector<std::string>& args);
ExitStatus runDiff(const std::vector<std::string>& args);
ExitStatus runImport(const std::vector<std::string>& args);
ExitStatus runMemory(const std::vector<std::string>& args);
void printListOps();
void printListPasses();

}  // namespace irc::cli
