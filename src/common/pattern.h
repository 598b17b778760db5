// Linear-time matching of the regular-expression patterns that API models put on string
// members (`arn:aws.*:kinesis:.*:\d{12}:stream/\S+`, `[a-zA-Z0-9_.-]+`, …).
//
// std::regex is not used on request input: libstdc++'s executor recurses once per input
// character, so a 30,000-character member overflows an I/O thread's stack, and its
// backtracking is exponential on some patterns. This matcher compiles a pattern into a
// Thompson NFA and runs it as a lazily built DFA: time is O(input length × pattern
// states) in the worst case and O(input length) once the DFA states a match needs are
// built; it allocates no more than a bounded cache and never recurses on input.
//
// The syntax is the subset the models use: literals and `\`-escaped punctuation, `.`
// (any byte but `\n` and `\r`), `\d \D \w \W \s \S`, classes `[...]`/`[^...]` with
// ranges and escapes, groups `(...)`/`(?:...)`, `|`, quantifiers `* + ? {n} {n,} {n,m}`
// (a trailing `?` for laziness is accepted: it cannot change whether a string matches),
// and `^`/`$` at the ends. Matching is over bytes (a UTF-8 character outside ASCII is
// matched by `.`, `\S`, `\W` or a negated class byte by byte).
//
// Thread-safety: a compiled Pattern is immutable; Matches() may run on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream {

class Pattern {
 public:
  // Compiles `pattern`. InvalidArgument for syntax outside the subset above, a pattern
  // longer than 4,096 bytes, groups nested deeper than 32, or more than 20,000 NFA states.
  static Result<Pattern> Compile(std::string_view pattern);
  // Compiles a pattern known at build time; aborts on an invalid one (a programming error).
  static Pattern MustCompile(std::string_view pattern);

  // True when the whole of `s` matches (AWS model patterns are anchored).
  bool Matches(std::string_view s) const { return Run(s, /*prefix=*/false); }
  // True when some prefix of `s` matches (std::regex_search of a `^`-anchored pattern).
  bool MatchesPrefix(std::string_view s) const { return Run(s, /*prefix=*/true); }

  const std::string& source() const { return source_; }

  // One NFA state: consume a byte in `bytes` and go to `out`, or (a split) go to `out`
  // and `out2` without consuming, or accept.
  struct State {
    enum class Kind : uint8_t { kBytes, kSplit, kMatch } kind;
    int32_t out = -1;
    int32_t out2 = -1;
    uint64_t bytes[4] = {0, 0, 0, 0};  // 256-bit set, for kBytes
  };

 private:
  Pattern() = default;
  bool Run(std::string_view s, bool prefix) const;

  std::string source_;
  std::vector<State> states_;
  int32_t start_ = -1;
};

}  // namespace icestream
