// The stepper's string handling: the opening and closing quote, escapes (canonical ones only),
// UTF-8 validation, and the per-character checks of minLength/maxLength, pattern and excluded
// names. Split off from byte_matcher.cpp, which walks the rest of the grammar, to keep each file
// to one concern; the two share the stepper through byte_matcher_impl.hpp.
#include "model/constrain/byte_matcher_impl.hpp"

#include <algorithm>
#include <optional>

namespace bitnet::model::constrain::internal {

namespace {

/// The lengths the rest of a string may have once it holds `count` code points: at least what
/// minLength still asks, at most what maxLength leaves.
std::pair<std::uint64_t, std::uint64_t> rest_of(const node& n, std::uint32_t count) {
    const std::uint64_t lo = count < n.min_count ? n.min_count - count : 0;
    const std::uint64_t hi = n.max_count == unbounded ? pattern_regex::no_cap
                             : count <= n.max_count   ? n.max_count - count
                                                      : 0;
    return {lo, hi};
}

/// The code point of a one-character escape after '\\' (JSON's short forms), or nothing: 'u'
/// and the rest are handled by the caller ("\\/" is not canonical, so not written).
std::optional<std::uint32_t> short_escape(std::uint8_t b) {
    switch (b) {
    case '"':
        return '"';
    case '\\':
        return '\\';
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return std::nullopt;
    }
}

int hex_digit(std::uint8_t h) {
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/// A UTF-8 lead byte: the phase its continuation bytes go through and the bits it carries, or
/// false for a byte that cannot start a well-formed sequence (overlongs and past U+10FFFF).
bool utf8_lead(std::uint8_t b, std::uint16_t& phase, std::uint32_t& y) {
    if (b >= 0xC2 && b <= 0xDF)
        phase = str_cont1, y = b & 0x1Fu;
    else if (b == 0xE0)
        phase = str_e0, y = 0;
    else if (b == 0xED)
        phase = str_ed, y = 0xD;
    else if (b >= 0xE1 && b <= 0xEF)
        phase = str_cont2, y = b & 0x0Fu;
    else if (b == 0xF0)
        phase = str_f0, y = 0;
    else if (b >= 0xF1 && b <= 0xF3)
        phase = str_cont3, y = b & 0x07u;
    else if (b == 0xF4)
        phase = str_f4, y = 4;
    else
        return false;
    return true;
}

} // namespace

/// A code point of the string's contents is complete. With a pattern or format it is taken only
/// when some completion still matches within the length bounds (rest_of), so a string never
/// reaches its cap half written.
bool stepper::on_char(frame& f, const node& n, std::uint32_t cp) {
    const auto nx = f.x + 1;
    if (n.count_cap > 0 || n.max_count != unbounded) {
        if (nx > n.max_count)
            return false;
        f.x = std::min(nx, n.count_cap);
    }
    if (n.regex >= 0) {
        const auto& re = g_.regexes[static_cast<std::size_t>(n.regex)];
        f.z = re.step(f.z, cp);
        const auto [lo, hi] = rest_of(n, nx);
        if (f.z == 0 || !re.fits(f.z, lo, hi))
            return false;
    }
    f.phase = str_body;
    return true;
}

/// Whether a character in [lo, hi] may still come: a UTF-8 sequence or an escape under way
/// is only taken when some completion of it fits (the length and the pattern), so a mask
/// never leads into a state no token can leave.
bool stepper::possible(const frame& f, const node& n, std::uint32_t lo, std::uint32_t hi) const {
    if (n.max_count != unbounded && f.x + 1 > n.max_count)
        return false;
    if (n.regex < 0)
        return true;
    const auto [rlo, rhi] = rest_of(n, f.x + 1);
    return g_.regexes[static_cast<std::size_t>(n.regex)].can_step_within(f.z, lo, hi, rlo, rhi);
}

/// The code points a UTF-8 sequence can still become, after its bytes so far.
std::pair<std::uint32_t, std::uint32_t> stepper::utf8_range(std::uint16_t phase, std::uint32_t y) {
    switch (phase) {
    case str_e0:
        return {0x800, 0xFFF};
    case str_ed:
        return {0xD000, 0xD7FF};
    case str_f0:
        return {0x10000, 0x3FFFF};
    case str_f4:
        return {0x100000, 0x10FFFF};
    default:
        break;
    }
    const int rest = phase == str_cont1 ? 1 : phase == str_cont2 ? 2 : 3;
    const std::uint32_t lo = y << (6 * rest);
    return {lo, lo | ((1u << (6 * rest)) - 1)};
}

/// The closing quote: the string is long enough, its pattern accepts it, and it is not one of
/// the excluded names (an object's declared names, for its other members).
bool stepper::may_close(const frame& f, const node& n) const {
    if (f.x < n.min_count)
        return false;
    if (n.regex >= 0 && !g_.regexes[static_cast<std::size_t>(n.regex)].accepts(f.z))
        return false;
    return !(n.exclude >= 0 && f.w != byte_trie::dead &&
             g_.tries[static_cast<std::size_t>(n.exclude)].nodes[f.w].terminal);
}

/// A UTF-8 continuation byte in [lo, hi]: the code point completes (next == str_body) or the
/// sequence goes on, each only where a completion still fits.
void stepper::utf8_continuation(frame_stack c, std::uint8_t b, const node& n, std::uint16_t next,
                                std::uint8_t lo, std::uint8_t hi) {
    frame& f = c.back();
    if (b < lo || b > hi)
        return;
    f.y = (f.y << 6) | (b & 0x3Fu);
    if (next == str_body) {
        if (!on_char(f, n, f.y))
            return;
    } else {
        f.phase = next;
        const auto [first, last] = utf8_range(next, f.y);
        if (!possible(f, n, first, last))
            return;
    }
    emit(std::move(c));
}

void stepper::string(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    if (f.phase == 0) {
        if (b != '"')
            return;
        f.phase = str_body;
        if (n.regex >= 0)
            f.z = g_.regexes[static_cast<std::size_t>(n.regex)].start();
        return emit(std::move(c));
    }
    if (f.phase == str_body && b == '"') {
        if (!may_close(f, n))
            return;
        c.pop_back();
        return emit(std::move(c));
    }
    if (n.exclude >= 0)
        f.w =
            g_.tries[static_cast<std::size_t>(n.exclude)].step(static_cast<std::uint32_t>(f.w), b);
    switch (f.phase) {
    case str_body:
        if (b == '\\') {
            if (!possible(f, n, 0, 0x1F) && !possible(f, n, '"', '"') &&
                !possible(f, n, '\\', '\\'))
                return;
            f.phase = str_escape;
            return emit(std::move(c));
        }
        if (b < 0x20)
            return;
        if (b < 0x80)
            return on_char(f, n, b) ? emit(std::move(c)) : void();
        if (!utf8_lead(b, f.phase, f.y))
            return;
        if (const auto [lo, hi] = utf8_range(f.phase, f.y); !possible(f, n, lo, hi))
            return;
        return emit(std::move(c));
    case str_escape:
        if (b == 'u') {
            f.phase = str_u;
            return emit(std::move(c));
        }
        if (const auto cp = short_escape(b))
            return on_char(f, n, *cp) ? emit(std::move(c)) : void();
        return; // "\/" and the rest: not canonical
    case str_u:
    case str_u0:
        if (b != '0')
            return;
        f.phase = f.phase == str_u ? str_u0 : str_u00;
        return emit(std::move(c));
    case str_u00:
        if (b != '0' && b != '1')
            return;
        f.y = b - '0';
        if (!possible(f, n, f.y * 16, f.y * 16 + 15))
            return;
        f.phase = str_u00x;
        return emit(std::move(c));
    case str_u00x: {
        const int h = hex_digit(b);
        if (h < 0)
            return;
        const auto cp = f.y * 16 + static_cast<std::uint32_t>(h);
        // Characters with a short escape are written with it.
        if (cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t')
            return;
        return on_char(f, n, cp) ? emit(std::move(c)) : void();
    }
    case str_cont1:
        return utf8_continuation(std::move(c), b, n, str_body);
    case str_cont2:
        return utf8_continuation(std::move(c), b, n, str_cont1);
    case str_cont3:
        return utf8_continuation(std::move(c), b, n, str_cont2);
    case str_e0:
        return utf8_continuation(std::move(c), b, n, str_cont1, 0xA0, 0xBF);
    case str_ed:
        return utf8_continuation(std::move(c), b, n, str_cont1, 0x80, 0x9F);
    case str_f0:
        return utf8_continuation(std::move(c), b, n, str_cont2, 0x90, 0xBF);
    case str_f4:
        return utf8_continuation(std::move(c), b, n, str_cont2, 0x80, 0x8F);
    default:
        return;
    }
}

} // namespace bitnet::model::constrain::internal
