// The compiled form of a JSON Schema: a graph of nodes, each one kind of JSON value with the
// constraints the byte matcher (byte_matcher.hpp) enforces while the value is written. Recursion
// ($ref cycles, "any JSON value") is a cycle in the graph; the matcher bounds the nesting depth.
#pragma once

#include "model/constrain/pattern_regex.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

inline constexpr std::uint32_t no_node = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t unbounded = std::numeric_limits<std::uint32_t>::max();

enum class node_kind : std::uint8_t {
    nothing, ///< no value is valid (the `false` schema)
    any_of,  ///< one of `alts` (anyOf, enum, a list of types)
    object,
    array,
    string,
    integer,
    number,  ///< any JSON number, no bounds
    literal, ///< exactly `bytes` (const and enum members, true, false, null)
};

/// A trie over byte strings (the canonical escaped contents of an object's property names), so a
/// string can be checked to be none of them while it is written.
struct byte_trie {
    struct trie_node {
        std::vector<std::pair<std::uint8_t, std::uint16_t>> next; ///< sorted by byte
        bool terminal = false;
    };
    std::vector<trie_node> nodes{trie_node{}};
    static constexpr std::uint16_t dead = 0xFFFF;

    void insert(const std::string& s);
    [[nodiscard]] std::uint16_t step(std::uint16_t at, std::uint8_t b) const noexcept;
};

struct node {
    node_kind kind = node_kind::nothing;
    std::vector<std::uint32_t> alts; ///< any_of
    // object: declared properties (canonical escaped names) and their value nodes
    std::vector<std::string> keys;
    std::vector<std::uint32_t> values;
    std::uint64_t required = 0;         ///< bit i: keys[i] must appear
    std::uint32_t additional = no_node; ///< value node of other names; no_node: none allowed
    std::uint32_t other_key = no_node;  ///< string node of other names (excludes `keys`)
    // array: positional items, then `items` for the rest (no_node: nothing more)
    std::vector<std::uint32_t> prefix;
    std::uint32_t items = no_node;
    // object (properties), array (items), string (code points)
    std::uint32_t min_count = 0;
    std::uint32_t max_count = unbounded;
    /// Counts saturate here: every comparison above gives the same answer past it, so two
    /// values with different long counts share one matcher state (and one cached mask).
    std::uint32_t count_cap = 0;
    // string
    std::int32_t regex = -1;   ///< index into grammar::regexes
    std::int32_t exclude = -1; ///< index into grammar::tries: contents that are not allowed
    // integer
    std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    std::uint64_t multiple_of = 0; ///< 0 = none
    // literal
    std::string bytes;
};

struct grammar {
    std::vector<node> nodes;
    std::vector<pattern_regex> regexes;
    std::vector<byte_trie> tries;
    std::uint32_t root = no_node;
    /// Nested values deeper than this are refused (recursive schemas, "any JSON").
    std::uint32_t max_depth = 32;
};

} // namespace bitnet::model::constrain
