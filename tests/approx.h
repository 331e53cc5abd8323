#pragma once
// A figure compared within a tolerance relative to itself. doctest's Approx adds a scale of 1 to
// its tolerance (|a - b| < epsilon * (1 + max(|a|, |b|))), which for figures far below one, as a
// step's seconds are, turns its default 1.2e-5 into an absolute 12 us: a collective's 60 us
// latency could double and still pass. Every test compares through this instead.
#include <doctest/doctest.h>

#include <limits>

namespace irc::test {

// (Zero is compared exactly: doctest's test is strict, |a - b| < tolerance.)
inline doctest::Approx relative(double expected) {
  return doctest::Approx(expected).scale(expected == 0 ? std::numeric_limits<double>::min() : 0);
}

}  // namespace irc::test
