// Walks bytes through a grammar (grammar.hpp): a nondeterministic pushdown matcher whose state is
// the set of live configurations, each a stack of frames (one frame per JSON value being written,
// innermost last). anyOf forks a configuration (one level: the compiler flattened them); a byte
// no configuration takes ends the set. Frames are plain 32-byte values, so a state serialises to
// a byte string (the mask cache's key) and copies cheaply.
//
// Cost bounds: a stack is at most grammar::max_depth frames, a byte forks at most
// limits::max_alternatives configurations, and a state holds at most limits::max_live_configs of
// them; past that the matcher is `overflowed` (and dead), which ends the sequence with an error
// rather than letting its work grow.
#pragma once

#include "model/constrain/grammar.hpp"

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::model::constrain {

struct frame {
    std::uint32_t node = 0;
    std::uint16_t phase = 0; ///< where inside the value (per kind; byte_matcher_impl.hpp)
    std::uint16_t aux = 0;   ///< sign of a number
    std::uint32_t x = 0;     ///< count (members, items, code points, digits), literal position
    std::uint32_t y = 0;     ///< property index, code point being decoded
    std::uint64_t z = 0;     ///< members seen, regex state, integer part of a number
    std::uint64_t w = 0;     ///< name position, trie node, fraction of a number
    friend bool operator==(const frame&, const frame&) = default;
    friend auto operator<=>(const frame&, const frame&) = default;
};
static_assert(sizeof(frame) == 32, "frames are hashed as bytes: no padding");

/// One configuration: its frames, innermost last. The first `in_place` frames live in the object
/// itself (JSON values are seldom nested deeper while they are written), so copying or stepping a
/// configuration, which the matcher does for every byte and the mask walk for every trie edge,
/// allocates nothing; a deeper stack spills to the heap.
class frame_stack {
public:
    static constexpr std::uint32_t in_place = 4;

    frame_stack() = default;
    frame_stack(std::initializer_list<frame> frames) {
        for (const auto& f : frames)
            push_back(f);
    }
    frame_stack(const frame_stack&) = default;
    frame_stack& operator=(const frame_stack&) = default;
    /// A moved-from stack is empty (not a count of frames whose storage went elsewhere).
    frame_stack(frame_stack&& o) noexcept
        : local_(o.local_)
        , spill_(std::move(o.spill_))
        , n_(std::exchange(o.n_, 0)) {}
    frame_stack& operator=(frame_stack&& o) noexcept {
        local_ = o.local_;
        spill_ = std::move(o.spill_);
        n_ = std::exchange(o.n_, 0);
        return *this;
    }
    ~frame_stack() = default;

    [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return n_; }
    [[nodiscard]] const frame* data() const noexcept {
        return n_ <= in_place ? local_.data() : spill_.data();
    }
    [[nodiscard]] frame* data() noexcept { return n_ <= in_place ? local_.data() : spill_.data(); }
    [[nodiscard]] const frame* begin() const noexcept { return data(); }
    [[nodiscard]] const frame* end() const noexcept { return data() + n_; }
    [[nodiscard]] frame& back() noexcept { return data()[n_ - 1]; }
    [[nodiscard]] const frame& back() const noexcept { return data()[n_ - 1]; }

    void push_back(const frame& f) {
        if (n_ < in_place) {
            local_[n_++] = f;
            return;
        }
        if (n_ == in_place)
            spill_.assign(local_.begin(), local_.end());
        spill_.push_back(f);
        ++n_;
    }
    void pop_back() noexcept {
        --n_;
        if (n_ > in_place)
            spill_.pop_back();
        else if (n_ == in_place) {
            std::copy_n(spill_.begin(), in_place, local_.begin());
            spill_.clear();
        }
    }

    friend bool operator==(const frame_stack& a, const frame_stack& b) noexcept {
        return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
    }
    friend std::strong_ordering operator<=>(const frame_stack& a, const frame_stack& b) noexcept {
        return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    std::array<frame, in_place> local_{};
    std::vector<frame> spill_; ///< all the frames, when there are more than in_place
    std::uint32_t n_ = 0;
};

class byte_matcher {
public:
    /// The state before the first byte of `g`'s root value.
    [[nodiscard]] static byte_matcher start(const grammar& g);

    /// Takes one byte; false (and dead()) when no configuration can take it, or when the
    /// configurations it leads to are more than limits::max_live_configs (then overflowed()).
    /// `work`, when given, grows by the configurations stepped (the mask budget counts them).
    bool feed(const grammar& g, std::uint8_t b, std::uint64_t* work = nullptr);
    /// Takes every byte of `s`; false as soon as one is refused.
    bool feed(const grammar& g, std::string_view s, std::uint64_t* work = nullptr);

    [[nodiscard]] bool dead() const noexcept { return configs_.empty(); }
    /// The last byte opened more live configurations than the limit allows.
    [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }
    /// The bytes so far are a whole valid value (a number may still grow).
    [[nodiscard]] bool complete(const grammar& g) const;
    /// Complete, and no byte can follow.
    [[nodiscard]] bool finished() const noexcept;
    /// The state as bytes: equal keys, equal futures.
    [[nodiscard]] std::string key() const;
    /// The state as bytes for the token mask: key(), except that a string's code point count
    /// is left out where no token of at most `max_token_bytes` bytes can meet a bound with it
    /// (far from maxLength, past minLength, and for a pattern or format farther than its
    /// longest shortest completion), so those states share one mask.
    [[nodiscard]] std::string mask_key(const grammar& g, std::uint32_t max_token_bytes) const;
    /// Live configurations.
    [[nodiscard]] std::size_t width() const noexcept { return configs_.size(); }

private:
    std::vector<frame_stack> configs_;
    bool overflowed_ = false;
};

} // namespace bitnet::model::constrain
