#pragma once
// Builds graphs for tests from short model text, through the real frontend.
#include <optional>
#include <string>

#include "frontends/yaml/yaml_frontend.h"
#include "ir/graph.h"

namespace irc::test {

// The graph, or a failed doctest check with the diagnostics.
Graph parseModel(const std::string& yaml);
// The graph and the settings its parallel block gives.
LoadedGraph parseModelAndSettings(const std::string& yaml);
// The rendered diagnostics of a model that must be rejected ("" if it was accepted).
std::string modelErrors(const std::string& yaml, const std::string& fileName = "m.yaml");

// A model text with `parallel: {device_num: N}` and the given sections.
std::string model(const std::string& body, int deviceNum = 8);

}  // namespace irc::test
