#pragma once
// Located diagnostics: `FILE:LINE:COL: error: message`, then the source line and a caret.
// User errors (a bad model) go through a DiagnosticEngine and end in exit status 1; internal
// errors (bugs) are exceptions of type InternalError and end in exit status 4.
#include <cstddef>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace irc {

// 1-based line and column; line 0 means "no position" (a diagnostic about the whole file). In a
// binary model (ONNX) there are no lines: column 0 marks `line` as the node's index + 1, printed
// `FILE:node N`.
struct SourceLoc {
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
  bool isNode() const { return line > 0 && col == 0; }
  bool operator==(const SourceLoc&) const = default;
};

// "LINE:COL", or "node N" for an ONNX node (what follows `FILE:` in messages and dumps).
std::string formatLoc(const SourceLoc& loc);

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

class DiagnosticEngine {
 public:
  static constexpr size_t kDefaultErrorCap = 20;

  DiagnosticEngine(std::string fileName, std::string sourceText, size_t errorCap = kDefaultErrorCap);

  void error(SourceLoc loc, std::string message);
  void note(SourceLoc loc, std::string message);
  // Something the user should know that does not stop the run (rendered with the errors, or on
  // its own when there are none).
  void warning(SourceLoc loc, std::string message);
  // One reported elsewhere (a search's, a trial's), again here with its severity.
  void report(const Diagnostic& d);

  size_t errorCount() const { return errorCount_; }
  bool hasErrors() const { return errorCount_ > 0; }
  // True once the cap is reached: callers may stop looking for more errors.
  bool capReached() const { return errorCount_ >= errorCap_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  const std::string& fileName() const { return fileName_; }

  // Every diagnostic in the order reported, each with its source line and caret.
  void render(std::ostream& out, bool color) const;
  std::string renderToString() const;

 private:
  std::string sourceLine(int line) const;

  std::string fileName_;
  std::string sourceText_;
  std::vector<size_t> lineStarts_;
  size_t errorCap_;
  size_t errorCount_ = 0;
  size_t droppedErrors_ = 0;
  std::vector<Diagnostic> diagnostics_;
};

// A bug in irc, not in the model: reported with exit status 4.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace irc
