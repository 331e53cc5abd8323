#include "ir/diagnostics.h"

#include <sstream>

#include <fmt/format.h>

namespace irc {

DiagnosticEngine::DiagnosticEngine(std::string fileName, std::string sourceText, size_t errorCap)
    : fileName_(std::move(fileName)), sourceText_(std::move(sourceText)), errorCap_(errorCap) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < sourceText_.size(); ++i)
    if (sourceText_[i] == '\n') lineStarts_.push_back(i + 1);
}

void DiagnosticEngine::error(SourceLoc loc, std::string message) {
  if (errorCount_ >= errorCap_) {
    ++droppedErrors_;
    return;
  }
  ++errorCount_;
  diagnostics_.push_back({Severity::Error, loc, std::move(message)});
}

void DiagnosticEngine::report(const Diagnostic& d) {
  if (d.severity == Severity::Error) error(d.loc, d.message);
  else if (d.severity == Severity::Warning) warning(d.loc, d.message);
  else note(d.loc, d.message);
}

void DiagnosticEngine::warning(SourceLoc loc, std::string message) {
  diagnostics_.push_back({Severity::Warning, loc, std::move(message)});
}

void DiagnosticEngine::note(SourceLoc loc, std::string message) {
  if (droppedErrors_ > 0) return;  // a note belongs to the error before it
  diagnostics_.push_back({Severity::Note, loc, std::move(message)});
}

std::string DiagnosticEngine::sourceLine(int line) const {
  if (line <= 0 || static_cast<size_t>(line) > lineStarts_.size()) return {};
  size_t begin = lineStarts_[line - 1];
  size_t end = sourceText_.find('\n', begin);
  if (end == std::string::npos) end = sourceText_.size();
  std::string text = sourceText_.substr(begin, end - begin);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  // The line is echoed to a terminal: control bytes (ESC, CR, NUL) become '?', one for one, so
  // the caret below still points at the right column.
  for (char& c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F) c = '?';
  return text;
}

std::string formatLoc(const SourceLoc& loc) {
  if (loc.isNode()) return "node " + std::to_string(loc.line - 1);
  return std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

void DiagnosticEngine::render(std::ostream& out, bool color) const {
  const char* bold = color ? "\033[1m" : "";
  const char* red = color ? "\033[1;31m" : "";
  const char* cyan = color ? "\033[1;36m" : "";
  const char* green = color ? "\033[1;32m" : "";
  const char* magenta = color ? "\033[1;35m" : "";
  const char* reset = color ? "\033[0m" : "";
  for (const Diagnostic& d : diagnostics_) {
    bool isError = d.severity == Severity::Error;
    out << bold << fileName_;
    if (d.loc.valid()) out << ':' << formatLoc(d.loc);
    const char* label = isError ? "error: " : d.severity == Severity::Warning ? "warning: " : "note: ";
    out << ": " << reset
        << (isError                           ? red
            : d.severity == Severity::Warning ? magenta
                                              : cyan)
        << label << reset << bold << d.message << reset << '\n';
    if (!d.loc.valid() || d.loc.isNode()) continue;  // a binary model has no source line to show
    std::string text = sourceLine(d.loc.line);
    out << text << '\n';
    // Keep tabs so that the caret lines up under the offending column.
    std::string pad;
    for (int i = 0; i + 1 < d.loc.col && static_cast<size_t>(i) < text.size(); ++i) pad += text[i] == '\t' ? '\t' : ' ';
    out << pad << green << '^' << reset << '\n';
  }
  if (droppedErrors_ > 0) out << fmt::format("{}: too many errors ({} more not shown); stopping\n", fileName_, droppedErrors_);
}

std::string DiagnosticEngine::renderToString() const {
  std::ostringstream out;
  render(out, false);
  return out.str();
}

}  // namespace irc
