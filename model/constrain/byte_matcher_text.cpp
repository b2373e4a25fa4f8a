// The stepper's `text` nodes (text_grammar.hpp): a whole reply of plain text, taken code point by
// code point through a regex, with no JSON quoting or escapes. Its own file so the JSON string
// states (byte_matcher_string.cpp) stay as they are; it shares only the stepper.
//
// Frame: phase 0 before the first byte, text_between between code points, text_more + k with k
// more continuation bytes of a UTF-8 sequence to come; y the sequence's bits so far, x its length
// in bytes; z the regex state. A byte is taken only when some code point it can still become is
// one the regex takes (pattern_regex::can_step), so a mask never leads into a state that no token
// can leave; the frame ends (is popped) once the regex matches and can take nothing more.
#include "model/constrain/byte_matcher_impl.hpp"

#include <algorithm>

namespace bitnet::model::constrain::internal {

namespace {

constexpr std::uint16_t text_between = 1;
constexpr std::uint16_t text_more = 1; ///< phase text_more + k: k continuation bytes to come

/// The code points a UTF-8 sequence of `len` bytes whose bits so far are `y`, with `rest`
/// continuation bytes to come, can still become: valid ones only (no overlong forms, no
/// surrogates, nothing past U+10FFFF); lo > hi when there is none.
std::pair<std::uint32_t, std::uint32_t> utf8_span(std::uint32_t y, std::uint32_t len, int rest) {
    const std::uint32_t lo = y << (6 * rest);
    const std::uint32_t hi = lo | ((1u << (6 * rest)) - 1);
    const std::uint32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    const std::uint32_t most = len == 2 ? 0x7FF : len == 3 ? 0xFFFF : 0x10FFFF;
    return {std::max(lo, least), std::min(hi, most)};
}

} // namespace

/// Whether the regex can take a code point in [lo, hi] that is not a surrogate.
bool stepper::text_possible(const frame& f, const node& n, std::uint32_t lo,
                            std::uint32_t hi) const {
    const auto& re = g_.regexes[static_cast<std::size_t>(n.regex)];
    if (lo > hi)
        return false;
    if (hi < 0xD800 || lo > 0xDFFF)
        return re.can_step(f.z, lo, hi);
    return (lo < 0xD800 && re.can_step(f.z, lo, 0xD7FF)) ||
           (hi > 0xDFFF && re.can_step(f.z, 0xE000, hi));
}

void stepper::text(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    const auto& re = g_.regexes[static_cast<std::size_t>(n.regex)];
    if (f.phase == 0) {
        f.phase = text_between;
        f.z = re.start();
    }
    // A whole code point: the regex takes it, and the text ends when nothing more can follow.
    auto take = [&](std::uint32_t cp) {
        f.z = re.step(f.z, cp);
        if (f.z == 0)
            return;
        f.phase = text_between;
        if (re.accepts(f.z) && !text_possible(f, n, 0, 0x10FFFF))
            c.pop_back();
        emit(std::move(c));
    };
    if (f.phase == text_between) {
        std::uint32_t len = 0;
        if (b < 0x80)
            return take(b);
        if (b >= 0xC2 && b <= 0xDF)
            len = 2, f.y = b & 0x1Fu;
        else if (b >= 0xE0 && b <= 0xEF)
            len = 3, f.y = b & 0x0Fu;
        else if (b >= 0xF0 && b <= 0xF4)
            len = 4, f.y = b & 0x07u;
        else
            return; // a continuation byte or a byte UTF-8 never uses
        f.x = len;
        f.phase = static_cast<std::uint16_t>(text_more + len - 1);
        const auto [lo, hi] = utf8_span(f.y, len, static_cast<int>(len) - 1);
        return text_possible(f, n, lo, hi) ? emit(std::move(c)) : void();
    }
    if ((b & 0xC0) != 0x80)
        return;
    f.y = (f.y << 6) | (b & 0x3Fu);
    const int rest = f.phase - text_more - 1;
    if (rest == 0) {
        const auto [lo, hi] = utf8_span(f.y, f.x, 0);
        return lo == hi && text_possible(f, n, lo, hi) ? take(f.y) : void();
    }
    f.phase = static_cast<std::uint16_t>(f.phase - 1);
    const auto [lo, hi] = utf8_span(f.y, f.x, rest);
    if (text_possible(f, n, lo, hi))
        emit(std::move(c));
}

/// A text frame may end where its regex matches and no UTF-8 sequence is under way.
bool text_may_end(const grammar& g, const frame& f, const node& n) {
    const auto& re = g.regexes[static_cast<std::size_t>(n.regex)];
    if (f.phase == 0)
        return re.accepts(re.start());
    return f.phase == text_between && re.accepts(f.z);
}

} // namespace bitnet::model::constrain::internal
