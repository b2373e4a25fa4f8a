// The byte matcher's API (byte_matcher.hpp) and the stepper's walk of the grammar: anyOf forks,
// literals, numbers, integers with their bounds, objects and arrays. Strings (escapes, UTF-8,
// length and pattern) are in byte_matcher_string.cpp, split off to keep each file one concern.
#include "model/constrain/byte_matcher_impl.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace bitnet::model::constrain {

namespace internal {

namespace {

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

} // namespace

/// Feeds `b` to configuration `c` (taken by value: it is the new configuration).
void stepper::step(frame_stack c, std::uint8_t b, std::uint32_t forks) {
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

/// A child value starts with byte `b`.
void stepper::push(frame_stack c, std::uint32_t child, std::uint8_t b) {
    if (child == no_node || c.size() >= g_.max_depth)
        return;
    c.push_back(frame{child});
    step(std::move(c), b);
}

/// The top frame ended without taking `b`: its parent takes it.
void stepper::end_and_pass(frame_stack c, std::uint8_t b) {
    c.pop_back();
    step(std::move(c), b);
}

void stepper::number(frame_stack c, std::uint8_t b) {
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

void stepper::integer(frame_stack c, std::uint8_t b, const node& n) {
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

bool stepper::more_names(const frame& f, const node& n) {
    if (n.additional != no_node)
        return true;
    const std::uint64_t all = n.keys.size() >= 64 ? ~0ULL : (1ULL << n.keys.size()) - 1;
    return (f.z & all) != all;
}

void stepper::object(frame_stack c, std::uint8_t b, const node& n) {
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

void stepper::array(frame_stack c, std::uint8_t b, const node& n) {
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

} // namespace internal

byte_matcher byte_matcher::start(const grammar& g) {
    byte_matcher m;
    m.configs_.push_back({frame{g.root}});
    return m;
}

bool byte_matcher::feed(const grammar& g, std::uint8_t b) {
    std::vector<frame_stack> next;
    internal::stepper s(g, next);
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
        if (c.empty() || (c.size() == 1 && internal::may_end(g, c.back())))
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
