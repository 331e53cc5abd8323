#include "tests/model_util.h"

#include <doctest/doctest.h>

#include "frontends/yaml/yaml_frontend.h"

namespace irc::test {

Graph parseModel(const std::string& yaml) { return parseModelAndSettings(yaml).graph; }

LoadedGraph parseModelAndSettings(const std::string& yaml) {
  DiagnosticEngine diags("m.yaml", yaml);
  auto g = loadModel(yaml, diags, {"m"});
  INFO(diags.renderToString());
  REQUIRE(g.has_value());
  return std::move(*g);
}

std::string modelErrors(const std::string& yaml, const std::string& fileName) {
  DiagnosticEngine diags(fileName, yaml);
  auto g = loadModel(yaml, diags, {"m"});
  return g ? std::string() : diags.renderToString();
}

std::string model(const std::string& body, int deviceNum) {
  return "parallel: {device_num: " + std::to_string(deviceNum) + "}\n" + body;
}

}  // namespace irc::test
