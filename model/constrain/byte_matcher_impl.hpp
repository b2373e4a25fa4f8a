// Internals shared by byte_matcher.cpp and byte_matcher_string.cpp (not part of the API): the
// frame::phase values of each node kind and the stepper that feeds one byte to one configuration.
// It is a header only because the stepper's string handling lives in its own file.
#pragma once

#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/grammar.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace bitnet::model::constrain::internal {

// Phases, per node kind (frame::phase). 0 is always "before the value's first byte".
enum obj_phase : std::uint16_t {
    obj_open = 1,    ///< after '{': a name or '}'
    obj_after_comma, ///< a name
    obj_key,         ///< inside declared name y at byte aux
    obj_colon,       ///< ':' before declared name y's value
    obj_value,       ///< declared name y's value
    obj_after_value, ///< ',' or '}'
    obj_other_colon, ///< ':' after another name
    obj_other_value, ///< another name's value
};
enum arr_phase : std::uint16_t { arr_open = 1, arr_after_value, arr_after_comma };
enum str_phase : std::uint16_t {
    str_body = 1,
    str_escape, ///< after '\'
    str_u,      ///< after \u: '0'
    str_u0,     ///< after \u0: '0'
    str_u00,    ///< after \u00: '0' or '1'
    str_u00x,   ///< after \u00X: a hex digit (y = X)
    str_cont1,  ///< UTF-8: one continuation byte to go
    str_cont2,
    str_cont3,
    str_e0, ///< second byte of E0: A0-BF
    str_ed, ///< second byte of ED: 80-9F (no surrogates)
    str_f0, ///< second byte of F0: 90-BF
    str_f4, ///< second byte of F4: 80-8F
};
enum num_phase : std::uint16_t {
    num_minus = 1,
    num_zero,
    num_int,
    num_dot,
    num_frac,
    num_e,
    num_e_sign,
    num_exp,
};

/// Whether a number or integer frame may end here without taking a byte (numbers end at the
/// first byte that is not theirs). byte_matcher_number.cpp.
bool number_may_end(const frame& f, const node& n);

/// Whether a `text` frame may end here (byte_matcher_text.cpp).
bool text_may_end(const grammar& g, const frame& f, const node& n);

/// Feeds one byte to configurations, appending every configuration it leads to to `out`.
class stepper {
public:
    stepper(const grammar& g, std::vector<frame_stack>& out)
        : g_(g)
        , out_(out) {}

    /// Feeds `b` to configuration `c` (taken by value: it is the new configuration).
    void step(frame_stack c, std::uint8_t b, std::uint32_t forks = 0);

private:
    const grammar& g_;
    std::vector<frame_stack>& out_;

    void emit(frame_stack c) { out_.push_back(std::move(c)); }

    // byte_matcher.cpp: the grammar walk, literals, objects and arrays.
    void push(frame_stack c, std::uint32_t child, std::uint8_t b);
    void end_and_pass(frame_stack c, std::uint8_t b);
    void literal_set(frame_stack c, std::uint8_t b, const node& n);
    void call_union(frame_stack c, std::uint8_t b, const node& n);
    bool more_names(const frame& f, const node& n) const;
    bool usable_name(const node& n, std::size_t i) const;
    void object(frame_stack c, std::uint8_t b, const node& n);
    void array(frame_stack c, std::uint8_t b, const node& n);

    // byte_matcher_number.cpp: numbers and integers, their digit caps and exact bounds.
    void number(frame_stack c, std::uint8_t b, const node& n);
    void integer(frame_stack c, std::uint8_t b, const node& n);

    // byte_matcher_string.cpp: strings, their escapes and UTF-8.
    bool on_char(frame& f, const node& n, std::uint32_t cp);
    bool possible(const frame& f, const node& n, std::uint32_t lo, std::uint32_t hi) const;
    static std::pair<std::uint32_t, std::uint32_t> utf8_range(std::uint16_t phase, std::uint32_t y);
    void string(frame_stack c, std::uint8_t b, const node& n);
    bool may_close(const frame& f, const node& n) const;
    void utf8_continuation(frame_stack c, std::uint8_t b, const node& n, std::uint16_t next,
                           std::uint8_t lo = 0x80, std::uint8_t hi = 0xBF);

    // byte_matcher_text.cpp: plain text under a regex (text_grammar.hpp).
    void text(frame_stack c, std::uint8_t b, const node& n);
    bool text_possible(const frame& f, const node& n, std::uint32_t lo, std::uint32_t hi) const;
};

} // namespace bitnet::model::constrain::internal
