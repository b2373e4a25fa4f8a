// The `pattern` keyword's syntax, the simple subset of ECMA-262 that schemas use in practice,
// parsed into a reduced NFA: the states that matter are the entry and every target of a character
// move, each with the (class, target) moves of its epsilon closure and whether that closure holds
// the end. pattern_regex runs it as a set of at most 63 states, or determinized (the formats).
// Characters are Unicode code points; surrogates (which no JSON string can hold) are in no class.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model::constrain {

struct char_class {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    bool negated = false; ///< only while parsing: normalize() folds it into the ranges
    /// Sorts and merges the ranges, turns a negated class into its complement and drops the
    /// surrogates, so both lookups below are a binary search (a class may hold many thousand
    /// ranges).
    void normalize();
    [[nodiscard]] bool contains(std::uint32_t cp) const noexcept;
    [[nodiscard]] bool intersects(std::uint32_t lo, std::uint32_t hi) const noexcept;
    [[nodiscard]] bool empty() const noexcept { return ranges.empty(); }
};

struct reduced_nfa {
    std::vector<char_class> classes;
    /// Per state: (class, target state) of every character move of its epsilon closure; moves
    /// whose class holds no character are left out.
    std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> moves;
    std::vector<bool> match; ///< per state: its closure holds the end of the pattern
    bool anchored_start = false;
    bool anchored_end = false;
};

/// Parses `pattern` (`^` first and `$` last are anchors; anything unsupported is `unsupported`
/// with a message that says what). State 0 is the entry.
[[nodiscard]] result<reduced_nfa> parse_pattern(std::string_view pattern);

/// The refusal of a pattern: its excerpt, what is not supported, and what is.
[[nodiscard]] error pattern_unsupported(std::string_view pattern, const std::string& what);

} // namespace bitnet::model::constrain
