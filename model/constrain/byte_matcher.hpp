// Walks bytes through a grammar (grammar.hpp): a nondeterministic pushdown matcher whose state is
// the set of live configurations, each a stack of frames (one frame per JSON value being written,
// innermost last). anyOf forks a configuration; a byte no configuration takes ends the set.
// Frames are plain 24-byte values, so a state serialises to a byte string (the mask cache's key)
// and copies cheaply.
#pragma once

#include "model/constrain/grammar.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

struct frame {
    std::uint32_t node = 0;
    std::uint16_t phase = 0; ///< where inside the value (per kind; byte_matcher_impl.hpp)
    std::uint16_t aux = 0;   ///< key position, trie node, sign
    std::uint32_t x = 0;     ///< count (members, items, code points), literal position
    std::uint32_t y = 0;     ///< property index, code point being decoded, residue
    std::uint64_t z = 0;     ///< members seen, regex state, magnitude
    friend bool operator==(const frame&, const frame&) = default;
    friend auto operator<=>(const frame&, const frame&) = default;
};

using frame_stack = std::vector<frame>;

class byte_matcher {
public:
    /// The state before the first byte of `g`'s root value.
    [[nodiscard]] static byte_matcher start(const grammar& g);

    /// Takes one byte; false (and dead()) when no configuration can take it.
    bool feed(const grammar& g, std::uint8_t b);
    /// Takes every byte of `s`; false as soon as one is refused.
    bool feed(const grammar& g, std::string_view s);

    [[nodiscard]] bool dead() const noexcept { return configs_.empty(); }
    /// The bytes so far are a whole valid value (a number may still grow).
    [[nodiscard]] bool complete(const grammar& g) const;
    /// Complete, and no byte can follow.
    [[nodiscard]] bool finished() const noexcept;
    /// The state as bytes: equal keys, equal futures.
    [[nodiscard]] std::string key() const;

private:
    std::vector<frame_stack> configs_;
};

} // namespace bitnet::model::constrain
