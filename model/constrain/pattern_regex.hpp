// A string's language as the matcher runs it: a `pattern` (pattern_parser.hpp's subset of
// ECMA-262) as a Thompson NFA of at most 63 states, so that a whole set of NFA states is one
// 64-bit word (a matcher state stays a small value that can be hashed and cached); or a format
// (string_formats.hpp) as a DFA, its state one number. Matching a pattern is a search, as JSON
// Schema says: unanchored unless it starts with `^` and ends with `$`. Characters are Unicode
// code points.
//
// Lengths: each state knows which lengths its completions can have (length_table.hpp), so a
// string with minLength/maxLength takes a character only when some completion still ends within
// them: a pattern or format never runs into its length cap half written.
#pragma once

#include "common/error.hpp"
#include "model/constrain/length_table.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/pattern_dfa.hpp"
#include "model/constrain/pattern_parser.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model::constrain {

class pattern_regex {
public:
    /// No upper bound on a length.
    static constexpr std::uint64_t no_cap = ~0ULL;

    /// A client's pattern as an NFA: anything parse_pattern refuses, or more than 63 states,
    /// is `unsupported` with a message that says what.
    [[nodiscard]] static result<pattern_regex> compile(std::string_view pattern);
    /// A format: the anchored `pattern`, determinized, intersected with each of `also`.
    [[nodiscard]] static result<pattern_regex>
    determinized(std::string_view pattern, std::initializer_list<std::string_view> also = {});

    /// The state before any character.
    [[nodiscard]] std::uint64_t start() const noexcept { return start_; }
    /// The state after code point `cp`; 0 = no match is possible any more.
    [[nodiscard]] std::uint64_t step(std::uint64_t state, std::uint32_t cp) const noexcept;
    /// Whether some code point in [lo, hi] can come next (a UTF-8 sequence or an escape under way
    /// must have a completion the pattern takes).
    [[nodiscard]] bool can_step(std::uint64_t state, std::uint32_t lo, std::uint32_t hi) const {
        return can_step_within(state, lo, hi, 0, no_cap);
    }
    /// Whether the text so far matches.
    [[nodiscard]] bool accepts(std::uint64_t state) const noexcept;

    /// Whether some completion of `state` has between `lo` and `hi` more characters.
    [[nodiscard]] bool fits(std::uint64_t state, std::uint64_t lo, std::uint64_t hi) const noexcept;
    /// Whether some code point in [cp_lo, cp_hi] leads to a state that fits [lo, hi] (lengths
    /// counted after that code point).
    [[nodiscard]] bool can_step_within(std::uint64_t state, std::uint32_t cp_lo,
                                       std::uint32_t cp_hi, std::uint64_t lo,
                                       std::uint64_t hi) const;
    /// A live state's shortest completion is never longer: an upper bound of `hi` at or past it
    /// decides nothing (masks of states that differ only in a far length cap are equal).
    [[nodiscard]] std::uint64_t longest_first() const noexcept;
    /// Bytes of its length table (a schema's tables are bounded: limits::max_length_table_bytes).
    [[nodiscard]] std::size_t table_bytes() const noexcept { return lengths_->bytes(); }

private:
    // NFA mode (dfa_ null): classes and moves per state, a state is a set of them.
    std::vector<char_class> classes_;
    std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> moves_;
    std::uint64_t match_mask_ = 0;
    std::uint64_t live_mask_ = 0; ///< states from which a match can still be reached
    bool anchored_start_ = false;
    bool anchored_end_ = false;
    // DFA mode: shared by every schema that uses the format.
    std::shared_ptr<const pattern_dfa> dfa_;
    std::uint64_t start_ = 0;
    std::shared_ptr<const length_table> lengths_;

    /// The least completion length >= lo of an NFA state set, or none.
    [[nodiscard]] std::uint64_t next_length(std::uint64_t state, std::uint64_t lo) const noexcept;
    /// The NFA state after a character that moves into `targets` (the entry comes back after any
    /// character of a search, and a match with a free end is final).
    [[nodiscard]] std::uint64_t settle(std::uint64_t targets) const noexcept;
};

} // namespace bitnet::model::constrain
