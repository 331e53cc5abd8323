#pragma once
// Every subcommand's usage, examples and options in one table: the argument scanner takes its
// flags from here and `irc CMD --help` prints it, so an option cannot exist without its help line
// (a test checks it).
#include <string>
#include <vector>

#include "cli/commands.h"

namespace irc::cli {

struct OptionSpec {
  std::string flag;   // "--dump-dir" (several spellings: "-q|--quiet")
  std::string value;  // "DIR" for a flag that takes a value, empty for a switch
  std::string help;
};

struct CommandSpec {
  std::string name;                   // "" for the compile command
  std::string summary;                // one line
  std::string usage;                  // "irc verify MODEL.yaml [options]"
  std::vector<std::string> examples;  // "command    what it does"
  std::vector<OptionSpec> options;
  std::string details;                                                    // free text after the options
  ExitStatus (*handler)(const std::vector<std::string>& args) = nullptr;  // runs the command
};

const std::vector<CommandSpec>& commandSpecs();
const CommandSpec& commandSpec(const std::string& name);  // "" = compile
// Flags that take a value / switches, every spelling, for the ArgScanner.
std::vector<std::string> flagsWithValue(const CommandSpec& spec);
std::vector<std::string> switchFlags(const CommandSpec& spec);
// `irc CMD --help`: examples first, then usage, options and details.
std::string commandHelp(const CommandSpec& spec);
// `irc` alone: a short usage that points to --help.
std::string shortUsage();

}  // namespace irc::cli
