#pragma once
// Model snippets for the op-family tests: inputs and one configured op.
#include <string>

namespace irc::test {

inline std::string oneOpModel(int devices, const std::string& inputs, const std::string& op) {
  return "parallel: {device_num: " + std::to_string(devices) + ", fully_use_devices: false}\ninputs:\n" + inputs + "ops:\n  - " + op + "\n";
}

}  // namespace irc::test
