// Speculative decoding's engine contract: a chunk [last token, d1..dk] whose positions are all
// marked decoded (seq_chunk::decoded_from = pos0) and that asks for every row (all_logits) must
// give, in row i, the bits that decoding d1..di one step at a time would have given; and
// dropping the rejected drafts' positions (engine::truncate) must leave a sequence that goes on
// exactly as if they had never been computed. Checked on bitnet.cpp's tiny file (random
// weights, greedy margins down to 0.003), alone and beside another sequence's prompt.
#include "engine_fixture.hpp"

#include <random>

using namespace bitnet;
using namespace bitnet::test;

namespace {

struct decoded_run {
    std::vector<std::int32_t> tokens;       ///< generated, first to last
    std::vector<std::vector<float>> logits; ///< logits[i]: the row tokens[i] was picked from
};

decoded_run decode(model::engine& e, const std::vector<std::int32_t>& prompt, std::size_t n) {
    decoded_run run;
    model::seq_chunk c{1, prompt, 0, true};
    for (std::size_t i = 0; i < n; ++i) {
        auto r = e.step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().to_string()));
        run.logits.emplace_back(r->logits.begin(), r->logits.end());
        run.tokens.push_back(argmax(run.logits.back()));
        c.pos0 += static_cast<std::uint32_t>(c.tokens.size());
        c.tokens = {run.tokens.back()};
    }
    e.release(1);
    return run;
}

/// The verification chunk of sequence `seq` holding `pos0` positions: its last token then the
/// drafts, every position computed as a decode, every row returned.
model::seq_chunk verify_chunk(model::seq_id seq, std::uint32_t pos0, std::int32_t last,
                              const std::vector<std::int32_t>& drafts) {
    model::seq_chunk c{seq, {last}, pos0, true, pos0};
    c.tokens.insert(c.tokens.end(), drafts.begin(), drafts.end());
    c.all_logits = true;
    return c;
}

std::vector<float> row_of(const model::step_output& so, std::size_t r, std::uint32_t n_vocab) {
    const auto row = so.row(r, n_vocab);
    return {row.begin(), row.end()};
}

} // namespace

TEST_CASE("engine: a draft verification chunk gives each position's decode bits, and truncating "
          "rejected drafts continues as if they were never computed (tiny-i2_s)") {
    auto e = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
    const std::uint32_t n_vocab = e->config().n_vocab;
    std::mt19937_64 rng(4242);
    constexpr std::size_t n_gen = 24;
    std::size_t checked_rows = 0;
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<std::int32_t> prompt(2 + rng() % 20);
        for (auto& t : prompt)
            t = static_cast<std::int32_t>(rng() % n_vocab);
        const auto n_prompt = static_cast<std::uint32_t>(prompt.size());
        const auto run = decode(*e, prompt, n_gen);
        for (std::size_t j : {std::size_t{0}, std::size_t{7}}) {
            for (std::size_t k : {std::size_t{1}, std::size_t{4}, std::size_t{8}}) {
                // The sequence holds the prompt and generated tokens [0, j); token j is next.
                for (std::size_t wrong_at : {k, std::size_t{0}, k / 2}) {
                    CAPTURE(trial);
                    CAPTURE(j);
                    CAPTURE(k);
                    CAPTURE(wrong_at);
                    std::vector<std::int32_t> known = prompt;
                    known.insert(known.end(), run.tokens.begin(),
                                 run.tokens.begin() + static_cast<std::ptrdiff_t>(j));
                    (void)prefill_in_chunks(*e, 2, known, {known.size()}, n_prompt);
                    const auto pos0 = static_cast<std::uint32_t>(known.size());
                    // Drafts: the run's own next tokens, the one at wrong_at replaced.
                    std::vector<std::int32_t> drafts(
                        run.tokens.begin() + static_cast<std::ptrdiff_t>(j + 1),
                        run.tokens.begin() + static_cast<std::ptrdiff_t>(j + 1 + k));
                    if (wrong_at < k)
                        drafts[wrong_at] = (drafts[wrong_at] + 1) % static_cast<int>(n_vocab);

                    // Beside another sequence's prompt chunk, which must not change its bits.
                    std::vector<model::seq_chunk> batch{
                        verify_chunk(2, pos0, run.tokens[j], drafts),
                        model::seq_chunk{3, prompt, 0, true}};
                    auto so = e->step(batch);
                    REQUIRE_MESSAGE(so, (so ? std::string() : so.error().to_string()));
                    REQUIRE(so->first_row_for_chunk.size() == 2);
                    const auto first = so->first_row_for_chunk[0];
                    // Row i is computed after drafts [0, i): it equals the run's row for token
                    // j + 1 + i as long as every draft before it was right.
                    const std::size_t valid = std::min(wrong_at, k) + 1;
                    for (std::size_t i = 0; i < valid; ++i) {
                        CHECK(same_bits(row_of(*so, first + i, n_vocab), run.logits[j + 1 + i]));
                        ++checked_rows;
                    }
                    CHECK(same_bits(row_of(*so, so->rows_for_chunk[1], n_vocab), run.logits[0]));
                    e->release(3);

                    // Keep the right drafts, drop the rest, and decode on from the first token
                    // the verification produced (argmax of the last valid row).
                    const auto accepted = static_cast<std::uint32_t>(valid - 1);
                    REQUIRE(e->truncate(2, static_cast<std::uint32_t>(k) - accepted));
                    const std::uint32_t pos = pos0 + 1 + accepted;
                    const std::size_t next = j + 1 + accepted; // the run's index of that token
                    const auto tail = continue_greedy(
                        *e, 2, pos, row_of(*so, first + accepted, n_vocab), n_gen - next);
                    CHECK(tail == std::vector<std::int32_t>(run.tokens.begin() +
                                                                static_cast<std::ptrdiff_t>(next),
                                                            run.tokens.end()));
                }
            }
        }
    }
    MESSAGE(checked_rows << " verified rows compared bit for bit");
    CHECK(e->kv_blocks_free() == e->kv_blocks_total());
    // Bad truncations are refused without changing anything.
    (void)prefill_in_chunks(*e, 5, {1, 2, 3}, {3});
    CHECK(e->truncate(5, 4).error().value() == errc::invalid_argument);
    CHECK(e->truncate(6, 1).error().value() == errc::not_found);
    e->release(5);
}
