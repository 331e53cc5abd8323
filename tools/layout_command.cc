// `irc layout`: describes one tensor layout (spec/cli.md): every notation, every rank's slice.
#include <iostream>

#include <fmt/format.h>

#include "tools/cli_util.h"
#include "tools/commands.h"

namespace irc::cli {

int runLayout(const std::vector<std::string>&) {
  throw UsageError("'irc layout' is not available in this version yet");
}

}  // namespace irc::cli
