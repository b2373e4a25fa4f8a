// The scheduler splits prompts into chunks under a per-step budget
// (actors/batcher/sched_policy.cpp). That must not change answers: a prompt prefilled in chunks of
// 2 or more tokens gives the bits of the unsplit prefill, so greedy output does not depend on how
// the prompt was cut. A chunk of exactly one token is computed as a decode (attention probabilities
// rounded to F16, as bitnet.cpp does), which is why the policy never plans one for a prompt
// position.
#include "engine_fixture.hpp"

#include <random>
#include <string>

using namespace bitnet;
using namespace bitnet::test;

namespace {

/// Random sizes >= 2 that add up to n (n >= 2).
std::vector<std::size_t> split_2_plus(std::size_t n, std::mt19937_64& rng) {
    std::vector<std::size_t> sizes;
    while (n > 0) {
        std::size_t k = 2 + rng() % 9;
        if (k > n || n - k == 1)
            k = n;
        sizes.push_back(k);
        n -= k;
    }
    return sizes;
}

} // namespace

TEST_CASE("engine: a prompt split into chunks of 2+ tokens gives the unsplit bits and greedy "
          "output (tiny-i2_s)") {
    auto e = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
    const std::uint32_t n_vocab = e->config().n_vocab;
    constexpr std::size_t n_gen = 12;
    std::mt19937_64 rng(2026);
    std::size_t lone_token_differs = 0, lone_token_cases = 0;
    for (int trial = 0; trial < 6; ++trial) {
        std::vector<std::int32_t> prompt(5 + rng() % 40);
        for (auto& t : prompt)
            t = static_cast<std::int32_t>(rng() % n_vocab);
        CAPTURE(prompt.size());
        const auto whole = prefill_in_chunks(*e, 1, prompt, {prompt.size()});
        const auto want =
            continue_greedy(*e, 1, static_cast<std::uint32_t>(prompt.size()), whole, n_gen);
        for (int split = 0; split < 3; ++split) {
            const auto sizes = split_2_plus(prompt.size(), rng);
            std::string cut;
            for (auto k : sizes)
                cut += std::to_string(k) + " ";
            CAPTURE(cut);
            const auto logits = prefill_in_chunks(*e, 2, prompt, sizes);
            CHECK(same_bits(logits, whole));
            CHECK(continue_greedy(*e, 2, static_cast<std::uint32_t>(prompt.size()), logits,
                                  n_gen) == want);
        }
        // The trap the policy avoids: the last prompt token alone in its chunk.
        const auto lone = prefill_in_chunks(*e, 3, prompt, {prompt.size() - 1, std::size_t{1}});
        e->release(3);
        ++lone_token_cases;
        lone_token_differs += !same_bits(lone, whole);
    }
    CHECK(e->kv_blocks_free() == e->kv_blocks_total());
    MESSAGE("a lone last prompt token changed the logits' bits in "
            << lone_token_differs << " of " << lone_token_cases << " prompts");
}
