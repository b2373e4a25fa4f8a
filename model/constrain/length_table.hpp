// How long a string can still become, per state of an automaton (an NFA state of a pattern or a
// DFA state of a format): the set of lengths k such that some k more characters lead from the
// state to a match. Such a set is ultimately periodic, so it is kept exactly as its first T bits
// with a preperiod a and a period p (T = a + p): k >= T is in the set when a + (k - a) mod p is.
// The string stepper asks it whether a string may take a character and still end within its
// minLength/maxLength, so no token leads into a value that cannot be finished.
#pragma once

#include "common/error.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::model::constrain {

class length_table {
public:
    /// No such length.
    static constexpr std::uint64_t none = ~0ULL;

    /// The table of a graph of `succ.size()` states: succ[i] are the states one character after
    /// i, fin[i] whether i ends a match. Fails (naming limits::max_length_period) when the
    /// lengths repeat only after more than `max_steps`.
    [[nodiscard]] static result<length_table>
    build(const std::vector<std::vector<std::uint32_t>>& succ, const std::vector<bool>& fin,
          std::uint32_t max_steps);

    /// The least k >= lo such that k more characters can take `state` to a match; none if none.
    [[nodiscard]] std::uint64_t next(std::uint32_t state, std::uint64_t lo) const noexcept;
    /// next(state, 0): the shortest completion.
    [[nodiscard]] std::uint64_t first(std::uint32_t state) const noexcept { return first_[state]; }
    /// The longest shortest completion of any state that has one.
    [[nodiscard]] std::uint64_t longest_first() const noexcept { return longest_first_; }
    [[nodiscard]] std::size_t bytes() const noexcept {
        return bits_.capacity() * sizeof(std::uint64_t) + first_.capacity() * sizeof(std::uint64_t);
    }

private:
    std::uint64_t a_ = 0; ///< preperiod
    std::uint64_t p_ = 1; ///< period
    std::uint64_t t_ = 1; ///< a + p: bits kept per state
    std::size_t words_ = 1;
    std::vector<std::uint64_t> bits_; ///< state-major: state i's bits over k in [0, t_)
    std::vector<std::uint64_t> first_;
    std::uint64_t longest_first_ = 0;

    /// The first set bit of `state` in [from, to), or none.
    [[nodiscard]] std::uint64_t scan(std::uint32_t state, std::uint64_t from,
                                     std::uint64_t to) const noexcept;
};

} // namespace bitnet::model::constrain
