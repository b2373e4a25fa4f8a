// The compiled form of a JSON Schema: a graph of nodes, each one kind of JSON value with the
// constraints the byte matcher (byte_matcher.hpp) enforces while the value is written. Recursion
// ($ref cycles, "any JSON value") is a cycle in the graph; the matcher bounds the nesting depth.
// After compile (grammar_passes.hpp) no any_of has another any_of among its alternatives, so the
// matcher forks one level at most per byte.
#pragma once

#include "common/exact_numbers.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/pattern_regex.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

inline constexpr std::uint32_t no_node = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t unbounded = std::numeric_limits<std::uint32_t>::max();

using bitnet::wide_int;

enum class node_kind : std::uint8_t {
    nothing, ///< no value is valid (the `false` schema)
    any_of,  ///< one of `alts` (anyOf, a list of types, enum members that are containers)
    object,
    array,
    string,
    integer,
    number,      ///< a JSON number, optionally bounded
    literal,     ///< exactly `bytes` (const, true, false, null)
    literal_set, ///< exactly one of the byte strings in `tries[set]` (enum members, scalars)
    /// A function call, one of several: `{"name":N,"arguments":A}` in that order, where N is one
    /// of the names in `tries[set]` (canonical JSON strings) and A follows `values[i]` for the
    /// i-th name. One configuration whatever the number of functions (a union of per-function
    /// objects would keep one per function alive while the name is written).
    call_union,
    /// Plain text (text_grammar.hpp): a whole reply, every code point through
    /// `regexes[regex]`, no JSON quoting; only ever the root.
    text,
};

/// A trie over byte strings: an object's declared names (canonical escaped contents), so a
/// string can be checked to be none of them while it is written; or a set of literals.
struct byte_trie {
    struct trie_node {
        std::vector<std::pair<std::uint8_t, std::uint32_t>> next; ///< sorted by byte
        bool terminal = false;
        std::uint32_t id = 0; ///< terminal: the index of the string (insert order)
    };
    std::vector<trie_node> nodes{trie_node{}};
    static constexpr std::uint32_t dead = 0xFFFFFFFF;

    /// Adds `s` as string number `id` (a string added twice keeps its first id).
    void insert(const std::string& s, std::uint32_t id = 0);
    [[nodiscard]] std::uint32_t step(std::uint32_t at, std::uint8_t b) const noexcept;
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
    // integer: bounds as integers; number: bounds in units of 10^-number_fraction_digits
    bool has_lo = false;
    bool has_hi = false;
    wide_int lo = 0;
    wide_int hi = 0;
    std::uint64_t multiple_of = 0; ///< integer only; 0 = none
    // literal
    std::string bytes;
    // literal_set, call_union: index into grammar::tries
    std::int32_t set = -1;
};

struct grammar {
    std::vector<node> nodes;
    std::vector<pattern_regex> regexes;
    std::vector<byte_trie> tries;
    std::uint32_t root = no_node;
    /// Nested values deeper than this are refused (recursive schemas, "any JSON").
    std::uint32_t max_depth = limits::max_value_depth;
};

} // namespace bitnet::model::constrain
