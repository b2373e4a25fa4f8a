// Batching must not change answers: a sequence's greedy tokens are the same alone and inside
// mixed prefill/decode batches of 2..32 sequences. Also: the KV cache is handed back, a bad step
// changes nothing, and the thread count does not change a single bit of the logits.
#include "engine_fixture.hpp"

#include <map>
#include <random>

using namespace bitnet;
using namespace bitnet::test;

namespace {

struct sequence_plan {
    model::seq_id id = 0;
    std::vector<std::int32_t> prompt;
    std::size_t start_step = 0;    ///< the step it joins the batch
    std::size_t prefill_piece = 0; ///< prompt chunk size (chunked prefill)
    std::vector<std::int32_t> generated;
    std::uint32_t n_done = 0; ///< prompt tokens already fed
};

std::vector<sequence_plan> make_plans(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<sequence_plan> plans(n);
    for (std::size_t i = 0; i < n; ++i) {
        sequence_plan& p = plans[i];
        p.id = 1000 + i;
        p.prompt.resize(1 + rng() % 40);
        for (auto& t : p.prompt)
            t = static_cast<std::int32_t>(rng() % 512);
        p.start_step = rng() % 6;
        p.prefill_piece = 1 + rng() % 16;
    }
    return plans;
}

/// Runs every plan to `n_gen` greedy tokens in shared steps: each step takes, for each active
/// sequence, its next prefill piece (logits only on the last) or its next decode token.
void run_batched(model::engine& e, std::vector<sequence_plan>& plans, std::size_t n_gen) {
    const std::uint32_t n_vocab = e.config().n_vocab;
    for (std::size_t step = 0;; ++step) {
        std::vector<model::seq_chunk> batch;
        std::vector<sequence_plan*> owners;
        bool pending = false;
        for (sequence_plan& p : plans) {
            if (p.generated.size() >= n_gen)
                continue;
            pending = true;
            if (step < p.start_step)
                continue;
            model::seq_chunk c;
            c.seq = p.id;
            if (p.n_done < p.prompt.size()) {
                const std::size_t n = std::min(p.prefill_piece, p.prompt.size() - p.n_done);
                c.tokens.assign(p.prompt.begin() + p.n_done, p.prompt.begin() + p.n_done + n);
                c.pos0 = p.n_done;
                c.want_logits = p.n_done + n == p.prompt.size();
            } else {
                c.tokens = {p.generated.back()};
                c.pos0 = static_cast<std::uint32_t>(p.prompt.size() + p.generated.size() - 1);
            }
            batch.push_back(std::move(c));
            owners.push_back(&p);
        }
        if (!pending)
            return;
        if (batch.empty())
            continue;
        auto out = e.step(batch);
        REQUIRE_MESSAGE(out, (out ? std::string() : out.error().to_string()));
        for (std::size_t i = 0; i < batch.size(); ++i) {
            sequence_plan& p = *owners[i];
            if (p.n_done < p.prompt.size())
                p.n_done += static_cast<std::uint32_t>(batch[i].tokens.size());
            if (out->rows_for_chunk[i] != model::step_output::no_row) {
                p.generated.push_back(argmax(out->row(out->rows_for_chunk[i], n_vocab)));
                if (p.generated.size() >= n_gen)
                    e.release(p.id);
            }
        }
    }
}

} // namespace

TEST_CASE("engine: greedy output is the same alone and inside mixed batches of 2..32") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 5));
    constexpr std::size_t n_gen = 10;
    for (std::size_t n : {2u, 3u, 8u, 17u, 32u}) {
        CAPTURE(n);
        auto plans = make_plans(n, 100 + n);
        std::map<model::seq_id, std::vector<std::int32_t>> alone;
        for (const sequence_plan& p : plans)
            alone[p.id] = greedy_alone(*e, p.id, p.prompt, n_gen);
        run_batched(*e, plans, n_gen);
        for (const sequence_plan& p : plans) {
            CAPTURE(p.id);
            CHECK(p.generated == alone[p.id]);
        }
        // Every block came back.
        CHECK(e->kv_blocks_free() == e->kv_blocks_total());
    }
}

TEST_CASE("engine: KV blocks are returned on release, and a fork continues like its source") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 2));
    const std::uint32_t total = e->kv_blocks_total();
    REQUIRE(total > 8);
    std::vector<std::int32_t> prompt(37);
    for (std::size_t i = 0; i < prompt.size(); ++i)
        prompt[i] = static_cast<std::int32_t>((i * 37) % 512);
    model::seq_chunk c{1, prompt, 0, true};
    auto out = e->step(std::span<const model::seq_chunk>(&c, 1));
    REQUIRE(out);
    CHECK(e->kv_blocks_free() == total - e->kv_blocks_for(37));

    // A fork shares the blocks; both continue with the same next token to the same logits.
    REQUIRE(e->fork(1, 2));
    const std::int32_t next = argmax(out->row(0, e->config().n_vocab));
    std::vector<model::seq_chunk> both{{1, {next}, 37, true}, {2, {next}, 37, true}};
    auto out2 = e->step(both);
    REQUIRE(out2);
    const auto a = out2->row(0, e->config().n_vocab);
    const auto b = out2->row(1, e->config().n_vocab);
    CHECK(std::equal(a.begin(), a.end(), b.begin()));

    e->release(1);
    e->release(2);
    e->release(2); // twice is harmless
    CHECK(e->kv_blocks_free() == total);
}

TEST_CASE("engine: a rejected step leaves the KV cache untouched") {
    scratch_dir dir;
    // A pool of a few blocks, so that running out is reachable.
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 3), 2, 8 * 16 * 2 * 2 * 2 * 64 * 2);
    const std::uint32_t total = e->kv_blocks_total();
    REQUIRE(total == 8);
    model::seq_chunk first{1, {1, 2, 3}, 0, true};
    REQUIRE(e->step(std::span<const model::seq_chunk>(&first, 1)));
    const std::uint32_t free_before = e->kv_blocks_free();

    auto rejected = [&](std::vector<model::seq_chunk> batch, errc code) {
        auto r = e->step(batch);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == code);
        CHECK(e->kv_blocks_free() == free_before);
    };
    rejected({{1, {4}, 2, true}}, errc::invalid_argument);   // position not next
    rejected({{2, {4}, 1, true}}, errc::invalid_argument);   // new sequence not at 0
    rejected({{2, {512}, 0, true}}, errc::invalid_argument); // token out of range
    rejected({{2, {-1}, 0, true}}, errc::invalid_argument);  // negative token
    rejected({{2, {}, 0, true}}, errc::invalid_argument);    // empty chunk
    rejected({{2, {5}, 0, true}, {2, {6}, 0, true}}, errc::invalid_argument); // twice
    rejected({{1, {4}, 3, true}, {2, std::vector<std::int32_t>(8 * 16, 1), 0, true}},
             errc::kv_exhausted);
    rejected({{2, std::vector<std::int32_t>(513, 1), 0, true}}, errc::invalid_argument); // > batch

    // The valid part still works afterwards, from where it was.
    model::seq_chunk next{1, {4}, 3, true};
    CHECK(e->step(std::span<const model::seq_chunk>(&next, 1)));
}

TEST_CASE("engine: the thread count does not change the logits") {
    scratch_dir dir;
    const std::string path = make_model(dir, "bitnet-b1.58", 4);
    auto one = load_engine(path, 1);
    auto two = load_engine(path, 2);
    // A 150-token prompt makes the step large enough that the norms, the quantization, RoPE with
    // the KV writes and the residual adds split their tokens over the threads too.
    std::vector<std::int32_t> prompt(150);
    for (std::size_t i = 0; i < prompt.size(); ++i)
        prompt[i] = static_cast<std::int32_t>(3 + i * 7 % 250);
    std::vector<model::seq_chunk> batch{
        {1, {5, 6, 7, 8, 9}, 0, true}, {2, {10}, 0, true}, {3, prompt, 0, true}};
    auto a = one->step(batch);
    auto b = two->step(batch);
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(a->logits.size() == b->logits.size());
    CHECK(std::equal(a->logits.begin(), a->logits.end(), b->logits.begin()));
}

TEST_CASE("engine: load errors name the file and the problem") {
    scratch_dir dir;
    model::engine_options opt;
    opt.model_path = dir.file("missing.gguf");
    auto missing = model::engine::load(opt);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().value() == errc::io_error);
    CHECK(missing.error().message.find("missing.gguf") != std::string::npos);

    const std::string good = make_model(dir, "bitnet-b1.58", 1);
    auto bytes = read_file(good);
    bytes.resize(bytes.size() / 2);
    write_file(dir.file("truncated.gguf"), bytes);
    opt.model_path = dir.file("truncated.gguf");
    auto truncated = model::engine::load(opt);
    REQUIRE_FALSE(truncated);
    CHECK(truncated.error().message.find("truncated.gguf") != std::string::npos);
}
