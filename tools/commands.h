#pragma once
// The subcommands of `irc`; each returns the process exit status (spec/cli.md).
#include <string>
#include <vector>

namespace irc::cli {

int runCompile(const std::vector<std::string>& args);
int runLayout(const std::vector<std::string>& args);
int runVerify(const std::vector<std::string>& args);
int runExplain(const std::vector<std::string>& args);
int runDiff(const std::vector<std::string>& args);
int runImport(const std::vector<std::string>& args);
void printListOps();
void printListPasses();

}  // namespace irc::cli
