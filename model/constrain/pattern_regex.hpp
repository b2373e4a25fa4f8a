// The `pattern` keyword's regular expressions, the simple subset of ECMA-262 syntax that schemas
// use in practice, compiled to a Thompson NFA of at most 63 states so that a whole set of NFA
// states is one 64-bit word (a matcher state stays a small value that can be hashed and cached).
// Matching is a search, as JSON Schema says: unanchored unless the pattern starts with `^` and
// ends with `$`. Characters are Unicode code points.
#pragma once

#include "common/error.hpp"
#include "model/constrain/limits.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model::constrain {

class pattern_regex {
public:
    /// Supported: literals, `.`, classes `[a-z]` `[^...]`, `\d \w \s \D \W \S`, escaped
    /// punctuation, groups `(...)` `(?:...)`, `|`, `* + ?`, `{n}` `{n,}` `{n,m}`, `^` first and `$`
    /// last. Anything else (backreferences, lookaround, anchors inside, an NFA over 63 states)
    /// is `unsupported`, with a message that says what.
    [[nodiscard]] static result<pattern_regex> compile(std::string_view pattern);

    /// The state before any character.
    [[nodiscard]] std::uint64_t start() const noexcept { return start_; }
    /// The state after code point `cp`; 0 = no match is possible any more.
    [[nodiscard]] std::uint64_t step(std::uint64_t state, std::uint32_t cp) const noexcept;
    /// Whether some code point in [lo, hi] can come next (a UTF-8 sequence or an escape under way
    /// must have a completion the pattern takes).
    [[nodiscard]] bool can_step(std::uint64_t state, std::uint32_t lo, std::uint32_t hi) const;
    /// Whether the text so far matches.
    [[nodiscard]] bool accepts(std::uint64_t state) const noexcept;

    struct char_class {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
        bool negated = false; ///< only while parsing: normalize() folds it into the ranges
        /// Sorts and merges the ranges and turns a negated class into its complement, so both
        /// lookups below are a binary search (a class may hold many thousand ranges).
        void normalize();
        [[nodiscard]] bool contains(std::uint32_t cp) const noexcept;
        [[nodiscard]] bool intersects(std::uint32_t lo, std::uint32_t hi) const noexcept;
    };
    struct nfa_state {
        std::int32_t cls = -1;       ///< -1: epsilon/split or match
        std::uint64_t next_mask = 0; ///< closure of the successor after a character of `cls`
        bool match = false;
    };

private:
    std::vector<char_class> classes_;
    std::vector<nfa_state> states_;
    /// Per important state: the (class, next state) moves of its epsilon closure.
    std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> moves_;
    std::uint64_t start_ = 0;
    std::uint64_t match_mask_ = 0;
    bool anchored_start_ = false;
    bool anchored_end_ = false;
    friend struct regex_builder;
};

} // namespace bitnet::model::constrain
