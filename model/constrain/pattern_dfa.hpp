// Deterministic automata for the string formats (string_formats.hpp). A format needs more states
// than a pattern's 63-state set allows (a host name's labels count to 63, a date knows the year's
// leap), so its anchored pattern is determinized once per process, and where a format is two
// conditions at once (an email's dot-atom and its 64-byte local part) the two automata are
// intersected. A state is one number, so it sits in a matcher frame as a pattern's state does.
#pragma once

#include "common/error.hpp"
#include "model/constrain/pattern_parser.hpp"

#include <cstdint>
#include <vector>

namespace bitnet::model::constrain {

struct pattern_dfa {
    struct edge {
        std::uint32_t lo = 0, hi = 0; ///< code points, inclusive
        std::uint32_t to = 0;
    };
    /// Per state, sorted by `lo`, disjoint; state 0 is dead (no edges, never accepts), and no
    /// edge leads to a state that cannot reach a match.
    std::vector<std::vector<edge>> edges;
    std::vector<bool> accept;
    static constexpr std::uint32_t start = 1;

    /// The state after `cp`, 0 when none.
    [[nodiscard]] std::uint32_t step(std::uint32_t state, std::uint32_t cp) const noexcept;
};

/// The DFA of an anchored pattern (`^...$`) by subset construction; fails past `max_states`.
[[nodiscard]] result<pattern_dfa> determinize(const reduced_nfa& nfa, std::size_t max_states);

/// The strings both `a` and `b` accept (product construction); fails past `max_states`.
[[nodiscard]] result<pattern_dfa> intersect(const pattern_dfa& a, const pattern_dfa& b,
                                            std::size_t max_states);

} // namespace bitnet::model::constrain
