// Every bound a client's schema meets on its way through constrained decoding, in one place: the
// README's "Structured output limits" table lists these names and values. A schema past a
// compile limit is refused (errc::limit_exceeded, the limit's name in `param`) before any token
// is generated; a matcher past a stepping limit ends its own sequence with the same error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace bitnet::model::constrain::limits {

/// Schema text, bytes.
inline constexpr std::size_t max_schema_bytes = 1u << 20;
/// Nesting of the schema document itself (objects and arrays inside each other). The HTTP side
/// checks a client's schema against it (http/api_json.hpp, the same name and value); the
/// compiler allows server_wrapper_nesting more, for the levels the server's own wrapper puts
/// above a client's schema (a forced call among several tools: $defs, then the tool's entry).
inline constexpr std::size_t max_schema_nesting = 64;
inline constexpr std::size_t server_wrapper_nesting = 4;
/// Grammar nodes one schema may compile to (every subschema, $ref target and literal is one).
inline constexpr std::size_t max_nodes = 200'000;
/// Alternatives one anyOf (with the anyOfs and $refs it reaches without a byte) may offer.
inline constexpr std::size_t max_alternatives = 4096;
/// Members of one `enum`.
inline constexpr std::size_t max_enum_members = 100'000;
/// Declared property names of one object (a required one counts as declared).
inline constexpr std::size_t max_properties = 64;
/// Wall time of one compile, milliseconds.
inline constexpr std::int64_t max_compile_ms = 2000;
/// A `pattern`'s length in bytes, its group nesting, and the NFA states it may need.
inline constexpr std::size_t max_pattern_bytes = 1u << 20;
inline constexpr std::size_t max_pattern_nesting = 64;
inline constexpr std::size_t max_pattern_states = 63;
/// Characters after which the lengths a pattern's states can still take must repeat (their
/// period and preperiod: realistic patterns repeat within a few dozen), and the bytes of one
/// schema's length tables together.
inline constexpr std::uint32_t max_length_period = 4096;
inline constexpr std::size_t max_length_table_bytes = 4u << 20;
/// Nesting of the JSON value being written (objects and arrays).
inline constexpr std::uint32_t max_value_depth = 32;
/// Digits of a number: integer part, fraction, exponent.
inline constexpr std::uint32_t number_integer_digits = 19;
inline constexpr std::uint32_t number_fraction_digits = 15;
inline constexpr std::uint32_t number_exponent_digits = 3;
/// Live matcher configurations after one byte (ambiguous alternatives still open at once).
inline constexpr std::size_t max_live_configs = 4096;
/// Work of one token mask: configuration steps (one configuration taking one byte), and the CPU
/// time of the thread computing it.
inline constexpr std::uint64_t max_mask_steps = 20'000'000;
inline constexpr std::int64_t max_mask_ms = 2000;
/// What one step waits, in all, for the masks of its sequences after its forward pass (they
/// were computed during it, off the step's path): a sequence whose mask is not ready by then is
/// sampled in a later step, so no schema holds the other sequences' tokens.
inline constexpr std::int64_t max_step_mask_ms = 5;

} // namespace bitnet::model::constrain::limits

namespace bitnet::model::constrain {

/// Lets a long compile or mask computation be ended from another thread (the executor's
/// watchdog): the loops check it with their budgets.
struct cancel_token {
    std::atomic<bool> cancelled{false};
};

} // namespace bitnet::model::constrain
