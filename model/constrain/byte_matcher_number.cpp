// The stepper's numbers: JSON numbers and integers, with the digit caps every grammar number has
// (limits::number_*_digits, so a value always ends) and exact bounds. Bounds and multipleOf are
// checked on every digit against everything the digits so far can still become, so the mask
// never lets a number start that cannot end in range. A frame keeps its digits (z: integer part,
// w: fraction) only when a bound or a divisor needs them; otherwise it keeps only their counts,
// so every free number shares a few matcher states (and their cached masks).
#include "model/constrain/byte_matcher_impl.hpp"

namespace bitnet::model::constrain::internal {

namespace {

constexpr std::uint32_t int_cap = limits::number_integer_digits;
constexpr std::uint32_t frac_cap = limits::number_fraction_digits;
constexpr std::uint32_t exp_cap = limits::number_exponent_digits;

wide_int pow10(std::uint32_t k) {
    wide_int p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

// x packs the digit counts: integer part, fraction, exponent.
std::uint32_t int_digits(const frame& f) {
    return f.x & 0xFF;
}
std::uint32_t frac_digits(const frame& f) {
    return (f.x >> 8) & 0xFF;
}
std::uint32_t exp_digits(const frame& f) {
    return (f.x >> 16) & 0xFF;
}

bool is_digit(std::uint8_t b) {
    return b >= '0' && b <= '9';
}

bool negative(const frame& f) {
    return (f.aux & 1) != 0;
}

/// Whether some value with magnitude in [a, b] (sign `neg`) is within n's bounds and, when
/// `m` > 0, a multiple of m.
bool meets(const node& n, bool neg, wide_int a, wide_int b, std::uint64_t m = 0) {
    wide_int lo = neg ? -b : a;
    wide_int hi = neg ? -a : b;
    if (n.has_lo)
        lo = std::max(lo, n.lo);
    if (n.has_hi)
        hi = std::min(hi, n.hi);
    if (lo > hi)
        return false;
    if (m == 0)
        return true;
    const wide_int d = m;
    wide_int q = lo / d; // the least multiple at or above lo
    if (q * d < lo)
        ++q;
    return q * d <= hi;
}

bool tracks_digits(const node& n) {
    return n.has_lo || n.has_hi || n.multiple_of != 0;
}

// ---- integers: x = digits, z = magnitude ----

/// Whether the digits so far (magnitude z, d of them, more to come unless the first was 0) can
/// still become an integer the node takes.
bool int_viable(const node& n, const frame& f) {
    if (!tracks_digits(n))
        return true;
    const bool neg = negative(f);
    const wide_int mag = f.z;
    const auto d = int_digits(f);
    if (f.phase == num_zero)
        return meets(n, neg, 0, 0, n.multiple_of);
    if (d == 0) // a sign alone
        return meets(n, neg, 1, pow10(int_cap) - 1, n.multiple_of);
    for (std::uint32_t j = 0; d + j <= int_cap; ++j) {
        const auto p = pow10(j);
        if (meets(n, neg, mag * p, mag * p + p - 1, n.multiple_of))
            return true;
    }
    return false;
}

bool int_complete(const frame& f, const node& n) {
    if (f.phase != num_zero && f.phase != num_int)
        return false;
    if (!tracks_digits(n))
        return true;
    const wide_int v = f.z;
    return meets(n, negative(f), v, v, n.multiple_of);
}

// ---- numbers: x = digit counts, z = integer part, w = fraction (bounded numbers only) ----

constexpr wide_int unit_scale() {
    wide_int p = 1;
    for (std::uint32_t k = 0; k < frac_cap; ++k)
        p *= 10;
    return p;
}

/// The magnitudes (in units of 10^-frac_cap) the digits so far can still become.
bool num_viable(const node& n, const frame& f) {
    if (!n.has_lo && !n.has_hi)
        return true;
    const bool neg = negative(f);
    const wide_int u = unit_scale();
    const wide_int ip = static_cast<wide_int>(f.z);
    switch (f.phase) {
    case num_minus:
        return meets(n, true, 0, pow10(int_cap) * u - 1);
    case num_zero:
        return meets(n, neg, 0, u - 1);
    case num_int:
        for (std::uint32_t j = 0; int_digits(f) + j <= int_cap; ++j) {
            const auto p = pow10(j);
            if (meets(n, neg, ip * p * u, (ip * p + p) * u - 1))
                return true;
        }
        return false;
    case num_dot:
    case num_frac: {
        const auto step = pow10(frac_cap - frac_digits(f));
        const wide_int base = ip * u + static_cast<wide_int>(f.w) * step;
        return meets(n, neg, base, base + step - 1);
    }
    default:
        return true;
    }
}

bool num_complete(const frame& f, const node& n) {
    if (f.phase != num_zero && f.phase != num_int && f.phase != num_frac && f.phase != num_exp)
        return false;
    if (!n.has_lo && !n.has_hi)
        return true;
    const wide_int v = static_cast<wide_int>(f.z) * unit_scale() +
                       static_cast<wide_int>(f.w) * pow10(frac_cap - frac_digits(f));
    return meets(n, negative(f), v, v);
}

} // namespace

bool number_may_end(const frame& f, const node& n) {
    return n.kind == node_kind::integer ? int_complete(f, n) : num_complete(f, n);
}

void stepper::number(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    const bool bounded = n.has_lo || n.has_hi;
    auto go = [&](std::uint16_t p) {
        f.phase = p;
        if (num_viable(n, f))
            emit(std::move(c));
    };
    auto int_digit = [&](std::uint8_t d) {
        if (int_digits(f) >= int_cap)
            return;
        ++f.x;
        if (bounded)
            f.z = f.z * 10 + d;
        go(f.phase == num_minus || f.phase == 0 ? (d == 0 ? num_zero : num_int) : num_int);
    };
    auto end = [&] {
        if (num_complete(f, n))
            end_and_pass(std::move(c), b);
    };
    switch (f.phase) {
    case 0:
        if (b == '-') {
            f.aux = 1;
            return go(num_minus);
        }
        [[fallthrough]];
    case num_minus:
        return is_digit(b) ? int_digit(static_cast<std::uint8_t>(b - '0')) : void();
    case num_int:
        if (is_digit(b))
            return int_digit(static_cast<std::uint8_t>(b - '0'));
        [[fallthrough]];
    case num_zero:
        if (b == '.')
            return go(num_dot);
        if ((b == 'e' || b == 'E') && !bounded) // bounded numbers are written without exponent
            return go(num_e);
        return end();
    case num_dot:
    case num_frac:
        if (is_digit(b)) {
            if (frac_digits(f) >= frac_cap)
                return;
            f.x += 1u << 8;
            if (bounded)
                f.w = f.w * 10 + (b - '0');
            return go(num_frac);
        }
        if (f.phase == num_dot)
            return;
        if ((b == 'e' || b == 'E') && !bounded)
            return go(num_e);
        return end();
    case num_e:
        if (b == '+' || b == '-')
            return go(num_e_sign);
        [[fallthrough]];
    case num_e_sign:
    case num_exp:
        if (is_digit(b)) {
            if (exp_digits(f) >= exp_cap)
                return;
            f.x += 1u << 16;
            return go(num_exp);
        }
        if (f.phase == num_exp)
            return end();
        return;
    }
}

void stepper::integer(frame_stack c, std::uint8_t b, const node& n) {
    frame& f = c.back();
    auto digit = [&](std::uint8_t d) {
        if (int_digits(f) >= int_cap)
            return;
        const bool first = f.phase == 0 || f.phase == num_minus;
        if (first && d == 0 && f.phase == num_minus)
            return; // "-0" is not canonical
        ++f.x;
        if (tracks_digits(n))
            f.z = f.z * 10 + d;
        f.phase = first && d == 0 ? num_zero : num_int;
        if (int_viable(n, f))
            emit(std::move(c));
    };
    switch (f.phase) {
    case 0:
        if (b == '-') {
            f.aux = 1;
            f.phase = num_minus;
            if (int_viable(n, f))
                emit(std::move(c));
            return;
        }
        [[fallthrough]];
    case num_minus:
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

} // namespace bitnet::model::constrain::internal
