// Prompt logprobs (echo) need the logits of every token of a prompt chunk, not only the last
// (seq_chunk::all_logits). Each row must be the row the engine gives when that token ends a
// chunk: the last row bit for bit the ordinary path's, and row j the last row of the prompt cut
// after token j (prefill semantics on both sides: chunks of 2+ tokens), so the teacher-forced
// logprobs are what single requests would score. Checked with F16 and Q8_0 logits, and with a
// batch-mate that wants only its last row.
#include "engine_fixture.hpp"

#include <random>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::vector<float> row_of(const model::step_output& so, std::size_t r, std::uint32_t n_vocab) {
    const auto row = so.row(r, n_vocab);
    return {row.begin(), row.end()};
}

/// The last row of `tokens` prefilled as one chunk on a fresh sequence (released after).
std::vector<float> last_row_alone(model::engine& e, const std::vector<std::int32_t>& tokens) {
    constexpr model::seq_id seq = 99;
    model::seq_chunk c{seq, tokens, 0, true};
    auto so = e.step(std::span<const model::seq_chunk>(&c, 1));
    REQUIRE_MESSAGE(so, (so ? std::string() : so.error().to_string()));
    auto row = row_of(*so, so->rows_for_chunk[0], e.config().n_vocab);
    e.release(seq);
    return row;
}

void check_all_rows(model::engine& e) {
    const std::uint32_t n_vocab = e.config().n_vocab;
    std::mt19937_64 rng(15);
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<std::int32_t> prompt(6 + rng() % 20);
        for (auto& t : prompt)
            t = static_cast<std::int32_t>(rng() % n_vocab);
        CAPTURE(prompt.size());
        // A batch-mate before it that wants only its last row: rows of other chunks must not
        // shift this chunk's.
        std::vector<std::int32_t> mate(5);
        for (auto& t : mate)
            t = static_cast<std::int32_t>(rng() % n_vocab);
        std::vector<model::seq_chunk> batch{{1, mate, 0, true}, {2, prompt, 0, true}};
        batch[1].all_logits = true;
        auto so = e.step(batch);
        REQUIRE_MESSAGE(so, (so ? std::string() : so.error().to_string()));
        REQUIRE(so->first_row_for_chunk.size() == 2);
        CHECK(so->first_row_for_chunk[0] == model::step_output::no_row);
        const std::size_t first = so->first_row_for_chunk[1];
        CHECK(so->rows_for_chunk[1] == first + prompt.size() - 1);
        CHECK(so->logits.size() == (1 + prompt.size()) * std::size_t{n_vocab});
        e.release(1);
        e.release(2);

        // The last row: the ordinary path's bits.
        const auto last = last_row_alone(e, prompt);
        CHECK(same_bits(row_of(*so, so->rows_for_chunk[1], n_vocab), last));
        // The mate's row is unchanged by its neighbour's extra rows.
        CHECK(same_bits(row_of(*so, so->rows_for_chunk[0], n_vocab), last_row_alone(e, mate)));
        // Row j: the last row of the prompt cut after token j. j = 0 is a one-token chunk
        // (decode semantics); with a single key its attention is exactly 1 either way, so it
        // matches too, but the claim the server relies on is j >= 1.
        for (std::size_t j = 0; j < prompt.size(); ++j) {
            CAPTURE(j);
            const std::vector<std::int32_t> head(
                prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(j) + 1);
            CHECK(same_bits(row_of(*so, first + j, n_vocab), last_row_alone(e, head)));
        }
    }
}

} // namespace

TEST_CASE("engine: all_logits rows equal the rows of single chunks ending at each token (F16 "
          "logits)") {
    auto e = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
    check_all_rows(*e);
}

TEST_CASE("engine: all_logits rows equal the rows of single chunks ending at each token (Q8_0 "
          "logits)") {
    model::engine_options opt;
    opt.model_path = data_path("bitnetcpp/tiny-i2_s.gguf");
    opt.n_threads = 2;
    opt.q8_logits = true;
    auto e = model::engine::load(opt).value();
    check_all_rows(*e);
}

TEST_CASE("engine: a chunk with all_logits but not want_logits returns its rows and no sample "
          "row") {
    auto e = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
    const std::uint32_t n_vocab = e->config().n_vocab;
    model::seq_chunk c{1, {3, 4, 5, 6}, 0, false};
    c.all_logits = true;
    auto so = e->step(std::span<const model::seq_chunk>(&c, 1));
    REQUIRE(so);
    CHECK(so->rows_for_chunk[0] == model::step_output::no_row);
    CHECK(so->first_row_for_chunk[0] == 0);
    CHECK(so->logits.size() == 4 * std::size_t{n_vocab});
    CHECK(model::batch_logits_rows(std::span<const model::seq_chunk>(&c, 1)) == 4);
    // Without any all_logits chunk the step says nothing about first rows.
    model::seq_chunk d{1, {7, 8}, 4, true};
    auto plain = e->step(std::span<const model::seq_chunk>(&d, 1));
    REQUIRE(plain);
    CHECK(plain->first_row_for_chunk.empty());
}
