// Loads a model through irc::core, as another project would.
#include <iostream>

#include "frontends/yaml/yaml_frontend.h"

int main() {
  std::string text =
      "name: ffn\nparallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
      "ops:\n  - {name: a, type: ReLU, inputs: [x]}\n  - {name: b, type: Neg, inputs: [a]}\n";
  irc::DiagnosticEngine diags("m.yaml", text);
  auto loaded = irc::loadModel(text, diags, {"m"});
  if (!loaded) {
    std::cerr << diags.renderToString();
    return 1;
  }
  std::cout << "consumer: " << loaded->graph.name << " has " << loaded->graph.ops.size() << " ops; irc " << IRC_VERSION << "\n";
  return 0;
}
