// The byte-level mutator of the in-tree fuzzers: bit flips, interesting integers, truncation,
// chunk removal and duplication, splicing with another seed, and (given a dictionary) protocol
// tokens inserted or written over the input. Deterministic for a seed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::fuzz {

class byte_mutator {
public:
    explicit byte_mutator(std::uint64_t seed, std::vector<std::string> dictionary = {})
        : rng_(seed)
        , dict_(std::move(dictionary)) {}

    std::vector<std::uint8_t> mutate(std::vector<std::uint8_t> b,
                                     const std::vector<std::vector<std::uint8_t>>& pool) {
        const int rounds = 1 + static_cast<int>(pick(4));
        for (int r = 0; r < rounds; ++r) {
            switch (pick(dict_.empty() ? 7 : 10)) {
            case 0: // flip one bit
                if (!b.empty())
                    b[pick(b.size())] ^= static_cast<std::uint8_t>(1u << pick(8));
                break;
            case 1: // overwrite a byte
                if (!b.empty())
                    b[pick(b.size())] = static_cast<std::uint8_t>(pick(256));
                break;
            case 2: { // overwrite 4 or 8 bytes with an interesting integer (lengths, counts)
                static const std::uint64_t interesting[] = {
                    0,  1,   2,   3,          4,          7,          8,          9,
                    12, 13,  31,  32,         36,         37,         38,         39,
                    40, 127, 255, 0x7fffffff, 0xffffffff, 1ull << 32, 1ull << 62, ~0ull};
                const std::uint64_t v = interesting[pick(std::size(interesting))];
                const std::size_t w = pick(2) ? 8 : 4;
                if (b.size() >= w) {
                    const std::size_t at = pick(b.size() - w + 1);
                    for (std::size_t i = 0; i < w; ++i)
                        b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
                }
                break;
            }
            case 3: // truncate
                if (!b.empty())
                    b.resize(pick(b.size()));
                break;
            case 4: { // remove a chunk
                if (b.size() > 2) {
                    const std::size_t at = pick(b.size() - 1);
                    const std::size_t n = 1 + pick(std::min<std::size_t>(64, b.size() - at - 1));
                    b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                            b.begin() + static_cast<std::ptrdiff_t>(at + n));
                }
                break;
            }
            case 5: { // duplicate a chunk
                if (b.size() > 2) {
                    const std::size_t at = pick(b.size() - 1);
                    const std::size_t n = 1 + pick(std::min<std::size_t>(64, b.size() - at - 1));
                    std::vector<std::uint8_t> chunk(b.begin() + static_cast<std::ptrdiff_t>(at),
                                                    b.begin() +
                                                        static_cast<std::ptrdiff_t>(at + n));
                    b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size())), chunk.begin(),
                             chunk.end());
                }
                break;
            }
            case 6: { // splice the tail of another seed
                const auto& other = pool[pick(pool.size())];
                if (!other.empty() && !b.empty()) {
                    const std::size_t cut = pick(b.size());
                    const std::size_t from = pick(other.size());
                    b.resize(cut);
                    b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from),
                             other.end());
                }
                break;
            }
            case 7:   // insert a dictionary token (protocol words the bit flips would not find)
            case 8: { // or overwrite with one
                const auto& w = dict_[pick(dict_.size())];
                const std::size_t at = pick(b.size() + 1);
                if (pick(2) == 0 || at + w.size() > b.size())
                    b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), w.begin(), w.end());
                else
                    std::copy(w.begin(), w.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
                break;
            }
            case 9: { // repeat a short chunk up to 128 KiB: the long fields and lines that
                      // limits exist for, which single-byte edits never reach
                if (b.empty())
                    break;
                const std::size_t at = pick(b.size());
                const std::size_t n = 1 + pick(std::min<std::size_t>(16, b.size() - at));
                const std::vector<std::uint8_t> chunk(b.begin() + static_cast<std::ptrdiff_t>(at),
                                                      b.begin() +
                                                          static_cast<std::ptrdiff_t>(at + n));
                const std::size_t times = std::size_t{1} << pick(14);
                std::vector<std::uint8_t> run;
                run.reserve(chunk.size() * times);
                for (std::size_t t = 0; t < times; ++t)
                    run.insert(run.end(), chunk.begin(), chunk.end());
                b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), run.begin(), run.end());
                break;
            }
            }
        }
        return b;
    }

    std::size_t pick(std::size_t n) { return n == 0 ? 0 : rng_() % n; }

private:
    std::mt19937_64 rng_;
    std::vector<std::string> dict_;
};

/// The fuzzers' loop: for `seconds`, mutate (mostly fresh copies of seeds, sometimes stacking
/// mutations), cut to `max_len`, and hand each input to `check`. Returns the inputs run.
template <class Check>
std::uint64_t run_mutations(double seconds, byte_mutator& m,
                            const std::vector<std::vector<std::uint8_t>>& pool, std::size_t max_len,
                            Check&& check) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::uint64_t runs = 0;
    std::vector<std::uint8_t> current = pool.at(0);
    while (std::chrono::steady_clock::now() < deadline) {
        for (int i = 0; i < 64; ++i, ++runs) {
            if (m.pick(4) != 0)
                current = pool[m.pick(pool.size())];
            current = m.mutate(std::move(current), pool);
            if (current.size() > max_len)
                current.resize(max_len);
            check(current);
        }
    }
    return runs;
}

} // namespace bitnet::fuzz
