// model/constrain: the completion lengths of pattern states (length_table, pattern_regex::fits)
// against brute force, and determinized patterns (the formats' automata) against the NFA.
#include "model/constrain/length_table.hpp"
#include "model/constrain/pattern_regex.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

/// The least k >= lo such that exactly k steps lead from `s` to a final state, searched up to
/// `horizon` steps.
std::uint64_t brute_next(const std::vector<std::vector<std::uint32_t>>& succ,
                         const std::vector<bool>& fin, std::uint32_t s, std::uint64_t lo,
                         std::uint64_t horizon) {
    std::vector<bool> cur(succ.size(), false);
    cur[s] = true;
    for (std::uint64_t k = 0; k <= horizon; ++k) {
        if (k >= lo)
            for (std::size_t i = 0; i < cur.size(); ++i)
                if (cur[i] && fin[i])
                    return k;
        std::vector<bool> next(succ.size(), false);
        for (std::size_t i = 0; i < cur.size(); ++i)
            if (cur[i])
                for (auto t : succ[i])
                    next[t] = true;
        cur = std::move(next);
    }
    return length_table::none;
}

/// Whether some string over `alphabet` of length in [lo, hi] takes `state` to a match.
bool brute_fits(const pattern_regex& re, std::uint64_t state, const std::string& alphabet,
                std::uint64_t lo, std::uint64_t hi) {
    std::vector<std::uint64_t> frontier{state};
    for (std::uint64_t k = 0; k <= hi && !frontier.empty(); ++k) {
        if (k >= lo)
            for (auto s : frontier)
                if (re.accepts(s))
                    return true;
        std::vector<std::uint64_t> next;
        for (auto s : frontier)
            for (char c : alphabet)
                if (auto t = re.step(s, static_cast<std::uint8_t>(c)); t != 0)
                    next.push_back(t);
        std::sort(next.begin(), next.end());
        next.erase(std::unique(next.begin(), next.end()), next.end());
        frontier = std::move(next);
    }
    return false;
}

} // namespace

TEST_CASE("length table: next length == breadth-first search on random graphs") {
    std::mt19937_64 rng(7);
    for (int g = 0; g < 200; ++g) {
        const std::size_t n = 1 + rng() % 12;
        std::vector<std::vector<std::uint32_t>> succ(n);
        std::vector<bool> fin(n);
        for (std::size_t i = 0; i < n; ++i) {
            fin[i] = rng() % 4 == 0;
            const auto edges = rng() % 3;
            for (std::uint64_t e = 0; e < edges; ++e)
                succ[i].push_back(static_cast<std::uint32_t>(rng() % n));
        }
        auto t = length_table::build(succ, fin, 4096);
        REQUIRE(t);
        for (std::uint32_t s = 0; s < n; ++s)
            for (std::uint64_t lo : {0, 1, 2, 5, 13, 40, 97, 500}) {
                const auto want = brute_next(succ, fin, s, lo, lo + 400);
                CHECK_MESSAGE(t->next(s, lo) == want,
                              "graph " << g << " state " << s << " lo " << lo);
            }
    }
}

TEST_CASE("pattern lengths: fits == brute force over the pattern's alphabet, anchored or not") {
    std::mt19937_64 rng(11);
    for (const char* p : {"^(ab)+$", "^a(bc)*c?$", "b+c", "^ab", "cb$", "^(a|bb|ccc){2,4}$",
                          "(aa|bbb)+c", "^[ab]*(abc){2}$", "^$", "a*"}) {
        CAPTURE(std::string(p));
        auto re = pattern_regex::compile(p);
        REQUIRE(re);
        for (int walk = 0; walk < 20; ++walk) {
            std::uint64_t s = re->start();
            for (int step = 0; step < 6 && s != 0; ++step) {
                for (std::uint64_t lo = 0; lo <= 7; ++lo)
                    for (std::uint64_t hi = lo; hi <= 8; ++hi)
                        CHECK(re->fits(s, lo, hi) == brute_fits(*re, s, "abc", lo, hi));
                for (char c : std::string("abc"))
                    CHECK(re->can_step_within(s, static_cast<std::uint8_t>(c),
                                              static_cast<std::uint8_t>(c), 0, 4) ==
                          (re->step(s, static_cast<std::uint8_t>(c)) != 0 &&
                           re->fits(re->step(s, static_cast<std::uint8_t>(c)), 0, 4)));
                s = re->step(s, static_cast<std::uint8_t>("abc"[rng() % 3]));
            }
        }
    }
}

TEST_CASE("pattern lengths: a determinized pattern accepts what its NFA accepts") {
    std::mt19937_64 rng(3);
    for (const char* p : {"^(ab|a)*b{1,3}$", "^[0-2]{2}(-[0-2])?$", "^(a|ab)(c|bcd)$"}) {
        CAPTURE(std::string(p));
        auto nfa = pattern_regex::compile(p);
        auto dfa = pattern_regex::determinized(p);
        REQUIRE(nfa);
        REQUIRE(dfa);
        const std::string alphabet = "abcd-012";
        for (int i = 0; i < 2000; ++i) {
            std::uint64_t sn = nfa->start(), sd = dfa->start();
            const auto len = rng() % 7;
            std::string text;
            for (std::uint64_t k = 0; k < len; ++k) {
                const char c = alphabet[rng() % alphabet.size()];
                text += c;
                sn = nfa->step(sn, static_cast<std::uint8_t>(c));
                sd = dfa->step(sd, static_cast<std::uint8_t>(c));
                REQUIRE((sn == 0) == (sd == 0));
            }
            CAPTURE(text);
            CHECK(nfa->accepts(sn) == dfa->accepts(sd));
            for (std::uint64_t lo = 0; lo < 5; ++lo)
                CHECK(nfa->fits(sn, lo, lo + 2) == dfa->fits(sd, lo, lo + 2));
        }
    }
}
