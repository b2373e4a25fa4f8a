#include "model/constrain/byte_matcher.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace bitnet::model::constrain {

namespace {

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
// Exact range arithmetic on 20-digit magnitudes (pedantic builds need the __extension__).
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

constexpr std::uint64_t huge = ~0ULL;
constexpr std::int64_t default_lo = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t default_hi =
    std::numeric_limits<std::int64_t>::max(); ///< an integer magnitude past 10^19

constexpr std::uint32_t max_fork_depth = 64; ///< anyOf inside anyOf, cycles included

bool is_digit(std::uint8_t b) {
    return b >= '0' && b <= '9';
}

bool unbounded_int(const node& n) {
    return n.lo == default_lo && n.hi == default_hi;
}

/// Whether some integer written with the digits so far (sign `neg`, magnitude `mag`, more digits
/// possible unless the first was 0) lies in [lo, hi].
bool int_viable(const node& n, bool neg, std::uint64_t mag) {
    if (unbounded_int(n))
        return true;
    if (mag == huge)
        return neg ? n.lo == default_lo : n.hi == default_hi;
    i128 base = mag, width = 1;
    for (int k = 0; k < 20; ++k) {
        i128 a = base, b = base + width - 1;
        if (neg) {
            const i128 t = -b;
            b = -a;
            a = t;
        }
        if (b >= n.lo && a <= n.hi)
            return true;
        if (mag == 0)
            break; // "0" takes no more digits
        base *= 10;
        width *= 10;
        if (base > static_cast<i128>(10'000'000'000'000'000'000ULL))
            break;
    }
    // Past 20 digits only the unbounded sides are reachable.
    return neg ? n.lo == default_lo : n.hi == default_hi;
}

bool int_complete(const frame& f, const node& n) {
    if (f.phase != num_zero && f.phase != num_int)
        return false;
    if (n.multiple_of != 0 && f.y != 0)
        return false;
    if (unbounded_int(n))
        return true;
    const bool neg = (f.aux & 1) != 0;
    if (f.z == huge)
        return neg ? n.lo == default_lo : n.hi == default_hi;
    const i128 v = neg ? -static_cast<i128>(f.z) : static_cast<i128>(f.z);
    return v >= n.lo && v <= n.hi;
}

bool num_finishable(const frame& f) {
    return f.phase == num_zero || f.phase == num_int || f.phase == num_frac || f.phase == num_exp;
}

/// Whether the top frame `f` may end here without taking a byte (numbers end at the first byte
/// that is not theirs).
bool may_end(const grammar& g, const frame& f) {
    const auto& n = g.nodes[f.node];
    if (n.kind == node_kind::integer)
        return int_complete(f, n);
    if (n.kind == node_kind::number)
        return num_finishable(f);
    return false;
}

class stepper {
public:
    stepper(const grammar& g, std::vector<frame_stack>& out)
        : g_(g)
        , out_(out) {}

    /// Feeds `b` to configuration `c` (taken by value: it is the new configuration).
    void step(frame_stack c, std::uint8_t b, std::uint32_t forks = 0) {
        if (c.empty())
            return; // a whole value was written: nothing may follow
        frame& f = c.back();
        const node& n = g_.nodes[f.node];
        switch (n.kind) {
        case node_kind::nothing:
            return;
        case node_kind::any_of:
            if (forks >= max_fork_depth)
                return;
            for (auto alt : n.alts) {
                frame_stack d = c;
                d.back() = frame{alt};
                step(std::move(d), b, forks + 1);
            }
            return;
        case node_kind::literal:
            if (f.x < n.bytes.size() && static_cast<std::uint8_t>(n.bytes[f.x]) == b) {
                if (++f.x == n.bytes.size())
                    c.pop_back();
                emit(std::move(c));
            }
            return;
        case node_kind::number:
            return number(std::move(c), b);
        case node_kind::integer:
            return integer(std::move(c), b, n);
        case node_kind::string:
            return string(std::move(c), b, n);
        case node_kind::object:
            return object(std::move(c), b, n);
        case node_kind::array:
            return array(std::move(c), b, n);
        }
    }

private:
    const grammar& g_;
    std::vector<frame_stack>& out_;

    void emit(frame_stack c) { out_.push_back(std::move(c)); }

    /// A child value starts with byte `b`.
    void push(frame_stack c, std::uint32_t child, std::uint8_t b) {
        if (child == no_node || c.size() >= g_.max_depth)
            return;
        c.push_back(frame{child});
        step(std::move(c), b);
    }

    /// The top frame ended without taking `b`: its parent takes it.
    void end_and_pass(frame_stack c, std::uint8_t b) {
        c.pop_back();
        step(std::move(c), b);
    }

    void number(frame_stack c, std::uint8_t b) {
        frame& f = c.back();
        auto go = [&](std::uint16_t p) {
            f.phase = p;
            emit(std::move(c));
        };
        switch (f.phase) {
        case 0:
            if (b == '-')
                return go(num_minus);
            [[fallthrough]];
        case num_minus:
            if (b == '0')
                return go(num_zero);
            if (b >= '1' && b <= '9')
                return go(num_int);
            return;
        case num_int:
            if (is_digit(b))
                return go(num_int);
            [[fallthrough]];
        case num_zero:
            if (b == '.')
                return go(num_dot);
            if (b == 'e' || b == 'E')
                return go(num_e);
            return end_and_pass(std::move(c), b);
        case num_dot:
            return is_digit(b) ? go(num_frac) : void();
        case num_frac:
            if (is_digit(b))
                return go(num_frac);
            if (b == 'e' || b == 'E')
                return go(num_e);
            return end_and_pass(std::move(c), b);
        case num_e:
            if (b == '+' || b == '-')
                return go(num_e_sign);
            [[fallthrough]];
        case num_e_sign:
            return is_digit(b) ? go(num_exp) : void();
        case num_exp:
            if (is_digit(b))
                return go(num_exp);
            return end_and_pass(std::move(c), b);
        }
    }

    void integer(frame_stack c, std::uint8_t b, const node& n) {
        frame& f = c.back();
        const bool neg = (f.aux & 1) != 0;
        auto digit = [&](std::uint8_t d) {
            std::uint64_t mag = f.z;
            if (mag != huge)
                mag = mag > (huge - 9) / 10 ? huge : mag * 10 + d;
            if (!int_viable(n, neg, mag))
                return;
            f.z = unbounded_int(n) ? 0 : mag;
            if (n.multiple_of != 0)
                f.y = static_cast<std::uint32_t>((static_cast<u128>(f.y) * 10 + d) % n.multiple_of);
            f.phase = (f.phase == 0 || f.phase == num_minus) && d == 0 ? num_zero : num_int;
            emit(std::move(c));
        };
        switch (f.phase) {
        case 0:
            if (b == '-') {
                if (n.lo >= 0)
                    return;
                f.aux = 1;
                f.phase = num_minus;
                return emit(std::move(c));
            }
            [[fallthrough]];
        case num_minus:
            if (b == '0' && f.phase == num_minus)
                return; // "-0" is not canonical
            return is_digit(b) ? digit(static_cast<std::uint8_t>(b - '0')) : void();
        case num_int:
            if (is_digit(b))
                return digit(static_cast<std::uint8_t>(b - '0'));
            [[fallthrough]];
        case num_zero:
            if (!int_complete(f, n))
                return;
            return end_and_pass(std::move(c), b);
        }
    }

    /// A code point of the string's contents is complete.
    bool on_char(frame& f, const node& n, std::uint32_t cp) {
        if (n.count_cap > 0 || n.max_count != unbounded) {
            const auto nx = f.x + 1;
            if (nx > n.max_count)
                return false;
            f.x = std::min(nx, n.count_cap);
        }
        if (n.regex >= 0) {
            f.z = g_.regexes[static_cast<std::size_t>(n.regex)].step(f.z, cp);
            if (f.z == 0)
                return false;
        }
        f.phase = str_body;
        return true;
    }

    /// Whether a character in [lo, hi] may still come: a UTF-8 sequence or an escape under way
    /// is only taken when some completion of it fits (the length and the pattern), so a mask
    /// never leads into a state no token can leave.
    bool possible(const frame& f, const node& n, std::uint32_t lo, std::uint32_t hi) const {
        if (n.max_count != unbounded && f.x + 1 > n.max_count)
            return false;
        return n.regex < 0 || g_.regexes[static_cast<std::size_t>(n.regex)].can_step(f.z, lo, hi);
    }

    /// The code points a UTF-8 sequence can still become, after its bytes so far.
    static std::pair<std::uint32_t, std::uint32_t> utf8_range(std::uint16_t phase,
                                                              std::uint32_t y) {
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

    void string(frame_stack c, std::uint8_t b, const node& n) {
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
            if (f.x < n.min_count)
                return;
            if (n.regex >= 0 && !g_.regexes[static_cast<std::size_t>(n.regex)].accepts(f.z))
                return;
            if (n.exclude >= 0 && f.aux != byte_trie::dead &&
                g_.tries[static_cast<std::size_t>(n.exclude)].nodes[f.aux].terminal)
                return;
            c.pop_back();
            return emit(std::move(c));
        }
        if (n.exclude >= 0)
            f.aux = g_.tries[static_cast<std::size_t>(n.exclude)].step(f.aux, b);
        auto cont = [&](std::uint16_t next, std::uint8_t lo = 0x80, std::uint8_t hi = 0xBF) {
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
        };
        auto hex = [](std::uint8_t h) -> int {
            return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        };
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
            if (b >= 0xC2 && b <= 0xDF)
                f.phase = str_cont1, f.y = b & 0x1Fu;
            else if (b == 0xE0)
                f.phase = str_e0, f.y = 0;
            else if (b == 0xED)
                f.phase = str_ed, f.y = 0xD;
            else if (b >= 0xE1 && b <= 0xEF)
                f.phase = str_cont2, f.y = b & 0x0Fu;
            else if (b == 0xF0)
                f.phase = str_f0, f.y = 0;
            else if (b >= 0xF1 && b <= 0xF3)
                f.phase = str_cont3, f.y = b & 0x07u;
            else if (b == 0xF4)
                f.phase = str_f4, f.y = 4;
            else
                return;
            if (const auto [lo, hi] = utf8_range(f.phase, f.y); !possible(f, n, lo, hi))
                return;
            return emit(std::move(c));
        case str_escape: {
            std::uint32_t cp = 0;
            switch (b) {
            case '"':
                cp = '"';
                break;
            case '\\':
                cp = '\\';
                break;
            case 'b':
                cp = '\b';
                break;
            case 'f':
                cp = '\f';
                break;
            case 'n':
                cp = '\n';
                break;
            case 'r':
                cp = '\r';
                break;
            case 't':
                cp = '\t';
                break;
            case 'u':
                f.phase = str_u;
                return emit(std::move(c));
            default:
                return; // "\/" and the rest: not canonical
            }
            return on_char(f, n, cp) ? emit(std::move(c)) : void();
        }
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
            const int h = hex(b);
            if (h < 0)
                return;
            const auto cp = f.y * 16 + static_cast<std::uint32_t>(h);
            // Characters with a short escape are written with it.
            if (cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t')
                return;
            return on_char(f, n, cp) ? emit(std::move(c)) : void();
        }
        case str_cont1:
            return cont(str_body);
        case str_cont2:
            return cont(str_cont1);
        case str_cont3:
            return cont(str_cont2);
        case str_e0:
            return cont(str_cont1, 0xA0, 0xBF);
        case str_ed:
            return cont(str_cont1, 0x80, 0x9F);
        case str_f0:
            return cont(str_cont2, 0x90, 0xBF);
        case str_f4:
            return cont(str_cont2, 0x80, 0x8F);
        default:
            return;
        }
    }

    static bool more_names(const frame& f, const node& n) {
        if (n.additional != no_node)
            return true;
        const std::uint64_t all = n.keys.size() >= 64 ? ~0ULL : (1ULL << n.keys.size()) - 1;
        return (f.z & all) != all;
    }

    void object(frame_stack c, std::uint8_t b, const node& n) {
        frame& f = c.back();
        auto close = [&] {
            if ((f.z & n.required) != n.required || f.x < n.min_count)
                return;
            c.pop_back();
            emit(std::move(c));
        };
        auto name = [&] {
            if (f.x >= n.max_count)
                return;
            for (std::size_t i = 0; i < n.keys.size(); ++i)
                if (!((f.z >> i) & 1)) {
                    frame_stack d = c;
                    d.back().phase = obj_key;
                    d.back().y = static_cast<std::uint32_t>(i);
                    d.back().aux = 0;
                    emit(std::move(d));
                }
            if (n.additional != no_node && c.size() < g_.max_depth) {
                f.phase = obj_other_colon;
                c.push_back(frame{n.other_key, str_body});
                emit(std::move(c));
            }
        };
        switch (f.phase) {
        case 0:
            if (b == '{') {
                f.phase = obj_open;
                emit(std::move(c));
            }
            return;
        case obj_open:
            if (b == '}')
                return close();
            [[fallthrough]];
        case obj_after_comma:
            return b == '"' ? name() : void();
        case obj_key: {
            const auto& k = n.keys[f.y];
            if (f.aux < k.size()) {
                if (static_cast<std::uint8_t>(k[f.aux]) != b)
                    return;
                ++f.aux;
            } else {
                if (b != '"')
                    return;
                f.phase = obj_colon;
                f.aux = 0;
            }
            return emit(std::move(c));
        }
        case obj_colon:
        case obj_other_colon:
            if (b != ':')
                return;
            f.phase = f.phase == obj_colon ? obj_value : obj_other_value;
            return emit(std::move(c));
        case obj_value:
        case obj_other_value: {
            const auto child = f.phase == obj_value ? n.values[f.y] : n.additional;
            if (f.phase == obj_value)
                f.z |= 1ULL << f.y;
            f.y = 0;
            f.x = std::min(f.x + 1, n.count_cap);
            f.phase = obj_after_value;
            return push(std::move(c), child, b);
        }
        case obj_after_value:
            if (b == '}')
                return close();
            // A comma only where another name can follow (no dead end after it).
            if (b == ',' && f.x < n.max_count && more_names(f, n)) {
                f.phase = obj_after_comma;
                emit(std::move(c));
            }
            return;
        default:
            return;
        }
    }

    void array(frame_stack c, std::uint8_t b, const node& n) {
        frame& f = c.back();
        auto item_node = [&](std::uint32_t i) {
            if (i >= n.max_count)
                return no_node;
            return i < n.prefix.size() ? n.prefix[i] : n.items;
        };
        auto close = [&] {
            if (f.x < n.min_count)
                return;
            c.pop_back();
            emit(std::move(c));
        };
        auto value = [&] {
            const auto child = item_node(f.x);
            f.x = std::min(f.x + 1, n.count_cap);
            f.phase = arr_after_value;
            push(std::move(c), child, b);
        };
        switch (f.phase) {
        case 0:
            if (b == '[') {
                f.phase = arr_open;
                emit(std::move(c));
            }
            return;
        case arr_open:
            if (b == ']')
                return close();
            return value();
        case arr_after_value:
            if (b == ']')
                return close();
            if (b == ',' && item_node(f.x) != no_node) {
                f.phase = arr_after_comma;
                emit(std::move(c));
            }
            return;
        case arr_after_comma:
            return value();
        default:
            return;
        }
    }
};

} // namespace

byte_matcher byte_matcher::start(const grammar& g) {
    byte_matcher m;
    m.configs_.push_back({frame{g.root}});
    return m;
}

bool byte_matcher::feed(const grammar& g, std::uint8_t b) {
    std::vector<frame_stack> next;
    stepper s(g, next);
    for (auto& c : configs_)
        s.step(c, b);
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    configs_ = std::move(next);
    return !configs_.empty();
}

bool byte_matcher::feed(const grammar& g, std::string_view s) {
    for (char ch : s)
        if (!feed(g, static_cast<std::uint8_t>(ch)))
            return false;
    return true;
}

bool byte_matcher::complete(const grammar& g) const {
    for (const auto& c : configs_)
        if (c.empty() || (c.size() == 1 && may_end(g, c.back())))
            return true;
    return false;
}

bool byte_matcher::finished() const noexcept {
    return !configs_.empty() &&
           std::all_of(configs_.begin(), configs_.end(), [](const auto& c) { return c.empty(); });
}

std::string byte_matcher::key() const {
    std::string k;
    for (const auto& c : configs_) {
        const auto n = static_cast<std::uint32_t>(c.size());
        k.append(reinterpret_cast<const char*>(&n), sizeof n);
        k.append(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(frame));
    }
    return k;
}

} // namespace bitnet::model::constrain
