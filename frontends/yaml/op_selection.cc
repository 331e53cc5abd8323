// Ops named by a glob (an op name, or a torch module path of a plan's node) and `recompute:`,
// which model files and plans share.
#include <fnmatch.h>

#include <algorithm>

#include <fmt/format.h>

#include "frontends/yaml/model_loader.h"

namespace irc::model_loading {

std::vector<bool> ModelLoader::opsMatching(const std::string& glob) const {
  std::vector<bool> moduleMatched(graph_.modulePaths.size(), false);
  for (size_t m = 0; m < graph_.modulePaths.size(); ++m) {
    std::string path = graph_.modulePaths[m];
    while (!moduleMatched[m] && !path.empty()) {
      moduleMatched[m] = modulePathMatches(glob, path);
      size_t dot = path.rfind('.');
      path = dot == std::string::npos ? "" : path.substr(0, dot);
    }
  }
  std::vector<bool> hit(graph_.ops.size(), false);
  for (size_t id = 0; id < graph_.ops.size(); ++id) {
    const Op& op = graph_.ops[id];
    hit[id] = (op.modulePath >= 0 && moduleMatched[op.modulePath]) || fnmatch(glob.c_str(), op.name.c_str(), 0) == 0;
  }
  return hit;
}

// `recompute: ["*.mlp", ...]`: activation checkpointing of torch modules (every op of a module
// whose path, or an enclosing module's, a glob matches, as modules: keys match) or of nodes by
// name. Each module instance a glob matches is one checkpoint, as torch's
// gradient_checkpointing_enable() wraps each layer (its input kept, the rest recomputed); a glob
// matching node names is one checkpoint. A glob matching nothing is an error. Also a YAML
// model's top-level key.
void ModelLoader::applyPlanRecompute(const YamlNode& node) {
  if (!node.IsSequence()) {
    reader_.error(node, fmt::format("recompute must list module paths or node names (globs); got {}", describeNode(node)));
    return;
  }
  int32_t nextCheckpoint = 1;
  for (const YamlNode& entry : node) {
    // A list of names (or globs) is one checkpoint of every op they name (`--plan-out` writes a
    // layer's attention so); a single glob is one checkpoint, per module instance it matches.
    // Each name with its node by value: iterating a sequence yields items that end with their
    // iteration, so a pointer to one would dangle by the time a name matching nothing is reported.
    std::vector<std::pair<std::string, YamlNode>> globs;
    if (entry.IsSequence()) {
      for (const YamlNode& item : entry)
        if (auto glob = reader_.string(item, "a recompute entry's name")) globs.emplace_back(*glob, item);
    } else if (auto glob = reader_.string(entry, "a recompute entry")) {
      globs.emplace_back(*glob, entry);
    }
    int32_t byName = nextCheckpoint++;
    std::map<std::string, int32_t> byInstance;
    for (const auto& [glob, where] : globs) {
      // A module matches when it or a module enclosing it does: checkpointing a block covers its layers.
      std::vector<bool> hit = opsMatching(glob);
      int count = 0;
      for (size_t id = 0; id < graph_.ops.size(); ++id) {
        if (!hit[id]) continue;
        OpAnnotation& ann = *graph_.ops[id].annotation;
        ann.recompute = true;
        std::string instance = entry.IsSequence() ? "" : matchedModuleInstance(glob, graph_.moduleOf(graph_.ops[id]));
        if (instance.empty()) {
          ann.checkpoint = byName;
        } else {
          auto [it, added] = byInstance.emplace(instance, nextCheckpoint);
          if (added) ++nextCheckpoint;
          ann.checkpoint = it->second;
        }
        ++count;
      }
      if (count == 0) {
        std::vector<std::string> names(graph_.modulePaths.begin(), graph_.modulePaths.end());
        for (const Op& op : graph_.ops) names.push_back(op.name);
        reader_.error(where, fmt::format("recompute entry '{}' matches no module or node of the graph; {}", glob,
                                         closestNames(glob, names)));
      }
    }
  }
}

// The outermost module on `path` (itself or one enclosing it) that `glob` names, "" for none.
std::string ModelLoader::matchedModuleInstance(const std::string& glob, const std::string& path) {
  std::string found;
  for (std::string prefix = path; !prefix.empty();) {
    if (modulePathMatches(glob, prefix)) found = prefix;
    size_t dot = prefix.rfind('.');
    prefix = dot == std::string::npos ? "" : prefix.substr(0, dot);
  }
  return found;
}

}  // namespace irc::model_loading
