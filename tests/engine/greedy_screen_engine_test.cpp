// The CPU engine's greedy screen (engine_options::greedy_screen, seq_chunk::greedy_only) on real
// files: bitnet.cpp's tiny file (random weights, greedy margins down to 0.003) reproduces
// bitnet.cpp's 64 greedy tokens, and on it and the trained default model every greedy-only row
// holds exactly the token and logit the full row gives, and nothing else; a chunk beside it that
// did not ask gets its full row, bit for bit the row of an engine without the screen; and a
// chunk verifying drafts (all_logits) gets each of its rows so.
#include "engine_fixture.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/default_model_slice.hpp"
#include "support/greedy_reference.hpp"

#include <cmath>
#include <cstring>
#include <limits>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::unique_ptr<model::engine> load_screened(const std::string& path) {
    auto opt = test_engine_options(path);
    opt.greedy_screen = true;
    opt.greedy_screen_rows = 64; // not measured: every greedy-only row of these tests screened
    return load_engine_with(opt);
}

/// A greedy-only row `got` against the full row: -inf everywhere but the full row's first
/// maximum, which holds its exact bits.
void check_greedy_row(std::span<const float> full, std::span<const float> got) {
    const std::int32_t want = argmax(full);
    REQUIRE(argmax(got) == want);
    CHECK(std::memcmp(&got[static_cast<std::size_t>(want)], &full[static_cast<std::size_t>(want)],
                      sizeof(float)) == 0);
    std::size_t finite = 0;
    for (float v : got)
        finite += std::isfinite(v) ? 1 : 0;
    CHECK(finite == 1);
}

/// Two sequences decoded side by side on both engines, 40 greedy steps after their prompts: on
/// the screened engine the first asks for its greedy token only and the second for its row. Every
/// step: the screened row is -inf but the full row's first maximum, which holds its exact value;
/// the other row equals the plain engine's bit for bit; both pick the same tokens.
void check_side_by_side(model::engine& plain, model::engine& screened,
                        const std::vector<std::int32_t>& prompt_a,
                        const std::vector<std::int32_t>& prompt_b) {
    const auto n_vocab = plain.config().n_vocab;
    std::vector<model::seq_chunk> chunks{{1, prompt_a, 0, true}, {2, prompt_b, 0, true}};
    for (int step = 0; step < 40; ++step) {
        CAPTURE(step);
        auto with = chunks;
        with[0].greedy_only = true;
        auto p = plain.step(chunks);
        auto s = screened.step(with);
        REQUIRE(p);
        REQUIRE(s);
        const auto full = p->row(p->rows_for_chunk[0], n_vocab);
        const std::int32_t want = argmax(full);
        check_greedy_row(full, s->row(s->rows_for_chunk[0], n_vocab));
        // The step says how many rows the screen answered (the executor counts them).
        CHECK(s->screened_rows == 1);
        CHECK(p->screened_rows == 0);
        const auto other_p = p->row(p->rows_for_chunk[1], n_vocab);
        const auto other_s = s->row(s->rows_for_chunk[1], n_vocab);
        CHECK(same_bits({other_p.begin(), other_p.end()}, {other_s.begin(), other_s.end()}));
        const std::int32_t next[2] = {want, argmax(other_p)};
        for (std::size_t i = 0; i < 2; ++i) {
            chunks[i].pos0 += static_cast<std::uint32_t>(chunks[i].tokens.size());
            chunks[i].tokens = {next[i]};
        }
    }
    for (model::seq_id seq : {1, 2}) {
        plain.release(seq);
        screened.release(seq);
    }
}

} // namespace

TEST_CASE("greedy screen: bitnet.cpp's tiny file gives bitnet.cpp's 64 greedy tokens from "
          "greedy-only chunks") {
    const auto ref = load_greedy_reference();
    auto e = load_screened(data_path("bitnetcpp/tiny-i2_s.gguf"));
    const auto n_vocab = e->config().n_vocab;
    model::seq_chunk c{1, ref.prompt, 0, true};
    c.greedy_only = true;
    std::vector<std::int32_t> got;
    for (std::size_t i = 0; i < ref.greedy.size(); ++i) {
        auto r = e->step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE(r);
        got.push_back(argmax(r->row(0, n_vocab)));
        c.pos0 += static_cast<std::uint32_t>(c.tokens.size());
        c.tokens = {got.back()};
    }
    CHECK(got == ref.greedy);
}

TEST_CASE("greedy screen: greedy-only rows hold the full row's first maximum and nothing else, "
          "beside a full row that is unchanged (tiny file and the trained default model)") {
    const auto ref = load_greedy_reference();
    {
        auto plain = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
        auto screened = load_screened(data_path("bitnetcpp/tiny-i2_s.gguf"));
        check_side_by_side(*plain, *screened, ref.prompt, {5, 17, 300, 2});
    }
    {
        auto plain = load_engine(default_model_path());
        auto screened = load_screened(default_model_path());
        const auto& v = plain->vocab();
        const auto a = v.encode("Once upon a time");
        const auto b = v.encode("The quick brown fox");
        REQUIRE(a);
        REQUIRE(b);
        check_side_by_side(*plain, *screened, *a, *b);
    }
}

TEST_CASE("greedy screen: a chunk verifying drafts gets each row's first maximum, exactly, and "
          "only that (tiny file and the trained default model)") {
    for (const auto& path : {data_path("bitnetcpp/tiny-i2_s.gguf"), default_model_path()}) {
        CAPTURE(path);
        auto plain = load_engine(path);
        auto screened = load_screened(path);
        const auto n_vocab = plain->config().n_vocab;
        const auto prompt = plain->vocab().encode("Once upon a time");
        REQUIRE(prompt);
        const auto pos = static_cast<std::uint32_t>(prompt->size());
        for (auto* e : {plain.get(), screened.get()}) {
            const model::seq_chunk pre{1, *prompt, 0, false};
            REQUIRE(e->step(std::span<const model::seq_chunk>(&pre, 1)));
        }
        // The last prompt token again (as the executor sends it) and drafts: k = 1..6, each
        // drafted token a prompt token so that some rows' maxima repeat and some do not.
        for (std::uint32_t k = 1; k <= 6; ++k) {
            CAPTURE(k);
            std::vector<std::int32_t> toks{prompt->back()};
            for (std::uint32_t j = 0; j < k; ++j)
                toks.push_back((*prompt)[j % prompt->size()]);
            model::seq_chunk c{1, toks, pos, true, pos};
            c.all_logits = true;
            auto p = plain->step(std::span<const model::seq_chunk>(&c, 1));
            c.greedy_only = true;
            auto s = screened->step(std::span<const model::seq_chunk>(&c, 1));
            REQUIRE(p);
            REQUIRE(s);
            CHECK(s->screened_rows == k + 1);
            for (std::uint32_t j = 0; j <= k; ++j) {
                check_greedy_row(p->row(p->first_row_for_chunk[0] + j, n_vocab),
                                 s->row(s->first_row_for_chunk[0] + j, n_vocab));
            }
            for (auto* e : {plain.get(), screened.get()})
                REQUIRE(e->truncate(1, k + 1));
        }
    }
}

TEST_CASE("greedy screen: a step with more greedy-only rows than greedy_screen_rows computes "
          "them in F16, and unset the count is measured at load and described") {
    const auto path = data_path("bitnetcpp/tiny-i2_s.gguf");
    auto opt = test_engine_options(path);
    opt.greedy_screen = true;
    opt.greedy_screen_rows = 2;
    auto e = load_engine_with(opt);
    const auto n_vocab = e->config().n_vocab;
    const std::vector<std::int32_t> prompt{5, 17, 300, 2};
    const model::seq_chunk pre{1, prompt, 0, false};
    REQUIRE(e->step(std::span<const model::seq_chunk>(&pre, 1)));
    for (std::uint32_t rows : {2u, 3u}) {
        CAPTURE(rows);
        model::seq_chunk c{1, std::vector<std::int32_t>(rows, 7), 4, true, 4};
        c.all_logits = true;
        c.greedy_only = true;
        auto s = e->step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE(s);
        CHECK(s->screened_rows == (rows <= 2 ? rows : 0));
        std::size_t finite = 0;
        for (float v : s->row(s->first_row_for_chunk[0], n_vocab))
            finite += std::isfinite(v) ? 1 : 0;
        CHECK(finite == (rows <= 2 ? 1u : n_vocab)); // past the count: whole F16 rows
        REQUIRE(e->truncate(1, rows));
    }

    opt.greedy_screen_rows = 0;
    const auto measured = load_engine_with(opt)->describe();
    CHECK(measured.find("greedy-only rows (screen/F16: 1:") != std::string::npos);
}
